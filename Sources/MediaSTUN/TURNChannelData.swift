// TURN ChannelData messages (RFC 8656 §12.4): a 4-byte header (channel number, length) and the data.

/// A TURN ChannelData message (RFC 8656 §12.4): data for the peer bound to `channel` (0x4000-0x4FFF).
public struct TURNChannelData: Hashable, Sendable {
    public var channel: UInt16
    public var data: [UInt8]

    /// The channel numbers a client may bind (RFC 8656 §12).
    public static let validChannels: ClosedRange<UInt16> = 0x4000...0x4FFF

    public init(channel: UInt16, data: [UInt8]) {
        self.channel = channel
        self.data = data
    }

    /// Parses a ChannelData message. The datagram may carry padding after the data (RFC 8656 §12.5:
    /// over UDP it need not); bytes past the length are ignored. Throws `.tooShort`,
    /// `.badChannelNumber` or `.badLength`.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(STUNError) {
        guard bytes.count >= 4 else { throw .tooShort(count: bytes.count) }
        let channel = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        guard TURNChannelData.validChannels.contains(channel) else { throw .badChannelNumber(channel) }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard 4 + length <= bytes.count else { throw .badLength(declared: length, available: bytes.count - 4) }
        self.channel = channel
        self.data = Array(bytes[4..<(4 + length)])
    }

    public init(parsing bytes: [UInt8]) throws(STUNError) {
        self = try STUNMessage.withBytes(bytes) { raw throws(STUNError) in try TURNChannelData(parsing: raw) }
    }

    /// Channel number, length, data, zero padding to a multiple of 4 (RFC 8656 §12.4; always padded, which
    /// UDP allows and TCP requires). Data beyond 65535 bytes is cut there.
    public func serialized() -> [UInt8] {
        let payload = data.prefix(0xFFFF)
        var out: [UInt8] = []
        out.reserveCapacity(4 + payload.count + 3)
        out.appendBigEndian(channel)
        out.appendBigEndian(UInt16(payload.count))
        out += payload
        out += [UInt8](repeating: 0, count: (4 - payload.count % 4) % 4)
        return out
    }

    /// RFC 7983 §7 / RFC 8656 §12: a first byte of 64-79 is ChannelData (0x4000-0x4FFF); at least a header.
    public static func looksLikeChannelData(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 4 && (64...79).contains(bytes[0])
    }

    public static func looksLikeChannelData(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { looksLikeChannelData($0) }
    }
}
