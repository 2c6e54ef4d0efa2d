/// RTCP framing (RFC 3550 §6.4, §6.1 and Appendix A.2): the common 4-byte header, the packet types,
/// the errors, and an iterator that walks a compound packet and yields each packet's header and byte
/// ranges without allocating or decoding it.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|  count  |      PT       |             length            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// "count" is the report count (SR, RR), source count (SDES, BYE), subtype (APP) or feedback message
/// type FMT (RTPFB, PSFB); "length" is the packet's length in 32-bit words minus one.

/// The RTCP packet type byte (PT).
public struct RTCPPacketType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// SR, RFC 3550 §6.4.1.
    public static let senderReport = RTCPPacketType(rawValue: 200)
    /// RR, RFC 3550 §6.4.2.
    public static let receiverReport = RTCPPacketType(rawValue: 201)
    /// SDES, RFC 3550 §6.5.
    public static let sourceDescription = RTCPPacketType(rawValue: 202)
    /// BYE, RFC 3550 §6.6.
    public static let goodbye = RTCPPacketType(rawValue: 203)
    /// APP, RFC 3550 §6.7.
    public static let applicationDefined = RTCPPacketType(rawValue: 204)
    /// RTPFB, transport-layer feedback, RFC 4585 §6.2.
    public static let transportFeedback = RTCPPacketType(rawValue: 205)
    /// PSFB, payload-specific feedback, RFC 4585 §6.3.
    public static let payloadSpecificFeedback = RTCPPacketType(rawValue: 206)
    /// XR, extended reports, RFC 3611 (passed through opaque here).
    public static let extendedReport = RTCPPacketType(rawValue: 207)

    public var description: String {
        switch self {
        case .senderReport: "SR"
        case .receiverReport: "RR"
        case .sourceDescription: "SDES"
        case .goodbye: "BYE"
        case .applicationDefined: "APP"
        case .transportFeedback: "RTPFB"
        case .payloadSpecificFeedback: "PSFB"
        case .extendedReport: "XR"
        default: "PT \(rawValue)"
        }
    }
}

/// The common header of every RTCP packet (RFC 3550 §6.4.1).
public struct RTCPHeader: Sendable, Hashable {
    /// The only RTCP version.
    public static let version: UInt8 = 2
    /// Bytes of the header.
    public static let size = 4

    /// P: the packet ends in padding whose last byte is its count.
    public var padding: Bool
    /// The 5-bit count field: RC, SC, APP subtype or feedback FMT, depending on the type.
    public var count: UInt8
    public var packetType: RTCPPacketType
    /// "length": the packet's length in 32-bit words minus one, header and padding included.
    public var length: UInt16

    public init(padding: Bool = false, count: UInt8, packetType: RTCPPacketType, length: UInt16) {
        self.padding = padding
        self.count = count
        self.packetType = packetType
        self.length = length
    }

    /// The packet's length in bytes.
    public var packetLength: Int { 4 * (Int(length) + 1) }

    /// Writes the header at `offset` (the caller checked the space).
    func write(into buffer: UnsafeMutableRawBufferPointer, at offset: Int = 0) {
        buffer[offset] = Self.version << 6 | (padding ? 0x20 : 0) | (count & 0x1F)
        buffer[offset + 1] = packetType.rawValue
        buffer.storeNetwork(length, at: offset + 2)
    }
}

/// One packet inside RTCP bytes, not yet decoded: its header and where its parts lie in those bytes.
public struct RTCPPacketView: Sendable, Hashable {
    public var header: RTCPHeader
    /// The whole packet: header, body and padding.
    public var range: Range<Int>
    /// The body: after the 4-byte header, before the padding.
    public var bodyRange: Range<Int>
    /// Padding bytes at the end, including the count byte; 0 when P is 0.
    public var paddingLength: Int
}

/// Why bytes are not valid RTCP, or a packet could not be written.
public enum RTCPError: Error, Sendable, Hashable {
    // Framing, RFC 3550 §6.4.1 and Appendix A.2.
    /// Fewer than 4 bytes left where a packet header should start.
    case headerTruncated
    /// V is not 2.
    case unsupportedVersion(UInt8)
    /// The length field runs past the end of the bytes.
    case packetTruncated
    /// P is set and the padding count (the packet's last byte) is 0.
    case paddingCountZero
    /// P is set and the padding count is larger than the packet after its header.
    case paddingExceedsPacket

    // Compound packets, RFC 3550 §6.1 and Appendix A.2.
    /// No packet at all.
    case emptyCompound
    /// A compound packet must start with an SR or RR (unless reduced-size, RFC 5506).
    case firstPacketNotReport(RTCPPacketType)
    /// Only the last packet of a compound packet may be padded.
    case paddingNotInLastPacket

    // Packet bodies.
    /// SR shorter than its sender info and RC report blocks (RFC 3550 §6.4.1).
    case senderReportLengthInvalid
    /// RR shorter than its SSRC and RC report blocks (RFC 3550 §6.4.2).
    case receiverReportLengthInvalid
    /// SDES chunk without room for its SSRC (RFC 3550 §6.5).
    case sourceDescriptionSourceTruncated
    /// SDES item whose type, length or text runs past the packet, or a chunk not ended by a null octet.
    case sourceDescriptionItemTruncated
    /// BYE shorter than its SC sources (RFC 3550 §6.6).
    case goodbyeLengthInvalid
    /// BYE reason whose length byte runs past the packet.
    case goodbyeReasonTruncated
    /// APP shorter than its SSRC and name (RFC 3550 §6.7).
    case applicationLengthInvalid
    /// RTPFB shorter than its two SSRCs, or FCI not whole entries (RFC 4585 §6.1, §6.2.1).
    case transportFeedbackLengthInvalid
    /// PSFB shorter than its two SSRCs, or FCI not what the FMT needs (RFC 4585 §6.3, RFC 5104 §4.3.1).
    case payloadSpecificFeedbackLengthInvalid
    /// REMB whose SSRC count disagrees with its length (draft-alvestrand-rmcat-remb §2.2).
    case rembLengthInvalid

    // Writing.
    /// The output buffer is shorter than the packet.
    case bufferTooSmall(needed: Int, available: Int)
    /// A count that must fit 5 bits (report blocks, chunks, sources, APP subtype) or 8 bits (REMB SSRCs)
    /// does not.
    case countOutOfRange(Int)
    /// An SDES item or BYE reason longer than 255 bytes.
    case textTooLong(Int)
    /// Data that must be whole 32-bit words (APP data, profile extensions, opaque bodies) is not.
    case notWordAligned(Int)
    /// A packet longer than its 16-bit length field can say (65536 words).
    case packetTooLong(Int)
}

/// Something that can be written as one RTCP packet (or, for a compound, several) into a caller's
/// buffer: size first, then the bytes.
public protocol RTCPSerializable: Sendable {
    /// Bytes `write(into:)` needs.
    var marshalSize: Int { get }
    /// Writes at the start of `buffer`; returns the number of bytes written (`marshalSize`).
    @discardableResult
    func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int
}

/// Walks the packets in RTCP bytes (a compound packet, or a single reduced-size one), checking the
/// framing only: version, each length inside the bytes, padding count. `next()` returns nil after the
/// last packet; after an error it returns nil. Holds a pointer: use it while the bytes are alive.
public struct RTCPPacketIterator {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public mutating func next() throws(RTCPError) -> RTCPPacketView? {
        guard offset < bytes.count else { return nil }
        let start = offset
        offset = bytes.count  // stays at the end if anything below throws
        guard bytes.count - start >= RTCPHeader.size else { throw .headerTruncated }
        let first = bytes[start]
        let version = first >> 6
        guard version == RTCPHeader.version else { throw .unsupportedVersion(version) }
        let header = RTCPHeader(padding: first & 0x20 != 0, count: first & 0x1F,
                                packetType: RTCPPacketType(rawValue: bytes[start + 1]),
                                length: bytes.networkUInt16(at: start + 2))
        let end = start + header.packetLength
        guard end <= bytes.count else { throw .packetTruncated }
        var paddingLength = 0
        if header.padding {
            paddingLength = Int(bytes[end - 1])
            guard paddingLength > 0 else { throw .paddingCountZero }
            guard paddingLength <= header.packetLength - RTCPHeader.size else { throw .paddingExceedsPacket }
        }
        offset = end
        return RTCPPacketView(header: header, range: start..<end,
                              bodyRange: start + RTCPHeader.size..<end - paddingLength, paddingLength: paddingLength)
    }
}

/// Writes the framing shared by every RTCP packet: checks the count and space, writes the header for
/// a body of `bodyLength` bytes (a multiple of 4) and lets `body` fill it (its buffer starts at the body).
func writeRTCPPacket(into buffer: UnsafeMutableRawBufferPointer, type: RTCPPacketType, count: Int, bodyLength: Int,
                     body: (UnsafeMutableRawBufferPointer) throws(RTCPError) -> Void) throws(RTCPError) -> Int
{
    guard (0...31).contains(count) else { throw .countOutOfRange(count) }
    guard bodyLength % 4 == 0 else { throw .notWordAligned(bodyLength) }
    let size = RTCPHeader.size + bodyLength
    guard size <= 4 * 65536 else { throw .packetTooLong(size) }
    guard buffer.count >= size else { throw .bufferTooSmall(needed: size, available: buffer.count) }
    RTCPHeader(count: UInt8(count), packetType: type, length: UInt16(size / 4 - 1)).write(into: buffer)
    try body(UnsafeMutableRawBufferPointer(rebasing: buffer[RTCPHeader.size..<size]))
    return size
}
