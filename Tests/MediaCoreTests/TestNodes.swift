import Glibc
import MediaCore

/// 64x48 I420 at 30 fps unless told otherwise.
let smallVideo = VideoFormat(encoding: .pixels(.i420), width: 64, height: 48, frameRate: Rational(30, 1))

/// Produces `count` pictures (forever if nil) whose first luma byte is the frame index, optionally
/// paced at the frame rate of `format` on the graph clock.
final class PatternSource: MediaSource {
    let name: String
    let format: VideoFormat
    let count: Int?
    let paced: Bool
    let pool = BufferPool(name: "pattern")
    private(set) var produced = 0
    private(set) var eventsSeen: [(event: UpstreamEvent, atFrame: Int)] = []
    private(set) var closed = false
    var handles: Set<UpstreamEvent> = [.keyframeRequest]
    /// Throw `Failure` instead of producing this frame.
    var failAt: Int?

    struct Failure: Error {}
    private var context: NodeContext!
    private var startTime = ClockTime.zero

    init(name: String = "pattern", format: VideoFormat = smallVideo, count: Int?, paced: Bool = false) {
        self.name = name
        self.format = format
        self.count = count
        self.paced = paced
    }

    func outputCaps() throws -> Caps { Caps(.video(format)) }

    func start(output: MediaFormat, context: NodeContext) throws {
        self.context = context
        startTime = context.clock.now
    }

    func produce() throws -> Production<VideoFrame> {
        if let count, produced >= count { return .end }
        if produced == failAt { throw Failure() }
        let timebase = format.frameRate.reciprocal
        let pts = MediaTime(Int64(produced), timebase: timebase)
        if paced {
            let due = startTime + ClockTime(pts)
            if context.clock.now < due { return .wait(until: due) }
        }
        let frame = VideoFrame(width: format.width, height: format.height, pts: pts, pool: pool)
        frame.plane(0).initializeMemory(as: UInt8.self, repeating: 16)
        frame.plane(1).initializeMemory(as: UInt8.self, repeating: 128)
        frame.plane(2).initializeMemory(as: UInt8.self, repeating: 128)
        frame.plane(0)[0] = UInt8(truncatingIfNeeded: produced)
        produced += 1
        return .item(frame)
    }

    func handle(_ event: UpstreamEvent) throws -> Bool {
        eventsSeen.append((event, produced))
        return handles.contains(event)
    }

    func close() { closed = true }
}

/// Passes pictures on; can take time per item, throw at a given item, or send an event upstream.
/// The calling thread's CPU time in nanoseconds.
func threadCPUTime() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}

final class StageTransform: MediaTransform {
    let name: String
    var delayMicroseconds: UInt32 = 0
    /// CPU time each item takes: the step computes (spins) until its thread has run this long.
    var computeMicroseconds: Int64 = 0
    var failAt: Int?
    var accepted: Caps = .anyVideo
    private(set) var processed = 0
    private(set) var closed = false
    /// When each `process` call began and ended (monotonic), read once the run is over.
    private(set) var steps: [ClosedRange<ClockTime>] = []

    struct Failure: Error, Equatable { let item: Int }

    init(name: String) { self.name = name }

    var inputCaps: Caps { accepted }
    func outputCaps(for input: MediaFormat) throws -> Caps { Caps(input) }
    func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {}

    func process(_ item: VideoFrame, into outbox: inout Outbox<VideoFrame>) throws {
        if let failAt, processed == failAt { throw Failure(item: processed) }
        let began = SystemClock().now
        if delayMicroseconds > 0 { usleep(delayMicroseconds) }
        if computeMicroseconds > 0 {
            let end = threadCPUTime() + computeMicroseconds * 1_000
            while threadCPUTime() < end {}
        }
        steps.append(began...SystemClock().now)
        processed += 1
        outbox.emit(item)
    }

    func finish(into outbox: inout Outbox<VideoFrame>) throws {}
    func close() { closed = true }
}

/// Keeps what it receives (frame indices and times), optionally slowly, and can ask upstream for
/// events at given items.
final class CollectingSink: MediaSink {
    let name: String
    var accepted: Caps = .anyVideo
    var delayMicroseconds: UInt32 = 0
    var requests: [Int: UpstreamEvent] = [:]
    private(set) var indices: [Int] = []
    private(set) var arrivalTimes: [ClockTime] = []
    private(set) var finished = false
    private(set) var closed = false
    private var context: NodeContext!

    init(name: String = "collector") { self.name = name }

    /// The context the graph gave it, kept for as long as the sink lives.
    var keptContext: NodeContext { context }

    var inputCaps: Caps { accepted }
    func start(input: MediaFormat, context: NodeContext) throws { self.context = context }

    func consume(_ item: VideoFrame) throws {
        if delayMicroseconds > 0 { usleep(delayMicroseconds) }
        if let event = requests[indices.count] { context.sendUpstream(event) }
        indices.append(Int(item.plane(0)[0]))
        arrivalTimes.append(context.clock.now)
    }

    func finish() throws { finished = true }
    func close() { closed = true }
}
