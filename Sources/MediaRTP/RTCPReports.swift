/// Sender and receiver reports (RFC 3550 §6.4): SR with sender info, RR, and the report blocks both
/// carry, with the helpers that compute a block's loss fields (§6.4.1, Appendix A.3) and the round-trip
/// time from LSR and DLSR (§6.4.1). Decoded reports own their fields (arrays allocate; RTCP is sent a
/// few times a second, so this is accepted there and only there).

/// One reception report block: what a receiver saw of one source (RFC 3550 §6.4.1).
public struct ReportBlock: Sendable, Hashable {
    /// Bytes of a block on the wire.
    public static let length = 24
    /// The range of the 24-bit signed "cumulative number of packets lost".
    public static let cumulativeLostRange: ClosedRange<Int32> = -0x80_0000...0x7F_FFFF

    /// "SSRC_n (source identifier)": the source this block is about.
    public var ssrc: UInt32
    /// "fraction lost": packets lost since the previous report, over 256.
    public var fractionLost: UInt8
    /// "cumulative number of packets lost": expected minus received since the start; negative with
    /// duplicates; 24 bits on the wire (see `cumulativeLostRange`).
    public var cumulativeLost: Int32
    /// "extended highest sequence number received": cycles in the high 16 bits.
    public var extendedHighestSequenceNumber: UInt32
    /// "interarrival jitter" in RTP timestamp units.
    public var jitter: UInt32
    /// "last SR timestamp (LSR)": the middle 32 bits of the last SR's NTP timestamp; 0 if none.
    public var lastSenderReport: UInt32
    /// "delay since last SR (DLSR)" in units of 1/65536 s; 0 if no SR was received.
    public var delaySinceLastSenderReport: UInt32

    public init(ssrc: UInt32, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0,
                extendedHighestSequenceNumber: UInt32 = 0, jitter: UInt32 = 0, lastSenderReport: UInt32 = 0,
                delaySinceLastSenderReport: UInt32 = 0)
    {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    /// "fraction lost" for an interval (RFC 3550 §6.4.1, Appendix A.3): lost over expected as a fixed
    /// point number with the binary point at the left, i.e. `lost * 256 / expected`; 0 when nothing was
    /// expected or more arrived than expected (duplicates).
    public static func fractionLost(expected: Int64, received: Int64) -> UInt8 {
        let lost = expected - received
        guard expected > 0, lost > 0 else { return 0 }
        return UInt8(min(255, lost * 256 / expected))
    }

    /// "cumulative number of packets lost": expected minus received, clamped to the 24-bit signed range.
    public static func cumulativeLost(expected: Int64, received: Int64) -> Int32 {
        clampedLost(expected - received)
    }

    private static func clampedLost(_ lost: Int64) -> Int32 {
        Int32(max(Int64(cumulativeLostRange.lowerBound), min(Int64(cumulativeLostRange.upperBound), lost)))
    }

    /// The round trip to this block's sender, in seconds, for a report that arrived at `arrival`
    /// (RFC 3550 §6.4.1: arrival minus LSR minus DLSR, in the compact 16.16 form). Nil when LSR is 0 (no
    /// SR received yet); 0 when clocks make it negative.
    public func roundTripTime(arrival: NTPTimestamp) -> Double? {
        guard lastSenderReport != 0 else { return nil }
        let delay = Int32(bitPattern: arrival.compact &- lastSenderReport &- delaySinceLastSenderReport)
        return max(0, Double(delay) / 65536)
    }

    /// Reads a block at `offset` (the caller checked the 24 bytes).
    init(reading bytes: UnsafeRawBufferPointer, at offset: Int) {
        let lost = bytes.networkUInt24(at: offset + 5)
        self.init(ssrc: bytes.networkUInt32(at: offset), fractionLost: bytes[offset + 4],
                  cumulativeLost: Int32(bitPattern: lost << 8) >> 8,  // sign-extend 24 bits
                  extendedHighestSequenceNumber: bytes.networkUInt32(at: offset + 8),
                  jitter: bytes.networkUInt32(at: offset + 12), lastSenderReport: bytes.networkUInt32(at: offset + 16),
                  delaySinceLastSenderReport: bytes.networkUInt32(at: offset + 20))
    }

    /// Writes the block at `offset`; `cumulativeLost` is clamped to 24 bits.
    func write(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        let lost = Self.clampedLost(Int64(cumulativeLost))
        buffer.storeNetwork(ssrc, at: offset)
        buffer[offset + 4] = fractionLost
        buffer.storeNetworkUInt24(UInt32(bitPattern: lost), at: offset + 5)
        buffer.storeNetwork(extendedHighestSequenceNumber, at: offset + 8)
        buffer.storeNetwork(jitter, at: offset + 12)
        buffer.storeNetwork(lastSenderReport, at: offset + 16)
        buffer.storeNetwork(delaySinceLastSenderReport, at: offset + 20)
    }

    /// Reads `count` blocks from `offset`, then the rest of `bytes` as the profile-specific extension.
    static func readBlocksAndExtension(_ bytes: UnsafeRawBufferPointer, at offset: Int, count: Int)
        -> (blocks: [ReportBlock], profileExtension: [UInt8])
    {
        let blocks = (0..<count).map { ReportBlock(reading: bytes, at: offset + $0 * length) }
        return (blocks, bytes.copyBytes(offset + count * length..<bytes.count))
    }

    /// Writes `blocks` from `offset`, then `profileExtension`.
    static func writeBlocksAndExtension(_ blocks: [ReportBlock], _ profileExtension: [UInt8],
                                        into buffer: UnsafeMutableRawBufferPointer, at offset: Int)
    {
        for (index, block) in blocks.enumerated() { block.write(into: buffer, at: offset + index * length) }
        _ = buffer.copy(contentsOf: profileExtension, to: offset + blocks.count * length)
    }
}

/// SR: a sender's report (RFC 3550 §6.4.1): its sender info (NTP and RTP time of one instant, packet
/// and octet counts) and reception report blocks about the sources it receives.
public struct SenderReport: RTCPSerializable, Hashable {
    /// Bytes of SSRC and sender info.
    static let senderInfoLength = 24

    /// "SSRC of sender".
    public var ssrc: UInt32
    /// "NTP timestamp": wallclock time when this report was sent.
    public var ntpTimestamp: NTPTimestamp
    /// "RTP timestamp": the same instant in the RTP clock of this source.
    public var rtpTimestamp: UInt32
    /// "sender's packet count" since the start of transmission.
    public var packetCount: UInt32
    /// "sender's octet count": payload octets since the start of transmission.
    public var octetCount: UInt32
    /// Up to 31 report blocks.
    public var reportBlocks: [ReportBlock]
    /// "profile-specific extensions", whole 32-bit words.
    public var profileExtension: [UInt8]

    public init(ssrc: UInt32, ntpTimestamp: NTPTimestamp, rtpTimestamp: UInt32, packetCount: UInt32,
                octetCount: UInt32, reportBlocks: [ReportBlock] = [], profileExtension: [UInt8] = [])
    {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }

    /// The shortest body an SR with `count` report blocks has (RFC 3550 §6.4.1): SSRC, sender info, blocks.
    static func minimumBodyLength(count: Int) -> Int { senderInfoLength + count * ReportBlock.length }

    init(body: UnsafeRawBufferPointer, header: RTCPHeader) throws(RTCPError) {
        let count = Int(header.count)
        guard body.count >= Self.minimumBodyLength(count: count) else {
            throw .senderReportLengthInvalid
        }
        let (blocks, profileExtension) = ReportBlock.readBlocksAndExtension(body, at: Self.senderInfoLength,
                                                                            count: count)
        self.init(ssrc: body.networkUInt32(at: 0),
                  ntpTimestamp: NTPTimestamp(seconds: body.networkUInt32(at: 4), fraction: body.networkUInt32(at: 8)),
                  rtpTimestamp: body.networkUInt32(at: 12), packetCount: body.networkUInt32(at: 16),
                  octetCount: body.networkUInt32(at: 20), reportBlocks: blocks, profileExtension: profileExtension)
    }

    public var marshalSize: Int {
        RTCPHeader.size + Self.senderInfoLength + reportBlocks.count * ReportBlock.length + profileExtension.count
    }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try writeRTCPPacket(into: buffer, type: .senderReport, count: reportBlocks.count,
                            bodyLength: marshalSize - RTCPHeader.size) { body in
            body.storeNetwork(ssrc, at: 0)
            body.storeNetwork(ntpTimestamp.seconds, at: 4)
            body.storeNetwork(ntpTimestamp.fraction, at: 8)
            body.storeNetwork(rtpTimestamp, at: 12)
            body.storeNetwork(packetCount, at: 16)
            body.storeNetwork(octetCount, at: 20)
            ReportBlock.writeBlocksAndExtension(reportBlocks, profileExtension, into: body, at: Self.senderInfoLength)
        }
    }
}

/// RR: a receiver's report (RFC 3550 §6.4.2): its SSRC and reception report blocks.
public struct ReceiverReport: RTCPSerializable, Hashable {
    /// "SSRC of packet sender".
    public var ssrc: UInt32
    /// Up to 31 report blocks.
    public var reportBlocks: [ReportBlock]
    /// "profile-specific extensions", whole 32-bit words.
    public var profileExtension: [UInt8]

    public init(ssrc: UInt32, reportBlocks: [ReportBlock] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }

    /// The shortest body an RR with `count` report blocks has (RFC 3550 §6.4.2): SSRC, blocks.
    static func minimumBodyLength(count: Int) -> Int { 4 + count * ReportBlock.length }

    init(body: UnsafeRawBufferPointer, header: RTCPHeader) throws(RTCPError) {
        let count = Int(header.count)
        guard body.count >= Self.minimumBodyLength(count: count) else { throw .receiverReportLengthInvalid }
        let (blocks, profileExtension) = ReportBlock.readBlocksAndExtension(body, at: 4, count: count)
        self.init(ssrc: body.networkUInt32(at: 0), reportBlocks: blocks, profileExtension: profileExtension)
    }

    public var marshalSize: Int { RTCPHeader.size + 4 + reportBlocks.count * ReportBlock.length + profileExtension.count }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try writeRTCPPacket(into: buffer, type: .receiverReport, count: reportBlocks.count,
                            bodyLength: marshalSize - RTCPHeader.size) { body in
            body.storeNetwork(ssrc, at: 0)
            ReportBlock.writeBlocksAndExtension(reportBlocks, profileExtension, into: body, at: 4)
        }
    }
}
