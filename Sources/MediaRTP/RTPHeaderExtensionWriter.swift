/// Builds an RTP header extension block (RFC 3550 §5.3.1 carrying RFC 8285 elements) in a caller's
/// buffer: append elements, then `finish()` pads the data to a 32-bit boundary and writes the profile
/// and length. The one-byte form is used while every element fits it; the first element that does not
/// (ID above 14, an empty value, or more than 16 bytes) converts what was written to the two-byte form
/// in place (RFC 8285 §4.1.2: one form per packet). Nothing is allocated.

public struct RTPHeaderExtensionWriter {
    /// The form to write.
    public enum Form: Sendable, Hashable {
        /// One-byte form (§4.2) until an element needs the two-byte form (§4.3), then two-byte.
        case automatic
        /// Two-byte form from the start, with these 4 "appbits" in the profile.
        case twoByte(appBits: UInt8)
    }

    private let buffer: UnsafeMutableRawBufferPointer
    private var twoByte: Bool
    private var appBits: UInt8
    /// Offset past the last element written; the data starts at 4.
    private var end = 4
    /// Elements appended so far.
    public private(set) var elementCount = 0

    /// A writer that builds the block at the start of `buffer`, e.g. at `header.length` in the packet
    /// buffer so that `RTPHeader.write` finds it in place.
    public init(buffer: UnsafeMutableRawBufferPointer, form: Form = .automatic) {
        self.buffer = buffer
        switch form {
        case .automatic: (twoByte, appBits) = (false, 0)
        case .twoByte(let bits): (twoByte, appBits) = (true, bits & 0x0F)
        }
    }

    /// The form the elements so far are written in.
    public var form: RTPHeaderExtensions.Form { twoByte ? .twoByte(appBits: appBits) : .oneByte }

    /// Bytes the finished block takes: 4 for profile and length, the data rounded up to whole words.
    public var marshalSize: Int { 4 + Self.roundedToWord(end - 4) }

    /// Appends an element whose value is `value`'s bytes (0 to 255 of them; IDs 1-255).
    public mutating func append(id: UInt8, value: some Collection<UInt8>) throws(RTPHeaderExtensionError) {
        guard id != 0 else { throw .invalidID(id) }
        let length = value.count
        guard length <= 255 else { throw .valueTooLong(id: id, length: length) }
        let needsTwoByte = id > 14 || length == 0 || length > 16
        let convert = needsTwoByte && !twoByte
        let elementHeader = twoByte || convert ? 2 : 1
        let newEnd = end + (convert ? elementCount : 0) + elementHeader + length
        let needed = 4 + Self.roundedToWord(newEnd - 4)
        guard needed - 4 <= 4 * Int(UInt16.max) else { throw .extensionTooLong }
        guard needed <= buffer.count else { throw .bufferTooSmall(needed: needed, available: buffer.count) }

        if convert { convertToTwoByte() }
        if twoByte {
            buffer[end] = id
            buffer[end + 1] = UInt8(length)
        } else {
            buffer[end] = id << 4 | UInt8(length - 1)
        }
        end = buffer.copy(contentsOf: value, to: end + elementHeader)
        elementCount += 1
    }

    /// Appends an element holding the low `byteCount` bytes of `value` in network order, e.g.
    /// abs-send-time (3 bytes) or a transport-wide sequence number (2 bytes).
    public mutating func append(id: UInt8, bigEndian value: UInt64, byteCount: Int) throws(RTPHeaderExtensionError) {
        precondition((1...8).contains(byteCount), "an integer element holds 1 to 8 bytes")
        try withUnsafeBytes(of: value.bigEndian) { (bytes) throws(RTPHeaderExtensionError) in
            try append(id: id, value: bytes[(8 - byteCount)...])
        }
    }

    /// Pads the data with zero bytes to a whole number of words and writes the profile (0xBEDE, or
    /// 0x1000 | appbits) and length; returns the block's length (`marshalSize`). Elements may still be
    /// appended afterwards and `finish()` called again. With no elements the block is 4 bytes; a
    /// packet without elements is usually sent without an extension.
    @discardableResult
    public func finish() throws(RTPHeaderExtensionError) -> Int {
        let size = marshalSize
        guard buffer.count >= size else { throw .bufferTooSmall(needed: size, available: buffer.count) }
        buffer.zero(size - end, at: end)
        let profile = twoByte ? RTPHeaderExtensions.twoByteProfile | UInt16(appBits)
                              : RTPHeaderExtensions.oneByteProfile
        buffer.storeNetwork(profile, at: 0)
        buffer.storeNetwork(UInt16((size - 4) / 4), at: 2)
        return size
    }

    /// Rewrites the one-byte elements so far as two-byte ones: each element header grows by one byte,
    /// so every element moves up by the number of elements before it. The caller checked the space.
    private mutating func convertToTwoByte() {
        var position = 4
        while position < end {
            let first = buffer[position]
            let length = Int(first & 0x0F) + 1
            // Make room for the length byte: shift everything after the ID byte up by one.
            if let base = buffer.baseAddress {
                (base + position + 2).copyMemory(from: base + position + 1, byteCount: end - position - 1)
            }
            buffer[position] = first >> 4
            buffer[position + 1] = UInt8(length)
            end += 1
            position += 2 + length
        }
        twoByte = true
    }

    private static func roundedToWord(_ count: Int) -> Int { (count + 3) & ~3 }
}
