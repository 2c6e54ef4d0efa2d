// libsrtp2 sessions made and used directly, as an application using libsrtp2 alone would: the reference
// Sluice's SRTP paths are measured against.
import CSRTP
import MediaSRTP

/// libsrtp2 alone: a session per profile, and srtp_protect / srtp_unprotect in place.
public enum BareSRTP {
    /// srtp_init once per process. A second call (SRTPSession makes the first) returns bad_param in
    /// libsrtp 2.5, which re-registers its debug modules; the library is ready all the same.
    static let initStatus = srtp_init()

    /// A libsrtp session of `profile` with `key`, as SRTPSession configures it (replay window 1024,
    /// repeated sends allowed on the sender).
    public static func session(_ profile: SRTPProfile, key: SRTPKeyMaterial, sender: Bool) -> srtp_t {
        precondition(initStatus == srtp_err_status_ok || initStatus == srtp_err_status_bad_param)
        var policy = srtp_policy_t()
        switch profile {
        case .aes128CmHmacSha1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aes128CmHmacSha1_32:
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aeadAes128Gcm:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aeadAes256Gcm:
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp)
        }
        policy.ssrc.type = sender ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = 1024
        policy.allow_repeat_tx = sender ? 1 : 0
        var keyAndSalt = key.masterKey + key.masterSalt
        var session: srtp_t?
        let status = keyAndSalt.withUnsafeMutableBufferPointer { key in
            policy.key = key.baseAddress
            return srtp_create(&session, &policy)
        }
        precondition(status == srtp_err_status_ok)
        return session!
    }

    /// srtp_protect of `buffer[0..<length]` in place; the SRTP length.
    public static func protect(_ session: srtp_t, _ buffer: UnsafeMutableRawBufferPointer, _ length: Int) -> Int {
        var octets = Int32(length)
        precondition(srtp_protect(session, buffer.baseAddress, &octets) == srtp_err_status_ok)
        return Int(octets)
    }

    /// srtp_unprotect of `buffer[0..<length]` in place; the RTP length.
    public static func unprotect(_ session: srtp_t, _ buffer: UnsafeMutableRawBufferPointer, _ length: Int) -> Int {
        var octets = Int32(length)
        precondition(srtp_unprotect(session, buffer.baseAddress, &octets) == srtp_err_status_ok)
        return Int(octets)
    }
}
