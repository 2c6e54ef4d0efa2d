// STUN attributes (RFC 8489 §14) with the ICE (RFC 8445 §16.1) and TURN (RFC 8656 §18) ones: typed
// values, their type codes, and each one's value encoding with its length checks.

/// The type codes of the attributes this module knows (IANA "STUN Attributes" registry). Types
/// 0x0000-0x7FFF are comprehension-required, 0x8000-0xFFFF comprehension-optional (RFC 8489 §14).
public enum STUNAttributeType {
    public static let mappedAddress: UInt16 = 0x0001
    public static let username: UInt16 = 0x0006
    public static let messageIntegrity: UInt16 = 0x0008
    public static let errorCode: UInt16 = 0x0009
    public static let unknownAttributes: UInt16 = 0x000A
    public static let channelNumber: UInt16 = 0x000C
    public static let lifetime: UInt16 = 0x000D
    public static let xorPeerAddress: UInt16 = 0x0012
    public static let data: UInt16 = 0x0013
    public static let realm: UInt16 = 0x0014
    public static let nonce: UInt16 = 0x0015
    public static let xorRelayedAddress: UInt16 = 0x0016
    public static let requestedAddressFamily: UInt16 = 0x0017
    public static let evenPort: UInt16 = 0x0018
    public static let requestedTransport: UInt16 = 0x0019
    public static let dontFragment: UInt16 = 0x001A
    public static let messageIntegritySHA256: UInt16 = 0x001C
    public static let passwordAlgorithm: UInt16 = 0x001D
    public static let userhash: UInt16 = 0x001E
    public static let xorMappedAddress: UInt16 = 0x0020
    public static let reservationToken: UInt16 = 0x0022
    public static let priority: UInt16 = 0x0024
    public static let useCandidate: UInt16 = 0x0025
    public static let additionalAddressFamily: UInt16 = 0x8000
    public static let passwordAlgorithms: UInt16 = 0x8002
    public static let alternateDomain: UInt16 = 0x8003
    public static let software: UInt16 = 0x8022
    public static let alternateServer: UInt16 = 0x8023
    public static let fingerprint: UInt16 = 0x8028
    public static let iceControlled: UInt16 = 0x8029
    public static let iceControlling: UInt16 = 0x802A

    /// Whether an agent that does not know `type` must fail the message (RFC 8489 §14: 0x0000-0x7FFF).
    public static func isComprehensionRequired(_ type: UInt16) -> Bool { type < 0x8000 }
}

/// A password algorithm and its parameters (RFC 8489 §14.11, §14.12; IANA: 1 = MD5, 2 = SHA-256).
public struct STUNPasswordAlgorithm: Hashable, Sendable {
    public var algorithm: UInt16
    public var parameters: [UInt8]

    public init(algorithm: UInt16, parameters: [UInt8] = []) {
        self.algorithm = algorithm
        self.parameters = parameters
    }

    public static let md5 = STUNPasswordAlgorithm(algorithm: 1)
    public static let sha256 = STUNPasswordAlgorithm(algorithm: 2)
}

/// One STUN attribute as a typed value (RFC 8489 §14, RFC 8445 §16.1, RFC 8656 §18).
public enum STUNAttribute: Hashable, Sendable {
    case mappedAddress(TransportAddress)
    case username(String)
    /// The HMAC-SHA1 as parsed (20 bytes). `STUNMessage.serialized(integrity:)` computes and writes it;
    /// one in `attributes` is not written.
    case messageIntegrity([UInt8])
    case errorCode(STUNErrorCode)
    case unknownAttributes([UInt16])
    case realm(String)
    case nonce(String)
    /// The HMAC-SHA256 as parsed (16-32 bytes); computed and written by `serialized(integrity:sha256:)`.
    case messageIntegritySHA256([UInt8])
    case passwordAlgorithm(STUNPasswordAlgorithm)
    case passwordAlgorithms([STUNPasswordAlgorithm])
    /// SHA-256(username ":" realm), 32 bytes (RFC 8489 §14.4).
    case userhash([UInt8])
    case alternateDomain(String)
    case xorMappedAddress(TransportAddress)
    case software(String)
    case alternateServer(TransportAddress)
    /// The CRC-32 as parsed; computed and written by `serialized(fingerprint: true)`.
    case fingerprint(UInt32)
    // ICE (RFC 8445 §16.1)
    case priority(UInt32)
    case useCandidate
    case iceControlled(UInt64)
    case iceControlling(UInt64)
    // TURN (RFC 8656 §18)
    case channelNumber(UInt16)
    /// Seconds.
    case lifetime(UInt32)
    case xorPeerAddress(TransportAddress)
    case data([UInt8])
    case xorRelayedAddress(TransportAddress)
    /// 0x01 IPv4, 0x02 IPv6.
    case requestedAddressFamily(UInt8)
    case additionalAddressFamily(UInt8)
    /// The R bit: reserve the next higher port too.
    case evenPort(Bool)
    /// An IANA protocol number: 17 = UDP.
    case requestedTransport(UInt8)
    case dontFragment
    /// 8 bytes.
    case reservationToken([UInt8])
    /// Any other type, its value kept as bytes (without padding).
    case other(type: UInt16, value: [UInt8])

    /// The attribute's type code.
    public var type: UInt16 {
        typealias T = STUNAttributeType
        switch self {
        case .mappedAddress: return T.mappedAddress
        case .username: return T.username
        case .messageIntegrity: return T.messageIntegrity
        case .errorCode: return T.errorCode
        case .unknownAttributes: return T.unknownAttributes
        case .realm: return T.realm
        case .nonce: return T.nonce
        case .messageIntegritySHA256: return T.messageIntegritySHA256
        case .passwordAlgorithm: return T.passwordAlgorithm
        case .passwordAlgorithms: return T.passwordAlgorithms
        case .userhash: return T.userhash
        case .alternateDomain: return T.alternateDomain
        case .xorMappedAddress: return T.xorMappedAddress
        case .software: return T.software
        case .alternateServer: return T.alternateServer
        case .fingerprint: return T.fingerprint
        case .priority: return T.priority
        case .useCandidate: return T.useCandidate
        case .iceControlled: return T.iceControlled
        case .iceControlling: return T.iceControlling
        case .channelNumber: return T.channelNumber
        case .lifetime: return T.lifetime
        case .xorPeerAddress: return T.xorPeerAddress
        case .data: return T.data
        case .xorRelayedAddress: return T.xorRelayedAddress
        case .requestedAddressFamily: return T.requestedAddressFamily
        case .additionalAddressFamily: return T.additionalAddressFamily
        case .evenPort: return T.evenPort
        case .requestedTransport: return T.requestedTransport
        case .dontFragment: return T.dontFragment
        case .reservationToken: return T.reservationToken
        case .other(let type, _): return type
        }
    }

    /// MESSAGE-INTEGRITY, MESSAGE-INTEGRITY-SHA256 and FINGERPRINT: computed by the serializer, not
    /// written from `attributes`.
    var isComputed: Bool {
        switch self {
        case .messageIntegrity, .messageIntegritySHA256, .fingerprint: true
        default: false
        }
    }
}

// MARK: - Value encoding

/// The magic cookie (RFC 8489 §5).
let stunMagicCookie: UInt32 = 0x2112_A442

extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ value: UInt16) {
        append(UInt8(value >> 8))
        append(UInt8(value & 0xFF))
    }

    mutating func appendBigEndian(_ value: UInt32) {
        appendBigEndian(UInt16(value >> 16))
        appendBigEndian(UInt16(value & 0xFFFF))
    }

    mutating func appendBigEndian(_ value: UInt64) {
        appendBigEndian(UInt32(value >> 32))
        appendBigEndian(UInt32(value & 0xFFFF_FFFF))
    }

    /// Writes a big-endian UInt16 at `offset` (which the caller has made sure is inside).
    mutating func setBigEndian(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(value >> 8)
        self[offset + 1] = UInt8(value & 0xFF)
    }

    func bigEndianUInt16(at offset: Int) -> UInt16 { UInt16(self[offset]) << 8 | UInt16(self[offset + 1]) }

    func bigEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(bigEndianUInt16(at: offset)) << 16 | UInt32(bigEndianUInt16(at: offset + 2))
    }

    func bigEndianUInt64(at offset: Int) -> UInt64 {
        UInt64(bigEndianUInt32(at: offset)) << 32 | UInt64(bigEndianUInt32(at: offset + 4))
    }
}

extension STUNAttribute {
    /// Appends type, length, value and padding (RFC 8489 §14: padded to 4 bytes with `paddingByte`;
    /// the length excludes the padding).
    static func append(type: UInt16, value: [UInt8], into out: inout [UInt8], paddingByte: UInt8 = 0) {
        out.appendBigEndian(type)
        out.appendBigEndian(UInt16(value.count))
        out += value
        out += [UInt8](repeating: paddingByte, count: paddingLength(value.count))
    }

    /// The padding after a value of `count` bytes.
    static func paddingLength(_ count: Int) -> Int { (4 - count % 4) % 4 }

    /// The value bytes, without padding.
    func encodedValue(transactionID: STUNTransactionID) -> [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .mappedAddress(let address), .alternateServer(let address):
            out = Self.addressValue(address, xorWith: nil)
        case .xorMappedAddress(let address), .xorPeerAddress(let address), .xorRelayedAddress(let address):
            out = Self.addressValue(address, xorWith: transactionID)
        case .username(let text), .realm(let text), .nonce(let text), .software(let text), .alternateDomain(let text):
            out = Array(text.utf8)
        case .messageIntegrity(let bytes), .messageIntegritySHA256(let bytes), .userhash(let bytes),
             .data(let bytes), .reservationToken(let bytes), .other(_, let bytes):
            out = bytes
        case .errorCode(let error):
            // RFC 8489 §14.8: 21 reserved bits, the class (hundreds) in 3 bits, the number (0-99) in 8.
            let code = min(max(error.code, 300), 699)
            out = [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(error.reason.utf8)
        case .unknownAttributes(let types):
            for type in types { out.appendBigEndian(type) }
        case .passwordAlgorithm(let algorithm):
            Self.appendAlgorithm(algorithm, to: &out)
        case .passwordAlgorithms(let algorithms):
            for algorithm in algorithms { Self.appendAlgorithm(algorithm, to: &out) }
        case .fingerprint(let value), .priority(let value), .lifetime(let value):
            out.appendBigEndian(value)
        case .useCandidate, .dontFragment:
            break
        case .iceControlled(let value), .iceControlling(let value):
            out.appendBigEndian(value)
        case .channelNumber(let channel):
            out.appendBigEndian(channel)
            out += [0, 0]  // RFFU
        case .requestedAddressFamily(let family), .additionalAddressFamily(let family):
            out = [family, 0, 0, 0]
        case .requestedTransport(let proto):
            out = [proto, 0, 0, 0]
        case .evenPort(let reserveNext):
            out = [reserveNext ? 0x80 : 0]
        }
        return out
    }

    /// RFC 8489 §14.1 (MAPPED-ADDRESS) and §14.2 (XOR-MAPPED-ADDRESS): 0, family, port, address; the
    /// XOR form xors the port with the cookie's top 16 bits and the address with cookie + transaction ID.
    private static func addressValue(_ address: TransportAddress, xorWith transactionID: STUNTransactionID?) -> [UInt8] {
        var out: [UInt8] = [0, address.ip.isIPv4 ? 0x01 : 0x02]
        guard let transactionID else {
            out.appendBigEndian(address.port)
            return out + address.ip.bytes
        }
        out.appendBigEndian(address.port ^ UInt16(stunMagicCookie >> 16))
        let mask = xorMask(transactionID)
        return out + zip(address.ip.bytes, mask).map { $0 ^ $1 }
    }

    /// The magic cookie followed by the transaction ID: what X-Address is xored with.
    private static func xorMask(_ transactionID: STUNTransactionID) -> [UInt8] {
        var mask: [UInt8] = []
        mask.appendBigEndian(stunMagicCookie)
        return mask + transactionID.bytes
    }

    /// RFC 8489 §14.11: algorithm, parameters length, parameters padded to 4.
    private static func appendAlgorithm(_ algorithm: STUNPasswordAlgorithm, to out: inout [UInt8]) {
        let parameters = algorithm.parameters.prefix(0xFFF0)
        out.appendBigEndian(algorithm.algorithm)
        out.appendBigEndian(UInt16(parameters.count))
        out += parameters
        out += [UInt8](repeating: 0, count: paddingLength(parameters.count))
    }
}

// MARK: - Value decoding

extension STUNAttribute {
    /// The attribute of `type` with value `value` (no padding), checking its length and contents.
    init(type: UInt16, value: [UInt8], transactionID: STUNTransactionID) throws(STUNError) {
        typealias T = STUNAttributeType
        func requireLength(_ valid: Bool) throws(STUNError) {
            if !valid { throw .badAttributeLength(type: type, length: value.count) }
        }
        func text(maximum: Int) throws(STUNError) -> String {
            try requireLength(value.count <= maximum)
            guard let string = String(validating: value, as: UTF8.self) else { throw .badAttributeValue(type: type) }
            return string
        }
        switch type {
        case T.mappedAddress: self = .mappedAddress(try Self.address(type, value, xorWith: nil))
        case T.alternateServer: self = .alternateServer(try Self.address(type, value, xorWith: nil))
        case T.xorMappedAddress: self = .xorMappedAddress(try Self.address(type, value, xorWith: transactionID))
        case T.xorPeerAddress: self = .xorPeerAddress(try Self.address(type, value, xorWith: transactionID))
        case T.xorRelayedAddress: self = .xorRelayedAddress(try Self.address(type, value, xorWith: transactionID))
        // Limits of RFC 8489 §14.3 (USERNAME < 513 bytes), §14.9 (REALM), §14.10 (NONCE), §14.14
        // (SOFTWARE): fewer than 763 bytes; ALTERNATE-DOMAIN §14.16: at most 255.
        case T.username: self = .username(try text(maximum: 512))
        case T.realm: self = .realm(try text(maximum: 762))
        case T.nonce: self = .nonce(try text(maximum: 762))
        case T.software: self = .software(try text(maximum: 762))
        case T.alternateDomain: self = .alternateDomain(try text(maximum: 255))
        case T.messageIntegrity:
            try requireLength(value.count == 20)
            self = .messageIntegrity(value)
        case T.messageIntegritySHA256:
            // RFC 8489 §14.6: 16 to 32 bytes, a multiple of 4.
            try requireLength((16...32).contains(value.count) && value.count % 4 == 0)
            self = .messageIntegritySHA256(value)
        case T.userhash:
            try requireLength(value.count == 32)
            self = .userhash(value)
        case T.errorCode:
            try requireLength((4...(4 + 762)).contains(value.count))
            let errorClass = Int(value[2] & 0x07)
            let number = Int(value[3])
            guard (3...6).contains(errorClass), number < 100,
                  let reason = String(validating: value[4...], as: UTF8.self)
            else { throw .badAttributeValue(type: type) }
            self = .errorCode(STUNErrorCode(code: errorClass * 100 + number, reason: reason))
        case T.unknownAttributes:
            try requireLength(value.count % 2 == 0)
            self = .unknownAttributes(stride(from: 0, to: value.count, by: 2).map { value.bigEndianUInt16(at: $0) })
        case T.passwordAlgorithm:
            let algorithms = try Self.algorithms(type, value)
            guard algorithms.count == 1 else { throw .badAttributeValue(type: type) }
            self = .passwordAlgorithm(algorithms[0])
        case T.passwordAlgorithms:
            self = .passwordAlgorithms(try Self.algorithms(type, value))
        case T.fingerprint:
            try requireLength(value.count == 4)
            self = .fingerprint(value.bigEndianUInt32(at: 0))
        case T.priority:
            try requireLength(value.count == 4)
            self = .priority(value.bigEndianUInt32(at: 0))
        case T.lifetime:
            try requireLength(value.count == 4)
            self = .lifetime(value.bigEndianUInt32(at: 0))
        case T.useCandidate:
            try requireLength(value.isEmpty)
            self = .useCandidate
        case T.dontFragment:
            try requireLength(value.isEmpty)
            self = .dontFragment
        case T.iceControlled:
            try requireLength(value.count == 8)
            self = .iceControlled(value.bigEndianUInt64(at: 0))
        case T.iceControlling:
            try requireLength(value.count == 8)
            self = .iceControlling(value.bigEndianUInt64(at: 0))
        case T.channelNumber:
            try requireLength(value.count == 4)
            self = .channelNumber(value.bigEndianUInt16(at: 0))
        case T.data:
            self = .data(value)
        case T.requestedAddressFamily:
            try requireLength(value.count == 4)
            self = .requestedAddressFamily(value[0])
        case T.additionalAddressFamily:
            try requireLength(value.count == 4)
            self = .additionalAddressFamily(value[0])
        case T.requestedTransport:
            try requireLength(value.count == 4)
            self = .requestedTransport(value[0])
        case T.evenPort:
            try requireLength(value.count == 1)
            self = .evenPort(value[0] & 0x80 != 0)
        case T.reservationToken:
            try requireLength(value.count == 8)
            self = .reservationToken(value)
        default:
            self = .other(type: type, value: value)
        }
    }

    /// An address value (RFC 8489 §14.1, §14.2): 8 bytes for family 0x01, 20 for 0x02.
    private static func address(_ type: UInt16, _ value: [UInt8], xorWith transactionID: STUNTransactionID?) throws(STUNError) -> TransportAddress {
        guard value.count >= 4 else { throw .badAttributeLength(type: type, length: value.count) }
        let addressLength: Int
        switch value[1] {
        case 0x01: addressLength = 4
        case 0x02: addressLength = 16
        default: throw .badAddressFamily(type: type, family: value[1])
        }
        guard value.count == 4 + addressLength else { throw .badAttributeLength(type: type, length: value.count) }
        var port = value.bigEndianUInt16(at: 2)
        var bytes = Array(value[4...])
        if let transactionID {
            port ^= UInt16(stunMagicCookie >> 16)
            bytes = zip(bytes, xorMask(transactionID)).map { $0 ^ $1 }
        }
        guard let ip = IPAddress(bytes: bytes) else { throw .badAttributeValue(type: type) }
        return TransportAddress(ip: ip, port: port)
    }

    /// A run of (algorithm, length, parameters padded to 4) filling `value` exactly (RFC 8489 §14.11).
    private static func algorithms(_ type: UInt16, _ value: [UInt8]) throws(STUNError) -> [STUNPasswordAlgorithm] {
        var result: [STUNPasswordAlgorithm] = []
        var offset = 0
        while offset < value.count {
            guard offset + 4 <= value.count else { throw .badAttributeLength(type: type, length: value.count) }
            let algorithm = value.bigEndianUInt16(at: offset)
            let length = Int(value.bigEndianUInt16(at: offset + 2))
            let end = offset + 4 + length
            let paddedEnd = offset + 4 + (length + 3) / 4 * 4
            guard paddedEnd <= value.count else { throw .badAttributeLength(type: type, length: value.count) }
            result.append(STUNPasswordAlgorithm(algorithm: algorithm, parameters: Array(value[(offset + 4)..<end])))
            offset = paddedEnd
        }
        return result
    }
}
