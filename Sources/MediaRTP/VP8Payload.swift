import MediaCore

/// Cuts VP8 frames into RTP payloads (RFC 7741 §4): each payload is a payload descriptor (§4.2)
/// and as many of the frame's bytes as fit in `maxPayloadSize`, in order. The first payload of a
/// frame has S = 1 and PID = 0 (partitions are not told apart: PID stays 0, which §4.2 allows); the
/// last carries the marker bit (§4.1). A PictureID, 15 bits unless configured otherwise, counts frames
/// and wraps.
public struct VP8Packetizer: RTPPacketizer {
    public static let codec = CodecName.vp8
    /// The VP8 RTP clock rate (RFC 7741 §4.1).
    public static let clockRate = 90_000

    /// Whether payloads carry a PictureID, and how wide.
    public enum PictureIDMode: Sendable, Hashable {
        case none
        case sevenBit
        case fifteenBit
    }

    public let maxPayloadSize: Int
    public let pictureIDMode: PictureIDMode
    /// The PictureID the next frame gets.
    public private(set) var nextPictureID: UInt16

    private var frame: FrameBytes?
    private var offset = 0
    /// The frame's payload descriptor, written once when it starts (its first packet's, S set), and
    /// its length: the packets after the first repeat it with S clear (RFC 7741 §4.2).
    private var descriptor: UInt64 = 0
    private var descriptorCount = 0

    /// `firstPictureID` is the first frame's PictureID (taken modulo the PictureID's range). A sender
    /// starts from a random one, so that a restarted stream does not repeat old numbers.
    public init(maxPayloadSize: Int = 1200, pictureIDMode: PictureIDMode = .fifteenBit,
                firstPictureID: UInt16 = 0) throws(RTPPayloadError) {
        let template = Self.descriptor(pictureIDMode, 0)
        let minimum = template.byteCount + 1
        guard maxPayloadSize >= minimum else { throw .maxPayloadSizeTooSmall(maxPayloadSize, minimum: minimum) }
        self.maxPayloadSize = maxPayloadSize
        self.pictureIDMode = pictureIDMode
        nextPictureID = firstPictureID & Self.pictureIDMask(pictureIDMode)
    }

    public mutating func startFrame(_ frame: EncodedFrame) throws(RTPPayloadError) {
        self.frame = nil
        guard frame.codec == Self.codec else { throw .wrongCodec(frame.codec) }
        guard frame.byteCount > 0 else { throw .emptyFrame }
        var first = Self.descriptor(pictureIDMode, nextPictureID)
        first.startsPartition = true
        descriptorCount = try withUnsafeMutableBytes(of: &descriptor) { bytes throws(RTPPayloadError) in
            try first.write(into: bytes)
        }
        nextPictureID = (nextPictureID &+ 1) & Self.pictureIDMask(pictureIDMode)
        offset = 0
        self.frame = FrameBytes(frame)
    }

    public mutating func nextPayload(into buffer: UnsafeMutableRawBufferPointer,
                                     leavingFrameSlice: Bool) throws(RTPPayloadError) -> PacketizedPayload? {
        guard let bytes = frame?.bytes else { return nil }
        let headerCount = descriptorCount
        let count = min(bytes.count - offset, maxPayloadSize - headerCount)
        let written = leavingFrameSlice ? headerCount : headerCount + count
        guard buffer.count >= written else { throw .outputTooSmall(needed: written, available: buffer.count) }
        withUnsafeBytes(of: descriptor) { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: headerCount) }
        let slice = offset..<(offset + count)
        if !leavingFrameSlice { FrameAssembly.copy(bytes.slice(slice), to: buffer, at: headerCount) }
        offset += count
        withUnsafeMutableBytes(of: &descriptor) { $0[0] &= ~VP8PayloadDescriptor.startOfPartitionBit }
        let isLast = offset == bytes.count
        if isLast { self.frame = nil }
        return PacketizedPayload(byteCount: headerCount + count, isLast: isLast, marker: isLast, frameSlice: slice)
    }

    private static func pictureIDMask(_ mode: PictureIDMode) -> UInt16 { mode == .sevenBit ? 0x7F : 0x7FFF }

    private static func descriptor(_ mode: PictureIDMode, _ pictureID: UInt16) -> VP8PayloadDescriptor {
        switch mode {
        case .none: return VP8PayloadDescriptor()
        case .sevenBit: return VP8PayloadDescriptor(pictureID: .sevenBit(UInt8(pictureID & 0x7F)))
        case .fifteenBit: return VP8PayloadDescriptor(pictureID: .fifteenBit(pictureID & 0x7FFF))
        }
    }
}

/// Puts VP8 RTP payloads back together into frames (RFC 7741 §4): strips each payload descriptor
/// and joins the VP8 data. A frame begins with the payload that starts partition 0 (S = 1, PID = 0);
/// it is a key frame when the P bit of its first byte (the VP8 payload header, §4.3) is 0. All
/// payloads of a frame must carry the same PictureID, which the frame reports.
public struct VP8Depacketizer: RTPDepacketizer {
    public static let codec = CodecName.vp8
    public static let clockRate = 90_000

    private var assembly = FrameAssembly()
    private var pictureID: Int?
    private var isKeyframe = false

    public init() {}

    public func inspect(_ payload: UnsafeRawBufferPointer) throws(RTPPayloadError) -> RTPPayloadInfo {
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        let headerCount = descriptor.byteCount
        let startsFrame = descriptor.startsFrame
        if startsFrame && payload.count == headerCount { throw .vp8PayloadHeaderMissing }
        return RTPPayloadInfo(startsFrame: startsFrame, isKeyframe: startsFrame && payload[headerCount] & 0x01 == 0,
                              mediaByteCount: payload.count - headerCount, pictureID: descriptor.pictureID?.value)
    }

    public mutating func startFrame() {
        assembly = FrameAssembly()
        pictureID = nil
        isKeyframe = false
    }

    /// Takes the descriptor's length, S bit and PictureID from `info`, without parsing it again.
    public mutating func append(_ payload: UnsafeRawBufferPointer, inspected info: RTPPayloadInfo, sequenceNumber: UInt16,
                                marker: Bool, into output: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) {
        let headerCount = payload.count - info.mediaByteCount
        guard headerCount >= 1 && info.mediaByteCount >= 0 else { throw .inspectionMismatch }
        try assembly.check(sequenceNumber: sequenceNumber, adding: info.mediaByteCount, to: output)
        if assembly.packetCount == 0 {
            guard info.startsFrame else { throw .vp8FrameStartMissing }
        } else {
            guard !info.startsFrame else { throw .vp8UnexpectedFrameStart }
            guard info.pictureID == pictureID else { throw .vp8PictureIDMismatch(expected: pictureID, received: info.pictureID) }
        }
        FrameAssembly.copy(payload.slice(headerCount..<payload.count), to: output, at: assembly.byteCount)
        if assembly.packetCount == 0 {
            pictureID = info.pictureID
            isKeyframe = info.isKeyframe
        }
        assembly.accept(sequenceNumber: sequenceNumber, endsFrame: marker, added: info.mediaByteCount)
    }

    public mutating func finishFrame() throws(RTPPayloadError) -> RTPFrameInfo {
        defer { startFrame() }
        guard assembly.packetCount > 0 else { throw .emptyFrame }
        return RTPFrameInfo(byteCount: assembly.byteCount, isKeyframe: isKeyframe, pictureID: pictureID,
                            packetCount: assembly.packetCount)
    }
}
