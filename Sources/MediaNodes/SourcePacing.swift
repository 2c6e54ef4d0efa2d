import MediaCore

/// How a file source releases its items.
public enum Pacing: Sendable, Hashable {
    /// As fast as downstream takes them (transcoding).
    case asFastAsPossible
    /// At the pace of their timestamps on the graph clock, like a camera or microphone.
    case realTime
}

/// The part every file source shares: a frame limit, and holding an item back until the clock
/// reaches its presentation time when pacing in real time.
///
/// A paced item's `FrameStage.capture` is its due time, not the moment it went out: a source that
/// falls behind (its graph's workers busy) shows as latency downstream, as a late camera would.
struct SourcePacer<Item: MediaPayload> {
    var pacing: Pacing
    var limit: Int?
    private(set) var delivered = 0
    /// The graph's clock, once `start` has run.
    private(set) var clock: (any MediaClock)!
    private var tracer: FrameTracer?
    private var origin: (clock: ClockTime, pts: MediaTime)?
    private var held: Item?

    init(pacing: Pacing, limit: Int?) {
        self.pacing = pacing
        self.limit = limit
    }

    /// Takes the graph's clock, and its tracer when the graph traces the sending side.
    mutating func start(context: NodeContext) {
        clock = context.clock
        tracer = context.tracer(for: .sending)
    }

    /// The next item from `read` (which returns nil at end of file), or when to ask again.
    mutating func next(read: () throws -> Item?) throws -> Production<Item> {
        if let limit, delivered >= limit { return .end }
        guard let item = try held ?? read() else { return .end }
        if pacing == .realTime {
            let now = clock.now
            let origin = self.origin ?? (now, item.pts)
            self.origin = origin
            let due = origin.clock + ClockTime(item.pts - origin.pts)
            if now < due {
                held = item
                return .wait(until: due)
            }
            // Recorded before the runner's own `capture` at now, which then keeps this one.
            tracer?.record(.capture, pts: item.pts, at: due)
        }
        held = nil
        delivered += 1
        return .item(item)
    }
}
