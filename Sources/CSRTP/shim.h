// libsrtp2 (RFC 3711, RFC 7714) for Swift. Most of the API imports as is; these static-inline shims
// cover what is a macro in srtp.h.
#ifndef SLUICE_CSRTP_SHIM_H
#define SLUICE_CSRTP_SHIM_H

#include <srtp2/srtp.h>

/// AES_CM_128_HMAC_SHA1_80 (RFC 4568 §6.2.1), a macro for the RTP default policy in srtp.h.
static inline void sluice_srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(srtp_crypto_policy_t *policy) {
    srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(policy);
}

/// The most bytes srtp_protect may append to a packet (tag and MKI), SRTP_MAX_TRAILER_LEN.
static inline int sluice_srtp_max_trailer_length(void) {
    return SRTP_MAX_TRAILER_LEN;
}

#endif
