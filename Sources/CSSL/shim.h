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

// MediaSRTP: a cipher called through its provider's dispatch table (provider-cipher(7)). Through
// EVP, OpenSSL 3.0 asks the provider for the IV length at every EVP_CipherInit_ex and turns every
// EVP_CIPHER_CTX_ctrl into a parameter lookup: string compares that took a fifth of an AES-GCM
// packet's time. The provider is the one EVP_CIPHER_fetch picks (the configuration's), so nothing
// changes but the path.

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/provider.h>
#include <strings.h>

/// One keyed cipher context of a provider, and the functions that drive it.
typedef struct {
    EVP_CIPHER *fetched;  /* holds the provider */
    void *context;
    OSSL_FUNC_cipher_freectx_fn *freeContext;
    OSSL_FUNC_cipher_encrypt_init_fn *encryptInit;
    OSSL_FUNC_cipher_decrypt_init_fn *decryptInit;
    OSSL_FUNC_cipher_update_fn *update;
    OSSL_FUNC_cipher_final_fn *final;
    OSSL_FUNC_cipher_get_ctx_params_fn *getParameters;
    OSSL_FUNC_cipher_set_ctx_params_fn *setParameters;
    int encrypts;
} sluice_cipher;

/// Whether `name` is one of the colon-separated `names` (case-insensitive, as EVP matches names).
static inline int sluice_cipher_names_include(const char *names, const char *name) {
    size_t length = strlen(name);
    for (const char *at = names; at && *at; ) {
        const char *end = strchr(at, ':');
        size_t token = end ? (size_t)(end - at) : strlen(at);
        if (token == length && strncasecmp(at, name, length) == 0) return 1;
        at = end ? end + 1 : NULL;
    }
    return 0;
}

/// Makes `cipher` the cipher `name` (as "AES-128-GCM") keyed with `key`, encrypting or decrypting;
/// 0 when the provider lacks it or refuses the key. Free it with `sluice_cipher_free` either way.
static inline int sluice_cipher_make(sluice_cipher *cipher, const char *name, const unsigned char *key,
                                     size_t keyLength, int encrypts) {
    memset(cipher, 0, sizeof *cipher);
    cipher->encrypts = encrypts;
    cipher->fetched = EVP_CIPHER_fetch(NULL, name, NULL);
    if (!cipher->fetched) return 0;
    OSSL_PROVIDER *provider = (OSSL_PROVIDER *)EVP_CIPHER_get0_provider(cipher->fetched);
    int noStore = 0;
    const OSSL_ALGORITHM *algorithms = OSSL_PROVIDER_query_operation(provider, OSSL_OP_CIPHER, &noStore);
    OSSL_FUNC_cipher_newctx_fn *newContext = NULL;
    for (const OSSL_ALGORITHM *algorithm = algorithms; algorithm && algorithm->algorithm_names; algorithm++) {
        if (!sluice_cipher_names_include(algorithm->algorithm_names, name)) continue;
        for (const OSSL_DISPATCH *f = algorithm->implementation; f->function_id != 0; f++) {
            switch (f->function_id) {
            case OSSL_FUNC_CIPHER_NEWCTX: newContext = OSSL_FUNC_cipher_newctx(f); break;
            case OSSL_FUNC_CIPHER_FREECTX: cipher->freeContext = OSSL_FUNC_cipher_freectx(f); break;
            case OSSL_FUNC_CIPHER_ENCRYPT_INIT: cipher->encryptInit = OSSL_FUNC_cipher_encrypt_init(f); break;
            case OSSL_FUNC_CIPHER_DECRYPT_INIT: cipher->decryptInit = OSSL_FUNC_cipher_decrypt_init(f); break;
            case OSSL_FUNC_CIPHER_UPDATE: cipher->update = OSSL_FUNC_cipher_update(f); break;
            case OSSL_FUNC_CIPHER_FINAL: cipher->final = OSSL_FUNC_cipher_final(f); break;
            case OSSL_FUNC_CIPHER_GET_CTX_PARAMS: cipher->getParameters = OSSL_FUNC_cipher_get_ctx_params(f); break;
            case OSSL_FUNC_CIPHER_SET_CTX_PARAMS: cipher->setParameters = OSSL_FUNC_cipher_set_ctx_params(f); break;
            }
        }
        break;
    }
    if (algorithms) OSSL_PROVIDER_unquery_operation(provider, OSSL_OP_CIPHER, algorithms);
    if (!newContext || !cipher->freeContext || !cipher->encryptInit || !cipher->decryptInit || !cipher->update
        || !cipher->final || !cipher->getParameters || !cipher->setParameters) return 0;
    cipher->context = newContext(OSSL_PROVIDER_get0_provider_ctx(provider));
    if (!cipher->context) return 0;
    return (encrypts ? cipher->encryptInit : cipher->decryptInit)(cipher->context, key, keyLength, NULL, 0, NULL);
}

static inline void sluice_cipher_free(sluice_cipher *cipher) {
    if (cipher->context) cipher->freeContext(cipher->context);
    EVP_CIPHER_free(cipher->fetched);
    memset(cipher, 0, sizeof *cipher);
}

/// Starts a message at `iv`, with the key kept.
static inline int sluice_cipher_start(const sluice_cipher *cipher, const unsigned char *iv, size_t ivLength) {
    return (cipher->encrypts ? cipher->encryptInit : cipher->decryptInit)(cipher->context, NULL, 0, iv, ivLength, NULL);
}

/// Transforms `length` bytes of `input` into `output` (the same memory or apart); with `output` NULL,
/// an AEAD cipher takes them as additional authenticated data.
static inline int sluice_cipher_update(const sluice_cipher *cipher, unsigned char *output, const unsigned char *input,
                                       size_t length) {
    size_t written = 0;
    return length == 0 || cipher->update(cipher->context, output, &written, length, input, length);
}

/// Ends the message: an AEAD decryption checks the tag given to `sluice_cipher_expect_tag` here.
static inline int sluice_cipher_finish(const sluice_cipher *cipher) {
    unsigned char unused[16];
    size_t written = 0;
    return cipher->final(cipher->context, unused, &written, sizeof unused);
}

/// The tag an AEAD decryption must find (before `sluice_cipher_finish`).
static inline int sluice_cipher_expect_tag(const sluice_cipher *cipher, const unsigned char *tag, size_t length) {
    OSSL_PARAM parameters[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, (void *)tag, length), OSSL_PARAM_construct_end()
    };
    return cipher->setParameters(cipher->context, parameters);
}

/// The tag of the AEAD encryption just finished.
static inline int sluice_cipher_tag(const sluice_cipher *cipher, unsigned char *tag, size_t length) {
    OSSL_PARAM parameters[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, length), OSSL_PARAM_construct_end()
    };
    return cipher->getParameters(cipher->context, parameters);
}

/// A fresh EC key pair on P-256 (secp256r1), or NULL.
static inline EVP_PKEY *sluice_ec_p256_key(void) { return EVP_EC_gen("P-256"); }

#endif
