import MediaCore

/// The sending side of one RTP stream: cuts encoded frames into packets with a payload format's
/// packetizer, numbers and stamps them (RFC 3550 §5.1), keeps the latest packets so that a NACK
/// (RFC 4585 §6.2.1) can be answered — plainly, or as RTX on a stream of its own (RFC 4588 §4) — and
/// writes sender reports (RFC 3550 §6.4.1).
///
/// Packets are written straight into the retransmission history and handed to the caller from
/// there, so sending allocates nothing once warm. Pure logic: the caller owns the socket and the
/// clock.
public struct RTPSender<Packetizer: RTPPacketizer>: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var payloadType: UInt8
        public var ssrc: UInt32
        /// Random per stream (RFC 3550 §5.1), so that a new stream is not taken for an old one.
        public var initialSequenceNumber: UInt16
        public var timestampOffset: UInt32
        /// Packets kept for retransmission; rounded up to a power of two.
        public var historySize: Int
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
                    rtx: (payloadType: UInt8, ssrc: UInt32)? = nil) {
            self.payloadType = payloadType
            self.ssrc = ssrc
            self.initialSequenceNumber = initialSequenceNumber
            self.timestampOffset = timestampOffset
            self.historySize = historySize
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
        history = PacketHistory(slots: configuration.historySize,
                                slotSize: RTPHeader.fixedLength + packetizer.maxPayloadSize + 2)
    }

    /// The largest packet the sender writes (an RTX packet when RTX is on).
    public var maxPacketSize: Int { history.slotSize }

    /// Packetizes `frame` (sent at `now`) and hands each packet to `emit`, in order. The bytes are
    /// valid during the call only. Throws the packetizer's errors before any packet goes out.
    public mutating func send(_ frame: EncodedFrame, at now: ClockTime,
                              emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        try packetizer.startFrame(frame)
        let timestamp = Packetizer.rtpTimestamp(of: frame.pts, offset: configuration.timestampOffset)
        while true {
            let sequenceNumber = nextSequenceNumber
            let slot = history.slot(for: sequenceNumber)
            let payloadStart = RTPHeader.fixedLength
            guard let payload = try packetizer.nextPayload(into: UnsafeMutableRawBufferPointer(rebasing: slot[payloadStart...]))
            else { break }
            let header = RTPHeader(marker: payload.marker, payloadType: configuration.payloadType,
                                   sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: configuration.ssrc)
            try header.write(into: slot)
            let length = payloadStart + payload.byteCount
            history.record(sequenceNumber, length: length)
            nextSequenceNumber &+= 1
            statistics.packetCount += 1
            statistics.octetCount += payload.byteCount
            try emit(UnsafeRawBufferPointer(rebasing: slot[0..<length]))
        }
        lastFrame = (timestamp, now)
        statistics.frameCount += 1
    }

    /// Sends packet `sequenceNumber` again if the history still holds it: as it was, or as an RTX
    /// packet (RFC 4588 §4: the RTX stream's own header and sequence number, the original timestamp
    /// and marker, the original sequence number in front of the original payload). Returns false
    /// when it is too old.
    @discardableResult
    public mutating func retransmit(_ sequenceNumber: UInt16, emit: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let original = history.packet(sequenceNumber) else {
            statistics.retransmissionsMissed += 1
            return false
        }
        statistics.retransmissions += 1
        statistics.retransmittedOctetCount += original.count - RTPHeader.fixedLength
        guard let rtx = configuration.rtx else {
            try emit(original)
            return true
        }
        let rtxSequenceNumber = nextRTXSequenceNumber
        nextRTXSequenceNumber &+= 1
        let scratch = history.scratch
        let header = RTPHeader(marker: original[1] & 0x80 != 0, payloadType: rtx.payloadType,
                               sequenceNumber: rtxSequenceNumber, timestamp: original.networkUInt32(at: 4), ssrc: rtx.ssrc)
        let start = try header.write(into: scratch)
        scratch.storeNetwork(sequenceNumber, at: start)
        let payload = UnsafeRawBufferPointer(rebasing: original[RTPHeader.fixedLength...])
        scratch.copy(payload, to: start + 2)
        try emit(UnsafeRawBufferPointer(rebasing: scratch[0..<(start + 2 + payload.count)]))
        return true
    }

    /// Sends the stream's last packet again, as `retransmit` does (a tail-loss probe: a receiver
    /// that lost the last packets sees the gap below it and NACKs them, RFC 4585 §6.2.1). Returns
    /// false when no packet was sent yet.
    @discardableResult
    public mutating func resendLast(emit: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard statistics.packetCount > 0 else { return false }
        return try retransmit(nextSequenceNumber &- 1, emit: emit)
    }

    /// Answers every sequence number a generic NACK lists (RFC 4585 §6.2.1).
    public mutating func retransmit(_ nack: GenericNACK, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        for pair in nack.pairs {
            try pair.forEachLost { try retransmit($0, emit: emit) }
        }
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

/// The last packets sent, in fixed slots indexed by sequence number, plus one scratch slot for
/// building RTX packets. Copies of a history share its slots, so one sender (and its copies' owner)
/// must use a history at a time, as a stream's sender does.
struct PacketHistory: Sendable {
    private let slots: PacketSlots
    /// Per slot: the sequence number it holds and the packet's length (0 = empty).
    private var sequenceNumbers: [UInt16]
    private var lengths: [Int]

    init(slots count: Int, slotSize: Int) {
        slots = PacketSlots(count: count, slotSize: slotSize, spare: 1)
        sequenceNumbers = [UInt16](repeating: 0, count: slots.count)
        lengths = [Int](repeating: 0, count: slots.count)
    }

    var slotSize: Int { slots.slotSize }

    /// The slot for packet `sequenceNumber`, to write it into before `record`ing it.
    func slot(for sequenceNumber: UInt16) -> UnsafeMutableRawBufferPointer { slots[slots.index(Int(sequenceNumber))] }

    /// The slot after the history's, for building a packet from one in the history.
    var scratch: UnsafeMutableRawBufferPointer { slots[slots.count] }

    /// Notes that `slot(for: sequenceNumber)` now holds that packet, `length` bytes long.
    mutating func record(_ sequenceNumber: UInt16, length: Int) {
        sequenceNumbers[slots.index(Int(sequenceNumber))] = sequenceNumber
        lengths[slots.index(Int(sequenceNumber))] = length
    }

    /// The packet numbered `sequenceNumber`, if its slot still holds it.
    func packet(_ sequenceNumber: UInt16) -> UnsafeRawBufferPointer? {
        let index = slots.index(Int(sequenceNumber))
        guard lengths[index] > 0, sequenceNumbers[index] == sequenceNumber else { return nil }
        return UnsafeRawBufferPointer(rebasing: slots[index][0..<lengths[index]])
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
