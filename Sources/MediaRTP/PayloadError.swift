import MediaCore

/// Why a payload could not be made or read. One case per kind of fault, so that a receiver can count
/// them and tests can name what they expect.
public enum RTPPayloadError: Error, Sendable, Hashable {
    // MARK: Any payload format

    /// A packet without payload bytes (every format here needs at least its payload header).
    case emptyPayload
    /// A frame of zero bytes was given to a packetizer, or `finishFrame()` came before any packet.
    case emptyFrame
    /// The `RTPPayloadInfo` given to a depacketizer's `append` does not fit the payload: it came from
    /// inspecting another one.
    case inspectionMismatch
    /// The caller's buffer holds `available` bytes; `needed` are required.
    case outputTooSmall(needed: Int, available: Int)
    /// The frame's packets skip a sequence number (RFC 3550 §5.1): a packet was lost in between.
    case sequenceGap(expected: UInt16, received: UInt16)
    /// A packet came after the one that ended the frame: a video packet with the marker bit (RFC 3550
    /// §5.1), or any Opus packet (one packet is one frame).
    case packetAfterFrameEnd(sequenceNumber: UInt16)
    /// A packetizer was configured with a maximum payload size below the format's `minimum`.
    case maxPayloadSizeTooSmall(Int, minimum: Int)
    /// Something that must travel whole in one payload (an H.264 NAL unit in packetization-mode 0, an
    /// Opus packet) is `size` bytes, more than the maximum payload size.
    case payloadTooLarge(size: Int, maxPayloadSize: Int)
    /// A packetizer was given a frame of another codec.
    case wrongCodec(CodecName)

    // MARK: H.264 (RFC 6184)

    /// The access unit does not begin with an Annex-B start code (`00 00 01` or `00 00 00 01`).
    case h264MissingStartCode
    /// A NAL unit of type `type` cannot be sent in RTP: 0 and 24-31 are the RTP packet types of RFC 6184
    /// Table 3, so a receiver would misread them.
    case h264UnsendableNALType(Int)
    /// Payload type 0, 30 or 31: reserved or undefined in RFC 6184 Table 3.
    case h264ReservedPacketType(Int)
    /// STAP-B (25), MTAP16 (26), MTAP24 (27) or FU-B (29): interleaved mode only (§5.4), not supported.
    case h264UnsupportedPacketType(Int)
    /// A STAP-A (§5.7.1) with no aggregation unit after its header.
    case h264AggregationEmpty
    /// A STAP-A whose aggregation unit at `offset` has only one byte of its 16-bit size.
    case h264AggregationSizeTruncated(offset: Int)
    /// A STAP-A aggregation unit declares `declared` bytes but only `available` follow.
    case h264AggregationUnitTruncated(declared: Int, available: Int)
    /// A STAP-A aggregation unit of size 0: a NAL unit has at least its header byte.
    case h264AggregationUnitEmpty(offset: Int)
    /// A STAP-A carries a NAL unit of type `type`, which is not a NAL unit (1-23).
    case h264AggregatedPacketType(Int)
    /// An FU-A (§5.8) shorter than its indicator and header.
    case h264FragmentTooShort
    /// An FU-A with both the Start and End bits: §5.8 forbids sending a NAL unit in one FU.
    case h264FragmentStartAndEnd
    /// A middle or end FU-A with no start fragment before it in the frame.
    case h264FragmentWithoutStart
    /// A new NAL unit (or the end of the frame) came while an FU-A fragmented NAL unit was unfinished.
    case h264FragmentNotEnded
    /// An FU-A continues a fragmented NAL unit of another type.
    case h264FragmentTypeMismatch(expected: Int, received: Int)

    // MARK: VP8 (RFC 7741)

    /// A VP8 payload descriptor (§4.2) ends before its `field`.
    case vp8DescriptorTruncated(VP8PayloadDescriptor.Field)
    /// A descriptor to write holds a value too large for its `field`.
    case vp8FieldOutOfRange(VP8PayloadDescriptor.Field)
    /// The first packet of a frame is not the start of partition 0 (S=1, PID=0, §4.4).
    case vp8FrameStartMissing
    /// A packet after the first of a frame starts partition 0 again: it belongs to another frame.
    case vp8UnexpectedFrameStart
    /// The packets of one frame carry different PictureIDs.
    case vp8PictureIDMismatch(expected: Int?, received: Int?)
    /// The first packet of a frame has no VP8 payload bytes, so not even the P bit of the VP8 payload
    /// header (§4.3) that tells key frames.
    case vp8PayloadHeaderMissing

    // MARK: RTX (RFC 4588)

    /// An RTX payload shorter than its 2-byte original sequence number (§4).
    case rtxOriginalSequenceNumberMissing
}
