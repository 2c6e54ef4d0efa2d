/// `a=crypto:<tag> <crypto-suite> <key-params> [<session-params>]` (RFC 4568 §9.1): SDES keys for SRTP.
/// Key parameters are `inline:<key||salt base64>[|<lifetime>][|<MKI>:<length>]`, several joined by `;`.
public struct SDPCrypto: SDPAttributeValue {
    public static let attributeName = "crypto"
    /// 1 to 9 digits, unique within the section (RFC 4568 §9.1).
    public var tag: Int
    /// E.g. "AES_CM_128_HMAC_SHA1_80" (RFC 4568 §6.2) or "AEAD_AES_128_GCM" (RFC 7714 §12).
    public var suite: String
    public var keys: [Key]
    /// Session parameters such as `KDR=1` or `UNENCRYPTED_SRTCP`, as written.
    public var sessionParameters: [String]

    /// One `inline:` key parameter (RFC 4568 §6.1).
    public struct Key: Sendable, Hashable {
        /// The concatenated master key and salt, base64 (RFC 4648 §4) as written.
        public var keySalt: String
        public var lifetime: Lifetime?
        public var mki: MKI?

        public init(keySalt: String, lifetime: Lifetime? = nil, mki: MKI? = nil) {
            self.keySalt = keySalt
            self.lifetime = lifetime
            self.mki = mki
        }

        /// A key parameter for `keySaltBytes`, the master key followed by the master salt, in base64.
        public init(keySaltBytes: [UInt8], lifetime: Lifetime? = nil, mki: MKI? = nil) {
            self.init(keySalt: encodeBase64(keySaltBytes), lifetime: lifetime, mki: mki)
        }

        /// The decoded master key followed by the master salt; nil when `keySalt` is not base64.
        public var keySaltBytes: [UInt8]? { decodeBase64(keySalt) }

        var text: String {
            "inline:\(keySalt)" + (lifetime.map { "|\($0.text)" } ?? "") + (mki.map { "|\($0.value):\($0.length)" } ?? "")
        }

        /// Parses one key parameter, `inline:<key||salt>[|<lifetime>][|<MKI>:<length>]` (RFC 4568 §6.1).
        public init(parsing parameter: some StringProtocol) throws(KeyParameterError) {
            guard parameter.hasPrefix("inline:") else { throw .notInline }
            let pieces = parameter.dropFirst("inline:".count).split(separator: "|", omittingEmptySubsequences: false)
            guard let keySalt = pieces.first, !keySalt.isEmpty, decodeBase64(keySalt) != nil else { throw .keySaltNotBase64 }
            self.init(keySalt: String(keySalt))
            for piece in pieces.dropFirst() {
                if let colon = piece.firstIndex(of: ":") {
                    guard mki == nil, let value = UInt64(piece[..<colon]), let length = Int(piece[piece.index(after: colon)...]),
                          (1...128).contains(length)
                    else { throw .invalidMKI }
                    mki = MKI(value: value, length: length)
                } else {
                    guard lifetime == nil, mki == nil, let parsed = SDPCrypto.lifetime(Substring(piece)) else { throw .invalidLifetime }
                    lifetime = parsed
                }
            }
        }
    }

    /// Why a key parameter does not parse (RFC 4568 §6.1, §9.2).
    public enum KeyParameterError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The key method is not `inline:` (the only one RFC 4568 defines).
        case notInline
        /// The concatenated key and salt are empty or not padded base64 (RFC 4648 §4).
        case keySaltNotBase64
        /// The lifetime is neither a count nor `2^<1-64>`, repeated, or after the MKI.
        case invalidLifetime
        /// The MKI is not `<value>:<length 1-128>`, or repeated.
        case invalidMKI

        public var description: String {
            switch self {
            case .notInline: "key method is not inline"
            case .keySaltNotBase64: "key and salt are not base64"
            case .invalidLifetime: "lifetime is not a number or 2^<number>"
            case .invalidMKI: "MKI is not <value>:<length 1-128>"
            }
        }
    }

    /// The master key lifetime in packets: `2^31` or a plain count (RFC 4568 §6.1).
    public enum Lifetime: Sendable, Hashable, CustomStringConvertible {
        case powerOfTwo(Int)
        case packets(UInt64)

        var text: String {
            switch self {
            case .powerOfTwo(let exponent): "2^\(exponent)"
            case .packets(let count): "\(count)"
            }
        }

        /// As written in the key parameter: "2^31" or "1048576".
        public var description: String { text }
    }

    /// The master key identifier and its length in bytes, 1 to 128 (RFC 4568 §6.1).
    public struct MKI: Sendable, Hashable {
        public var value: UInt64
        public var length: Int

        public init(value: UInt64, length: Int) {
            self.value = value
            self.length = length
        }
    }

    public init(tag: Int, suite: String, keys: [Key], sessionParameters: [String] = []) {
        self.tag = tag
        self.suite = suite
        self.keys = keys
        self.sessionParameters = sessionParameters
    }

    public init(attributeValue: String) throws(SDPError) {
        let parts = fields(Substring(attributeValue))
        guard parts.count >= 3 else { throw Self.malformed(attributeValue, "expected <tag> <suite> <key-params>") }
        guard parts[0].count <= 9, let tag = Int(parts[0]) else { throw Self.malformed(attributeValue, "tag is not 1 to 9 digits") }
        var keys: [Key] = []
        for parameter in parts[2].split(separator: ";", omittingEmptySubsequences: false) {
            keys.append(try Self.key(parameter, attributeValue))
        }
        self.init(tag: tag, suite: String(parts[1]), keys: keys, sessionParameters: parts.dropFirst(3).map(String.init))
    }

    private static func key(_ parameter: Substring, _ value: String) throws(SDPError) -> Key {
        do {
            return try Key(parsing: parameter)
        } catch {
            throw malformed(value, error.description)
        }
    }

    fileprivate static func lifetime(_ text: Substring) -> Lifetime? {
        if text.hasPrefix("2^") { return Int(text.dropFirst(2)).flatMap { (1...64).contains($0) ? .powerOfTwo($0) : nil } }
        return UInt64(text).map(Lifetime.packets)
    }

    public var attributeValue: String {
        (["\(tag)", suite, keys.map(\.text).joined(separator: ";")] + sessionParameters).joined(separator: " ")
    }
}

/// Decodes base64 with padding (RFC 4648 §4); nil for any other text.
func decodeBase64(_ text: some StringProtocol) -> [UInt8]? {
    var bits: UInt32 = 0, count = 0, padding = 0
    var bytes: [UInt8] = []
    for character in text.utf8 {
        let value: UInt32
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): value = 62
        case UInt8(ascii: "/"): value = 63
        case UInt8(ascii: "="): padding += 1; continue
        default: return nil
        }
        guard padding == 0 else { return nil }
        bits = (bits << 6 | value) & 0xFFFF
        count += 6
        if count >= 8 {
            count -= 8
            bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
        }
    }
    let total = text.utf8.count
    guard total % 4 == 0, padding <= 2 else { return nil }
    return bytes
}

/// Encodes `bytes` as base64 with padding (RFC 4648 §4).
func encodeBase64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var text: [UInt8] = []
    text.reserveCapacity((bytes.count + 2) / 3 * 4)
    for start in stride(from: 0, to: bytes.count, by: 3) {
        let count = min(3, bytes.count - start)
        var group: UInt32 = 0
        for index in 0..<3 { group = group << 8 | UInt32(index < count ? bytes[start + index] : 0) }
        for index in 0..<4 {
            text.append(index <= count ? alphabet[Int(group >> UInt32(18 - 6 * index) & 0x3F)] : UInt8(ascii: "="))
        }
    }
    return String(decoding: text, as: UTF8.self)
}
