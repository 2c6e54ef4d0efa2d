import MediaSRTP

/// How an RTP session protects its packets (RFC 3711): the profile and the master key, as an
/// SDES `a=crypto` line gives them (RFC 4568) or DTLS-SRTP will. One key covers the stream both
/// ways: its RTP and RTCP one way, the RTCP of its receivers back.
public struct SRTPParameters: Sendable {
    public var profile: SRTPProfile
    public var key: SRTPKeyMaterial

    public init(profile: SRTPProfile, key: SRTPKeyMaterial) {
        self.profile = profile
        self.key = key
    }

    /// A fresh random key for `profile`.
    public static func random(_ profile: SRTPProfile = .aes128CmHmacSha1_80) -> SRTPParameters {
        SRTPParameters(profile: profile, key: .random(for: profile))
    }

    /// The sessions that protect what goes out and check what comes in.
    func sessions() throws -> (outbound: SRTPSession, inbound: SRTPSession) {
        (try SRTPSession(profile: profile, key: key, direction: .sender),
         try SRTPSession(profile: profile, key: key, direction: .receiver))
    }
}
