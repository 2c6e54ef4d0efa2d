import MediaCore

/// Puts Opus packets in RTP payloads (RFC 7587): exactly one Opus packet per payload, nothing added
/// (§4.2). The RTP clock runs at 48 kHz whatever rate the encoder works at (§4.1), so
/// `rtpTimestamp(of:offset:)` turns a frame's pts in any timebase into 48 kHz ticks. The marker bit
/// marks the first packet of a talkspurt (RFC 3551 §4.1, as §4.1 asks): the first frame after the
/// sender left a gap (discontinuous transmission), seen from the frames' pts and duration.
public struct OpusPacketizer: RTPPacketizer {
    public static let codec = CodecName.opus
    /// The Opus RTP clock rate (RFC 7587 §4.1).
    public static let clockRate = 48_000

    public let maxPayloadSize: Int

    private var frame: FrameBytes?
    private var marker = false
    /// Where the previous frame ended, when it had a duration.
    private var previousEnd: MediaTime?

    public init(maxPayloadSize: Int = 1200) throws(RTPPayloadError) {
        guard maxPayloadSize >= 1 else { throw .maxPayloadSizeTooSmall(maxPayloadSize, minimum: 1) }
        self.maxPayloadSize = maxPayloadSize
    }

    public mutating func startFrame(_ frame: EncodedFrame) throws(RTPPayloadError) {
        self.frame = nil
        guard frame.codec == Self.codec else { throw .wrongCodec(frame.codec) }
        guard frame.byteCount > 0 else { throw .emptyFrame }
        guard frame.byteCount <= maxPayloadSize else {
            throw .payloadTooLarge(size: frame.byteCount, maxPayloadSize: maxPayloadSize)
        }
        marker = previousEnd.map { frame.pts > $0 } ?? false
        previousEnd = frame.duration.map { frame.pts + $0 }
        self.frame = FrameBytes(frame)
    }

    public mutating func nextPayload(into buffer: UnsafeMutableRawBufferPointer,
                                     leavingFrameSlice: Bool) throws(RTPPayloadError) -> PacketizedPayload? {
        guard let bytes = frame?.bytes else { return nil }
        if !leavingFrameSlice {
            guard buffer.count >= bytes.count else { throw .outputTooSmall(needed: bytes.count, available: buffer.count) }
            FrameAssembly.copy(bytes, to: buffer, at: 0)
        }
        self.frame = nil
        return PacketizedPayload(byteCount: bytes.count, isLast: true, marker: marker, frameSlice: 0..<bytes.count)
    }
}

/// Takes Opus packets out of RTP payloads (RFC 7587 §4.2): the payload is the packet, passed through.
/// Each packet is a frame of its own, decodable by itself; an empty payload is an error.
public struct OpusDepacketizer: RTPDepacketizer {
    public static let codec = CodecName.opus
    public static let clockRate = 48_000

    private var assembly = FrameAssembly()

    public init() {}

    public func inspect(_ payload: UnsafeRawBufferPointer) throws(RTPPayloadError) -> RTPPayloadInfo {
        guard !payload.isEmpty else { throw .emptyPayload }
        return RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: payload.count)
    }

    public mutating func startFrame() { assembly = FrameAssembly() }

    /// The payload is the frame: `info` tells nothing more.
    public mutating func append(_ payload: UnsafeRawBufferPointer, inspected _: RTPPayloadInfo, sequenceNumber: UInt16,
                                marker: Bool, into output: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) {
        guard !payload.isEmpty else { throw .emptyPayload }
        // An Opus frame is one packet: whatever follows it belongs to another frame.
        try assembly.check(sequenceNumber: sequenceNumber, adding: payload.count, to: output)
        FrameAssembly.copy(payload, to: output, at: 0)
        assembly.accept(sequenceNumber: sequenceNumber, endsFrame: true, added: payload.count)
    }

    public mutating func finishFrame() throws(RTPPayloadError) -> RTPFrameInfo {
        defer { startFrame() }
        guard assembly.packetCount > 0 else { throw .emptyFrame }
        return RTPFrameInfo(byteCount: assembly.byteCount, isKeyframe: true, packetCount: 1)
    }

    public static var eachPayloadIsAFrame: Bool { true }

    /// From the TOC byte and frame count (RFC 6716 §3.1); the 48 kHz samples are RTP clock ticks.
    public static func duration(ofFrame frame: UnsafeRawBufferPointer) -> Int? { OpusPacket.duration(frame) }
}
