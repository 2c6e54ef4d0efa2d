import MediaSDP

/// The ICE and DTLS parameters of one transport as a description states them (JSEP, RFC 8829
/// §5.2.1): plain values here; the ICE and DTLS modules act on them.
public struct TransportDescription: Sendable, Hashable {
    /// `a=ice-ufrag` (RFC 8839 §5.4): 4 to 256 ice-chars.
    public var iceUfrag: String
    /// `a=ice-pwd` (RFC 8839 §5.4): 22 to 256 ice-chars.
    public var icePwd: String
    /// `a=ice-options` tags, e.g. "trickle" (RFC 8840 §4.1.1).
    public var iceOptions: [String]
    /// `a=fingerprint` lines: the hashes of the DTLS certificate (RFC 8122 §5).
    public var fingerprints: [SDPFingerprint]
    /// `a=setup` (RFC 8842 §5). An offer Sluice makes always says actpass, its answer the role it chose;
    /// a remote description's is what it said (RFC 4145 §4 default when absent).
    public var setup: SDPSetup
    /// `a=candidate` values as text (RFC 8839 §5.1); the ICE module parses them.
    public var candidates: [String]
    /// `a=end-of-candidates` (RFC 8840 §4.1.2).
    public var endOfCandidates: Bool

    public init(iceUfrag: String, icePwd: String, iceOptions: [String] = ["trickle"], fingerprints: [SDPFingerprint],
                setup: SDPSetup = .actpass, candidates: [String] = [], endOfCandidates: Bool = false)
    {
        self.iceUfrag = iceUfrag
        self.icePwd = icePwd
        self.iceOptions = iceOptions
        self.fingerprints = fingerprints
        self.setup = setup
        self.candidates = candidates
        self.endOfCandidates = endOfCandidates
    }

    /// The transport lines of a media section, in the order browsers write them.
    func attributes(setup: SDPSetup) -> [SDPAttribute] {
        var lines = [SDPICEUsernameFragment(iceUfrag).attribute, SDPICEPassword(icePwd).attribute]
        if !iceOptions.isEmpty { lines.append(SDPICEOptions(iceOptions).attribute) }
        lines += fingerprints.map(\.attribute)
        lines.append(setup.attribute)
        lines += candidates.map { SDPCandidate($0).attribute }
        if endOfCandidates { lines.append(SDPAttribute(name: "end-of-candidates")) }
        return lines
    }
}

/// Why a WebRTC description cannot be answered or used (JSEP, RFC 8829 §5.7, §5.8). `reason` is a
/// stable name for counters.
public enum JSEPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An attribute JSEP needs does not parse.
    case malformed(SDPError)
    /// No section is left to carry the transport: every one is rejected (port 0).
    case noTransport
    /// The transport's section (with the session level) has no `a=ice-ufrag` (RFC 8839 §5.4).
    case missingICEUfrag(mid: String?)
    /// The transport's section has no `a=ice-pwd` (RFC 8839 §5.4).
    case missingICEPwd(mid: String?)
    /// The transport's section has no `a=fingerprint` (RFC 8122 §5; JSEP §5.8 requires one).
    case missingFingerprint(mid: String?)
    /// An answer says `a=setup:actpass`, which only an offer may (RFC 8842 §5.3).
    case actpassInAnswer(mid: String?)
    /// `a=setup:holdconn`: the peer wants no DTLS connection (RFC 4145 §4); a WebRTC call needs one.
    case holdconn(mid: String?)
    /// The BUNDLE group names a mid no section has (RFC 9143 §7.1.2).
    case unknownBundleMid(String)

    /// The error's stable name.
    public var reason: String {
        switch self {
        case .malformed: "malformed-sdp"
        case .noTransport: "no-transport"
        case .missingICEUfrag: "no-ice-ufrag"
        case .missingICEPwd: "no-ice-pwd"
        case .missingFingerprint: "no-fingerprint"
        case .actpassInAnswer: "answer-setup-actpass"
        case .holdconn: "setup-holdconn"
        case .unknownBundleMid: "bundle-mid-unknown"
        }
    }

    public var description: String {
        let section = { (mid: String?) in mid.map { "section \($0)" } ?? "the transport section" }
        return switch self {
        case .malformed(let error): "\(reason): \(error)"
        case .noTransport: "\(reason): every section is rejected"
        case .missingICEUfrag(let mid): "\(reason): \(section(mid)) has no a=ice-ufrag"
        case .missingICEPwd(let mid): "\(reason): \(section(mid)) has no a=ice-pwd"
        case .missingFingerprint(let mid): "\(reason): \(section(mid)) has no a=fingerprint"
        case .actpassInAnswer(let mid): "\(reason): \(section(mid)) answers a=setup:actpass (RFC 8842 §5.3)"
        case .holdconn(let mid): "\(reason): \(section(mid)) says a=setup:holdconn"
        case .unknownBundleMid(let mid): "\(reason): the BUNDLE group names mid \(mid), which no section has"
        }
    }
}

/// Whether a description is an offer or an answer (JSEP, RFC 8829 §4.1.8).
public enum SDPType: String, Sendable, Hashable {
    case offer, answer
}

extension SDPSetup {
    /// The role the answerer takes to an offer's role (RFC 8842 §5.2, §5.3): active to actpass (as
    /// JSEP §5.3.1 says browsers do) and to passive, passive to active.
    public static func answering(_ offered: SDPSetup, mid: String? = nil) throws(JSEPError) -> SDPSetup {
        switch offered {
        case .actpass, .passive: .active
        case .active: .passive
        case .holdconn: throw .holdconn(mid: mid)
        }
    }

    /// The offerer's role once the answer says `answered` (RFC 8842 §5.3): the opposite one.
    public static func offererRole(answered: SDPSetup, mid: String? = nil) throws(JSEPError) -> SDPSetup {
        switch answered {
        case .active: .passive
        case .passive: .active
        case .actpass: throw .actpassInAnswer(mid: mid)
        case .holdconn: throw .holdconn(mid: mid)
        }
    }

    /// Whether this side, in this role, sends the DTLS ClientHello (RFC 4145 §4: active connects).
    public var isDTLSClient: Bool { self == .active }
}

/// The URIs of the RTP header extensions WebRTC peers negotiate (RFC 8285 §5).
public enum RTPHeaderExtensionURI {
    /// The section's mid in each packet, for BUNDLE demultiplexing (RFC 9143 §15.2).
    public static let mid = "urn:ietf:params:rtp-hdrext:sdes:mid"
    /// Absolute send time, for receive-side bandwidth estimation (libwebrtc's abs-send-time).
    public static let absSendTime = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    /// Transport-wide sequence numbers, for transport-cc feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    public static let transportWideCC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
}

/// The ids a section maps the WebRTC header extensions to (RFC 8285 §5); nil when not negotiated.
public struct RTPHeaderExtensionIDs: Sendable, Hashable {
    public var mid: Int?
    public var absSendTime: Int?
    public var transportWideCC: Int?

    public init(mid: Int? = nil, absSendTime: Int? = nil, transportWideCC: Int? = nil) {
        self.mid = mid
        self.absSendTime = absSendTime
        self.transportWideCC = transportWideCC
    }

    init(_ maps: [SDPExtensionMap]) {
        func id(_ uri: String) -> Int? { maps.first { $0.uri == uri }?.id }
        self.init(mid: id(RTPHeaderExtensionURI.mid), absSendTime: id(RTPHeaderExtensionURI.absSendTime),
                  transportWideCC: id(RTPHeaderExtensionURI.transportWideCC))
    }
}
