// STUN messages (RFC 8489 §5-§6, §14): parsing with FINGERPRINT checked, serializing with
// MESSAGE-INTEGRITY(-SHA256) and FINGERPRINT computed, and integrity checks on received bytes.

import Foundation  // NFC, for OpaqueString (RFC 8265 §4.2.2)

/// The key for MESSAGE-INTEGRITY(-SHA256) (RFC 8489 §9.1.1, §9.2.2).
public struct STUNIntegrityKey: Hashable, Sendable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Short-term credentials (RFC 8489 §9.1.1): the password after OpaqueString preparation
    /// (RFC 8265 §4.2), in UTF-8. ICE passwords are ASCII and pass through unchanged. See
    /// `opaqueStringPrepared` for what of the preparation is done.
    public static func shortTerm(password: String) -> STUNIntegrityKey {
        STUNIntegrityKey(bytes: Array(opaqueStringPrepared(password).utf8))
    }

    /// Long-term credentials (RFC 8489 §9.2.2): MD5(username ":" OpaqueString(realm) ":"
    /// OpaqueString(password)); with `.sha256`, SHA-256 of the same text. The username is used as
    /// given (the RFC's SASLprep/UsernameCasePreserved step is left to the caller).
    public static func longTerm(username: String, realm: String, password: String,
                                algorithm: STUNPasswordAlgorithm = .md5) -> STUNIntegrityKey {
        let text = username + ":" + opaqueStringPrepared(realm) + ":" + opaqueStringPrepared(password)
        let digest: Crypto.Digest = algorithm.algorithm == STUNPasswordAlgorithm.sha256.algorithm ? .sha256 : .md5
        return STUNIntegrityKey(bytes: Crypto.hash(digest, Array(text.utf8)))
    }

    /// RFC 8265's OpaqueString profile (§4.2.2) as a mapping: non-ASCII spaces (Unicode Zs) become
    /// U+0020 (step 2), then NFC (step 4), so that a password typed as "e" and a combining accent
    /// keys the same as one typed as "é". ASCII passes through unchanged. Not done: refusing
    /// disallowed code points (§4.2.1); a key cannot fail, so such a password is used as it maps.
    static func opaqueStringPrepared(_ text: String) -> String {
        guard !text.utf8.allSatisfy({ $0 < 0x80 }) else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let isNonASCIISpace = scalar.value >= 0x80 && scalar.properties.generalCategory == .spaceSeparator
            scalars.append(isNonASCIISpace ? " " : scalar)
        }
        return String(scalars).precomposedStringWithCanonicalMapping
    }
}

/// A STUN message (RFC 8489 §5): method, class, transaction ID and attributes, as a value.
public struct STUNMessage: Hashable, Sendable {
    public var method: STUNMethod
    public var messageClass: STUNClass
    public var transactionID: STUNTransactionID
    /// In wire order. A parsed message keeps MESSAGE-INTEGRITY(-SHA256) and FINGERPRINT here; attributes
    /// after MESSAGE-INTEGRITY other than those are dropped (RFC 8489 §14.5).
    public var attributes: [STUNAttribute]

    public init(method: STUNMethod, messageClass: STUNClass, transactionID: STUNTransactionID = .random(),
                attributes: [STUNAttribute] = []) {
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /// The fixed header size (RFC 8489 §5).
    public static let headerSize = 20

    // MARK: Recognising

    /// RFC 8489 §5 / RFC 7983 quick test: at least a header, first two bits zero, the magic cookie, a
    /// length that is a multiple of 4 and matches the datagram.
    public static func looksLikeSTUN(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= headerSize, bytes[0] & 0xC0 == 0 else { return false }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        return readUInt32(bytes, 4) == stunMagicCookie && length % 4 == 0 && headerSize + length == bytes.count
    }

    public static func looksLikeSTUN(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { looksLikeSTUN($0) }
    }

    // MARK: Parsing

    /// Parses a datagram (RFC 8489 §5, §14), checking FINGERPRINT when present (§14.7) and each known
    /// attribute's length and value. Integrity is not checked here: see `verifyIntegrity` or
    /// `init(parsing:key:)`.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(STUNError) {
        let layout = try Layout(bytes)
        let (method, messageClass) = splitSTUNMessageType(layout.messageType)
        self.method = method
        self.messageClass = messageClass
        self.transactionID = layout.transactionID
        var attributes: [STUNAttribute] = []
        attributes.reserveCapacity(layout.spans.count)
        for span in layout.spans where !span.ignored {
            let value = Array(bytes[span.valueRange])
            let attribute = try STUNAttribute(type: span.type, value: value, transactionID: layout.transactionID)
            if case .fingerprint(let received) = attribute {
                let computed = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<span.start])) ^ STUNMessage.fingerprintXor
                if computed != received { throw .badFingerprint }
            }
            attributes.append(attribute)
        }
        self.attributes = attributes
    }

    public init(parsing bytes: [UInt8]) throws(STUNError) {
        self = try STUNMessage.withBytes(bytes) { raw throws(STUNError) in try STUNMessage(parsing: raw) }
    }

    /// Parses and checks MESSAGE-INTEGRITY(-SHA256) under `key` in one step: the usual way to accept an
    /// authenticated request or response.
    public init(parsing bytes: UnsafeRawBufferPointer, key: STUNIntegrityKey) throws(STUNError) {
        try self.init(parsing: bytes)
        try STUNMessage.verifyIntegrity(of: bytes, key: key)
    }

    public init(parsing bytes: [UInt8], key: STUNIntegrityKey) throws(STUNError) {
        self = try STUNMessage.withBytes(bytes) { raw throws(STUNError) in try STUNMessage(parsing: raw, key: key) }
    }

    // MARK: Integrity

    /// Checks the integrity of a received message (RFC 8489 §9.1.3, §9.2.4, §14.5, §14.6): the HMAC of
    /// the bytes before the attribute, with the header length counting up to the end of the attribute.
    /// MESSAGE-INTEGRITY-SHA256 is checked when present (MESSAGE-INTEGRITY is then ignored), otherwise
    /// MESSAGE-INTEGRITY. Throws `.missingIntegrity` or `.integrityMismatch` (or a parse error).
    public static func verifyIntegrity(of bytes: UnsafeRawBufferPointer, key: STUNIntegrityKey) throws(STUNError) {
        let layout = try Layout(bytes)
        let integrity = layout.spans.first { $0.type == STUNAttributeType.messageIntegritySHA256 && !$0.ignored }
            ?? layout.spans.first { $0.type == STUNAttributeType.messageIntegrity && !$0.ignored }
        guard let integrity else { throw .missingIntegrity }
        let sha256 = integrity.type == STUNAttributeType.messageIntegritySHA256
        let length = integrity.valueRange.count
        let validLength = sha256 ? (16...32).contains(length) && length % 4 == 0 : length == 20
        guard validLength else { throw .badAttributeLength(type: integrity.type, length: length) }
        var covered = Array(bytes[0..<integrity.start])
        covered.setBigEndian(UInt16(integrity.valueRange.upperBound - headerSize), at: 2)
        let mac = Crypto.hmac(sha256 ? .sha256 : .sha1, key: key.bytes, data: covered)
        let received = Array(bytes[integrity.valueRange])
        guard Crypto.constantTimeEqual(Array(mac.prefix(length)), received) else { throw .integrityMismatch }
    }

    public static func verifyIntegrity(of bytes: [UInt8], key: STUNIntegrityKey) throws(STUNError) {
        try withBytes(bytes) { raw throws(STUNError) in try verifyIntegrity(of: raw, key: key) }
    }

    // MARK: Serializing

    /// Writes the message (RFC 8489 §5, §14). The attributes go in order, padded with zero bytes; any
    /// MESSAGE-INTEGRITY(-SHA256) or FINGERPRINT among them is skipped, and so are the attributes from
    /// the first one that would take the message past the 16-bit length field. With a key, MESSAGE-INTEGRITY
    /// (HMAC-SHA1, §14.5) or, with `sha256`, MESSAGE-INTEGRITY-SHA256 (full 32 bytes, §14.6) follows;
    /// with `fingerprint`, FINGERPRINT comes last (§14.7).
    public func serialized(integrity: STUNIntegrityKey? = nil, sha256: Bool = false, fingerprint: Bool = false) -> [UInt8] {
        serialized(integrity: integrity, sha256: sha256, fingerprint: fingerprint, paddingByte: 0)
    }

    /// As `serialized(integrity:sha256:fingerprint:)`, padding attributes with `paddingByte` (RFC 8489
    /// §14 lets the sender pick; RFC 5769's vectors pad some with spaces).
    public func serialized(integrity: STUNIntegrityKey? = nil, sha256: Bool = false, fingerprint: Bool = false,
                           paddingByte: UInt8) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(STUNMessage.headerSize + 64)
        out.appendBigEndian(stunMessageType(method, messageClass))
        out.appendBigEndian(UInt16(0))  // length, set below
        out.appendBigEndian(stunMagicCookie)
        out += transactionID.bytes
        // The 16-bit length field bounds the message; room is kept for integrity and fingerprint.
        let attributeBudget = 0xFFFF - (4 + 32) - (4 + 4)
        for attribute in attributes where !attribute.isComputed {
            let value = attribute.encodedValue(transactionID: transactionID)
            let size = 4 + value.count + STUNAttribute.paddingLength(value.count)
            guard out.count - STUNMessage.headerSize + size <= attributeBudget else { break }
            STUNAttribute.append(type: attribute.type, value: value, into: &out, paddingByte: paddingByte)
        }
        if let integrity {
            let (type, digest): (UInt16, Crypto.Digest) =
                sha256 ? (STUNAttributeType.messageIntegritySHA256, .sha256) : (STUNAttributeType.messageIntegrity, .sha1)
            // §14.5: the length covers up to and including MESSAGE-INTEGRITY.
            out.setBigEndian(UInt16(out.count + 4 + digest.size - STUNMessage.headerSize), at: 2)
            STUNAttribute.append(type: type, value: Crypto.hmac(digest, key: integrity.bytes, data: out), into: &out)
        }
        if fingerprint {
            // §14.7: the length includes FINGERPRINT; the CRC covers everything before it.
            out.setBigEndian(UInt16(out.count + 8 - STUNMessage.headerSize), at: 2)
            let crc = CRC32.checksum(out) ^ STUNMessage.fingerprintXor
            out.appendBigEndian(STUNAttributeType.fingerprint)
            out.appendBigEndian(UInt16(4))
            out.appendBigEndian(crc)
        }
        out.setBigEndian(UInt16(out.count - STUNMessage.headerSize), at: 2)
        return out
    }

    // MARK: Helpers

    /// FINGERPRINT is the CRC-32 xored with "STUN" (RFC 8489 §14.7).
    static let fingerprintXor: UInt32 = 0x5354_554E

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// Runs `body` over the array's bytes, keeping the typed error.
    static func withBytes<R>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(STUNError) -> R) throws(STUNError) -> R {
        let result: Result<R, STUNError> = bytes.withUnsafeBytes { raw in
            do throws(STUNError) { return .success(try body(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// Where the header fields and attributes of a STUN datagram lie, after the structural checks of
/// RFC 8489 §5 and §14 (no attribute values decoded).
struct Layout {
    struct Span {
        var type: UInt16
        /// Offset of the attribute's type field.
        var start: Int
        var valueRange: Range<Int>
        /// After MESSAGE-INTEGRITY, attributes other than MESSAGE-INTEGRITY-SHA256 and FINGERPRINT are
        /// ignored (§14.5); after MESSAGE-INTEGRITY-SHA256, all but FINGERPRINT (§14.6).
        var ignored: Bool
    }

    var messageType: UInt16
    var transactionID: STUNTransactionID
    var spans: [Span]

    init(_ bytes: UnsafeRawBufferPointer) throws(STUNError) {
        let header = STUNMessage.headerSize
        guard bytes.count >= header else { throw .tooShort(count: bytes.count) }
        guard bytes[0] & 0xC0 == 0 else { throw .notSTUN }
        guard STUNMessage.readUInt32(bytes, 4) == stunMagicCookie else { throw .badMagicCookie }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length % 4 == 0, header + length == bytes.count else {
            throw .badLength(declared: length, available: bytes.count - header)
        }
        messageType = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        transactionID = STUNTransactionID(bytes: Array(bytes[8..<20]))
        spans = []
        var offset = header
        var afterIntegrity = false
        var afterIntegritySHA256 = false
        var afterFingerprint = false
        // The length is a multiple of 4 and every attribute is padded to 4, so each header fits.
        while offset + 4 <= bytes.count {
            let type = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let valueLength = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let valueStart = offset + 4
            let paddedEnd = valueStart + (valueLength + 3) / 4 * 4
            guard paddedEnd <= bytes.count else { throw .truncatedAttribute(type: type) }
            if afterFingerprint { throw .attributeAfterFingerprint(type: type) }
            let ignored: Bool
            switch type {
            case STUNAttributeType.fingerprint:
                ignored = false
                afterFingerprint = true
            case STUNAttributeType.messageIntegritySHA256:
                ignored = afterIntegritySHA256
                afterIntegritySHA256 = true
            default:
                ignored = afterIntegrity || afterIntegritySHA256
                if type == STUNAttributeType.messageIntegrity { afterIntegrity = true }
            }
            spans.append(Span(type: type, start: offset, valueRange: valueStart..<(valueStart + valueLength), ignored: ignored))
            offset = paddedEnd
        }
    }
}
