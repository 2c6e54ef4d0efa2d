import CSRTP

/// An SRTP protection profile: cipher, authentication and their key, salt and tag sizes.
///
/// Names as negotiated in SDES (RFC 4568 §6.2, RFC 7714 §14.2); DTLS-SRTP identifiers from RFC 5764
/// §4.1.2 and RFC 7714 §14.2.
public enum SRTPProfile: String, Sendable, Hashable, CaseIterable {
    /// AES-128 counter mode, HMAC-SHA1 tag of 80 bits (RFC 3711 §5, the mandatory default).
    case aes128CmHmacSha1_80 = "AES_CM_128_HMAC_SHA1_80"
    /// AES-128 counter mode, HMAC-SHA1 tag of 32 bits on SRTP, 80 on SRTCP (RFC 4568 §6.2.2, RFC 5764 §4.1.2).
    case aes128CmHmacSha1_32 = "AES_CM_128_HMAC_SHA1_32"
    /// AES-128 in Galois/counter mode, 16-byte tag (RFC 7714).
    case aeadAes128Gcm = "AEAD_AES_128_GCM"
    /// AES-256 in Galois/counter mode, 16-byte tag (RFC 7714).
    case aeadAes256Gcm = "AEAD_AES_256_GCM"

    /// The crypto-suite name of `a=crypto` (RFC 4568 §9.1), e.g. "AES_CM_128_HMAC_SHA1_80".
    public var sdesName: String { rawValue }

    /// The profile named `sdesName` in an `a=crypto` line, or nil for a suite Sluice does not support.
    public init?(sdesName: String) { self.init(rawValue: sdesName) }

    /// The SRTPProtectionProfile of the DTLS use_srtp extension (RFC 5764 §4.1.2, RFC 7714 §14.2).
    public var dtlsProtectionProfile: UInt16 {
        switch self {
        case .aes128CmHmacSha1_80: 0x0001
        case .aes128CmHmacSha1_32: 0x0002
        case .aeadAes128Gcm: 0x0007
        case .aeadAes256Gcm: 0x0008
        }
    }

    /// Master key bytes (RFC 3711 §8.2; RFC 7714 §12: 128 or 256 bits).
    public var masterKeyLength: Int { self == .aeadAes256Gcm ? 32 : 16 }

    /// Master salt bytes: 112 bits for AES-CM (RFC 3711 §8.2), 96 for AES-GCM (RFC 7714 §12).
    public var masterSaltLength: Int {
        switch self {
        case .aes128CmHmacSha1_80, .aes128CmHmacSha1_32: 14
        case .aeadAes128Gcm, .aeadAes256Gcm: 12
        }
    }

    /// Authentication tag bytes on SRTP packets (RFC 3711 §4.2, RFC 7714 §7.2).
    public var rtpAuthTagLength: Int {
        switch self {
        case .aes128CmHmacSha1_80: 10
        case .aes128CmHmacSha1_32: 4
        case .aeadAes128Gcm, .aeadAes256Gcm: 16
        }
    }

    /// Authentication tag bytes on SRTCP packets: 80 bits for both AES-CM profiles (RFC 4568 §6.2.2).
    public var rtcpAuthTagLength: Int {
        switch self {
        case .aes128CmHmacSha1_80, .aes128CmHmacSha1_32: 10
        case .aeadAes128Gcm, .aeadAes256Gcm: 16
        }
    }

    /// Bytes protection adds to an RTP packet without MKI: the tag (RFC 3711 §3.1).
    public var rtpOverhead: Int { rtpAuthTagLength }

    /// Bytes protection adds to an RTCP packet without MKI: E flag with the 31-bit SRTCP index, and the
    /// tag (RFC 3711 §3.4, RFC 7714 §9).
    public var rtcpOverhead: Int { 4 + rtcpAuthTagLength }

    /// Fills libsrtp's crypto policies for SRTP and SRTCP.
    func configure(rtp: inout srtp_crypto_policy_t, rtcp: inout srtp_crypto_policy_t) {
        switch self {
        case .aes128CmHmacSha1_80:
            sluice_srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&rtp)
            sluice_srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&rtcp)
        case .aes128CmHmacSha1_32:
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&rtp)
            sluice_srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&rtcp)
        case .aeadAes128Gcm:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&rtcp)
        case .aeadAes256Gcm:
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&rtp)
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&rtcp)
        }
    }
}
