// OpenSSL 3 (libssl, libcrypto) for Swift: DTLS for MediaDTLS, HMAC and digests for MediaSTUN. Most of
// the API imports as is; static-inline shims below cover what is a macro in the headers.
#ifndef SLUICE_CSSL_SHIM_H
#define SLUICE_CSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/rand.h>

#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/srtp.h>

// MediaDTLS: macros of ssl.h, bio.h and ec.h as functions.

/// Time left on the DTLS retransmission timer in microseconds, or -1 when no timer runs (DTLSv1_get_timeout).
static inline long long sluice_dtls_timeout_microseconds(SSL *ssl) {
    struct timeval left;
    if (DTLSv1_get_timeout(ssl, &left) != 1) return -1;
    return (long long)left.tv_sec * 1000000 + (long long)left.tv_usec;
}

static inline int sluice_dtls_handle_timeout(SSL *ssl) { return (int)DTLSv1_handle_timeout(ssl); }

/// Sets the largest datagram DTLS writes, without OpenSSL querying the path MTU from the BIO.
static inline int sluice_ssl_set_fixed_mtu(SSL *ssl, long mtu) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    return SSL_set_mtu(ssl, mtu) > 0;  /* the MTU on success, 0 below the minimum */
}

static inline int sluice_ssl_ctx_set_proto_versions(SSL_CTX *ctx, int min, int max) {
    return SSL_CTX_set_min_proto_version(ctx, min) == 1 && SSL_CTX_set_max_proto_version(ctx, max) == 1;
}

static inline void sluice_bio_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }

static inline void sluice_bio_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }

/// A fresh EC key pair on P-256 (secp256r1), or NULL.
static inline EVP_PKEY *sluice_ec_p256_key(void) { return EVP_EC_gen("P-256"); }

#endif
