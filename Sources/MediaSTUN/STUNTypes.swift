// The small values a STUN message is made of: method, class, transaction ID, error codes, and the
// error thrown for a datagram that is not acceptable STUN.

/// A STUN method: 12 bits (RFC 8489 §5, §18.1; TURN's in RFC 8656 §17).
public struct STUNMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16

    /// Keeps the low 12 bits (the method field has no more).
    public init(rawValue: UInt16) { self.rawValue = rawValue & 0x0FFF }

    public static let binding = STUNMethod(rawValue: 0x001)
    public static let allocate = STUNMethod(rawValue: 0x003)
    public static let refresh = STUNMethod(rawValue: 0x004)
    public static let send = STUNMethod(rawValue: 0x006)
    public static let data = STUNMethod(rawValue: 0x007)
    public static let createPermission = STUNMethod(rawValue: 0x008)
    public static let channelBind = STUNMethod(rawValue: 0x009)

    public var description: String {
        switch self {
        case .binding: "Binding"
        case .allocate: "Allocate"
        case .refresh: "Refresh"
        case .send: "Send"
        case .data: "Data"
        case .createPermission: "CreatePermission"
        case .channelBind: "ChannelBind"
        default: "method 0x" + String(rawValue, radix: 16)
        }
    }
}

/// The class of a STUN message (RFC 8489 §5): two bits C1 C0 spread through the message type.
public enum STUNClass: Hashable, Sendable {
    case request, indication, successResponse, errorResponse

    /// C1 C0 as a number 0-3.
    var bits: UInt16 {
        switch self {
        case .request: 0b00
        case .indication: 0b01
        case .successResponse: 0b10
        case .errorResponse: 0b11
        }
    }

    init(bits: UInt16) {
        switch bits & 0b11 {
        case 0b00: self = .request
        case 0b01: self = .indication
        case 0b10: self = .successResponse
        default: self = .errorResponse
        }
    }
}

/// The 14-bit STUN message type from a method and a class (RFC 8489 §5, figure 3):
/// M11-M7 C1 M6-M4 C0 M3-M0.
func stunMessageType(_ method: STUNMethod, _ messageClass: STUNClass) -> UInt16 {
    let m = method.rawValue
    let c = messageClass.bits
    return (m & 0x000F) | (m & 0x0070) << 1 | (m & 0x0F80) << 2 | (c & 0b01) << 4 | (c & 0b10) << 7
}

/// The method and class of a 14-bit message type (the inverse of `stunMessageType`).
func splitSTUNMessageType(_ type: UInt16) -> (STUNMethod, STUNClass) {
    let method = (type & 0x000F) | (type >> 1) & 0x0070 | (type >> 2) & 0x0F80
    let classBits = (type >> 4) & 0b01 | (type >> 7) & 0b10
    return (STUNMethod(rawValue: method), STUNClass(bits: classBits))
}

/// The 96-bit transaction ID (RFC 8489 §6).
public struct STUNTransactionID: Hashable, Sendable, CustomStringConvertible {
    /// Always 12 bytes.
    public let bytes: [UInt8]

    /// The first 12 of `bytes`, zero-filled if there are fewer.
    public init(bytes: [UInt8]) {
        self.bytes = Array(bytes.prefix(12)) + [UInt8](repeating: 0, count: max(0, 12 - bytes.count))
    }

    /// A new ID from the system's random source (RFC 8489 §6: uniformly and randomly chosen).
    public static func random() -> STUNTransactionID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A new ID from `generator` (seeded generators give reproducible tests).
    public static func random(using generator: inout some RandomNumberGenerator) -> STUNTransactionID {
        STUNTransactionID(bytes: (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// 24 hex digits.
    public var description: String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// An ERROR-CODE (RFC 8489 §14.8): a code 300-699 and a reason phrase.
public struct STUNErrorCode: Hashable, Sendable, CustomStringConvertible {
    public var code: Int
    public var reason: String

    public init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    /// RFC 8489 §14.8.
    public static let tryAlternate = STUNErrorCode(code: 300, reason: "Try Alternate")
    public static let badRequest = STUNErrorCode(code: 400, reason: "Bad Request")
    public static let unauthorized = STUNErrorCode(code: 401, reason: "Unauthorized")
    public static let unknownAttribute = STUNErrorCode(code: 420, reason: "Unknown Attribute")
    public static let staleNonce = STUNErrorCode(code: 438, reason: "Stale Nonce")
    public static let serverError = STUNErrorCode(code: 500, reason: "Server Error")
    /// RFC 8445 §7.3.1.1.
    public static let roleConflict = STUNErrorCode(code: 487, reason: "Role Conflict")
    /// RFC 8656 §19.
    public static let forbidden = STUNErrorCode(code: 403, reason: "Forbidden")
    public static let requestTimedOut = STUNErrorCode(code: 408, reason: "Request Timed Out")
    public static let allocationMismatch = STUNErrorCode(code: 437, reason: "Allocation Mismatch")
    public static let addressFamilyNotSupported = STUNErrorCode(code: 440, reason: "Address Family not Supported")
    public static let wrongCredentials = STUNErrorCode(code: 441, reason: "Wrong Credentials")
    public static let unsupportedTransportProtocol = STUNErrorCode(code: 442, reason: "Unsupported Transport Protocol")
    public static let peerAddressFamilyMismatch = STUNErrorCode(code: 443, reason: "Peer Address Family Mismatch")
    public static let allocationQuotaReached = STUNErrorCode(code: 486, reason: "Allocation Quota Reached")
    public static let insufficientCapacity = STUNErrorCode(code: 508, reason: "Insufficient Capacity")

    /// "487 Role Conflict".
    public var description: String { "\(code) \(reason)" }
}

/// Why a datagram was not accepted as STUN or TURN ChannelData. `reason` is a stable name for counters.
public enum STUNError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer bytes than a header (20 for STUN, RFC 8489 §5; 4 for ChannelData, RFC 8656 §12.4).
    case tooShort(count: Int)
    /// The first two bits are not zero (RFC 8489 §5).
    case notSTUN
    /// Bytes 4-7 are not 0x2112A442 (RFC 8489 §5).
    case badMagicCookie
    /// The header's length is not a multiple of 4 or does not match the datagram (RFC 8489 §5).
    case badLength(declared: Int, available: Int)
    /// An attribute (with its padding) runs past the end of the message (RFC 8489 §14).
    case truncatedAttribute(type: UInt16)
    /// An attribute's length is wrong for its type (e.g. PRIORITY not 4 bytes).
    case badAttributeLength(type: UInt16, length: Int)
    /// An attribute's value is not valid (e.g. a string that is not UTF-8, an error class out of range).
    case badAttributeValue(type: UInt16)
    /// An address attribute's family is neither 0x01 (IPv4) nor 0x02 (IPv6) (RFC 8489 §14.1).
    case badAddressFamily(type: UInt16, family: UInt8)
    /// An attribute follows FINGERPRINT, which must be last (RFC 8489 §14.7).
    case attributeAfterFingerprint(type: UInt16)
    /// FINGERPRINT does not match the message's CRC-32 (RFC 8489 §14.7).
    case badFingerprint
    /// Integrity was asked for but the message has no MESSAGE-INTEGRITY(-SHA256) (RFC 8489 §9).
    case missingIntegrity
    /// MESSAGE-INTEGRITY(-SHA256) does not match the HMAC under the given key (RFC 8489 §9).
    case integrityMismatch
    /// A ChannelData channel number outside 0x4000-0x4FFF (RFC 8656 §12).
    case badChannelNumber(UInt16)

    /// A stable name for counters.
    public var reason: String {
        switch self {
        case .tooShort: "too-short"
        case .notSTUN: "not-stun"
        case .badMagicCookie: "bad-magic-cookie"
        case .badLength: "bad-length"
        case .truncatedAttribute: "truncated-attribute"
        case .badAttributeLength: "bad-attribute-length"
        case .badAttributeValue: "bad-attribute-value"
        case .badAddressFamily: "bad-address-family"
        case .attributeAfterFingerprint: "attribute-after-fingerprint"
        case .badFingerprint: "bad-fingerprint"
        case .missingIntegrity: "missing-integrity"
        case .integrityMismatch: "integrity-mismatch"
        case .badChannelNumber: "bad-channel-number"
        }
    }

    public var description: String {
        switch self {
        case .tooShort(let count): "\(reason): \(count) bytes"
        case .badLength(let declared, let available): "\(reason): header says \(declared), \(available) after the header"
        case .truncatedAttribute(let type), .badAttributeValue(let type), .attributeAfterFingerprint(let type):
            "\(reason): attribute 0x\(String(type, radix: 16))"
        case .badAttributeLength(let type, let length): "\(reason): attribute 0x\(String(type, radix: 16)), \(length) bytes"
        case .badAddressFamily(let type, let family): "\(reason): attribute 0x\(String(type, radix: 16)), family \(family)"
        case .badChannelNumber(let channel): "\(reason): 0x\(String(channel, radix: 16))"
        default: reason
        }
    }
}
