/// The SCTP payload protocol identifiers of WebRTC data channels (RFC 8831 §8, RFC 8832 §8.1).
public enum DataChannelPPID: UInt32, Sendable, Hashable {
    /// A DCEP message (RFC 8832).
    case dcep = 50
    /// A UTF-8 text message.
    case string = 51
    /// Deprecated partial text message (RFC 8831 §8: not to be sent).
    case stringPartial = 52
    /// A binary message.
    case binary = 53
    /// Deprecated partial binary message.
    case binaryPartial = 54
    /// An empty text message: SCTP carries one ignored byte (RFC 8831 §6.6).
    case stringEmpty = 56
    /// An empty binary message, likewise.
    case binaryEmpty = 57
}

/// How a channel delivers: ordered or not, and the partial reliability of RFC 3758 (RFC 8831 §6.4).
public struct DataChannelReliability: Sendable, Hashable {
    public enum Limit: Sendable, Hashable {
        /// Retransmitted until acknowledged.
        case reliable
        /// Given up after this many retransmissions (`maxRetransmits`).
        case maxRetransmits(UInt32)
        /// Given up when this many milliseconds have passed since it was first sent (`maxPacketLifeTime`).
        case maxPacketLifetime(milliseconds: UInt32)
    }

    public var ordered: Bool
    public var limit: Limit

    public init(ordered: Bool = true, limit: Limit = .reliable) {
        self.ordered = ordered
        self.limit = limit
    }

    public static let reliable = DataChannelReliability()
}

/// A DCEP message (RFC 8832 §5): DATA_CHANNEL_OPEN or DATA_CHANNEL_ACK, sent with PPID 50 on the channel's
/// stream.
public enum DCEPMessage: Sendable, Hashable {
    case open(DCEPOpen)
    case ack

    /// Message types (RFC 8832 §8.2.1).
    static let openType: UInt8 = 0x03
    static let ackType: UInt8 = 0x02

    /// Why a DCEP message could not be read; the reason names the counter it is dropped under.
    public enum ParseError: Error, Sendable, Hashable {
        case empty
        case unknownMessageType(UInt8)
        case truncatedOpen
        case unknownChannelType(UInt8)
        case labelOrProtocolBeyondMessage
        case labelOrProtocolNotUTF8

        public var reason: String {
            switch self {
            case .empty: "dcep-empty"
            case .unknownMessageType: "dcep-unknown-message-type"
            case .truncatedOpen: "dcep-open-truncated"
            case .unknownChannelType: "dcep-unknown-channel-type"
            case .labelOrProtocolBeyondMessage: "dcep-open-lengths-beyond-message"
            case .labelOrProtocolNotUTF8: "dcep-open-not-utf8"
            }
        }
    }

    public init(parsing bytes: some Collection<UInt8>) throws(ParseError) {
        let bytes = Array(bytes)
        guard let type = bytes.first else { throw .empty }
        switch type {
        case Self.ackType: self = .ack   // RFC 8832 §5.2: one byte; anything after it is ignored
        case Self.openType: self = .open(try DCEPOpen(parsing: bytes))
        default: throw .unknownMessageType(type)
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .ack: [Self.ackType]
        case .open(let open): open.bytes
        }
    }
}

/// DATA_CHANNEL_OPEN (RFC 8832 §5.1).
///
/// ```
///  0: type 0x03 | 1: channel type | 2-3: priority | 4-7: reliability parameter
///  8-9: label length | 10-11: protocol length | 12-: label, then protocol (UTF-8)
/// ```
public struct DCEPOpen: Sendable, Hashable {
    public var reliability: DataChannelReliability
    /// RFC 8832 §5.1: 128 below normal, 256 normal, 512 high, 1024 extra high (W3C very-low to high).
    public var priority: UInt16
    public var label: String
    public var `protocol`: String

    public init(reliability: DataChannelReliability = .reliable, priority: UInt16 = 256, label: String,
                protocol: String = "") {
        self.reliability = reliability
        self.priority = priority
        self.label = label
        self.protocol = `protocol`
    }

    /// Channel types (RFC 8832 §8.2.2): bit 0x80 is unordered, the low bits the reliability.
    static func channelType(of reliability: DataChannelReliability) -> UInt8 {
        let base: UInt8 = switch reliability.limit {
        case .reliable: 0x00
        case .maxRetransmits: 0x01
        case .maxPacketLifetime: 0x02
        }
        return base | (reliability.ordered ? 0 : 0x80)
    }

    static func reliability(channelType: UInt8, parameter: UInt32) -> DataChannelReliability? {
        let ordered = channelType & 0x80 == 0
        switch channelType & 0x7F {
        case 0x00: return DataChannelReliability(ordered: ordered, limit: .reliable)
        case 0x01: return DataChannelReliability(ordered: ordered, limit: .maxRetransmits(parameter))
        case 0x02: return DataChannelReliability(ordered: ordered, limit: .maxPacketLifetime(milliseconds: parameter))
        default: return nil
        }
    }

    static let headerLength = 12

    init(parsing bytes: [UInt8]) throws(DCEPMessage.ParseError) {
        guard bytes.count >= Self.headerLength else { throw .truncatedOpen }
        func u16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
        let parameter = UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7])
        guard let reliability = Self.reliability(channelType: bytes[1], parameter: parameter) else {
            throw .unknownChannelType(bytes[1])
        }
        let labelLength = u16(8), protocolLength = u16(10)
        guard Self.headerLength + labelLength + protocolLength <= bytes.count else { throw .labelOrProtocolBeyondMessage }
        let labelEnd = Self.headerLength + labelLength
        guard let label = String(validating: bytes[Self.headerLength..<labelEnd], as: UTF8.self),
              let proto = String(validating: bytes[labelEnd..<labelEnd + protocolLength], as: UTF8.self)
        else { throw .labelOrProtocolNotUTF8 }
        self.init(reliability: reliability, priority: UInt16(u16(2)), label: label, protocol: proto)
    }

    public var bytes: [UInt8] {
        let label = Array(label.utf8), proto = Array(`protocol`.utf8)
        let parameter: UInt32 = switch reliability.limit {
        case .reliable: 0
        case .maxRetransmits(let count): count
        case .maxPacketLifetime(let milliseconds): milliseconds
        }
        var out: [UInt8] = [DCEPMessage.openType, Self.channelType(of: reliability),
                            UInt8(priority >> 8), UInt8(priority & 0xFF)]
        out.append(contentsOf: withUnsafeBytes(of: parameter.bigEndian, Array.init))
        out.append(contentsOf: withUnsafeBytes(of: UInt16(clamping: label.count).bigEndian, Array.init))
        out.append(contentsOf: withUnsafeBytes(of: UInt16(clamping: proto.count).bigEndian, Array.init))
        out.append(contentsOf: label.prefix(Int(UInt16.max)))
        out.append(contentsOf: proto.prefix(Int(UInt16.max)))
        return out
    }
}
