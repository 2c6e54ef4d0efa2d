/// The transport attributes a WebRTC description carries (JSEP, RFC 8829 §5.2): ICE credentials and
/// options (RFC 8839), the DTLS fingerprint (RFC 8122) and role (RFC 4145, RFC 8842), media stream ids
/// (RFC 8830), and the SCTP port and message size of a data channel section (RFC 8841).

/// ice-char = ALPHA / DIGIT / "+" / "/" (RFC 8839 §5.4).
func isICECharacter(_ byte: UInt8) -> Bool {
    (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
        || byte == 0x2B || byte == 0x2F
}

/// token-char of RFC 8866 §9: any visible ASCII except `"(),/:;<=>?@[\]`.
func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x30...0x39, 0x41...0x5A, 0x5E...0x7E: true
    default: false
    }
}

/// An ICE credential: ice-chars, as many as `allowedLength` says (RFC 8839 §5.4).
public protocol SDPICECredential: SDPAttributeValue {
    static var allowedLength: ClosedRange<Int> { get }
    var value: String { get }
    init(_ value: String)
}

extension SDPICECredential {
    public init(attributeValue: String) throws(SDPError) {
        guard attributeValue.utf8.allSatisfy(isICECharacter) else {
            throw Self.malformed(attributeValue, "not ice-chars (letters, digits, + and /)")
        }
        guard Self.allowedLength.contains(attributeValue.utf8.count) else {
            throw Self.malformed(attributeValue, "length is not \(Self.allowedLength.lowerBound) to \(Self.allowedLength.upperBound)")
        }
        self.init(attributeValue)
    }

    public var attributeValue: String { value }
}

/// `a=ice-ufrag:<ufrag>`, 4 to 256 ice-chars (RFC 8839 §5.4); at session or media level.
public struct SDPICEUsernameFragment: SDPICECredential {
    public static let attributeName = "ice-ufrag"
    public static let allowedLength = 4...256
    public var value: String
    public init(_ value: String) { self.value = value }
}

/// `a=ice-pwd:<password>`, 22 to 256 ice-chars (RFC 8839 §5.4); at session or media level.
public struct SDPICEPassword: SDPICECredential {
    public static let attributeName = "ice-pwd"
    public static let allowedLength = 22...256
    public var value: String
    public init(_ value: String) { self.value = value }
}

/// `a=ice-options:<tag> [<tag>...]` (RFC 8839 §5.6), e.g. `trickle` (RFC 8840 §4.1.1), `ice2`.
public struct SDPICEOptions: SDPAttributeValue {
    public static let attributeName = "ice-options"
    public var options: [String]

    public init(_ options: [String]) { self.options = options }

    public init(attributeValue: String) throws(SDPError) {
        let tags = fields(Substring(attributeValue))
        guard !tags.isEmpty else { throw Self.malformed(attributeValue, "expected at least one option tag") }
        guard tags.allSatisfy({ $0.utf8.allSatisfy(isICECharacter) }) else {
            throw Self.malformed(attributeValue, "an option tag is not ice-chars")
        }
        self.init(tags.map(String.init))
    }

    public var attributeValue: String { options.joined(separator: " ") }
}

/// `a=fingerprint:<hash-func> <XX:XX:...>` (RFC 8122 §5): the hash of the certificate the DTLS peer
/// will present. The hash function is kept as written (compare case-insensitively); the hash is bytes,
/// written back as uppercase hex pairs.
public struct SDPFingerprint: SDPAttributeValue {
    public static let attributeName = "fingerprint"
    /// E.g. "sha-256" (RFC 8122 §5 names sha-1, sha-224, sha-256, sha-384, sha-512, md5, md2).
    public var algorithm: String
    public var bytes: [UInt8]

    public init(algorithm: String, bytes: [UInt8]) {
        self.algorithm = algorithm
        self.bytes = bytes
    }

    /// Hash lengths in bytes of the functions RFC 8122 §5 lists; other tokens are taken at any length.
    static let hashLengths = ["sha-1": 20, "sha-224": 28, "sha-256": 32, "sha-384": 48, "sha-512": 64, "md5": 16, "md2": 16]

    public init(attributeValue: String) throws(SDPError) {
        let parts = fields(Substring(attributeValue))
        guard parts.count == 2 else { throw Self.malformed(attributeValue, "expected <hash-func> <fingerprint>") }
        guard parts[0].utf8.allSatisfy(isTokenCharacter) else { throw Self.malformed(attributeValue, "hash function is not a token") }
        var bytes: [UInt8] = []
        for pair in parts[1].split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.utf8.count == 2, let byte = UInt8(pair, radix: 16) else {
                throw Self.malformed(attributeValue, "fingerprint is not colon-separated hex pairs")
            }
            bytes.append(byte)
        }
        if let length = Self.hashLengths[parts[0].lowercased()], length != bytes.count {
            throw Self.malformed(attributeValue, "\(parts[0]) fingerprint has \(bytes.count) bytes, not \(length)")
        }
        self.init(algorithm: String(parts[0]), bytes: bytes)
    }

    public var attributeValue: String { "\(algorithm) \(hexText)" }

    /// The hash as `7B:8B:F0:...` (uppercase, RFC 8122 §5 UHEX).
    public var hexText: String {
        bytes.map { String([Self.hexDigits[Int($0 >> 4)], Self.hexDigits[Int($0 & 0x0F)]]) }.joined(separator: ":")
    }

    private static let hexDigits = Array("0123456789ABCDEF")

    /// Whether `other` names the same hash function (case-insensitively) and bytes.
    public func matches(_ other: SDPFingerprint) -> Bool {
        algorithm.lowercased() == other.algorithm.lowercased() && bytes == other.bytes
    }
}

/// `a=setup:<role>` (RFC 4145 §4, RFC 8842 §5): which side opens the DTLS association. An offer says
/// actpass (JSEP, RFC 8829 §5.2.1); the answer picks active or passive.
public enum SDPSetup: String, SDPAttributeValue, CaseIterable {
    /// This side sends the DTLS ClientHello.
    case active
    /// This side waits for the ClientHello.
    case passive
    /// Either: the answerer decides (only in an offer, RFC 8842 §5.2).
    case actpass
    /// No connection for now (RFC 4145 §4).
    case holdconn

    public static let attributeName = "setup"

    public init(attributeValue: String) throws(SDPError) {
        guard let role = SDPSetup(rawValue: attributeValue) else {
            throw Self.malformed(attributeValue, "role is not active, passive, actpass or holdconn")
        }
        self = role
    }

    public var attributeValue: String { rawValue }
}

/// `a=mid:<identification-tag>` (RFC 5888 §4, RFC 9143 §7): a token naming the section, unique in
/// the description; WebRTC stacks write short ones ("0", "1") since the tag also travels in the
/// RTP header extension.
public struct SDPMediaIdentifier: SDPAttributeValue {
    public static let attributeName = "mid"
    public var value: String

    public init(_ value: String) { self.value = value }

    public init(attributeValue: String) throws(SDPError) {
        guard !attributeValue.isEmpty, attributeValue.utf8.allSatisfy(isTokenCharacter) else {
            throw Self.malformed(attributeValue, "identification tag is not a token")
        }
        // 255 bytes: the most the two-byte RTP header extension carries (RFC 8285 §4.3).
        guard attributeValue.utf8.count <= 255 else { throw Self.malformed(attributeValue, "identification tag is longer than 255 bytes") }
        self.init(attributeValue)
    }

    public var attributeValue: String { value }
}

/// `a=msid:<stream id> [<track id>]` (RFC 8830 §2): the MediaStream the section's track belongs to,
/// and the track's id (application data); "-" as the stream id means none. Each 1 to 64 token-chars.
public struct SDPMediaStreamID: SDPAttributeValue {
    public static let attributeName = "msid"
    public var streamID: String
    public var trackID: String?

    public init(streamID: String, trackID: String? = nil) {
        self.streamID = streamID
        self.trackID = trackID
    }

    public init(attributeValue: String) throws(SDPError) {
        let parts = fields(Substring(attributeValue))
        guard (1...2).contains(parts.count) else { throw Self.malformed(attributeValue, "expected <stream id> [<track id>]") }
        guard parts.allSatisfy({ (1...64).contains($0.utf8.count) && $0.utf8.allSatisfy(isTokenCharacter) }) else {
            throw Self.malformed(attributeValue, "an id is not 1 to 64 token characters")
        }
        self.init(streamID: String(parts[0]), trackID: parts.count == 2 ? String(parts[1]) : nil)
    }

    public var attributeValue: String { streamID + (trackID.map { " \($0)" } ?? "") }
}

/// An attribute whose value is one non-negative integer up to `maximum`.
public protocol SDPIntegerAttribute: SDPAttributeValue {
    static var maximum: Int { get }
    var value: Int { get }
    init(_ value: Int)
}

extension SDPIntegerAttribute {
    public init(attributeValue: String) throws(SDPError) {
        var scanner = SDPScanner(attributeValue)
        guard let value = scanner.integer(maxDigits: 18, max: Self.maximum), scanner.atEnd else {
            throw Self.malformed(attributeValue, "not a number from 0 to \(Self.maximum)")
        }
        self.init(value)
    }

    public var attributeValue: String { String(value) }
}

/// `a=sctp-port:<port>` (RFC 8841 §5): the SCTP port of the data channel association (5000 by custom).
public struct SDPSCTPPort: SDPIntegerAttribute {
    public static let attributeName = "sctp-port"
    public static let maximum = 65535
    public var value: Int
    public init(_ value: Int) { self.value = value }
}

/// `a=max-message-size:<bytes>` (RFC 8841 §6): the largest message this side receives; 0 means no limit.
public struct SDPMaxMessageSize: SDPIntegerAttribute {
    public static let attributeName = "max-message-size"
    public static let maximum = Int(UInt32.max)
    public var value: Int
    public init(_ value: Int) { self.value = value }
}

/// `a=candidate:<candidate>` (RFC 8839 §5.1), kept as its text: the ICE module parses the grammar.
public struct SDPCandidate: SDPAttributeValue {
    public static let attributeName = "candidate"
    /// The text after `a=candidate:`, e.g. `1 1 udp 2130706431 127.0.0.1 50000 typ host`.
    public var value: String

    public init(_ value: String) { self.value = value }

    public init(attributeValue: String) throws(SDPError) {
        guard !attributeValue.trimmingSpacesString.isEmpty else { throw Self.malformed(attributeValue, "empty candidate") }
        self.init(attributeValue)
    }

    public var attributeValue: String { value }
}

extension SDPAttributeContainer {
    /// `a=ice-ufrag` at this level (RFC 8839 §5.4).
    public func iceUsernameFragment() throws(SDPError) -> String? { try value(SDPICEUsernameFragment.self)?.value }

    /// `a=ice-pwd` at this level (RFC 8839 §5.4).
    public func icePassword() throws(SDPError) -> String? { try value(SDPICEPassword.self)?.value }

    /// `a=ice-options` tags at this level, every line's (RFC 8839 §5.6).
    public func iceOptions() throws(SDPError) -> [String] { try values(SDPICEOptions.self).flatMap(\.options) }

    /// `a=fingerprint` lines at this level (RFC 8122 §5; several for several hash functions).
    public func fingerprints() throws(SDPError) -> [SDPFingerprint] { try values(SDPFingerprint.self) }

    /// `a=setup` at this level (RFC 4145 §4).
    public func setupRole() throws(SDPError) -> SDPSetup? { try value(SDPSetup.self) }

    /// `a=end-of-candidates` (RFC 8840 §4.1.2): no more candidates will be trickled.
    public var endOfCandidates: Bool { hasAttribute("end-of-candidates") }
}

extension MediaDescription {
    /// `a=ice-ufrag` of this section, else the session's (RFC 8839 §5.4).
    public func iceUsernameFragment(in session: SessionDescription) throws(SDPError) -> String? {
        if let own = try iceUsernameFragment() { return own }
        return try session.iceUsernameFragment()
    }

    /// `a=ice-pwd` of this section, else the session's (RFC 8839 §5.4).
    public func icePassword(in session: SessionDescription) throws(SDPError) -> String? {
        if let own = try icePassword() { return own }
        return try session.icePassword()
    }

    /// `a=ice-options` of this section, else the session's (RFC 8839 §5.6).
    public func iceOptions(in session: SessionDescription) throws(SDPError) -> [String] {
        let own = try iceOptions()
        return own.isEmpty ? try session.iceOptions() : own
    }

    /// `a=fingerprint` lines of this section, else the session's (RFC 8122 §5).
    public func fingerprints(in session: SessionDescription) throws(SDPError) -> [SDPFingerprint] {
        let own = try fingerprints()
        return own.isEmpty ? try session.fingerprints() : own
    }

    /// `a=setup` of this section, else the session's (RFC 4145 §4).
    public func setupRole(in session: SessionDescription) throws(SDPError) -> SDPSetup? {
        if let own = try setupRole() { return own }
        return try session.setupRole()
    }

    /// `a=end-of-candidates` in this section or at session level (RFC 8840 §4.1.2).
    public func endOfCandidates(in session: SessionDescription) -> Bool { endOfCandidates || session.endOfCandidates }

    /// The `a=candidate` values (RFC 8839 §5.1), as text.
    public func candidates() throws(SDPError) -> [String] { try values(SDPCandidate.self).map(\.value) }

    /// `a=msid` lines (RFC 8830 §2).
    public func mediaStreamIDs() throws(SDPError) -> [SDPMediaStreamID] { try values(SDPMediaStreamID.self) }

    /// The typed `a=mid` (RFC 5888 §4), checked; nil when absent.
    public func mediaIdentifier() throws(SDPError) -> String? { try value(SDPMediaIdentifier.self)?.value }

    /// `a=rtcp-mux-only`: the section cannot fall back to a separate RTCP port (RFC 8858 §3).
    public var rtcpMuxOnly: Bool { hasAttribute("rtcp-mux-only") }

    /// `a=sctp-port` (RFC 8841 §5), nil when absent.
    public func sctpPort() throws(SDPError) -> Int? { try value(SDPSCTPPort.self)?.value }

    /// `a=max-message-size` (RFC 8841 §6), nil when absent (RFC 8841 §6.1: then assume 64 KiB).
    public func maxMessageSize() throws(SDPError) -> Int? { try value(SDPMaxMessageSize.self)?.value }
}

extension SessionDescription {
    /// `a=ice-lite` at session level: the peer implements lite ICE (RFC 8839 §5.3).
    public var iceLite: Bool { hasAttribute("ice-lite") }
}
