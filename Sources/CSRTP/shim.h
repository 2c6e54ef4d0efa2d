// libsrtp2 (RFC 3711, RFC 7714) for Swift. Most of the API imports as is; these static-inline shims
// cover what is a macro in srtp.h.
#ifndef SLUICE_CSRTP_SHIM_H
#define SLUICE_CSRTP_SHIM_H

#include <srtp2/srtp.h>
#include <srtp2/cipher.h>

/// AES_CM_128_HMAC_SHA1_80 (RFC 4568 §6.2.1), a macro for the RTP default policy in srtp.h.
static inline void sluice_srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(srtp_crypto_policy_t *policy) {
    srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(policy);
}

/// The most bytes srtp_protect may append to a packet (tag and MKI), SRTP_MAX_TRAILER_LEN.
static inline int sluice_srtp_max_trailer_length(void) {
    return SRTP_MAX_TRAILER_LEN;
}

// libsrtp's AES-ICM and AES-GCM cipher types, which libsrtp2 exports but declares only in its private
// headers. Sluice's tests run the RFC 3711 B.2 and RFC 7714 §16-17 known answers, given as session keys
// (no key derivation), on them; the SRTP sessions do not use them.
extern const srtp_cipher_type_t srtp_aes_icm_128;
extern const srtp_cipher_type_t srtp_aes_gcm_128;
extern const srtp_cipher_type_t srtp_aes_gcm_256;

static inline const srtp_cipher_type_t *sluice_srtp_aes_icm_128(void) { return &srtp_aes_icm_128; }
static inline const srtp_cipher_type_t *sluice_srtp_aes_gcm_128(void) { return &srtp_aes_gcm_128; }
static inline const srtp_cipher_type_t *sluice_srtp_aes_gcm_256(void) { return &srtp_aes_gcm_256; }

#endif
