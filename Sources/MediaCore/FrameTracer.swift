import Histogram
import Synchronization

/// The points a frame passes on its way from capture to the receiving sink, in order. Each stage's
/// latency is measured from its `predecessor`, the stage it causally follows: a packet can arrive
/// before the sender has sent the frame's last one, so `receiveFirst` follows `sendFirst` and
/// `receiveLast` follows `sendLast`.
public enum FrameStage: Int, CaseIterable, Sendable, CustomStringConvertible {
    /// A source released the frame (a camera's capture, a paced file's due time).
    case capture
    case encodeStart
    case encodeEnd
    /// The encoded frame was handed to the RTP packetizer.
    case packetize
    /// Just before the frame's first and last RTP packets went to the socket (or the impairment).
    case sendFirst
    case sendLast
    /// Arrival of the frame's first and last packets (in arrival order) at the receiver.
    case receiveFirst
    case receiveLast
    /// The jitter buffer released the whole frame.
    case jitterRelease
    case decodeEnd
    /// The receiving graph's sink took the frame (or its decoded picture).
    case sink

    /// The stage this one's latency is measured from; nil for `capture`.
    public var predecessor: FrameStage? {
        switch self {
        case .capture: nil
        case .receiveFirst: .sendFirst
        case .receiveLast: .sendLast
        case .jitterRelease: .receiveLast
        default: FrameStage(rawValue: rawValue - 1)
        }
    }

    /// Stages whose frames are named by the sender's timestamps (up to `sendLast`).
    var isSending: Bool { rawValue <= FrameStage.sendLast.rawValue }

    public var description: String {
        switch self {
        case .capture: "capture"
        case .encodeStart: "encode start"
        case .encodeEnd: "encode end"
        case .packetize: "packetize"
        case .sendFirst: "send first packet"
        case .sendLast: "send last packet"
        case .receiveFirst: "receive first packet"
        case .receiveLast: "receive last packet"
        case .jitterRelease: "jitter buffer release"
        case .decodeEnd: "decode end"
        case .sink: "sink"
        }
    }
}

/// A latency distribution: percentiles of an HdrHistogram (3 significant digits, microseconds).
public struct LatencyDistribution: Sendable, Hashable, CustomStringConvertible {
    /// Frames measured.
    public var count: Int
    public var p50: ClockTime
    public var p90: ClockTime
    public var p95: ClockTime
    public var p99: ClockTime
    public var min: ClockTime
    public var max: ClockTime
    public var mean: ClockTime

    public static let empty = LatencyDistribution(Histogram<UInt64>(highestTrackableValue: 2))

    init(_ histogram: Histogram<UInt64>) {
        func time(_ microseconds: UInt64) -> ClockTime { ClockTime(nanoseconds: Int64(microseconds) * 1000) }
        let empty = histogram.totalCount == 0
        count = Int(histogram.totalCount)
        p50 = time(empty ? 0 : histogram.valueAtPercentile(50))
        p90 = time(empty ? 0 : histogram.valueAtPercentile(90))
        p95 = time(empty ? 0 : histogram.valueAtPercentile(95))
        p99 = time(empty ? 0 : histogram.valueAtPercentile(99))
        min = time(empty ? 0 : histogram.min)
        max = time(empty ? 0 : histogram.max)
        mean = empty ? .zero : ClockTime(nanoseconds: Int64(histogram.mean * 1000))
    }

    public var description: String {
        func ms(_ time: ClockTime) -> String {
            let tenths = Int((time.seconds * 10_000).rounded())
            return "\(tenths / 10).\(tenths % 10)"
        }
        return "p50 \(ms(p50)) ms, p95 \(ms(p95)) ms, p99 \(ms(p99)) ms (\(count) frames)"
    }
}

/// What a `FrameTracer` measured: per stage, the time from its predecessor; and end to end, from
/// the first stage a frame passed to the last.
public struct FrameLatencies: Sendable {
    /// Indexed by `FrameStage`; a stage no frame passed has an empty distribution.
    public var stages: [FrameStage: LatencyDistribution]
    /// From `capture` (else the first stage any frame reached) to `sink` (else the last stage any
    /// frame reached), for the frames that passed both: records that meet no sent frame are left out.
    public var endToEnd: LatencyDistribution
    /// Frames seen at any stage.
    public var framesTraced: Int
    /// Intervals that came out negative (clocks mixed up) and were counted as zero.
    public var negativeIntervals: Int

    public subscript(stage: FrameStage) -> LatencyDistribution { stages[stage] ?? .empty }
}

/// Per-frame timestamps at each `FrameStage`, folded into latency distributions.
///
/// Frames are named by their RTP timestamp, so that the sending and the receiving side of a call in
/// one process (two graphs) share one tracer: the sender maps its pts to RTP timestamps with its
/// stream's clock rate and offset (`mapTimestamps(_:clockRate:offset:)`, done by `RTPSendSession`),
/// the receiver with the offset of its first frame (done by `RTPReceiveSession`), less the delay of
/// its decoder (`delayDecodedTimestamps(by:)`); nodes record by pts. One tracer follows one stream.
///
/// Recording allocates nothing: a preallocated table of fixed-size records (open addressing on the
/// RTP timestamp) under a lock, histograms allocated once. A frame's record is folded into the
/// histograms when its slot is needed for a newer frame, and read at `latencies()`; not when it
/// reaches `sink`, because the sender records a frame's packets once they have all left, and the
/// receiver may have shown the frame by then (a sending thread preempted between its last packet
/// and its record). Costs nothing when off: nodes hold an optional tracer.
public final class FrameTracer: Sendable {
    public let clock: any MediaClock
    private let state: Locked<TraceTable>
    /// Per side (sending, receiving): clock rate << 32 | offset; 0 while unknown.
    private let sendingMapping = Atomic<UInt64>(0)
    private let receivingMapping = Atomic<UInt64>(0)
    /// The receiving decoder's delay: timebase denominator << 32 | ticks; 0 while none.
    private let decodedTimestampDelay = Atomic<UInt64>(0)

    public enum Side: Sendable { case sending, receiving }

    /// A tracer for up to `capacity` frames in flight (rounded up to a power of two).
    public init(capacity: Int = 512, clock: any MediaClock = SystemClock()) {
        self.clock = clock
        state = Locked(TraceTable(capacity: capacity))
    }

    /// The tracer's clock now: what `record` writes when given no time.
    public var now: ClockTime { clock.now }

    /// Sets how pts of `side` map to RTP timestamps: pts in units of `clockRate`, plus `offset`
    /// (RFC 3550 §5.1). Frames recorded by pts before this are not traced.
    public func mapTimestamps(_ side: Side, clockRate: Int, offset: UInt32) {
        let packed = UInt64(UInt32(clockRate)) << 32 | UInt64(offset)
        if side == .sending {
            sendingMapping.store(packed, ordering: .releasing)
        } else {
            receivingMapping.store(packed, ordering: .releasing)
        }
    }

    /// Tells that the receiving side's decoder puts each frame `delay` before the pts of the packet
    /// it came from, as an Opus decoder that drops the encoder's pre-skip does (RFC 7845 §4.2): pts
    /// recorded on the receiving side are moved on by `delay` before they are mapped, so that a
    /// decoded frame meets its packet. (The receiving side records by pts only from its decoder on:
    /// the jitter buffer's stages go by RTP timestamp.)
    public func delayDecodedTimestamps(by delay: MediaTime) {
        let ticks = delay.value * Int64(delay.timebase.numerator)
        precondition(ticks >= 0 && ticks <= Int64(UInt32.max), "a decoder delay of \(delay)")
        let packed = UInt64(UInt32(delay.timebase.denominator)) << 32 | UInt64(ticks)
        decodedTimestampDelay.store(ticks == 0 ? 0 : packed, ordering: .releasing)
    }

    /// Whether `side` has its mapping, so that records by pts count.
    public func hasMapping(_ side: Side) -> Bool {
        mapping(side) != 0
    }

    private func mapping(_ side: Side) -> UInt64 {
        side == .sending ? sendingMapping.load(ordering: .acquiring) : receivingMapping.load(ordering: .acquiring)
    }

    /// The RTP timestamp of a frame presented at `pts` on the side of `stage`; nil before its mapping.
    public func rtpTimestamp(of pts: MediaTime, at stage: FrameStage) -> UInt32? {
        let packed = mapping(stage.isSending ? .sending : .receiving)
        guard packed != 0 else { return nil }
        let clockRate = Rational(1, Int(packed >> 32))
        var ticks = pts.rescaled(to: clockRate).value
        if !stage.isSending {
            let delay = decodedTimestampDelay.load(ordering: .acquiring)
            if delay != 0 {
                ticks += MediaTime(Int64(UInt32(truncatingIfNeeded: delay)), timebase: Rational(1, Int(delay >> 32)))
                    .rescaled(to: clockRate).value
            }
        }
        return UInt32(truncatingIfNeeded: ticks) &+ UInt32(truncatingIfNeeded: packed)
    }

    /// Notes that the frame presented at `pts` reached `stage` at `time` (default: now).
    public func record(_ stage: FrameStage, pts: MediaTime, at time: ClockTime? = nil) {
        guard let key = rtpTimestamp(of: pts, at: stage) else { return }
        record(stage, rtpTimestamp: key, at: time ?? clock.now)
    }

    /// Notes that the frame of RTP timestamp `rtpTimestamp` reached `stage` at `time` (default: now).
    public func record(_ stage: FrameStage, rtpTimestamp: UInt32, at time: ClockTime? = nil) {
        let time = time ?? clock.now
        state.withLock { $0.record(stage, key: rtpTimestamp, at: time.nanoseconds) }
    }

    /// The distributions so far, including frames still in flight (their stages up to now).
    public func latencies() -> FrameLatencies {
        state.withLock { $0.snapshot() }
    }

    /// Forgets every frame and distribution (mappings stay).
    public func reset() {
        state.withLock { $0.reset() }
    }
}

/// The tracer's table and histograms; used under its lock.
private struct TraceTable: ~Copyable {
    static let stageCount = FrameStage.allCases.count
    static let unset = Int64.min
    /// Microseconds; up to a minute.
    static func makeHistogram() -> Histogram<UInt64> {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
    }

    let mask: Int
    let shift: Int
    var keys: [UInt32]
    /// 0: empty; else the order in which the slot's frame was first seen.
    var serials: [UInt64]
    /// `stageCount` times per slot, in nanoseconds; `unset` when not passed.
    var times: [Int64]
    var histograms: [Histogram<UInt64>]
    var endToEnd: Histogram<UInt64>
    var nextSerial: UInt64 = 1
    var negativeIntervals = 0
    /// The last stage any frame reached, for frames folded before reaching `sink`.
    var furthestStage = 0
    /// The first stage any frame reached (`capture` when the sender is traced), where end to end starts.
    var nearestStage = stageCount

    init(capacity: Int) {
        var size = 16
        while size < capacity { size <<= 1 }
        mask = size - 1
        shift = 32 - size.trailingZeroBitCount
        keys = [UInt32](repeating: 0, count: size)
        serials = [UInt64](repeating: 0, count: size)
        times = [Int64](repeating: Self.unset, count: size * Self.stageCount)
        histograms = (0..<Self.stageCount).map { _ in Self.makeHistogram() }
        endToEnd = Self.makeHistogram()
    }

    static let probes = 8

    mutating func record(_ stage: FrameStage, key: UInt32, at nanoseconds: Int64) {
        furthestStage = max(furthestStage, stage.rawValue)
        nearestStage = min(nearestStage, stage.rawValue)
        let slot = self.slot(for: key)
        let index = slot * Self.stageCount + stage.rawValue
        if times[index] == Self.unset { times[index] = nanoseconds }
    }

    /// The slot of `key`'s frame, claimed if new: an empty one, else the oldest within the probes
    /// (its frame folded first).
    private mutating func slot(for key: UInt32) -> Int {
        let home = Int(truncatingIfNeeded: (key &* 0x9E37_79B1) >> UInt32(shift)) & mask
        var victim = home
        for probe in 0..<Self.probes {
            let slot = (home + probe) & mask
            if serials[slot] == 0 { victim = slot; break }
            if keys[slot] == key { return slot }
            if serials[slot] < serials[victim] { victim = slot }
        }
        if serials[victim] != 0 { fold(victim) }
        keys[victim] = key
        serials[victim] = nextSerial
        nextSerial += 1
        return victim
    }

    /// Adds the slot's intervals to the histograms and frees it.
    private mutating func fold(_ slot: Int) {
        Self.add(times: times, slot: slot, to: &histograms, endToEnd: &endToEnd, negatives: &negativeIntervals,
                 stages: nearestStage...max(nearestStage, furthestStage))
        let base = slot * Self.stageCount
        for stage in 0..<Self.stageCount { times[base + stage] = Self.unset }
        serials[slot] = 0
    }

    private static func add(times: [Int64], slot: Int, to histograms: inout [Histogram<UInt64>],
                            endToEnd: inout Histogram<UInt64>, negatives: inout Int, stages: ClosedRange<Int>) {
        let base = slot * stageCount
        func interval(_ from: Int64, _ to: Int64) -> UInt64 {
            guard to >= from else { negatives += 1; return 0 }
            return Swift.min(UInt64((to - from) / 1000), 60_000_000)
        }
        var index = 1
        while index < stageCount {
            let stage = FrameStage(rawValue: index)!
            let time = times[base + index]
            if time != unset, let from = stage.predecessor.map({ times[base + $0.rawValue] }), from != unset {
                _ = histograms[index].record(interval(from, time))
            }
            index += 1
        }
        // End to end: from the first stage any frame passed to the furthest one, when this frame
        // passed both. A frame missing either end (a receiver's record whose pts meet no sent
        // frame) would measure some middle span instead.
        let first = times[base + stages.lowerBound], last = times[base + stages.upperBound]
        if stages.lowerBound < stages.upperBound, first != unset, last != unset {
            _ = endToEnd.record(interval(first, last))
        }
    }

    func snapshot() -> FrameLatencies {
        // Copies made here, by the reader: the recording side keeps its storage.
        var histograms = self.histograms.map { original in
            var copy = Self.makeHistogram()
            copy.add(original)
            return copy
        }
        var endToEnd = Self.makeHistogram()
        endToEnd.add(self.endToEnd)
        var negatives = negativeIntervals
        for slot in 0...mask where serials[slot] != 0 {
            Self.add(times: times, slot: slot, to: &histograms, endToEnd: &endToEnd, negatives: &negatives,
                     stages: nearestStage...max(nearestStage, furthestStage))
        }
        var stages: [FrameStage: LatencyDistribution] = [:]
        for stage in FrameStage.allCases.dropFirst() { stages[stage] = LatencyDistribution(histograms[stage.rawValue]) }
        return FrameLatencies(stages: stages, endToEnd: LatencyDistribution(endToEnd), framesTraced: Int(nextSerial - 1),
                              negativeIntervals: negatives)
    }

    mutating func reset() {
        for slot in 0...mask { serials[slot] = 0 }
        for index in times.indices { times[index] = Self.unset }
        for index in histograms.indices { histograms[index].reset() }
        endToEnd.reset()
        negativeIntervals = 0
        furthestStage = 0
        nearestStage = Self.stageCount
        nextSerial = 1
    }
}
