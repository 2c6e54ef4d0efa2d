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
#include <string.h>

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

// MediaSRTP: HMAC-SHA1 (RFC 2104) with the key's inner and outer hash states computed once per
// session, so that authenticating a packet (RFC 3711 §4.2.1) costs two copies of a SHA-1 state and the
// hashing, with no allocation. SHA1_Init and friends are deprecated in OpenSSL 3 in favour of EVP,
// whose context copies allocate; they remain in libcrypto 3.

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <openssl/sha.h>

/// The SHA-1 states after the inner (key XOR 0x36) and outer (key XOR 0x5c) padded key blocks.
typedef struct { SHA_CTX inner; SHA_CTX outer; } sluice_hmac_sha1_key;

/// Computes the padded-key states of `key` (any length; SRTP's are 20 bytes).
static inline void sluice_hmac_sha1_key_init(sluice_hmac_sha1_key *state, const unsigned char *key, size_t length) {
    unsigned char block[64] = {0}, pad[64];
    if (length > sizeof block) SHA1(key, length, block); else memcpy(block, key, length);
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x36;
    SHA1_Init(&state->inner);
    SHA1_Update(&state->inner, pad, sizeof pad);
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x5c;
    SHA1_Init(&state->outer);
    SHA1_Update(&state->outer, pad, sizeof pad);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
}

/// The HMAC of `first` followed by `second` (the packet, then SRTP's rollover counter) into `mac[20]`.
static inline void sluice_hmac_sha1(const sluice_hmac_sha1_key *state, const void *first, size_t firstLength,
                                    const void *second, size_t secondLength, unsigned char mac[20]) {
    SHA_CTX context = state->inner;
    unsigned char inner[SHA_DIGEST_LENGTH];
    SHA1_Update(&context, first, firstLength);
    SHA1_Update(&context, second, secondLength);
    SHA1_Final(inner, &context);
    context = state->outer;
    SHA1_Update(&context, inner, sizeof inner);
    SHA1_Final(mac, &context);
}
#pragma GCC diagnostic pop

/// A fresh EC key pair on P-256 (secp256r1), or NULL.
static inline EVP_PKEY *sluice_ec_p256_key(void) { return EVP_EC_gen("P-256"); }

#endif
