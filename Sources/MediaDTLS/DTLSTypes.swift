import MediaSRTP

/// Which side of the handshake an endpoint plays. In WebRTC the SDP `a=setup` attribute decides it
/// (RFC 5763 §5, RFC 8842 §5): `active` is the DTLS client, `passive` the server.
public enum DTLSRole: Sendable, Hashable {
    /// Sends the ClientHello (RFC 6347 §4.2).
    case client
    /// Answers it.
    case server
}

/// The SRTP keys DTLS-SRTP derives once the handshake completes (RFC 5764 §4.2).
public struct DTLSSRTPKeys: Sendable {
    /// The protection profile the server selected from the client's use_srtp list (RFC 5764 §4.1.2).
    public let profile: SRTPProfile
    /// Key and salt this endpoint protects its packets with: the client's write key when we are the client.
    public let local: SRTPKeyMaterial
    /// Key and salt the peer protects its packets with.
    public let remote: SRTPKeyMaterial
}

/// What an association reports, in order, from `pollEvent`.
public enum DTLSEvent: Sendable {
    /// The handshake completed, the peer's certificate matches the remote fingerprint, and the SRTP keys
    /// are ready.
    case connected(DTLSSRTPKeys)
    /// A record of application data from the peer (SCTP for data channels, RFC 8261).
    case applicationData([UInt8])
    /// The peer sent close_notify (RFC 5246 §7.2.1).
    case closed
    /// The association failed; nothing more is sent or received.
    case failed(DTLSError)
}

/// Why an association failed, or why sending was refused.
public enum DTLSError: Error, Hashable, Sendable {
    /// The peer's certificate does not hash to the fingerprint from SDP (RFC 8122 §5, RFC 5763 §5);
    /// `actual` uses the expected one's algorithm (empty bytes if Sluice cannot compute it).
    case fingerprintMismatch(expected: DTLSFingerprint, actual: DTLSFingerprint)
    /// OpenSSL ended the handshake, or the peer sent a fatal alert; OpenSSL's error text.
    case handshakeFailed(String)
    /// The handshake completed without an SRTP protection profile both sides offer (RFC 5764 §4.1.3).
    case noSRTPProfile
    /// The handshake did not complete, or the remote fingerprint did not come, within the handshake timeout.
    case handshakeTimeout
    /// The peer completed the handshake without presenting a certificate.
    case peerCertificateMissing
    /// The SRTP keys could not be exported (RFC 5705); OpenSSL's error text.
    case keyExportFailed(String)
    /// A fatal error after the handshake, e.g. a fatal alert; OpenSSL's error text.
    case connectionFailed(String)
    /// OpenSSL refused the configuration (e.g. an MTU below its minimum of 256); OpenSSL's error text.
    case setupFailed(String)
    /// `send(applicationData:)` before `.connected` or after the end.
    case notConnected
    /// Application data larger than one record fits in the MTU.
    case applicationDataTooLarge(length: Int, limit: Int)

    /// A stable name for counters and logs.
    public var reason: String {
        switch self {
        case .fingerprintMismatch: "fingerprint-mismatch"
        case .handshakeFailed: "handshake-failed"
        case .noSRTPProfile: "no-srtp-profile"
        case .handshakeTimeout: "handshake-timeout"
        case .peerCertificateMissing: "peer-certificate-missing"
        case .keyExportFailed: "key-export-failed"
        case .connectionFailed: "connection-failed"
        case .setupFailed: "setup-failed"
        case .notConnected: "not-connected"
        case .applicationDataTooLarge: "application-data-too-large"
        }
    }
}

/// Why a datagram given to an association was dropped unread.
public enum DTLSDropReason: String, Sendable, Hashable, CaseIterable {
    /// The first byte is outside 20...63, the DTLS range of RFC 7983 §7 (STUN, RTP or garbage).
    case notDTLS = "not-dtls"
    /// Shorter than a DTLS record header, 13 bytes (RFC 6347 §4.1).
    case tooShort = "too-short"
    /// The association is closed or failed.
    case notRunning = "not-running"
}

/// Counters of an association.
public struct DTLSStatistics: Sendable, Hashable {
    public var datagramsReceived = 0
    public var datagramsSent = 0
    /// Datagrams dropped before OpenSSL saw them, by reason.
    public var dropped: [DTLSDropReason: Int] = [:]
    /// Times the retransmission timer fired and OpenSSL resent its last flight (RFC 6347 §4.2.4).
    public var retransmissionTimeouts = 0

    public init() {}
}
