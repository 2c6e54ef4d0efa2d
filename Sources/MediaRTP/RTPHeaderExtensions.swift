/// RTP header extensions (RFC 3550 §5.3.1) and the RFC 8285 general mechanism that carries several
/// elements in one: the one-byte form (profile 0xBEDE, §4.2) and the two-byte form (profile 0x100X,
/// §4.3). Elements are read lazily with an iterator over the packet's bytes that yields an ID and the
/// range of its value, without allocating. Other profiles are opaque: their data is one range.

/// The header extension of a parsed RTP packet: its 16-bit profile and where its data lies in the
/// parsed bytes (RFC 3550 §5.3.1).
public struct RTPHeaderExtensions: Sendable, Hashable {
    /// "defined by profile" value of the RFC 8285 one-byte form (§4.2).
    public static let oneByteProfile: UInt16 = 0xBEDE
    /// "defined by profile" value of the RFC 8285 two-byte form (§4.3); the low 4 bits are "appbits".
    public static let twoByteProfile: UInt16 = 0x1000

    /// How the extension data is laid out.
    public enum Form: Sendable, Hashable {
        /// RFC 8285 §4.2: elements with a 4-bit ID (1-14) and 1-16 value bytes.
        case oneByte
        /// RFC 8285 §4.3: elements with an 8-bit ID (1-255) and 0-255 value bytes; `appBits` are the
        /// profile's low 4 bits, left to the application.
        case twoByte(appBits: UInt8)
        /// Any other profile: the data is not made of elements (RFC 3550 §5.3.1).
        case opaque
    }

    /// "defined by profile": the first 16 bits of the extension.
    public var profile: UInt16
    /// The extension data (after the profile and length word), a whole number of 32-bit words.
    public var dataRange: Range<Int>

    public init(profile: UInt16, dataRange: Range<Int>) {
        self.profile = profile
        self.dataRange = dataRange
    }

    public var form: Form {
        if profile == Self.oneByteProfile { return .oneByte }
        if profile & 0xFFF0 == Self.twoByteProfile { return .twoByte(appBits: UInt8(profile & 0x0F)) }
        return .opaque
    }

    /// The whole block: profile, length and data.
    public var blockRange: Range<Int> { dataRange.lowerBound - 4..<dataRange.upperBound }
    public var blockLength: Int { dataRange.count + 4 }

    /// The elements, read from `bytes` (the buffer the packet was parsed from). Empty for `.opaque`.
    public func elements(in bytes: UnsafeRawBufferPointer) -> RTPHeaderExtensionIterator {
        RTPHeaderExtensionIterator(bytes: bytes, extensions: self)
    }

    /// The value of the first element with `id`, or nil when there is none before the end or before an
    /// element that stops parsing (ID 15 in the one-byte form, RFC 8285 §4.2: the elements before it
    /// still count). A truncated element before the match throws.
    public func value(id: UInt8, in bytes: UnsafeRawBufferPointer) throws(RTPHeaderExtensionError) -> Range<Int>? {
        var iterator = elements(in: bytes)
        do {
            while let element = try iterator.next() {
                if element.id == id { return element.valueRange }
            }
        } catch .reservedID15 {
            return nil
        }
        return nil
    }

    /// All elements, collected into an array (allocates: for tests and diagnostics, not per packet).
    public func elements(in bytes: [UInt8]) throws(RTPHeaderExtensionError) -> [RTPHeaderExtensionElement] {
        try bytes.withUnsafeBytesTyped { (raw) throws(RTPHeaderExtensionError) in
            var iterator = elements(in: raw)
            var all: [RTPHeaderExtensionElement] = []
            while let element = try iterator.next() { all.append(element) }
            return all
        }
    }
}

/// One RFC 8285 extension element: its local identifier and where its value lies in the packet bytes.
public struct RTPHeaderExtensionElement: Sendable, Hashable {
    public var id: UInt8
    public var valueRange: Range<Int>

    public init(id: UInt8, valueRange: Range<Int>) {
        self.id = id
        self.valueRange = valueRange
    }
}

/// Malformed extension elements, and elements that cannot be written.
public enum RTPHeaderExtensionError: Error, Sendable, Hashable {
    /// One-byte form, ID 15 at `offset` (RFC 8285 §4.2): reserved; parsing stops there and only the
    /// elements before it count.
    case reservedID15(offset: Int)
    /// The element at `offset` says it is longer than the rest of the extension data.
    case elementTruncated(id: UInt8, offset: Int)

    /// ID 0 is padding in both forms and cannot name an element (RFC 8285 §4.2, §4.3).
    case invalidID(UInt8)
    /// A value longer than 255 bytes does not fit either form (RFC 8285 §4.3).
    case valueTooLong(id: UInt8, length: Int)
    /// The extension would exceed 65535 words, the most its length field can say (RFC 3550 §5.3.1).
    case extensionTooLong
    /// The writer's buffer cannot hold the block.
    case bufferTooSmall(needed: Int, available: Int)
}

/// Reads the elements of an RFC 8285 extension one by one, skipping padding bytes (value 0) between
/// and after them. `next()` returns nil at the end and throws on a malformed element, after which it
/// returns nil. Holds a pointer to the packet bytes: use it while they are alive.
public struct RTPHeaderExtensionIterator {
    private let bytes: UnsafeRawBufferPointer
    private var position: Int
    private let end: Int
    private let twoByte: Bool

    init(bytes: UnsafeRawBufferPointer, extensions: RTPHeaderExtensions) {
        self.bytes = bytes
        let range = extensions.dataRange.clamped(to: 0..<bytes.count)
        position = range.lowerBound
        switch extensions.form {
        case .oneByte: twoByte = false; end = range.upperBound
        case .twoByte: twoByte = true; end = range.upperBound
        case .opaque: twoByte = false; end = range.lowerBound
        }
    }

    public mutating func next() throws(RTPHeaderExtensionError) -> RTPHeaderExtensionElement? {
        while position < end {
            let start = position
            let first = bytes[start]
            if twoByte {
                // RFC 8285 §4.3: 8-bit ID, 8-bit length (0-255), value; ID 0 is a padding byte.
                if first == 0 { position += 1; continue }
                guard start + 2 <= end, start + 2 + Int(bytes[start + 1]) <= end else {
                    position = end
                    throw .elementTruncated(id: first, offset: start)
                }
                position = start + 2 + Int(bytes[start + 1])
                return RTPHeaderExtensionElement(id: first, valueRange: start + 2..<position)
            }
            // RFC 8285 §4.2: 4-bit ID, 4-bit length minus one, value; ID 0 is a padding byte.
            let id = first >> 4
            if id == 0 { position += 1; continue }
            if id == 15 {
                position = end
                throw .reservedID15(offset: start)
            }
            let length = Int(first & 0x0F) + 1
            guard start + 1 + length <= end else {
                position = end
                throw .elementTruncated(id: id, offset: start)
            }
            position = start + 1 + length
            return RTPHeaderExtensionElement(id: id, valueRange: start + 1..<position)
        }
        return nil
    }
}
