// ICE candidates (RFC 8445 §5.1) and their SDP form (RFC 8839 §5.1).
import MediaSTUN

/// The type of a candidate (RFC 8445 §5.1.1), with its recommended type preference (§5.1.2.2).
public enum ICECandidateType: String, Hashable, Sendable, CaseIterable {
    case host, srflx, prflx, relay

    /// 126 for host, 110 for peer-reflexive, 100 for server-reflexive, 0 for relayed (RFC 8445 §5.1.2.2).
    public var typePreference: UInt32 {
        switch self {
        case .host: 126
        case .prflx: 110
        case .srflx: 100
        case .relay: 0
        }
    }
}

/// The transport of a candidate. Only UDP candidates take part in checks; TCP ones (RFC 6544) are parsed
/// and ignored by the agent.
public enum ICETransportProtocol: String, Hashable, Sendable {
    case udp, tcp
}

/// One `name value` pair after the fixed fields of a candidate line (RFC 8839 §5.1 `extension-att-name`),
/// e.g. `generation 0`, `ufrag sXJ3`, `network-id 1`, `network-cost 10`, `tcptype active`.
public struct ICECandidateExtension: Hashable, Sendable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// An ICE candidate (RFC 8445 §5.1): what an agent signals, and what it learns as peer-reflexive.
///
/// The connection address is kept as written: a numeric IP address, or an mDNS `.local` hostname
/// (draft-ietf-mmusic-mdns-ice-candidates) that stays unresolved (`address` is nil).
public struct ICECandidate: Hashable, Sendable, CustomStringConvertible {
    public var foundation: String
    /// 1 for RTP (the only component with BUNDLE and rtcp-mux), 2 for RTCP.
    public var component: Int
    public var transport: ICETransportProtocol
    public var priority: UInt32
    /// The connection address as written: an IP address or an mDNS hostname.
    public var connectionAddress: String
    public var port: UInt16
    public var type: ICECandidateType
    /// `raddr`/`rport` (RFC 8839 §5.1): the base of a reflexive candidate, the mapped address of a relayed one.
    public var relatedAddress: String?
    public var relatedPort: UInt16?
    /// Everything after the fixed fields, in order (generation, ufrag, network-id, network-cost, tcptype ...).
    public var extensions: [ICECandidateExtension]

    public init(foundation: String, component: Int = 1, transport: ICETransportProtocol = .udp, priority: UInt32,
                connectionAddress: String, port: UInt16, type: ICECandidateType, relatedAddress: String? = nil,
                relatedPort: UInt16? = nil, extensions: [ICECandidateExtension] = []) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.connectionAddress = connectionAddress
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
        self.extensions = extensions
    }

    /// A candidate of this agent at a numeric address, with the priority of RFC 8445 §5.1.2.1.
    public init(type: ICECandidateType, address: TransportAddress, related: TransportAddress? = nil,
                foundation: String, component: Int = 1, localPreference: UInt16 = 65535) {
        self.init(foundation: foundation, component: component,
                  priority: ICECandidate.priority(type: type, localPreference: localPreference, component: component),
                  connectionAddress: address.ip.description, port: address.port, type: type,
                  relatedAddress: related?.ip.description, relatedPort: related?.port)
    }

    /// The numeric transport address; nil for an mDNS hostname (or anything that is not an IP address).
    public var address: TransportAddress? { TransportAddress(host: connectionAddress, port: port) }

    /// True for an mDNS hostname (`<uuid>.local`), which this agent does not resolve.
    public var isMDNS: Bool { connectionAddress.lowercased().hasSuffix(".local") }

    /// The value of an extension (e.g. `ufrag`), first one wins.
    public func extensionValue(_ name: String) -> String? { extensions.first { $0.name == name }?.value }

    /// Candidate priority (RFC 8445 §5.1.2.1): 2^24 × type preference + 2^8 × local preference + (256 − component).
    public static func priority(type: ICECandidateType, localPreference: UInt16, component: Int) -> UInt32 {
        let componentPart = UInt32(max(0, min(255, 256 - component)))
        return (type.typePreference << 24) + (UInt32(localPreference) << 8) + componentPart
    }

    /// A foundation (RFC 8445 §5.1.1.3): equal for candidates of the same type, base IP address, STUN or TURN
    /// server IP address and transport; different otherwise. A decimal FNV-1a hash of those, as browsers write.
    public static func foundation(type: ICECandidateType, baseIP: IPAddress, serverIP: IPAddress? = nil,
                                  transport: ICETransportProtocol = .udp) -> String {
        var hash: UInt32 = 2_166_136_261
        let key = "\(type.rawValue)|\(baseIP)|\(serverIP?.description ?? "")|\(transport.rawValue)"
        for byte in key.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return String(hash)
    }

    // MARK: SDP

    /// Parses a candidate as browsers send it in `RTCIceCandidate.candidate` (RFC 8839 §5.1):
    /// `candidate:842163049 1 udp 1677729535 203.0.113.7 56143 typ srflx raddr 10.0.0.2 rport 56143 generation 0`.
    /// Also accepts the value without `candidate:` and the whole `a=candidate:` line.
    public init(parsing text: String) throws(ICECandidateParseError) {
        var line = Substring(text)
        while let first = line.first, first.isWhitespace { line = line.dropFirst() }
        if line.hasPrefix("a=") { line = line.dropFirst(2) }
        if line.lowercased().hasPrefix("candidate:") { line = line.dropFirst("candidate:".count) }
        // Split at whitespace scalars, not Characters: a combining mark after a separator joins it into
        // one Character, which hid the split here, and `attributeValue` then did not read back.
        let fields = line.unicodeScalars.split(whereSeparator: \.properties.isWhitespace).map { String(Substring($0)) }
        guard fields.count >= 8 else { throw .tooFewFields(fields.count) }

        let foundation = fields[0]
        guard (1...32).contains(foundation.utf8.count), foundation.utf8.allSatisfy(ICECredentials.isICEChar) else {
            throw .badFoundation(foundation)
        }
        guard fields[1].count <= 3, let component = Int(fields[1]), (1...256).contains(component) else {
            throw .badComponent(fields[1])
        }
        guard let transport = ICETransportProtocol(rawValue: fields[2].lowercased()) else {
            throw .unsupportedTransport(fields[2])
        }
        // RFC 8445 §5.1.2.1: a positive integer up to 2^31 − 1.
        guard fields[3].count <= 10, let priority = UInt32(fields[3]), (1...0x7FFF_FFFF).contains(priority) else {
            throw .badPriority(fields[3])
        }
        let connectionAddress = fields[4]
        guard Self.isAddressOrHostname(connectionAddress) else { throw .badAddress(connectionAddress) }
        guard let port = UInt16(fields[5]) else { throw .badPort(fields[5]) }
        guard fields[6] == "typ" else { throw .missingType }
        guard let type = ICECandidateType(rawValue: fields[7]) else { throw .badType(fields[7]) }

        var relatedAddress: String?
        var relatedPort: UInt16?
        var extensions: [ICECandidateExtension] = []
        var index = 8
        while index < fields.count {
            guard index + 1 < fields.count else { throw .danglingExtension(fields[index]) }
            let (name, value) = (fields[index], fields[index + 1])
            switch name {
            case "raddr" where relatedAddress == nil && extensions.isEmpty:
                guard Self.isAddressOrHostname(value) else { throw .badRelatedAddress(value) }
                relatedAddress = value
            case "rport" where relatedPort == nil && extensions.isEmpty:
                guard let number = UInt16(value) else { throw .badRelatedPort(value) }
                relatedPort = number
            default:
                extensions.append(ICECandidateExtension(name: name, value: value))
            }
            index += 2
        }
        self.init(foundation: foundation, component: component, transport: transport, priority: priority,
                  connectionAddress: connectionAddress, port: port, type: type, relatedAddress: relatedAddress,
                  relatedPort: relatedPort, extensions: extensions)
    }

    /// The attribute value, `candidate:...`, with the transport in lower case as browsers write it.
    public var attributeValue: String {
        var text = "candidate:\(foundation) \(component) \(transport.rawValue) \(priority) "
            + "\(connectionAddress) \(port) typ \(type.rawValue)"
        if let relatedAddress { text += " raddr \(relatedAddress)" }
        if let relatedPort { text += " rport \(relatedPort)" }
        for item in extensions { text += " \(item.name) \(item.value)" }
        return text
    }

    public var description: String { attributeValue }

    /// An IP address, or a hostname of letters, digits, '-' and '.' that is not all digits and dots
    /// (mDNS names; RFC 8839 allows FQDNs).
    private static func isAddressOrHostname(_ text: String) -> Bool {
        if IPAddress(text) != nil { return true }
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        let isNameByte: (UInt8) -> Bool = { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x2E
        }
        let isDigitOrDot: (UInt8) -> Bool = { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }
        return text.utf8.allSatisfy(isNameByte) && !text.utf8.allSatisfy(isDigitOrDot)
    }
}

/// Why a candidate line was refused (RFC 8839 §5.1 grammar); `reason` is a stable name for counters.
public enum ICECandidateParseError: Error, Hashable, Sendable, CustomStringConvertible {
    case tooFewFields(Int)
    case badFoundation(String)
    case badComponent(String)
    case unsupportedTransport(String)
    case badPriority(String)
    case badAddress(String)
    case badPort(String)
    case missingType
    case badType(String)
    case badRelatedAddress(String)
    case badRelatedPort(String)
    case danglingExtension(String)

    public var reason: String {
        switch self {
        case .tooFewFields: "too-few-fields"
        case .badFoundation: "bad-foundation"
        case .badComponent: "bad-component"
        case .unsupportedTransport: "unsupported-transport"
        case .badPriority: "bad-priority"
        case .badAddress: "bad-address"
        case .badPort: "bad-port"
        case .missingType: "missing-type"
        case .badType: "bad-type"
        case .badRelatedAddress: "bad-related-address"
        case .badRelatedPort: "bad-related-port"
        case .danglingExtension: "dangling-extension"
        }
    }

    public var description: String { "ICE candidate: \(reason)" }
}
