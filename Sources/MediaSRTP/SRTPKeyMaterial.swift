import MediaSDP

/// A master key and master salt (RFC 3711 §8.2), with the SDES lifetime and MKI they came with
/// (RFC 4568 §6.1).
///
/// Key material is never printed or logged: `description`, `debugDescription`, `dump` and `Mirror` show
/// only lengths, lifetime and MKI.
public struct SRTPKeyMaterial: Sendable {
    /// The master key followed by the master salt, the layout of SDES and of libsrtp's policy key.
    let keyAndSalt: [UInt8]
    /// Bytes of the master key at the start of `keyAndSalt`.
    public let keyLength: Int
    /// The key's lifetime in packets as signalled (RFC 4568 §6.1); informational, libsrtp enforces the
    /// RFC 3711 §9.2 limits itself.
    public let lifetime: SDPCrypto.Lifetime?
    /// The master key identifier carried in every packet when set (RFC 3711 §3.1).
    public let mki: SDPCrypto.MKI?

    public var saltLength: Int { keyAndSalt.count - keyLength }
    public var masterKey: [UInt8] { Array(keyAndSalt[..<keyLength]) }
    public var masterSalt: [UInt8] { Array(keyAndSalt[keyLength...]) }

    /// Key and salt given apart; their lengths must be the profile's.
    public init(key: [UInt8], salt: [UInt8], profile: SRTPProfile, lifetime: SDPCrypto.Lifetime? = nil,
                mki: SDPCrypto.MKI? = nil) throws(SRTPError) {
        guard key.count == profile.masterKeyLength else {
            throw .badKey(.wrongLength(part: .key, expected: profile.masterKeyLength, actual: key.count))
        }
        guard salt.count == profile.masterSaltLength else {
            throw .badKey(.wrongLength(part: .salt, expected: profile.masterSaltLength, actual: salt.count))
        }
        try self.init(keyAndSalt: key + salt, profile: profile, lifetime: lifetime, mki: mki)
    }

    /// The master key followed by the salt, as SDES carries them and DTLS-SRTP exports them (RFC 5764 §4.2).
    public init(keyAndSalt: [UInt8], profile: SRTPProfile, lifetime: SDPCrypto.Lifetime? = nil,
                mki: SDPCrypto.MKI? = nil) throws(SRTPError) {
        let expected = profile.masterKeyLength + profile.masterSaltLength
        guard keyAndSalt.count == expected else {
            throw .badKey(.wrongLength(part: .keyAndSalt, expected: expected, actual: keyAndSalt.count))
        }
        if let mki, mki.length < 8, mki.value >> UInt64(8 * mki.length) != 0 {
            throw .badKey(.mkiTooLarge(value: mki.value, length: mki.length))
        }
        self.keyAndSalt = keyAndSalt
        self.keyLength = profile.masterKeyLength
        self.lifetime = lifetime
        self.mki = mki
    }

    /// A key parameter of an `a=crypto` line, e.g. from `SDPCrypto.keys` (RFC 4568 §6.1).
    public init(_ key: SDPCrypto.Key, profile: SRTPProfile) throws(SRTPError) {
        guard let bytes = key.keySaltBytes else { throw .badKey(.sdes(.keySaltNotBase64)) }
        try self.init(keyAndSalt: bytes, profile: profile, lifetime: key.lifetime, mki: key.mki)
    }

    /// SDES key parameter text, `inline:<base64 key||salt>[|<lifetime>][|<MKI>:<length>]` (RFC 4568 §6.1).
    public init(sdesInline text: some StringProtocol, profile: SRTPProfile) throws(SRTPError) {
        let key: SDPCrypto.Key
        do {
            key = try SDPCrypto.Key(parsing: text)
        } catch {
            throw .badKey(.sdes(error))
        }
        try self.init(key, profile: profile)
    }

    /// The key parameter for an `a=crypto` line offering this key (RFC 4568 §6.1).
    public var sdesKey: SDPCrypto.Key { SDPCrypto.Key(keySaltBytes: keyAndSalt, lifetime: lifetime, mki: mki) }

    /// Fresh key material for `profile` from the system's cryptographically secure generator
    /// (getrandom on Linux), as RFC 4568 §6.1 requires of an offerer.
    public static func random(for profile: SRTPProfile) -> SRTPKeyMaterial {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<profile.masterKeyLength + profile.masterSaltLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        do {
            return try SRTPKeyMaterial(keyAndSalt: bytes, profile: profile)
        } catch {
            preconditionFailure("random key material has the profile's length")
        }
    }

    /// The MKI as it is written in packets: `value` big-endian in `length` bytes (RFC 3711 §3.1).
    var mkiBytes: [UInt8] {
        guard let mki else { return [] }
        return (0..<mki.length).map { index in
            let shift = 8 * (mki.length - 1 - index)
            return shift < 64 ? UInt8(truncatingIfNeeded: mki.value >> UInt64(shift)) : 0
        }
    }
}

extension SRTPKeyMaterial: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Lengths, lifetime and MKI only: the key and salt are redacted.
    public var description: String {
        var parts = ["\(keyLength)-byte key", "\(saltLength)-byte salt"]
        if let lifetime { parts.append("lifetime \(lifetime)") }
        if let mki { parts.append("MKI \(mki.value):\(mki.length)") }
        return "SRTPKeyMaterial(\(parts.joined(separator: ", ")), redacted)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["keyLength": keyLength, "saltLength": saltLength, "lifetime": lifetime as Any,
                                "mki": mki as Any, "keyAndSalt": "redacted"],
               displayStyle: .struct)
    }
}
