import MediaCore

/// The receiving side of one RTP stream: puts packets back in order, asks again for missing ones
/// (generic NACK, RFC 4585 §6.2.1; answered plainly or as RTX, RFC 4588), assembles frames with a
/// payload format's depacketizer, and releases them at their playout time. Pure logic, driven by the
/// caller's clock:
///
/// ```
/// socket ─► insert(packet, bytes, arrival) ─► slots ─► nextFrame(at:) ─► decoder
///                                               │
///               feedback(at:) ◄─ gaps, losses ──┘ ─► NACK / PLI ─► sender
///  call nextFrame / feedback again at nextDeadline
/// ```
///
/// Packets are kept in slots allocated once (`capacity` of them and one more, `Configuration.slotSize`
/// bytes each) and frames assembled into buffers from the caller's pool, so nothing is allocated per
/// packet or frame once warm. A packet that comes in order is appended to the frame it belongs to
/// as it comes (see `OpenFrame`), without a slot. Another packet's payload is copied into a free
/// slot, unless the packet was written into `receiveSlot` (read or decrypted there, e.g.
/// `SRTPSession.unprotect(_:into:)`): that slot is then kept as it is, and a free one becomes the next
/// `receiveSlot`. The slot freed last is used first, so the slots written are the ones a released
/// frame was just read from, still in cache.
///
/// **Playout.** A frame is due at its expected arrival, its RTP timestamp mapped onto the arrival
/// clock through the lowest transit time seen (the fastest packet shows the network's fixed delay),
/// plus the target delay. Frames leave in RTP timestamp order; one still incomplete when due is given
/// up, and so is a missing packet whose frame is due.
///
/// **Target delay** (J: interarrival jitter in seconds, RFC 3550 §6.4.1; RTT: the last
/// `updateRoundTripTime`, else the smoothed time from first NACKs to the retransmissions they brought,
/// else 100 ms):
///
///     R = max(RTT, 10 ms)
///     target = clamp(max(4·J, nack && lossSeen ? 2·R + reorderAllowance + 4·J : 0) + L, minimumDelay, maximumDelay)
///
/// 4·J covers the spread of arrivals about the fastest one (J is a mean deviation). Once a loss has
/// been seen (a packet NACKed or given up), and only if NACK is on, a frame must also wait for
/// retransmissions: the gap shows after the reorder allowance, and two requests with their answers
/// (one may be lost too) take two round trips, subject to jitter. Without losses no round trip is
/// paid. L is how late the latest late packet was (plus 5 ms), decaying by 1/128 with each frame
/// released: reordering that the jitter estimate misses widens the delay where it happens.
///
/// **Tail.** A video frame whose last packets are lost shows no gap until the next frame arrives, a
/// frame interval later; so when the highest packet leaves its frame open and nothing follows
/// within the reorder allowance, the next sequence number is NACKed (a request for a packet not yet
/// sent finds nothing to resend).
///
/// **Retries.** A missing packet is asked for again every round trip for as long as an answer could
/// still come before its frame is given up, however often its retransmissions are lost (RFC 4588
/// §6.3), within `maxNACKsPerRoundTrip` entries per round trip; see `feedback(at:)`.
///
/// **Start.** When the first packet heard does not start a frame, the packets before it are NACKed
/// one at a time back to the frame's start (with NACK on), so a stream whose very first packets
/// were lost still starts at its first keyframe.
///
/// **Reference integrity** (video): once a frame is lost or fails to assemble, every following frame
/// that is not a keyframe is dropped, and `feedback` asks for a keyframe (PLI, RFC 4585 §6.3.1) at
/// most once per max(RTT, 250 ms) until one is released, so a decoder never gets a frame whose
/// references are missing. A stream starts at its first keyframe. For audio (`eachPayloadIsAFrame`)
/// lost frames are just skipped: released frames then show a gap in pts, for concealment.
///
/// The packet paths (`insert`, `nextFrame`, `feedback`) are pre-specialized for the built-in payload
/// formats: callers generic over the depacketizer (the receive session, the receiver node) reach the
/// specialized code through a type check instead of looking up generic metadata per packet. The
/// helpers they call are inlined (`@inline(__always)`) or mutating: a call to a non-mutating method
/// that is not inlined copies the whole buffer (some 800 bytes) first.
public struct JitterBuffer<Depacketizer: RTPDepacketizer>: Sendable {
    private typealias Entry = JitterBufferEntry
    public struct Configuration: Sendable, Hashable {
        /// Bounds of the target delay: 10 ms and 1 s by default (an interactive call tolerates
        /// little more than a second of mouth-to-ear delay).
        public var minimumDelay: ClockTime
        public var maximumDelay: ClockTime
        /// Whether to NACK missing packets (and wait an RTT for them once a loss was seen).
        public var nack: Bool
        /// The most NACK entries (first requests, retries and tail probes together) sent within one
        /// retry interval: feedback uses RTCP's bandwidth (RFC 4585 §3.2), so a hostile or heavy loss
        /// pattern cannot make the receiver flood the sender. First requests go ahead of retries,
        /// each oldest first; the rest wait for the next interval.
        public var maxNACKsPerRoundTrip: Int
        /// Packets kept, rounded up to a power of two: the reordering window.
        public var capacity: Int
        /// The largest payload kept; larger packets are discarded.
        public var maxPacketSize: Int
        /// Bytes of a slot: a whole packet of the largest payload kept, with room for a header of 15
        /// CSRCs and an extension (RFC 3550 §5.1, §5.3.1) and an SRTP tag in the rest of 256.
        public var slotSize: Int { max(1, maxPacketSize) + 256 }
        /// Retransmissions arriving as RTX (RFC 4588 §4): their payload type and SSRC; nil for none.
        public var rtx: (payloadType: UInt8, ssrc: UInt32)? {
            get { rtxPayloadType.map { ($0, rtxSSRC) } }
            set { (rtxPayloadType, rtxSSRC) = (newValue?.payloadType, newValue?.ssrc ?? 0) }
        }
        private var rtxPayloadType: UInt8?
        private var rtxSSRC: UInt32 = 0

        public init(minimumDelay: ClockTime = .milliseconds(10), maximumDelay: ClockTime = .milliseconds(1000),
                    nack: Bool = true, maxNACKsPerRoundTrip: Int = 128, capacity: Int = 512, maxPacketSize: Int = 1500,
                    rtx: (payloadType: UInt8, ssrc: UInt32)? = nil) {
            self.minimumDelay = minimumDelay
            self.maximumDelay = max(minimumDelay, maximumDelay)
            self.nack = nack
            self.maxNACKsPerRoundTrip = max(1, maxNACKsPerRoundTrip)
            self.capacity = capacity
            self.maxPacketSize = maxPacketSize
            self.rtx = rtx
        }
    }

    /// What became of an inserted packet.
    public enum InsertResult: Sendable, Hashable {
        /// Kept for its frame (also a packet recovered by retransmission).
        case accepted
        /// A copy of a packet already held or released.
        case duplicate
        /// Its frame was already released or given up, or it is older than the window.
        case late
        /// The depacketizer's `inspect` rejected the payload (or an RTX payload had no OSN).
        case malformed(RTPPayloadError)
        /// The payload is larger than `maxPacketSize`.
        case tooLarge
    }

    /// What the receiver should send the sender now.
    public struct Feedback: Sendable, Hashable {
        /// Sequence numbers to NACK (RFC 4585 §6.2.1). The array is the buffer's own, reused by the
        /// next `feedback` call: drop it before then to keep that call from copying.
        public var nacks: [UInt16]
        /// Whether to send a PLI (RFC 4585 §6.3.1).
        public var keyframeRequest: Bool

        /// The NACKs as one generic NACK message, nil when there are none.
        public func genericNACK(senderSSRC: UInt32, mediaSSRC: UInt32) -> GenericNACK? {
            nacks.isEmpty ? nil : GenericNACK(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, lostSequenceNumbers: nacks)
        }
    }

    public let configuration: Configuration
    public private(set) var reception: ReceptionStatistics
    private var depacketizer: Depacketizer
    private let pool: BufferPool
    private var slots: PayloadSlots
    private var entries: [Entry]
    private var counters = JitterBufferStatistics()
    private var timestamps = TimestampUnwrapper()
    /// The lowest RTP time before the first release (pts count from it), and the first RTP time
    /// seen (arrival times are mapped from it).
    private var firstTimestamp: Int64 = 0
    private var timeAnchor: Int64 = 0
    /// Whether a frame was released or given up: the window's start is then fixed.
    private var baseFixed = false
    /// The lowest extended sequence number not yet released or given up, and the highest received.
    private var base: Int64 = 0
    private var highest: Int64 = -1
    private var started = false
    private var missingCount = 0
    /// The lowest arrival minus RTP time (ns) seen: the network's fixed delay plus the clocks' offset.
    private var minimumTransit = Int64.max
    private var roundTripTime = ClockTime.milliseconds(100)
    private var roundTripTimeReported = false
    /// How late packets came after their frame was due (decaying with each frame released).
    private var latenessMargin = ClockTime.zero
    /// When the last packet was kept, and the NACKs sent for the packet after the highest.
    private var lastArrival = ClockTime.zero
    private var tailProbe: (sequence: Int64, due: ClockTime)?
    /// When the last `maxNACKsPerRoundTrip` NACK entries went out, a ring whose oldest is at
    /// `nackRingNext`: one more may go once the oldest is a retry interval old, so no window of one
    /// retry interval holds more than the budget.
    private var nackSendTimes: [ClockTime]
    private var nackRingNext = 0
    /// Whether the first frame is being held past its playout time for a recovery in progress.
    private var heldForRecovery = false
    private var roundTripSamples = 0
    private var lossSeen = false
    private var mediaSSRC: UInt32?
    /// Video: frames are dropped until a keyframe; a keyframe request is due once one was dropped.
    private var waitingForKeyframe = !Depacketizer.eachPayloadIsAFrame
    private var keyframeWanted = false
    private var lastKeyframeRequest: ClockTime?
    private var lastPictureID: Int?
    private var nackList: [UInt16] = []
    /// The first and last packet arrivals of the frame being assembled.
    private var releasedArrivals = (first: ClockTime.zero, last: ClockTime.zero)
    /// The frame whose packets are appended as they come in order, the depacketizer appending them,
    /// and the frames it assembled that wait for their release, oldest first.
    private var open = OpenFrame()
    private var assembler: Depacketizer
    private var assembled: [AssembledFrame] = []
    /// The bytes of the largest frame released: an open frame's buffer starts that large, so that the
    /// pool's buffers settle at one size instead of being replaced as frame sizes wander.
    private var largestFrameByteCount = 0
    /// Whether frames are assembled as their packets come (the open frame); off, every frame is
    /// assembled from the slots at its release, which tests compare against.
    var assemblesAsPacketsCome = true
    /// The frame `nextFrame` returned last.
    public private(set) var lastRelease: Release?

    /// What is known of a frame released: its RTP timestamp and when its packets came.
    public struct Release: Sendable, Hashable {
        public var rtpTimestamp: UInt32
        public var firstArrival: ClockTime
        public var lastArrival: ClockTime
        public var releasedAt: ClockTime
    }

    public init(depacketizer: Depacketizer, configuration: Configuration = .init(), pool: BufferPool) {
        self.depacketizer = depacketizer
        assembler = depacketizer
        self.configuration = configuration
        self.pool = pool
        slots = PayloadSlots(count: configuration.capacity, slotSize: configuration.slotSize)
        entries = [Entry](repeating: Entry(), count: slots.count)
        nackList.reserveCapacity(slots.count)
        assembled.reserveCapacity(Self.assembledLimit)
        nackSendTimes = [ClockTime](repeating: ClockTime(nanoseconds: Int64.min / 2), count: max(1, configuration.maxNACKsPerRoundTrip))
        reception = ReceptionStatistics(clockRate: Depacketizer.clockRate)
    }

    // MARK: Insert

    /// Where the next packet may be written whole (`Configuration.slotSize` bytes) for `insert` to keep
    /// it without a copy; another slot after each packet kept from it. (A mutating getter: reading it
    /// does not copy the buffer's state, a struct of some 800 bytes, as a plain getter called from
    /// another module does.)
    public var receiveSlot: UnsafeMutableRawBufferPointer { mutating get { slots.receiveSlot } }

    /// Takes a received packet parsed from `bytes` (valid during the call only) that arrived at `arrival`.
    /// A packet that comes next for the frame being assembled is appended to it from `bytes`; of the
    /// others, bytes in `receiveSlot` are kept where they are, and others are copied into a slot.
    @_specialize(where Depacketizer == VP8Depacketizer)
    @_specialize(where Depacketizer == H264Depacketizer)
    @_specialize(where Depacketizer == OpusDepacketizer)
    public mutating func insert(_ packet: RTPPacket, in bytes: UnsafeRawBufferPointer, arrival: ClockTime) -> InsertResult {
        var payload = UnsafeRawBufferPointer(rebasing: bytes[packet.payloadRange])
        var sequenceNumber = packet.header.sequenceNumber
        let isRTX = configuration.rtx.map { packet.header.payloadType == $0.payloadType && packet.header.ssrc == $0.ssrc } ?? false
        if isRTX {
            // RFC 4588 §4: the original sequence number (OSN), then the original payload.
            guard payload.count >= 2 else { return discard(.malformed(.rtxOriginalSequenceNumberMissing)) }
            sequenceNumber = UInt16(payload.uint16(at: 0))
            payload = payload.slice(2..<payload.count)
        } else {
            mediaSSRC = packet.header.ssrc
        }
        let info: RTPPayloadInfo
        do { info = try depacketizer.inspect(payload) } catch { return discard(.malformed(error)) }
        guard payload.count <= max(1, configuration.maxPacketSize) else { return discard(.tooLarge) }

        let sequence = reception.record(sequenceNumber: sequenceNumber, timestamp: packet.header.timestamp,
                                        arrival: arrival, measuresJitter: !isRTX)
        let timestamp = timestamps.unwrap(packet.header.timestamp)
        if !started {
            started = true
            (base, highest, firstTimestamp, timeAnchor) = (sequence, sequence - 1, timestamp, timestamp)
        }
        if sequence < base {
            // Before the first release, a packet that came out of order extends the window back.
            guard !baseFixed && highest - sequence < Int64(slots.count) else {
                return rejectOld(sequence, timestamp: timestamp, arrival: arrival)
            }
            markMissing(sequence + 1..<base, due: arrival + reorderAllowance)
            base = sequence
            firstTimestamp = min(firstTimestamp, timestamp)
        }
        if sequence > highest { extendWindow(to: sequence, arrival: arrival) }

        let index = slots.index(Int(truncatingIfNeeded: sequence))
        let old = entries[index]
        var wasNACKed = false
        if old.sequence == sequence {  // else the slot holds a number from a cycle ago
            guard old.state == .missing else {
                counters.duplicates += 1
                return .duplicate
            }
            missingCount -= 1
            wasNACKed = old.nackCount > 0
            if isRTX || wasNACKed { counters.recovered += 1 }
            if wasNACKed && !roundTripTimeReported { sampleRoundTrip(arrival - old.nackedAt) }
        }
        counters.received += 1
        lastArrival = arrival
        entries[index] = Entry(sequence: sequence, timestamp: timestamp, state: .held, length: payload.count,
                               marker: packet.header.marker, info: info, arrival: arrival)
        if !appendInOrder(payload, info, of: sequence) {
            entries[index].offset = slots.keep(payload, at: index)
            entries[index].inSlot = true
        }
        // A retransmission came late, so its transit only stands in until a first packet sent once
        // arrives: without any sample, playout times (Int64.max + ...) would overflow.
        if (!isRTX && !wasNACKed) || minimumTransit == .max {
            let transit = arrival.nanoseconds - nanoseconds(timestamp)
            minimumTransit = min(minimumTransit, transit)
        }
        if sequence == base && !baseFixed && !info.startsFrame && configuration.nack && highest - base + 2 < Int64(slots.count) {
            // The first packet heard does not start its frame: the packets before it were lost, and
            // no earlier number says how many. Ask for them one by one, back to the frame's start.
            base -= 1
            markMissing(base..<base + 1, due: arrival)
        }
        return .accepted
    }

    /// Sets the state of the entry of `sequence` to `state` (released or given up), freeing its slot
    /// if it was held.
    private mutating func retire(_ sequence: Int64, as state: Entry.State) {
        if sequence >= open.first && sequence < open.next { open = OpenFrame() }
        // Retired from the window's start up: an assembled frame's first packet goes before its others.
        if let frame = assembled.first, sequence >= frame.first { assembled.removeFirst() }
        let index = slots.index(Int(truncatingIfNeeded: sequence))
        if entries[index].state == .held && entries[index].inSlot { slots.free(at: index) }
        entries[index].state = state
    }

    /// A round trip measured from a NACK to the retransmission it brought, smoothed as TCP
    /// smooths its RTT (RFC 6298 §2), while RTCP has given none.
    private mutating func sampleRoundTrip(_ sample: ClockTime) {
        guard sample > .zero && sample < .seconds(2) else { return }
        if roundTripSamples == 0 {
            roundTripTime = sample
        } else {
            roundTripTime = ClockTime(nanoseconds: (7 * roundTripTime.nanoseconds + sample.nanoseconds) / 8)
        }
        roundTripSamples += 1
    }

    private mutating func discard(_ result: InsertResult) -> InsertResult {
        counters.discarded += 1
        if case .malformed = result { counters.malformed += 1 }
        return result
    }

    /// A packet below the window: a copy of one released, or too late for its frame, whose lateness
    /// then widens the target delay.
    private mutating func rejectOld(_ sequence: Int64, timestamp: Int64, arrival: ClockTime) -> InsertResult {
        let entry = entries[slots.index(Int(truncatingIfNeeded: sequence))]
        if entry.state == .released && (entry.sequence == sequence || entry.timestamp == timestamp) {
            counters.duplicates += 1
            return .duplicate
        }
        counters.late += 1
        let lateness = arrival - playoutTime(timestamp)
        if lateness > .zero {
            latenessMargin = min(max(latenessMargin, lateness + .milliseconds(5)), configuration.maximumDelay)
        }
        return .late
    }

    /// Makes room for `sequence` above the highest received: the numbers between are missing, and
    /// what no longer fits the window is given up (counted as an overflow).
    private mutating func extendWindow(to sequence: Int64, arrival: ClockTime) {
        let newBase = sequence - Int64(slots.count) + 1
        if newBase > base {
            counters.overflows += 1
            giveUp(upTo: min(newBase, highest + 1) - 1)
            if newBase > highest + 1 {
                counters.lost += newBase - highest - 1
                highest = newBase - 1
            }
            base = newBase
            baseFixed = true
        }
        if sequence > highest + 1 { markMissing(highest + 1..<sequence, due: arrival + reorderAllowance) }
        highest = sequence
    }

    /// Notes that `range` was skipped: missing, to be NACKed from `due` on.
    private mutating func markMissing(_ range: Range<Int64>, due: ClockTime) {
        for missing in range {
            entries[slots.index(Int(truncatingIfNeeded: missing))] = Entry(sequence: missing, state: .missing, nackDue: due)
        }
        missingCount += range.count
    }

    // MARK: Release

    /// The next complete frame whose playout time has come, in RTP timestamp order; nil when none is due.
    @_specialize(where Depacketizer == VP8Depacketizer)
    @_specialize(where Depacketizer == H264Depacketizer)
    @_specialize(where Depacketizer == OpusDepacketizer)
    public mutating func nextFrame(at now: ClockTime) -> EncodedFrame? {
        // Nothing is released or given up before the first frame's playout time, so most calls,
        // made as packets come, need no walk over its packets. (Not while a delta frame waits for
        // a keyframe: it is dropped at once, and the keyframe asked for at once.)
        if !waitingForKeyframe && base <= highest {
            let first = entry(base)
            if first.state == .held && now < playoutTime(first.timestamp) { return nil }
        }
        while true {
            switch scan() {
            case .empty:
                return nil
            case .incomplete(let timestamp, let lastKnown):
                let due = playoutTime(timestamp)
                guard now >= due else { return nil }  // given up at `due` at the earliest
                guard now >= giveUpTime(timestamp, due: due, missingThrough: lastKnown) else {
                    heldForRecovery = true  // due, and waiting for what it lacks
                    return nil
                }
                heldForRecovery = false
                giveUp(upTo: lastKnown)
            case .complete(let start, let end, let timestamp, let isKeyframe):
                if start == base && waitingForKeyframe && !isKeyframe {
                    drop(through: end)
                    continue
                }
                let due = playoutTime(timestamp)
                guard now >= due else { return nil }
                guard start == base || now >= giveUpTime(timestamp, due: due, missingThrough: start - 1) else {
                    heldForRecovery = true
                    return nil
                }
                giveUp(upTo: start - 1)  // packets missing before it: whole frames lost
                if heldForRecovery {
                    // Released late after a recovery: later frames get the same margin.
                    heldForRecovery = false
                    latenessMargin = min(max(latenessMargin, now - due), configuration.maximumDelay)
                }
                if waitingForKeyframe && !isKeyframe {
                    drop(through: end)
                } else if let frame = assemble(through: end, timestamp: timestamp) {
                    noteRelease(of: frame, timestamp: timestamp, at: now)
                    return frame
                }
            }
        }
    }

    private enum Scan {
        case empty
        /// The first frame received lacks packets (`lastKnown` is its highest received one), or
        /// packets are missing before its start.
        case incomplete(timestamp: Int64, lastKnown: Int64)
        /// The first frame received is whole, `start...end`; packets before `start` may be missing.
        case complete(start: Int64, end: Int64, timestamp: Int64, isKeyframe: Bool)
    }

    /// What the window starts with.
    @inline(__always)
    private func scan() -> Scan {
        guard base <= highest else { return .empty }
        var start = base
        while start <= highest && entry(start).state != .held { start += 1 }
        guard start <= highest else { return .empty }
        let first = entry(start)
        if start > base && !first.info.startsFrame {
            return .incomplete(timestamp: first.timestamp, lastKnown: lastKnown(of: first.timestamp, from: start))
        }
        // Packets appended as they came are known to follow each other in one frame: the walk goes on from the last.
        var sequence = start
        var isKeyframe = false
        if let frame = assembled.first, frame.first == start {
            (sequence, isKeyframe) = (frame.last, frame.frame.isKeyframe)
        } else if open.buffer != nil && open.first == start && open.next > start {
            (sequence, isKeyframe) = (open.next - 1, open.isKeyframe)
        }
        while true {
            let current = entry(sequence)
            isKeyframe = isKeyframe || current.info.isKeyframe
            let next = sequence < highest ? entry(sequence + 1) : nil
            if Depacketizer.eachPayloadIsAFrame || current.marker
                || (next.map { $0.state == .held && $0.timestamp != first.timestamp } ?? false) {
                return .complete(start: start, end: sequence, timestamp: first.timestamp, isKeyframe: isKeyframe)
            }
            guard let next, next.state == .held, next.timestamp == first.timestamp else {
                return .incomplete(timestamp: first.timestamp, lastKnown: lastKnown(of: first.timestamp, from: sequence))
            }
            sequence += 1
        }
    }

    /// The highest received packet of `timestamp` from `sequence` on (missing ones may lie between).
    @inline(__always)
    private func lastKnown(of timestamp: Int64, from sequence: Int64) -> Int64 {
        var last = sequence
        var candidate = sequence + 1
        while candidate <= highest {
            let next = entry(candidate)
            if next.state == .held {
                if next.timestamp != timestamp { break }
                last = candidate
            }
            candidate += 1
        }
        return last
    }

    /// Gives up everything from `base` through `last`: missing packets are lost, a frame they touch
    /// is dropped.
    private mutating func giveUp(upTo last: Int64) {
        guard last >= base else { return }
        baseFixed = true
        var held = 0
        for sequence in base...last {
            switch entry(sequence).state {
            case .missing:
                counters.lost += 1
                missingCount -= 1
                lossSeen = true
            case .held: held += 1
            default: break
            }
            retire(sequence, as: .givenUp)
        }
        if held > 0 { counters.framesDropped += 1 }
        base = last + 1
        lostReferences()
    }

    /// Drops the whole frame `base...end` (waiting for a keyframe, or undecodable).
    private mutating func drop(through end: Int64) {
        for sequence in base...end { retire(sequence, as: .givenUp) }
        counters.framesDropped += 1
        base = end + 1
        baseFixed = true
        lostReferences()
    }

    /// Video after a loss: later delta frames lack a reference until a keyframe comes.
    private mutating func lostReferences() {
        guard !Depacketizer.eachPayloadIsAFrame else { return }
        waitingForKeyframe = true
        keyframeWanted = true
    }

    /// Releases `base...end` as one frame: assembled as its packets came, else now from the slots;
    /// nil (and the frame dropped) when it does not fit together.
    private mutating func assemble(through end: Int64, timestamp: Int64) -> EncodedFrame? {
        guard let (buffer, info) = takeAssembledFrame(through: end) ?? assembleFromSlots(through: end) else {
            drop(through: end)
            return nil
        }
        // VP8 (RFC 7741 §4.2): a PictureID that skips one shows a picture missing in between.
        if let pictureID = info.pictureID, let last = lastPictureID, !info.isKeyframe,
           pictureID != (last + 1) & 0x7FFF, pictureID != (last + 1) & 0x7F {
            drop(through: end)
            return nil
        }
        lastPictureID = info.pictureID
        for sequence in base...end { retire(sequence, as: .released) }
        base = end + 1
        baseFixed = true
        if info.isKeyframe {
            waitingForKeyframe = false
            keyframeWanted = false
            lastKeyframeRequest = nil
        }
        buffer.count = info.byteCount
        largestFrameByteCount = max(largestFrameByteCount, info.byteCount)
        counters.framesReleased += 1
        latenessMargin = ClockTime(nanoseconds: latenessMargin.nanoseconds * 127 / 128)
        let timebase = Rational(1, Depacketizer.clockRate)
        return EncodedFrame(codec: Depacketizer.codec, isKeyframe: info.isKeyframe,
                            pts: MediaTime(timestamp - firstTimestamp, timebase: timebase),
                            duration: Depacketizer.duration(ofFrame: buffer.bytes).map { MediaTime(Int64($0), timebase: timebase) },
                            buffer: buffer)
    }

    /// Assembles `base...end` from the packets' slots into a pooled buffer with `depacketizer`; nil
    /// when the frame does not fit together or a packet of it was appended to a frame it refused.
    private mutating func assembleFromSlots(through end: Int64) -> (FrameBuffer, RTPFrameInfo)? {
        var size = 0
        var arrivals = (first: ClockTime.max, last: ClockTime.zero)
        for sequence in base...end {
            let current = entry(sequence)
            guard current.inSlot else { return nil }
            size += current.info.mediaByteCount
            arrivals = (min(arrivals.first, current.arrival), max(arrivals.last, current.arrival))
        }
        releasedArrivals = arrivals
        let buffer = pool.acquire(capacity: max(1, size, largestFrameByteCount))  // one size, as the open frame's
        depacketizer.startFrame()
        do {
            for sequence in base...end {
                let current = entry(sequence)
                try depacketizer.append(payload(of: sequence), inspected: current.info,
                                        sequenceNumber: UInt16(truncatingIfNeeded: sequence), marker: current.marker,
                                        into: buffer.storage)
            }
            return (buffer, try depacketizer.finishFrame())
        } catch {
            return nil
        }
    }

    /// The payload of held packet `sequence`, in its slot.
    private func payload(of sequence: Int64) -> UnsafeRawBufferPointer {
        let current = entry(sequence)
        assert(current.inSlot, "packet \(sequence) was appended to a frame as it came: it has no slot")
        return slots.payload(at: slots.index(Int(truncatingIfNeeded: sequence)), current.offset..<current.offset + current.length)
    }

    // MARK: Frames assembled as their packets come

    /// The most assembled frames kept waiting for their release; beyond them, frames are assembled
    /// at their release.
    private static var assembledLimit: Int { 64 }

    /// Appends `payload` (inspected as `info`), of packet `sequence` just taken in, to the open frame
    /// when it comes next, opening a frame with it when none is open and it starts one after those
    /// assembled; then the packets after it that came before it. Returns whether it was appended (it
    /// then needs no slot).
    private mutating func appendInOrder(_ payload: UnsafeRawBufferPointer, _ info: RTPPayloadInfo, of sequence: Int64) -> Bool {
        guard assemblesAsPacketsCome else { return false }
        let current = entry(sequence)
        if open.buffer == nil {
            guard current.info.startsFrame, followsAnotherFrame(sequence, timestamp: current.timestamp),
                  assembled.count < Self.assembledLimit, assembled.last.map({ sequence > $0.last }) ?? true else { return false }
            let capacity = max(largestFrameByteCount, 2 * current.info.mediaByteCount, 64)
            open = OpenFrame(first: sequence, next: sequence, timestamp: current.timestamp, buffer: pool.acquire(capacity: capacity))
            assembler.startFrame()
        }
        guard sequence == open.next && current.timestamp == open.timestamp, append(payload, info, current) else { return false }
        if open.next <= highest { appendHeld(through: highest) }
        return true
    }

    /// Whether the packet before `sequence` is known to belong to another frame than `timestamp`'s
    /// (each audio payload is a frame): then no packet of this frame can come before `sequence`, even
    /// where a payload format lets several packets of a frame look like its start (H.264).
    @inline(__always)
    private func followsAnotherFrame(_ sequence: Int64, timestamp: Int64) -> Bool {
        guard !Depacketizer.eachPayloadIsAFrame else { return true }
        let previous = entry(sequence - 1)
        return previous.sequence == sequence - 1 && (previous.state == .held || previous.state == .released)
            && previous.timestamp != timestamp
    }

    /// Appends to the open frame the held packets that follow it, through `last` at most, from their slots.
    private mutating func appendHeld(through last: Int64) {
        while open.buffer != nil && open.next <= last {
            let current = entry(open.next)
            guard current.state == .held && current.timestamp == open.timestamp else { return }
            _ = append(payload(of: open.next), current.info, current)
        }
    }

    /// Appends `payload` (inspected as `info`), of the packet `open.next` (`current`), to the open
    /// frame, growing its buffer when full; the frame is assembled when it was its last packet.
    /// Returns false, and closes the frame, when the depacketizer refuses the packet.
    private mutating func append(_ payload: UnsafeRawBufferPointer, _ info: RTPPayloadInfo, _ current: Entry) -> Bool {
        let sequence = open.next
        while true {
            do {
                try assembler.append(payload, inspected: info, sequenceNumber: UInt16(truncatingIfNeeded: sequence),
                                     marker: current.marker, into: open.buffer!.storage)
                break
            } catch .outputTooSmall(let needed, _) {
                let old = open.buffer!, bigger = pool.acquire(capacity: 2 * needed)
                bigger.storage.copyMemory(from: UnsafeRawBufferPointer(old.storage))
                open.buffer = bigger
            } catch {
                open = OpenFrame()
                return false
            }
        }
        open.next += 1
        open.isKeyframe = open.isKeyframe || current.info.isKeyframe
        open.arrivals = (min(open.arrivals.first, current.arrival), max(open.arrivals.last, current.arrival))
        if Depacketizer.eachPayloadIsAFrame || current.marker { closeOpenFrame() }
        return true
    }

    /// Ends the open frame: assembled, unless the depacketizer refuses it.
    private mutating func closeOpenFrame() {
        // Swapped out and consumed rather than copied: the buffer's reference moves, with no count
        // taken and dropped (atomic operations, a few percent of the receive path's time).
        var frame = OpenFrame()
        swap(&frame, &open)
        guard let info = try? assembler.finishFrame(), frame.buffer != nil else { return }
        assembled.append(AssembledFrame(frame: consume frame, info: info))
    }

    /// The frame `base...end` as assembled while its packets came, nil if it was not. The open frame,
    /// when it starts at `base`, gets the packets after those it has; it ends at `end` also when the
    /// next frame's timestamp ended it rather than a marker bit.
    private mutating func takeAssembledFrame(through end: Int64) -> (FrameBuffer, RTPFrameInfo)? {
        if open.buffer != nil && open.first == base {
            appendHeld(through: end)
            if open.buffer != nil && open.next == end + 1 { closeOpenFrame() }
        }
        guard !assembled.isEmpty && assembled[0].first == base else { return nil }
        // The buffer's reference moves out of the array before the frame leaves it (see closeOpenFrame).
        var buffer: FrameBuffer?
        swap(&buffer, &assembled[0].frame.buffer)
        let frame = assembled.removeFirst()
        guard frame.last == end, buffer != nil else { return nil }
        releasedArrivals = frame.frame.arrivals
        return (buffer.take()!, frame.info)
    }

    // MARK: Feedback and timing

    /// The NACKs and keyframe request due at `now`. A missing packet is first asked for once the
    /// reorder allowance has passed since a later packet showed the gap, then again every retry
    /// interval (the RTT measured from first NACKs or reported, at least 10 ms) for as long as an
    /// answer could still come before its frame's last chance (`lastChance`): no count limits the
    /// retries, so a packet whose retransmissions are lost again and again is still recovered when
    /// time allows, and it is asked for no more once an answer would come too late (RFC 4588 §6.3:
    /// a receiver asks only for what would still be useful when it comes, the missing packet's
    /// timestamp estimated from the packets around the gap, here the one after it; feedback loses
    /// its value with time, RFC 4585 §3.2). It is forgotten when its frame is given up. At most
    /// `maxNACKsPerRoundTrip` entries go out in any retry interval: first requests, then retries, each
    /// oldest first.
    @_specialize(where Depacketizer == VP8Depacketizer)
    @_specialize(where Depacketizer == H264Depacketizer)
    @_specialize(where Depacketizer == OpusDepacketizer)
    public mutating func feedback(at now: ClockTime) -> Feedback {
        nackList.removeAll(keepingCapacity: true)
        let retry = retryInterval
        // First requests before retries (a first request is likelier to bring the packet), each oldest first.
        for pass in 0..<2 where configuration.nack && missingCount > 0 {
            let firstRequests = pass == 0
            var following = FollowingHeld()
            for sequence in base...highest {
                guard nackBudgetRenewal <= now else { break }
                let index = slots.index(Int(truncatingIfNeeded: sequence))
                guard entries[index].state == .missing, entries[index].nackDue <= now,
                      (entries[index].nackCount == 0) == firstRequests else { continue }
                if let timestamp = followingHeldTimestamp(after: sequence, cursor: &following), now + retry > lastChance(timestamp) {
                    entries[index].nackDue = .max  // an answer would come too late: asked for no more
                    continue
                }
                if entries[index].nackCount == 0 { counters.nacked += 1 }
                lossSeen = true
                noteNACKSent(at: now)
                entries[index].nackCount += 1
                entries[index].nackDue = now + retry
                if entries[index].nackCount == 1 { entries[index].nackedAt = now }
                nackList.append(UInt16(truncatingIfNeeded: sequence))
            }
        }
        if let due = tailProbeDue, due <= now, nackBudgetRenewal <= now {
            if now + retry <= lastChance(entry(highest).timestamp) {
                tailProbe = (highest + 1, now + retry)
                noteNACKSent(at: now)
                nackList.append(UInt16(truncatingIfNeeded: highest + 1))
            } else {
                tailProbe = (highest + 1, .max)
            }
        }
        let keyframeRequest = keyframeRequestDue.map { $0 <= now } ?? false
        if keyframeRequest {
            lastKeyframeRequest = now
            counters.keyframeRequests += 1
        }
        return Feedback(nacks: nackList, keyframeRequest: keyframeRequest)
    }

    /// The time between two NACKs for one packet: the round trip, at least 10 ms.
    @inline(__always)
    private var retryInterval: ClockTime { max(roundTripTime, .milliseconds(10)) }

    /// When the NACK budget allows one more entry (see `nackSendTimes`).
    @inline(__always)
    private var nackBudgetRenewal: ClockTime { nackSendTimes[nackRingNext] + retryInterval }

    private mutating func noteNACKSent(at now: ClockTime) {
        counters.nackRequests += 1
        nackSendTimes[nackRingNext] = now
        nackRingNext = nackRingNext + 1 == nackSendTimes.count ? 0 : nackRingNext + 1
    }

    /// Where `followingHeldTimestamp` left off.
    private struct FollowingHeld {
        var sequence = Int64.min
        var timestamp: Int64?
    }

    /// The RTP time of the first held packet above `sequence` (nil when none is): the latest a
    /// packet missing at `sequence` can belong to, whose frame is given up no earlier than that
    /// packet's. Called with rising numbers, it goes on from where `cursor` left off: one pass
    /// over the window serves a loop over it.
    private func followingHeldTimestamp(after sequence: Int64, cursor: inout FollowingHeld) -> Int64? {
        if cursor.sequence <= sequence {
            var next = max(sequence + 1, cursor.sequence + 1)
            while next <= highest && entry(next).state != .held { next += 1 }
            cursor = FollowingHeld(sequence: next, timestamp: next <= highest ? entry(next).timestamp : nil)
        }
        return cursor.timestamp
    }

    /// When to call `nextFrame` and `feedback` again: the earliest of the next playout or give-up
    /// time, the next NACK and the next keyframe request; nil when nothing is pending. A time in the
    /// past means now.
    public var nextDeadline: ClockTime? {
        var buffer = self  // one copy a call, as a getter of the buffer makes anyway; `giveUpTime` is mutating
        return buffer.deadline()
    }

    private mutating func deadline() -> ClockTime? {
        var deadline: ClockTime?
        func note(_ time: ClockTime?) {
            if let time { deadline = min(deadline ?? time, time) }
        }
        switch scan() {
        case .empty: break
        case .incomplete(let timestamp, let lastKnown):
            note(giveUpTime(timestamp, due: playoutTime(timestamp), missingThrough: lastKnown))
        case .complete(let start, _, let timestamp, _):
            let due = playoutTime(timestamp)
            note(start == base ? due : max(due, giveUpTime(timestamp, due: due, missingThrough: start - 1)))
        }
        // NACKs over the budget wait until it allows them.
        let renewal = nackBudgetRenewal
        if configuration.nack && missingCount > 0 {
            for sequence in base...highest {
                let entry = entry(sequence)
                if entry.state == .missing && entry.nackDue != .max { note(max(entry.nackDue, renewal)) }
            }
        }
        note(keyframeRequestDue)
        note(tailProbeDue.map { max($0, renewal) })
        return deadline
    }

    /// Whether the highest packet leaves its video frame open (no marker): its frame's last packet
    /// may be lost, and only the next frame would show it, a frame interval later.
    @inline(__always)
    private var tailIsOpen: Bool {
        configuration.nack && !Depacketizer.eachPayloadIsAFrame && highest >= base
            && entry(highest).state == .held && !entry(highest).marker
    }

    /// When to NACK the packet after the highest, while the tail is open: once nothing followed
    /// within the reorder allowance, then every retry interval, as missing packets are. If it was
    /// not sent yet, the sender has nothing to resend and the request costs nothing.
    @inline(__always)
    private var tailProbeDue: ClockTime? {
        guard tailIsOpen else { return nil }
        guard let tailProbe, tailProbe.sequence == highest + 1 else {
            return lastArrival + reorderAllowance + .milliseconds(5)
        }
        return tailProbe.due == .max ? nil : tailProbe.due
    }

    @inline(__always)
    private var keyframeRequestDue: ClockTime? {
        guard waitingForKeyframe && keyframeWanted else { return nil }
        guard let lastKeyframeRequest else { return .zero }
        return lastKeyframeRequest + max(roundTripTime, .milliseconds(250))
    }

    /// Sets the round-trip time to the sender, e.g. from RTCP report blocks (RFC 3550 §6.4.1); it
    /// then replaces the estimate from NACKed packets.
    public mutating func updateRoundTripTime(_ rtt: ClockTime) {
        roundTripTime = rtt
        roundTripTimeReported = true
    }

    /// The round trip used for NACK retries and the target delay: reported, measured, or 100 ms.
    public var currentRoundTripTime: ClockTime { roundTripTime }

    /// The delay added to a frame's expected arrival; see the type's documentation.
    @inline(__always)
    public var targetDelay: ClockTime {
        let jitter = ClockTime.seconds(4 * reception.jitterSeconds)
        let retry = retryInterval
        let retransmission = configuration.nack && lossSeen ? retry + retry + reorderAllowance + jitter : .zero
        return min(max(max(jitter, retransmission) + latenessMargin, configuration.minimumDelay), configuration.maximumDelay)
    }

    /// How long a gap may be reordering before it is NACKed: 5 ms plus half the jitter, at most 50 ms.
    @inline(__always)
    private var reorderAllowance: ClockTime {
        min(.milliseconds(5) + .seconds(reception.jitterSeconds / 2), .milliseconds(50))
    }

    /// When a frame of RTP time `timestamp` (playing out at `due`, its `playoutTime`, which the
    /// caller has at hand) that lacks packets from `base` through `last` (and maybe after) is given
    /// up: at its last chance while what it lacks is being asked for, else at its playout time.
    /// Mutating though it changes nothing: called by `nextFrame` for most packets, a non-mutating
    /// method there was called on a copy of the whole buffer (some 800 bytes).
    private mutating func giveUpTime(_ timestamp: Int64, due: ClockTime, missingThrough last: Int64) -> ClockTime {
        isRecovering(through: last) ? lastChance(timestamp, due: due) : due
    }

    /// The latest a frame of RTP time `timestamp` may be released: its playout time, or with NACK on
    /// (video only) its expected arrival plus the maximum delay. Waiting delays the frames after it
    /// too, but a lost video frame costs every frame up to the next keyframe, where a lost audio
    /// packet costs only its own concealment.
    @inline(__always)
    private func lastChance(_ timestamp: Int64) -> ClockTime { lastChance(timestamp, due: playoutTime(timestamp)) }

    /// `lastChance(_:)` of a frame that plays out at `due`.
    @inline(__always)
    private func lastChance(_ timestamp: Int64, due: ClockTime) -> ClockTime {
        guard configuration.nack, !Depacketizer.eachPayloadIsAFrame else { return due }
        return max(due, ClockTime(nanoseconds: nanoseconds(timestamp) + minimumTransit) + configuration.maximumDelay)
    }

    /// Whether a packet is missing from `base` through `last`, or right after it (or, when `last` is
    /// the highest and leaves its frame open, the packet after it may be): it is asked for, or was
    /// and its answer may still come.
    @inline(__always)
    private func isRecovering(through last: Int64) -> Bool {
        guard configuration.nack else { return false }
        if last == highest && tailIsOpen { return true }
        var sequence = base
        while sequence <= highest {
            let entry = entry(sequence)
            if entry.state == .missing {
                return true
            } else if sequence > last {
                break
            }
            sequence += 1
        }
        return false
    }

    /// When the frame of RTP time `timestamp` (extended) plays out.
    @inline(__always)
    private func playoutTime(_ timestamp: Int64) -> ClockTime {
        ClockTime(nanoseconds: nanoseconds(timestamp) + minimumTransit) + targetDelay
    }

    /// RTP time since the first packet's, in nanoseconds.
    /// Whole seconds and the rest apart, so that the product cannot overflow: at 90 kHz the plain
    /// `ticks * 10^9` does after 28 hours of RTP time (or far fewer packets jumping ahead 2^31).
    @inline(__always)
    private func nanoseconds(_ timestamp: Int64) -> Int64 {
        let ticks = timestamp - timeAnchor, rate = Int64(Depacketizer.clockRate)
        return ticks / rate * 1_000_000_000 + ticks % rate * 1_000_000_000 / rate
    }

    @inline(__always)
    private func entry(_ sequence: Int64) -> Entry { entries[slots.index(Int(truncatingIfNeeded: sequence))] }

    /// Notes the frame released at `now`, for tracing and the W3C jitter-buffer sums.
    private mutating func noteRelease(of frame: EncodedFrame, timestamp: Int64, at now: ClockTime) {
        // Released at the end of time (the stream is over): counted as released at its last packet.
        let now = now == .max ? releasedArrivals.last : now
        lastRelease = Release(rtpTimestamp: UInt32(truncatingIfNeeded: timestamp), firstArrival: releasedArrivals.first,
                              lastArrival: releasedArrivals.last, releasedAt: now)
        counters.totalDelay = counters.totalDelay + (now - releasedArrivals.first)
        counters.totalTargetDelay = counters.totalTargetDelay + targetDelay
    }

    // MARK: Statistics and reports

    public var statistics: JitterBufferStatistics {
        var statistics = counters
        statistics.jitter = reception.jitter
        statistics.jitterSeconds = reception.jitterSeconds
        statistics.cumulativeLost = reception.cumulativeLost
        statistics.targetDelay = targetDelay
        return statistics
    }

    /// A reception report block about the media source (RFC 3550 §6.4.1), starting a new interval
    /// for "fraction lost"; nil before its first packet.
    public mutating func receptionReport(at now: ClockTime) -> ReportBlock? {
        mediaSSRC.map { reception.reportBlock(ssrc: $0, at: now) }
    }

    /// Notes a sender report from the media source, for the reports' LSR and DLSR.
    public mutating func noteSenderReport(_ report: SenderReport, arrival: ClockTime) {
        reception.noteSenderReport(report, arrival: arrival)
    }

}

/// What a `JitterBuffer` has seen and done.
public struct JitterBufferStatistics: Sendable, Hashable {
    /// Packets kept (original or recovered).
    public var received = 0
    public var duplicates = 0
    /// Packets for frames already released or given up, or older than the window.
    public var late = 0
    /// Packets thrown away: malformed payloads (also counted in `malformed`) and oversized ones.
    public var discarded = 0
    public var malformed = 0
    /// Times the window overflowed and its oldest packets were given up.
    public var overflows = 0
    /// Missing packets given up.
    public var lost: Int64 = 0
    /// Packets NACKed (each counted once), and NACK entries sent including retries.
    public var nacked = 0
    public var nackRequests = 0
    /// Packets that arrived after being NACKed, or as RTX.
    public var recovered = 0
    public var framesReleased = 0
    /// Summed over the frames released: the time from a frame's first packet's arrival to its
    /// release (W3C webrtc-stats `jitterBufferDelay`), and the target delay at its release
    /// (`jitterBufferTargetDelay`); `framesReleased` is their `jitterBufferEmittedCount`.
    public var totalDelay = ClockTime.zero
    public var totalTargetDelay = ClockTime.zero
    /// Frames given up incomplete, undecodable, or dropped while waiting for a keyframe.
    public var framesDropped = 0
    public var keyframeRequests = 0
    /// Interarrival jitter (RFC 3550 §6.4.1) in timestamp units and in seconds.
    public var jitter: Double = 0
    public var jitterSeconds: Double = 0
    public var targetDelay = ClockTime.zero
    /// Packets expected less packets received (RFC 3550 §6.4.1's cumulative number of packets
    /// lost; W3C webrtc-stats `packetsLost`): retransmissions make up for losses.
    public var cumulativeLost: Int64 = 0

    public init() {}
}

/// A jitter buffer's packet memory: a slot (allocated once) for each entry of its window and one
/// more. Entries hold a slot while they hold a packet; the others are free, the one freed last
/// used first (a released frame's slots, just read, still in cache), except the receive slot,
/// where the next packet may be written whole to be kept there without a copy. Copies share the
/// memory: one owner uses it.
struct PayloadSlots: Sendable {
    private let slots: PacketSlots
    /// The slot of each entry holding a packet, by entry index.
    private var held: [Int]
    /// The free slots, the last freed on top: one for every entry not holding a packet.
    private var freeSlots: [Int]
    private var receiving: Int

    init(count: Int, slotSize: Int) {
        slots = PacketSlots(count: count, slotSize: slotSize, spare: 1)
        held = [Int](repeating: 0, count: slots.count)
        freeSlots = Array((0..<slots.count).reversed())
        receiving = slots.count
    }

    /// Entries: the window's size, a power of two.
    var count: Int { slots.count }

    /// The entry of sequence number `sequence`.
    @inline(__always)
    func index(_ sequence: Int) -> Int { slots.index(sequence) }

    var receiveSlot: UnsafeMutableRawBufferPointer { slots[receiving] }

    /// Gives entry `index`, which holds no packet, a slot with `payload` in it: the receive slot when
    /// the payload lies there (a free slot becomes the receive slot), else a free slot it is copied to
    /// the start of. Returns where the payload starts in its slot.
    mutating func keep(_ payload: UnsafeRawBufferPointer, at index: Int) -> Int {
        let receiveSlot = UnsafeRawBufferPointer(slots[receiving])
        if let start = payload.baseAddress, let slotStart = receiveSlot.baseAddress,
           start >= slotStart, start + payload.count <= slotStart + receiveSlot.count {
            held[index] = receiving
            receiving = freeSlots.removeLast()
            return slotStart.distance(to: start)
        }
        let slot = freeSlots.removeLast()
        slots[slot].copyMemory(from: payload)
        held[index] = slot
        return 0
    }

    /// Frees the slot of entry `index`, whose packet is no longer kept.
    mutating func free(at index: Int) { freeSlots.append(held[index]) }

    /// The bytes at `range` of entry `index`'s slot.
    func payload(at index: Int, _ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: slots[held[index]][range])
    }
}

// The jitter buffer's own records, outside the generic type: nested in it, they are generic types
// too, which its specialised code handled in places through value witnesses (34 instructions a
// packet more on the receive path, counted with tools/count-instructions).

/// What the buffer knows of one sequence number in the window (or last had in that slot).
private struct JitterBufferEntry: Sendable {
    enum State: UInt8, Sendable { case empty, missing, held, released, givenUp }
    var sequence: Int64 = -1
    var timestamp: Int64 = 0
    var state = State.empty
    /// Whether the payload is kept in a slot (else it was appended to a frame as it came), where
    /// it starts there, and its bytes.
    var inSlot = false
    var offset = 0
    var length = 0
    var marker = false
    /// What the depacketizer's `inspect` said of the payload as it came.
    var info = RTPPayloadInfo(startsFrame: false, isKeyframe: false, mediaByteCount: 0)
    var nackCount = 0
    var nackDue = ClockTime.zero
    /// When the first NACK for it went out: the round trip is sampled from it, since an answer
    /// may come to any of the requests (RFC 6298 §3's ambiguity). Measured from the latest, an
    /// answer that took longer than the retry interval looked shorter than it, so the estimate
    /// could never grow past the interval, and retries outran their answers.
    var nackedAt = ClockTime.zero
    /// When the packet arrived (held packets).
    var arrival = ClockTime.zero
}

/// A frame assembled from packets `first...last`, waiting for its release: the open frame it was,
/// described by the depacketizer.
private struct AssembledFrame {
    var frame: OpenFrame
    var info: RTPFrameInfo
    var first: Int64 { frame.first }
    var last: Int64 { frame.next - 1 }
}

/// A frame whose packets are appended as they come. A packet that comes next for the open frame
/// is appended straight from where it was received (the receive slot, which stays free for the
/// next packet) and needs no slot; packets that came early wait in slots and follow it. A frame
/// whose last packet came (the marker bit, or each audio payload) waits assembled for its release,
/// which takes it without a walk over its packets or a copy of them.
///
/// One frame is open at a time, opened by a packet starting a frame right after a packet of
/// another frame, and after the frames assembled. Releasing, dropping or giving up any of its
/// packets closes it, and so does a packet the depacketizer refuses: its frame is then dropped
/// at its release, as assembling it from the slots would have refused it. Other frames (the
/// first, one after a loss, one a late packet starts) are assembled from the slots at their
/// release, as before.
private struct OpenFrame {
    /// Packets `first..<next` are appended to `buffer` (nil: none is open).
    var first: Int64 = 0
    var next: Int64 = 0
    var timestamp: Int64 = 0
    var buffer: FrameBuffer?
    var isKeyframe = false
    var arrivals = (first: ClockTime.max, last: ClockTime.zero)
}
