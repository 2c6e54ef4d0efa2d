import MediaCore

/// The sending side of one RTP stream: cuts encoded frames into packets with a payload format's
/// packetizer, numbers and stamps them (RFC 3550 §5.1), keeps what it needs to send the latest
/// packets again so that a NACK (RFC 4585 §6.2.1) can be answered — plainly, or as RTX on a stream
/// of its own (RFC 4588 §4) — and writes sender reports (RFC 3550 §6.4.1).
///
/// Each packet is written into the caller's buffer (where a transport then protects it in place)
/// and goes out from there; or only its head is, and the rest, a slice of the frame, is left for
/// SRTP to encrypt from where it is (`send(_:at:into:emitParts:)`). The history keeps a packet's
/// header and the payload format's own bytes (a payload descriptor, an FU header), and for the rest
/// a reference to the frame it was cut from: no copy of the payload per packet, and sending
/// allocates nothing once warm. Pure logic: the caller owns the socket and the clock.
public struct RTPSender<Packetizer: RTPPacketizer>: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var payloadType: UInt8
        public var ssrc: UInt32
        /// Random per stream (RFC 3550 §5.1), so that a new stream is not taken for an old one.
        public var initialSequenceNumber: UInt16
        public var timestampOffset: UInt32
        /// Packets kept for retransmission; rounded up to a power of two.
        public var historySize: Int
        /// Frames whose packets can be sent again (rounded up to a power of two): a packet of an
        /// older frame is no longer kept, even if `historySize` has room for it. 32 holds over a
        /// second of 30 fps video, the longest a receiver's jitter buffer waits for a packet by
        /// default, and 0.64 s of 20 ms audio. The sender keeps these frames' buffers: at 128 a
        /// two-minute impaired call's memory grew 2.5-3.1% after warm-up, at 32 1.35-1.40%, as it
        /// did when the history kept copies.
        public var historyFrames: Int
        /// Retransmissions as RTX (RFC 4588): their payload type and SSRC; nil resends packets as they were.
        public var rtx: (payloadType: UInt8, ssrc: UInt32)? {
            get { rtxPayloadType.map { ($0, rtxSSRC) } }
            set { (rtxPayloadType, rtxSSRC) = (newValue?.payloadType, newValue?.ssrc ?? 0) }
        }
        private var rtxPayloadType: UInt8?
        private var rtxSSRC: UInt32 = 0

        public init(payloadType: UInt8, ssrc: UInt32 = .random(in: 1...UInt32.max),
                    initialSequenceNumber: UInt16 = .random(in: 0...UInt16.max),
                    timestampOffset: UInt32 = .random(in: 0...UInt32.max), historySize: Int = 1024,
                    historyFrames: Int = 32, rtx: (payloadType: UInt8, ssrc: UInt32)? = nil) {
            self.payloadType = payloadType
            self.ssrc = ssrc
            self.initialSequenceNumber = initialSequenceNumber
            self.timestampOffset = timestampOffset
            self.historySize = historySize
            self.historyFrames = historyFrames
            self.rtx = rtx
        }
    }

    public let configuration: Configuration
    public private(set) var packetizer: Packetizer
    public private(set) var statistics = RTPSenderStatistics()
    private var nextSequenceNumber: UInt16
    private var nextRTXSequenceNumber: UInt16 = .random(in: 0...UInt16.max)
    private var history: PacketHistory
    /// The RTP timestamp of the last frame and the clock time it was sent, mapping media time to
    /// wall-clock time for sender reports.
    private var lastFrame: (timestamp: UInt32, sentAt: ClockTime)?

    public init(packetizer: Packetizer, configuration: Configuration) {
        self.packetizer = packetizer
        self.configuration = configuration
        nextSequenceNumber = configuration.initialSequenceNumber
        // An RTX packet is the original plus its 2-byte original sequence number.
        history = PacketHistory(slots: configuration.historySize, frames: configuration.historyFrames,
                                slotSize: RTPHeader.fixedLength + packetizer.maxPayloadSize + 2)
    }

    /// The largest packet the sender writes (an RTX packet when RTX is on): the room a buffer given
    /// to `send(_:at:into:emit:)` or `retransmit(_:into:emit:)` needs.
    public var maxPacketSize: Int { history.slotSize }

    /// Packetizes `frame` (sent at `now`): writes each packet at the start of `buffer` (at least
    /// `maxPacketSize` bytes) and hands its length to `emit`, in order; the next packet overwrites
    /// it. Throws the packetizer's errors before any packet goes out.
    @_specialize(where Packetizer == VP8Packetizer)
    @_specialize(where Packetizer == H264Packetizer)
    @_specialize(where Packetizer == OpusPacketizer)
    public mutating func send(_ frame: EncodedFrame, at now: ClockTime, into buffer: UnsafeMutableRawBufferPointer,
                              emit: (Int) throws -> Void) throws {
        try send(frame, at: now, into: buffer) { (packet: RTPPacketParts) in try emit(packet.joined(in: buffer)) }
    }

    /// Packetizes `frame` (sent at `now`) as `send(_:at:into:emit:)` does, but leaves the bytes of the
    /// frame that end a payload where they are: `emit` gets each packet as its head, written at the
    /// start of `buffer` (the RTP header and the payload format's own bytes), and its tail, those
    /// bytes of the frame, to be copied or encrypted after the head
    /// (`SRTPSession.protect(_:length:followedBy:)` reads them in place). So a packet's payload is
    /// read once, by the cipher, and never copied.
    @_specialize(where Packetizer == VP8Packetizer)
    @_specialize(where Packetizer == H264Packetizer)
    @_specialize(where Packetizer == OpusPacketizer)
    public mutating func send(_ frame: EncodedFrame, at now: ClockTime, into buffer: UnsafeMutableRawBufferPointer,
                              emitParts emit: (RTPPacketParts) throws -> Void) throws {
        guard buffer.count >= maxPacketSize else {
            throw RTPPacketError.bufferTooSmall(needed: maxPacketSize, available: buffer.count)
        }
        try packetizer.startFrame(frame)
        let timestamp = Packetizer.rtpTimestamp(of: frame.pts, offset: configuration.timestampOffset)
        let frameNumber = history.keep(frame)
        let bytes = frame.bytes
        let payloadStart = RTPHeader.fixedLength
        let payloadRoom = UnsafeMutableRawBufferPointer(rebasing: buffer[payloadStart..<maxPacketSize])
        while let payload = try packetizer.nextPayload(into: payloadRoom, leavingFrameSlice: true) {
            let sequenceNumber = nextSequenceNumber
            let header = RTPHeader(marker: payload.marker, payloadType: configuration.payloadType,
                                   sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: configuration.ssrc)
            try header.write(into: buffer)
            let tail = payload.frameSlice.map { bytes.slice($0) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
            let headLength = payloadStart + payload.byteCount - tail.count
            history.record(sequenceNumber, head: UnsafeRawBufferPointer(rebasing: buffer[0..<headLength]),
                           frameSlice: payload.frameSlice.map { (frameNumber, $0) })
            nextSequenceNumber &+= 1
            statistics.packetCount += 1
            statistics.octetCount += payload.byteCount
            try emit(RTPPacketParts(headLength: headLength, tail: tail))
        }
        lastFrame = (timestamp, now)
        statistics.frameCount += 1
    }

    /// `send(_:at:into:emit:)` into a buffer of the sender's own, handing `emit` each packet; its
    /// bytes are valid during the call only.
    public mutating func send(_ frame: EncodedFrame, at now: ClockTime, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = history.scratch
        try send(frame, at: now, into: buffer) { try emit(UnsafeRawBufferPointer(rebasing: buffer[0..<$0])) }
    }

    /// Writes packet `sequenceNumber` again at the start of `buffer` (at least `maxPacketSize`
    /// bytes) and hands its length to `emit`, if the history still holds it: as it was, or as an RTX
    /// packet (RFC 4588 §4: the RTX stream's own header and sequence number, the original timestamp
    /// and marker, the original sequence number in front of the original payload). Returns false
    /// when it is too old.
    @discardableResult
    @_specialize(where Packetizer == VP8Packetizer)
    @_specialize(where Packetizer == H264Packetizer)
    @_specialize(where Packetizer == OpusPacketizer)
    public mutating func retransmit(_ sequenceNumber: UInt16, into buffer: UnsafeMutableRawBufferPointer,
                                    emit: (Int) throws -> Void) throws -> Bool {
        guard buffer.count >= maxPacketSize else {
            throw RTPPacketError.bufferTooSmall(needed: maxPacketSize, available: buffer.count)
        }
        guard let rtx = configuration.rtx else {
            guard let length = history.copy(sequenceNumber, into: buffer, at: 0) else {
                statistics.retransmissionsMissed += 1
                return false
            }
            statistics.retransmissions += 1
            statistics.retransmittedOctetCount += length - RTPHeader.fixedLength
            try emit(length)
            return true
        }
        // The original goes 2 bytes further on, so that its payload lands after the RTX header and OSN.
        let shift = 2
        guard let length = history.copy(sequenceNumber, into: buffer, at: shift) else {
            statistics.retransmissionsMissed += 1
            return false
        }
        statistics.retransmissions += 1
        statistics.retransmittedOctetCount += length - RTPHeader.fixedLength
        let original = UnsafeRawBufferPointer(rebasing: buffer[shift..<(shift + RTPHeader.fixedLength)])
        let header = RTPHeader(marker: original[1] & 0x80 != 0, payloadType: rtx.payloadType,
                               sequenceNumber: nextRTXSequenceNumber, timestamp: original.networkUInt32(at: 4), ssrc: rtx.ssrc)
        nextRTXSequenceNumber &+= 1
        let start = try header.write(into: buffer)
        buffer.storeNetwork(sequenceNumber, at: start)
        try emit(shift + length)
        return true
    }

    /// `retransmit(_:into:emit:)` into a buffer of the sender's own, handing `emit` the packet; its
    /// bytes are valid during the call only.
    @discardableResult
    public mutating func retransmit(_ sequenceNumber: UInt16, emit: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        let buffer = history.scratch
        return try retransmit(sequenceNumber, into: buffer) { try emit(UnsafeRawBufferPointer(rebasing: buffer[0..<$0])) }
    }

    /// Sends the stream's last packet again, as `retransmit` does (a tail-loss probe: a receiver
    /// that lost the last packets sees the gap below it and NACKs them, RFC 4585 §6.2.1). Returns
    /// false when no packet was sent yet.
    @discardableResult
    public mutating func resendLast(into buffer: UnsafeMutableRawBufferPointer, emit: (Int) throws -> Void) throws -> Bool {
        guard statistics.packetCount > 0 else { return false }
        return try retransmit(nextSequenceNumber &- 1, into: buffer, emit: emit)
    }

    /// `resendLast(into:emit:)` into a buffer of the sender's own.
    @discardableResult
    public mutating func resendLast(emit: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard statistics.packetCount > 0 else { return false }
        return try retransmit(nextSequenceNumber &- 1, emit: emit)
    }

    /// Answers every sequence number a generic NACK lists (RFC 4585 §6.2.1), each written into
    /// `buffer` in turn.
    public mutating func retransmit(_ nack: GenericNACK, into buffer: UnsafeMutableRawBufferPointer,
                                    emit: (Int) throws -> Void) throws {
        for pair in nack.pairs {
            try pair.forEachLost { try retransmit($0, into: buffer, emit: emit) }
        }
    }

    /// `retransmit(_:into:emit:)` for a NACK, into a buffer of the sender's own.
    public mutating func retransmit(_ nack: GenericNACK, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = history.scratch
        try retransmit(nack, into: buffer) { try emit(UnsafeRawBufferPointer(rebasing: buffer[0..<$0])) }
    }

    /// A sender report for `now` (RFC 3550 §6.4.1): the wall-clock time `wallClock`, and the RTP
    /// timestamp of the same instant, extrapolated from the last frame sent at `clockRate`.
    public func senderReport(at now: ClockTime, wallClock: NTPTimestamp, reportBlocks: [ReportBlock] = []) -> SenderReport {
        var timestamp = configuration.timestampOffset
        if let lastFrame {
            let elapsed = (now - lastFrame.sentAt).nanoseconds
            timestamp = lastFrame.timestamp &+ UInt32(truncatingIfNeeded: elapsed * Int64(Packetizer.clockRate) / 1_000_000_000)
        }
        return SenderReport(ssrc: configuration.ssrc, ntpTimestamp: wallClock, rtpTimestamp: timestamp,
                            packetCount: UInt32(truncatingIfNeeded: statistics.packetCount),
                            octetCount: UInt32(truncatingIfNeeded: statistics.octetCount), reportBlocks: reportBlocks)
    }
}

/// What an `RTPSender` has sent.
public struct RTPSenderStatistics: Sendable, Hashable {
    /// RTP data packets and their payload octets (RFC 3550 §6.4.1's sender counts).
    public var packetCount = 0
    public var octetCount = 0
    /// Frames sent (each as one or more packets).
    public var frameCount = 0
    /// Payload bytes of the packets retransmitted.
    public var retransmittedOctetCount = 0
    /// Packets sent again (for a NACK, or as a tail-loss probe), and requests for packets no longer kept.
    public var retransmissions = 0
    public var retransmissionsMissed = 0
}

/// What the sender needs to write its last packets again: per packet, in a fixed slot indexed by
/// sequence number, the header and the payload format's own bytes, and where the rest of the payload
/// lies in which frame (or, for a payload that is not one slice of its frame, the whole packet);
/// and the last frames, kept alive. One scratch slot more serves the sender's own-buffer calls.
/// Copies of a history share its slots, so one sender (and its copies' owner) must use a history at
/// a time, as a stream's sender does.
struct PacketHistory: Sendable {
    private let slots: PacketSlots
    /// Per slot: the sequence number it holds, the packet's length (0 = empty), the bytes of it in
    /// the slot, and for the rest the frame (its number) and where in it they start.
    private var entries: [Entry]
    /// The last frames sent, by frame number modulo their count, with their numbers.
    private var frames: [(number: Int, bytes: FrameBytes?)]
    private var nextFrameNumber = 0

    private struct Entry: Sendable {
        var sequenceNumber: UInt16 = 0
        var length = 0
        var storedLength = 0
        var frameNumber = 0
        var frameOffset = 0
    }

    init(slots count: Int, frames frameCount: Int, slotSize: Int) {
        slots = PacketSlots(count: count, slotSize: slotSize, spare: 1)
        entries = [Entry](repeating: Entry(), count: slots.count)
        var rounded = 1
        while rounded < max(1, frameCount) { rounded <<= 1 }
        frames = [(number: Int, bytes: FrameBytes?)](repeating: (-1, nil), count: rounded)
    }

    var slotSize: Int { slots.slotSize }

    /// The slot after the history's, for the sender's own-buffer calls.
    var scratch: UnsafeMutableRawBufferPointer { slots[slots.count] }

    /// Keeps `frame` for its packets' retransmissions (dropping the oldest frame kept); returns its number.
    mutating func keep(_ frame: EncodedFrame) -> Int {
        let number = nextFrameNumber
        nextFrameNumber += 1
        frames[number & (frames.count - 1)] = (number, FrameBytes(frame))
        return number
    }

    /// Notes that packet `sequenceNumber` is `head` and then the bytes `frameSlice.range` of frame
    /// `frameSlice.frame` (nil: `head` is all of it): copies the head into its slot.
    mutating func record(_ sequenceNumber: UInt16, head: UnsafeRawBufferPointer, frameSlice: (frame: Int, range: Range<Int>)?) {
        let index = slots.index(Int(sequenceNumber))
        slots[index].copy(head, to: 0)
        entries[index] = Entry(sequenceNumber: sequenceNumber, length: head.count + (frameSlice?.range.count ?? 0),
                               storedLength: head.count,
                               frameNumber: frameSlice?.frame ?? 0, frameOffset: frameSlice?.range.lowerBound ?? 0)
    }

    /// Writes packet `sequenceNumber` into `buffer` at `offset` (room checked by the caller) and
    /// returns its length; nil when its slot or its frame no longer holds it.
    func copy(_ sequenceNumber: UInt16, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int? {
        let entry = entries[slots.index(Int(sequenceNumber))]
        guard entry.length > 0, entry.sequenceNumber == sequenceNumber else { return nil }
        let rest = entry.length - entry.storedLength
        if rest > 0 {
            let kept = frames[entry.frameNumber & (frames.count - 1)]
            guard kept.number == entry.frameNumber, let frame = kept.bytes?.bytes else { return nil }
            buffer.copy(frame.slice(entry.frameOffset..<(entry.frameOffset + rest)), to: offset + entry.storedLength)
        }
        let slot = slots[slots.index(Int(sequenceNumber))]
        buffer.copy(UnsafeRawBufferPointer(rebasing: slot[0..<entry.storedLength]), to: offset)
        return entry.length
    }
}

/// Fixed-size packet slots, allocated once and indexed by (extended) sequence number modulo their
/// count, a power of two; `spare` more slots follow for the owner's own use. Copies share the memory,
/// which is freed with the last copy; the owner keeps one writer at a time.
struct PacketSlots: @unchecked Sendable {
    let slotSize: Int
    /// Slots indexed by sequence number (the spare ones come after).
    let count: Int
    private let storage: Storage

    init(count: Int, slotSize: Int, spare: Int = 0) {
        var rounded = 1
        while rounded < max(1, count) { rounded <<= 1 }
        self.count = rounded
        self.slotSize = slotSize
        storage = Storage(byteCount: (rounded + spare) * slotSize)
    }

    /// The slot of sequence number `sequence`.
    @inline(__always)
    func index(_ sequence: Int) -> Int { sequence & (count - 1) }

    subscript(index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage.bytes[(index * slotSize)..<((index + 1) * slotSize)])
    }

    private final class Storage {
        let bytes: UnsafeMutableRawBufferPointer
        init(byteCount: Int) { bytes = .allocate(byteCount: byteCount, alignment: 16) }
        deinit { bytes.deallocate() }
    }
}

/// A packet `RTPSender.send(_:at:into:emitParts:)` wrote: its first `headLength` bytes at the start
/// of the caller's buffer, then `tail`, bytes of the frame left where they are (empty when the head
/// is the whole packet).
public struct RTPPacketParts {
    public var headLength: Int
    public var tail: UnsafeRawBufferPointer
    /// The whole packet's length.
    public var length: Int { headLength + tail.count }

    /// Copies the tail after the head in `buffer`, the buffer the head is in (room checked by the
    /// caller), and returns the whole packet's length.
    public func joined(in buffer: UnsafeMutableRawBufferPointer) -> Int {
        buffer.copy(tail, to: headLength)
        return length
    }

    public init(headLength: Int, tail: UnsafeRawBufferPointer) {
        self.headLength = headLength
        self.tail = tail
    }
}
