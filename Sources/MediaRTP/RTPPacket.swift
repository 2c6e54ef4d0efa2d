/// RTP data packets (RFC 3550 §5.1): parsing into a value that points into the caller's bytes, and
/// serialization into a caller's buffer. Neither allocates: the CSRC list is stored inline, the header
/// extension and payload are ranges of the input, and writing reports the size it needs first.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// |                           timestamp                           |
/// |           synchronization source (SSRC) identifier            |
/// |            contributing source (CSRC) identifiers  (CC × 32)  |
/// |   [header extension: profile, length in words, data]          |
/// |   payload ...                 [padding ... | padding count]   |
/// ```

/// The fields of an RTP header that a sender chooses (RFC 3550 §5.1). The version is always 2; the
/// P, X and CC bits follow from the padding, extension and CSRC list written with it.
public struct RTPHeader: Sendable, Hashable {
    /// The only RTP version (RFC 3550 §5.1, "version (V)").
    public static let version: UInt8 = 2
    /// Bytes of the fixed part: V/P/X/CC, M/PT, sequence number, timestamp, SSRC.
    public static let fixedLength = 12

    /// "marker (M)": meaning defined by the profile, e.g. the last packet of a video frame.
    public var marker: Bool
    /// "payload type (PT)", 7 bits.
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    /// "synchronization source (SSRC) identifier".
    public var ssrc: UInt32
    /// "CSRC list": contributing sources, at most 15.
    public var csrcs: CSRCList

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                csrcs: CSRCList = CSRCList())
    {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
    }

    /// Bytes of the fixed header and the CSRC list: 12 + 4·CC. A header extension follows at this offset.
    public var length: Int { Self.fixedLength + 4 * csrcs.count }

    /// Bytes `write(into:extensionBlock:padded:)` needs for this header and an extension block of
    /// `extensionBlockLength` bytes (0 for none).
    public func marshalSize(extensionBlockLength: Int = 0) -> Int { length + extensionBlockLength }

    /// Writes the fixed header, the CSRC list and `extensionBlock` (a complete RFC 3550 §5.3.1 block:
    /// profile, length, data, as `RTPHeaderExtensionWriter` makes it; nil for none) at the start of
    /// `buffer`. `padded` sets the P bit: the caller then ends the packet with padding (see
    /// `RTPPacket.writePadding`). Returns where the payload starts, so that a packetizer can write the
    /// payload in place. `extensionBlock` may already lie at `length` in `buffer`.
    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer, extensionBlock: UnsafeRawBufferPointer? = nil,
                      padded: Bool = false) throws(RTPPacketError) -> Int
    {
        guard payloadType < 128 else { throw .payloadTypeOutOfRange(payloadType) }
        if let extensionBlock { try Self.checkExtensionBlock(extensionBlock) }
        let needed = marshalSize(extensionBlockLength: extensionBlock?.count ?? 0)
        guard buffer.count >= needed else { throw .bufferTooSmall(needed: needed, available: buffer.count) }

        // The extension block first: it may sit where the caller's extension writer left it.
        if let extensionBlock { buffer.copy(extensionBlock, to: length) }
        buffer[0] = Self.version << 6 | (padded ? 0x20 : 0) | (extensionBlock != nil ? 0x10 : 0) | UInt8(csrcs.count)
        buffer[1] = (marker ? 0x80 : 0) | payloadType
        buffer.storeNetwork(sequenceNumber, at: 2)
        buffer.storeNetwork(timestamp, at: 4)
        buffer.storeNetwork(ssrc, at: 8)
        for index in 0..<csrcs.count { buffer.storeNetwork(csrcs[index], at: Self.fixedLength + 4 * index) }
        return needed
    }

    /// A header extension block must be whole words and say so in its length field (RFC 3550 §5.3.1).
    private static func checkExtensionBlock(_ block: UnsafeRawBufferPointer) throws(RTPPacketError) {
        guard block.count >= 4, block.count % 4 == 0, block.count <= 4 + 4 * Int(UInt16.max),
              Int(block.networkUInt16(at: 2)) == (block.count - 4) / 4
        else { throw .extensionBlockMalformed }
    }
}

/// Why bytes are not an RTP packet, or a packet could not be written.
public enum RTPPacketError: Error, Sendable, Hashable {
    /// Fewer than the 12 bytes of the fixed header (RFC 3550 §5.1).
    case headerTruncated
    /// V is not 2.
    case unsupportedVersion(UInt8)
    /// CC announces more CSRCs than the packet holds.
    case csrcListTruncated
    /// X is set but the 4-byte extension header (profile, length) is missing (RFC 3550 §5.3.1).
    case extensionHeaderTruncated
    /// The extension's length (in 32-bit words) runs past the end of the packet.
    case extensionTruncated
    /// P is set and the last byte, the padding count, is 0 (it counts itself, so at least 1).
    case paddingCountZero
    /// P is set and the padding count is larger than what follows the header (or nothing follows it).
    case paddingExceedsPacket

    /// The output buffer is shorter than the packet.
    case bufferTooSmall(needed: Int, available: Int)
    /// A payload type must fit 7 bits.
    case payloadTypeOutOfRange(UInt8)
    /// Padding is 1...255 bytes, its last byte being the count (0 means none).
    case paddingLengthOutOfRange(Int)
    /// An extension block to write is not whole 32-bit words or its length field disagrees with its size.
    case extensionBlockMalformed
    /// A source range given for re-serialization does not fit the source buffer.
    case sourceMismatch
}

/// A parsed RTP packet (RFC 3550 §5.1): the header fields, and where the header extension, payload and
/// padding lie in the bytes that were parsed. The value does not keep the bytes; read the payload as
/// `bytes[packet.payloadRange]` from the same buffer.
public struct RTPPacket: Sendable, Hashable {
    public var header: RTPHeader
    /// The header extension (X bit), its data a range of the parsed bytes; nil when X is 0.
    public var headerExtensions: RTPHeaderExtensions?
    /// The payload: after the header and extension, before the padding.
    public var payloadRange: Range<Int>
    /// Padding bytes at the end, including the count byte; 0 when P is 0.
    public var paddingLength: Int

    public init(header: RTPHeader, headerExtensions: RTPHeaderExtensions?, payloadRange: Range<Int>,
                paddingLength: Int)
    {
        self.header = header
        self.headerExtensions = headerExtensions
        self.payloadRange = payloadRange
        self.paddingLength = paddingLength
    }

    /// Bytes of the header with CSRCs and extension: where the payload starts.
    public var headerLength: Int { payloadRange.lowerBound }
    /// The whole packet's length.
    public var length: Int { payloadRange.upperBound + paddingLength }

    /// Parses the RTP packet that fills `bytes` (one UDP datagram), checking the RFC 3550 §5.1 and
    /// Appendix A.1 rules: version 2, CSRC list and extension inside the packet, padding count 1 or more
    /// and no larger than what follows the header. Extension elements are read lazily, see
    /// `RTPHeaderExtensions`. Does not allocate.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(RTPPacketError) {
        self.init()
        try parse(bytes)
    }

    /// An empty packet (payload type 0, every field 0, no payload): a value to `parse` datagrams into.
    public init() {
        self.init(header: RTPHeader(payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0), headerExtensions: nil,
                  payloadRange: 0..<0, paddingLength: 0)
    }

    /// Parses the RTP packet that fills `bytes` into this value, as `init(parsing:)` does, writing
    /// each field in place: a new value (some 150 bytes) returned from a function is built aside and
    /// copied, and a receive path pays for the copy on every datagram. On an error the value's
    /// fields are unspecified.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(RTPPacketError) {
        guard bytes.count >= RTPHeader.fixedLength else { throw .headerTruncated }
        let first = bytes[0], second = bytes[1]
        let version = first >> 6
        guard version == RTPHeader.version else { throw .unsupportedVersion(version) }
        let hasPadding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        let csrcCount = Int(first & 0x0F)

        var offset = RTPHeader.fixedLength + 4 * csrcCount
        guard bytes.count >= offset else { throw .csrcListTruncated }

        headerExtensions = nil
        if hasExtension {
            guard bytes.count >= offset + 4 else { throw .extensionHeaderTruncated }
            let profile = bytes.networkUInt16(at: offset)
            let dataLength = 4 * Int(bytes.networkUInt16(at: offset + 2))
            offset += 4
            guard bytes.count >= offset + dataLength else { throw .extensionTruncated }
            headerExtensions = RTPHeaderExtensions(profile: profile, dataRange: offset..<offset + dataLength)
            offset += dataLength
        }

        paddingLength = 0
        if hasPadding {
            guard bytes.count > offset else { throw .paddingExceedsPacket }
            paddingLength = Int(bytes[bytes.count - 1])
            guard paddingLength > 0 else { throw .paddingCountZero }
            guard paddingLength <= bytes.count - offset else { throw .paddingExceedsPacket }
        }

        header.marker = second & 0x80 != 0
        header.payloadType = second & 0x7F
        header.sequenceNumber = bytes.networkUInt16(at: 2)
        header.timestamp = bytes.networkUInt32(at: 4)
        header.ssrc = bytes.networkUInt32(at: 8)
        header.csrcs.removeAll()
        for index in 0..<csrcCount { header.csrcs.append(bytes.networkUInt32(at: RTPHeader.fixedLength + 4 * index)) }
        payloadRange = offset..<bytes.count - paddingLength
    }

    /// Parses the RTP packet that fills `bytes`; ranges in the result index `bytes`.
    public init(parsing bytes: [UInt8]) throws(RTPPacketError) {
        self = try bytes.withUnsafeBytesTyped { (raw) throws(RTPPacketError) in try RTPPacket(parsing: raw) }
    }

    // MARK: Serialization

    /// Bytes needed to write a packet with this header, an extension block of `extensionBlockLength`
    /// bytes (0 for none), `payloadLength` payload bytes and `paddingLength` bytes of padding.
    public static func marshalSize(header: RTPHeader, extensionBlockLength: Int = 0, payloadLength: Int,
                                   paddingLength: Int = 0) -> Int
    {
        header.marshalSize(extensionBlockLength: extensionBlockLength) + payloadLength + paddingLength
    }

    /// Writes a whole packet at the start of `buffer`: `header`, `extensionBlock` (a complete RFC 3550
    /// §5.3.1 block, e.g. from `RTPHeaderExtensionWriter`; nil for none), `payload`, then
    /// `paddingLength` bytes of padding (zeros ending in the count; 0 for none, at most 255). Returns
    /// the packet's length. Does not allocate.
    @discardableResult
    public static func write(header: RTPHeader, extensionBlock: UnsafeRawBufferPointer? = nil,
                             payload: UnsafeRawBufferPointer, paddingLength: Int = 0,
                             into buffer: UnsafeMutableRawBufferPointer) throws(RTPPacketError) -> Int
    {
        guard (0...255).contains(paddingLength) else { throw .paddingLengthOutOfRange(paddingLength) }
        let needed = marshalSize(header: header, extensionBlockLength: extensionBlock?.count ?? 0,
                                 payloadLength: payload.count, paddingLength: paddingLength)
        guard buffer.count >= needed else { throw .bufferTooSmall(needed: needed, available: buffer.count) }
        let payloadOffset = try header.write(into: buffer, extensionBlock: extensionBlock, padded: paddingLength > 0)
        buffer.copy(payload, to: payloadOffset)
        return try writePadding(paddingLength, at: payloadOffset + payload.count, into: buffer)
    }

    /// Writes `length` bytes of padding at `offset` (RFC 3550 §5.1: zeros, the last byte holding the
    /// count), for a packet whose header was written with `padded: true`. Returns the offset past it.
    @discardableResult
    public static func writePadding(_ length: Int, at offset: Int,
                                    into buffer: UnsafeMutableRawBufferPointer) throws(RTPPacketError) -> Int
    {
        guard (0...255).contains(length) else { throw .paddingLengthOutOfRange(length) }
        guard offset >= 0, buffer.count >= offset + length else {
            throw .bufferTooSmall(needed: offset + length, available: buffer.count)
        }
        guard length > 0 else { return offset }
        buffer.zero(length - 1, at: offset)
        buffer[offset + length - 1] = UInt8(length)
        return offset + length
    }

    /// Bytes `write(from:into:)` needs: the parsed packet's length.
    public var marshalSize: Int { length }

    /// Writes this packet again from `source`, the bytes it was parsed from: header fields from the value
    /// (which may have been changed, e.g. a rewritten SSRC or sequence number), extension block and
    /// payload copied from `source`, padding as zeros ending in the count. For an unpadded packet whose
    /// fields were not changed the output equals the input. `buffer` may be `source`'s memory (in place).
    @discardableResult
    public func write(from source: UnsafeRawBufferPointer,
                      into buffer: UnsafeMutableRawBufferPointer) throws(RTPPacketError) -> Int
    {
        guard payloadRange.lowerBound >= 0, source.count >= payloadRange.upperBound,
              headerExtensions.map({ $0.dataRange.lowerBound >= 4 && $0.dataRange.upperBound <= source.count }) ?? true
        else { throw .sourceMismatch }
        let needed = Self.marshalSize(header: header, extensionBlockLength: headerExtensions?.blockLength ?? 0,
                                      payloadLength: payloadRange.count, paddingLength: paddingLength)
        guard buffer.count >= needed else { throw .bufferTooSmall(needed: needed, available: buffer.count) }
        // When writing in place and the CSRC count changed, the extension and payload move: copy them
        // in the order that reads each byte before it is overwritten.
        let payloadOffset = header.length + (headerExtensions?.blockLength ?? 0)
        let payload = UnsafeRawBufferPointer(rebasing: source[payloadRange])
        let block = headerExtensions.map { UnsafeRawBufferPointer(rebasing: source[$0.blockRange]) }
        if payloadOffset > payloadRange.lowerBound {
            buffer.copy(payload, to: payloadOffset)
            try header.write(into: buffer, extensionBlock: block, padded: paddingLength > 0)
        } else {
            try header.write(into: buffer, extensionBlock: block, padded: paddingLength > 0)
            buffer.copy(payload, to: payloadOffset)
        }
        return try Self.writePadding(paddingLength, at: payloadOffset + payloadRange.count, into: buffer)
    }
}
