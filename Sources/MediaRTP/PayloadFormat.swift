import MediaCore

// The two protocols every RTP payload format implements: one to cut a frame into RTP payloads, one to
// put the payloads of a frame back together. They see only payloads (the bytes after the RTP header)
// and the few header fields a payload format needs, as plain values; the RTP header itself, sockets,
// pacing and the jitter buffer are elsewhere.

/// Cuts encoded frames into RTP payloads of at most `maxPayloadSize` bytes (RFC 3550 §5.1; the
/// payload format's RFC for how).
///
/// How an RTP sender uses it, once per frame:
///
/// ```swift
/// try packetizer.startFrame(frame)                      // checks the whole frame first: errors come here
/// let timestamp = H264Packetizer.rtpTimestamp(of: frame.pts, offset: randomOffset)
/// while let payload = try packetizer.nextPayload(into: packetBuffer.payloadArea) {
///     // header: marker = payload.marker, timestamp, sequence number += 1
///     send(header, packetBuffer.payloadArea.prefix(payload.byteCount))
/// }
/// ```
///
/// The packetizer keeps the frame (its buffer is reference-counted, so it stays alive) and writes
/// each payload straight into the caller's buffer, which needs `maxPayloadSize` bytes: nothing is
/// allocated per packet once warm. Every payload of a frame has the frame's RTP timestamp.
public protocol RTPPacketizer: Sendable {
    /// The codec of the frames this packetizer takes.
    static var codec: CodecName { get }
    /// The RTP clock rate of the payload format, in Hz.
    static var clockRate: Int { get }
    /// The largest payload `nextPayload(into:)` writes.
    var maxPayloadSize: Int { get }

    /// Starts packetizing `frame`, dropping what is left of the previous one. Throws when the frame
    /// cannot be sent, before any payload is written.
    mutating func startFrame(_ frame: EncodedFrame) throws(RTPPayloadError)

    /// Writes the next payload of the frame at the start of `buffer`; `nil` when the frame has been
    /// sent whole (or none was started). Throws `.outputTooSmall` (and stays put) when `buffer` is
    /// shorter than the payload. With `leavingFrameSlice`, a payload that ends with a slice of the
    /// frame (`PacketizedPayload.frameSlice`) is written only up to it: the caller places the slice
    /// after the `byteCount - frameSlice.count` bytes written, copying or encrypting it from the frame.
    mutating func nextPayload(into buffer: UnsafeMutableRawBufferPointer,
                              leavingFrameSlice: Bool) throws(RTPPayloadError) -> PacketizedPayload?
}

/// What `RTPPacketizer.nextPayload(into:)` wrote.
public struct PacketizedPayload: Sendable, Hashable {
    /// The payload's length at the start of the caller's buffer.
    public var byteCount: Int
    /// Whether this is the frame's last payload.
    public var isLast: Bool
    /// The RTP marker bit to send with it (RFC 3550 §5.1; its meaning is the payload format's: the last
    /// packet of a video frame, the first packet of an audio talkspurt).
    public var marker: Bool
    /// Where in the frame the payload's last bytes were copied from, when they were: the payload is
    /// then a few bytes of the format's own (a payload descriptor, an FU header) and these bytes of
    /// the frame. A sender keeps the first part and a reference to the frame for retransmissions,
    /// instead of a copy of the whole payload. Nil when the payload is not one slice of the frame.
    public var frameSlice: Range<Int>?

    public init(byteCount: Int, isLast: Bool, marker: Bool, frameSlice: Range<Int>? = nil) {
        self.byteCount = byteCount
        self.isLast = isLast
        self.marker = marker
        self.frameSlice = frameSlice
    }
}

extension RTPPacketizer {
    /// Writes the next payload of the frame, whole, at the start of `buffer`; see
    /// `nextPayload(into:leavingFrameSlice:)`.
    public mutating func nextPayload(into buffer: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) -> PacketizedPayload? {
        try nextPayload(into: buffer, leavingFrameSlice: false)
    }

    /// The RTP timestamp (RFC 3550 §5.1) of a frame presented at `time`: `time` in units of the
    /// clock rate (rounded to the nearest), plus the stream's random `offset`, modulo 2^32.
    public static func rtpTimestamp(of time: MediaTime, offset: UInt32 = 0) -> UInt32 {
        let ticks = time.rescaled(to: Rational(1, clockRate)).value
        return UInt32(truncatingIfNeeded: ticks) &+ offset
    }
}

/// Puts the payloads of one frame back together, for a jitter buffer that knows nothing of codecs.
///
/// How a jitter buffer uses it: packets arrive in any order; it keeps them by (unwrapped) sequence
/// number and groups them by RTP timestamp. `inspect(_:)` tells it, packet by packet and without
/// state, whether a payload starts a frame, whether it shows the frame is a keyframe, and how many
/// bytes it adds to the frame. Once it holds a run of consecutive sequence numbers of one timestamp,
/// from a packet that starts a frame to one with the marker bit, it assembles them:
///
/// ```swift
/// let capacity = try packets.reduce(0) { $0 + (try depacketizer.inspect($1.payload).mediaByteCount) }
/// depacketizer.startFrame()
/// for packet in packets {                               // sequence order
///     try depacketizer.append(packet.payload, sequenceNumber: packet.sequence, marker: packet.marker,
///                             into: output)             // output.count >= capacity
/// }
/// let frame = try depacketizer.finishFrame()            // frame.byteCount bytes of output, isKeyframe
/// ```
///
/// A frame whose packets do not fit together (a gap in the sequence numbers, a fragment without its
/// start, a packet after the marker bit, ...) is rejected with a named `RTPPayloadError`; the jitter
/// buffer then drops it and asks for a keyframe. After any error, call `startFrame()` again.
public protocol RTPDepacketizer: Sendable {
    /// The codec of the frames this depacketizer makes.
    static var codec: CodecName { get }
    /// The RTP clock rate of the payload format, in Hz.
    static var clockRate: Int { get }

    /// Checks one payload and says what it holds; changes nothing. Throws for a malformed payload.
    func inspect(_ payload: UnsafeRawBufferPointer) throws(RTPPayloadError) -> RTPPayloadInfo

    /// Starts a new frame, dropping any partly assembled one.
    mutating func startFrame()

    /// Appends the media bytes of the frame's next packet to `output`, after the `byteCount` bytes the
    /// frame already has there (the caller passes the same buffer, or one holding the same first
    /// bytes, every time). Throws `.outputTooSmall` without changing anything when `output` lacks room,
    /// and the other errors when the packet is malformed or does not follow the previous one.
    ///
    /// `info` is what `inspect(payload)` returned: a jitter buffer inspects each packet as it comes,
    /// and a format whose headers take reading (VP8's payload descriptor) then reads them once. An
    /// `info` of another payload makes a wrong frame or an error (`.inspectionMismatch`), never a read
    /// or write outside `payload` and `output`. `append(_:sequenceNumber:marker:into:)` inspects first.
    mutating func append(_ payload: UnsafeRawBufferPointer, inspected info: RTPPayloadInfo, sequenceNumber: UInt16,
                         marker: Bool, into output: UnsafeMutableRawBufferPointer) throws(RTPPayloadError)

    /// Ends the frame and describes it; throws when it is incomplete (nothing appended, a fragment
    /// left open).
    mutating func finishFrame() throws(RTPPayloadError) -> RTPFrameInfo

    /// Whether every payload is a whole frame that decodes on its own (audio such as Opus, RFC 7587
    /// §4.2): a jitter buffer then skips what is lost rather than waiting for a keyframe, and does not
    /// read the marker bit as the end of a frame. False by default (video).
    static var eachPayloadIsAFrame: Bool { get }

    /// The duration of an assembled frame in clock-rate ticks, where its bytes tell it; nil by default.
    static func duration(ofFrame frame: UnsafeRawBufferPointer) -> Int?
}

extension RTPDepacketizer {
    public static var eachPayloadIsAFrame: Bool { false }
    public static func duration(ofFrame frame: UnsafeRawBufferPointer) -> Int? { nil }

    /// Inspects the frame's next packet and appends it; see `append(_:inspected:sequenceNumber:marker:into:)`.
    public mutating func append(_ payload: UnsafeRawBufferPointer, sequenceNumber: UInt16, marker: Bool,
                                into output: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) {
        try append(payload, inspected: inspect(payload), sequenceNumber: sequenceNumber, marker: marker, into: output)
    }
}

/// What `RTPDepacketizer.inspect(_:)` reads from one payload.
public struct RTPPayloadInfo: Sendable, Hashable {
    /// Whether the payload begins a frame (an H.264 access unit, a VP8 picture, an Opus packet).
    public var startsFrame: Bool
    /// Whether the payload shows that its frame is a keyframe: an H.264 IDR slice (or a fragment of
    /// one), the start of a VP8 key frame. A frame is a keyframe when any of its payloads says so.
    public var isKeyframe: Bool
    /// The bytes `append` adds to the frame for this payload.
    public var mediaByteCount: Int
    /// The PictureID the payload carries, in formats that have one (VP8, RFC 7741 §4.2).
    public var pictureID: Int?

    public init(startsFrame: Bool, isKeyframe: Bool, mediaByteCount: Int, pictureID: Int? = nil) {
        self.startsFrame = startsFrame
        self.isKeyframe = isKeyframe
        self.mediaByteCount = mediaByteCount
        self.pictureID = pictureID
    }
}

/// A frame put together by `RTPDepacketizer.finishFrame()`.
public struct RTPFrameInfo: Sendable, Hashable {
    /// The frame's length at the start of the output buffer.
    public var byteCount: Int
    /// Whether the frame can be decoded on its own (H.264 IDR, VP8 key frame; every Opus packet).
    public var isKeyframe: Bool
    /// The PictureID of payload formats that carry one (VP8, RFC 7741 §4.2), so that a receiver sees
    /// pictures missing between two frames.
    public var pictureID: Int?
    /// How many packets made the frame.
    public var packetCount: Int

    public init(byteCount: Int, isKeyframe: Bool, pictureID: Int? = nil, packetCount: Int) {
        self.byteCount = byteCount
        self.isKeyframe = isKeyframe
        self.pictureID = pictureID
        self.packetCount = packetCount
    }
}

/// The bookkeeping every depacketizer does for the frame in progress: where its bytes end in the
/// caller's buffer, that packets follow one another without a gap (RFC 3550 §5.1 sequence numbers)
/// and that nothing comes after the packet that ended the frame.
struct FrameAssembly: Sendable, Hashable {
    var byteCount = 0
    var packetCount = 0
    var lastSequenceNumber: UInt16?
    /// Whether the last packet ended the frame (a video packet with the marker bit, any Opus packet).
    var ended = false

    /// Checks that a packet numbered `sequenceNumber` may come next and that `output` has room for
    /// `count` more bytes.
    func check(sequenceNumber: UInt16, adding count: Int,
               to output: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) {
        if ended { throw .packetAfterFrameEnd(sequenceNumber: sequenceNumber) }
        if let last = lastSequenceNumber, SerialNumber.distance(from: last, to: sequenceNumber) != 1 {
            throw .sequenceGap(expected: last &+ 1, received: sequenceNumber)
        }
        if output.count - byteCount < count {
            throw .outputTooSmall(needed: byteCount + count, available: output.count)
        }
    }

    /// Records a packet checked by `check` whose bytes have been written.
    mutating func accept(sequenceNumber: UInt16, endsFrame: Bool, added count: Int) {
        lastSequenceNumber = sequenceNumber
        ended = endsFrame
        byteCount += count
        packetCount += 1
    }

    /// Copies `bytes` to `output` at the frame's end, returning where the copy ends. `check` has made room.
    @discardableResult
    static func copy(_ bytes: UnsafeRawBufferPointer, to output: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        if let base = bytes.baseAddress, !bytes.isEmpty {
            (output.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count)
        }
        return offset + bytes.count
    }
}

/// Raw-buffer helpers for reading and writing payload fields in network byte order.
extension UnsafeRawBufferPointer {
    /// The big-endian 16-bit value at `offset`; the caller has checked that two bytes are there.
    @inline(__always)
    func uint16(at offset: Int) -> Int { Int(self[offset]) << 8 | Int(self[offset + 1]) }

    /// `self[range]` as a buffer of its own.
    @inline(__always)
    func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: self[range]) }
}

/// The frame a packetizer is cutting: its buffer, kept alive, and its bytes, read from here so that
/// each payload costs no reference counting on the frame.
struct FrameBytes: @unchecked Sendable {
    private let buffer: FrameBuffer
    /// The frame's bytes, valid while this value lives (the buffer is not reused before).
    let bytes: UnsafeRawBufferPointer

    init(_ frame: EncodedFrame) {
        buffer = frame.buffer
        bytes = frame.bytes
    }
}
