import Foundation
@testable import MediaCore
import Synchronization
import Testing

/// The shared workers that step every threaded graph (`NodeScheduler`): threads that do not grow
/// with graphs, no lost wake-up, and no graph stalled behind another's long or blocking calls.
@Suite struct SchedulerTests {
    /// 300 graphs of four nodes at once: with a thread per node this process would start 1200.
    @Test func manyGraphsShareAFewThreads() throws {
        let before = processThreads()
        let graphs = 300, frames = 40
        let finished = DispatchGroup()
        let failures = Counter()
        var sinks: [CollectingSink] = []
        var peak = before
        for index in 0..<graphs {
            let graph = Graph(edgeCapacity: 2)
            let first = StageTransform(name: "first"), second = StageTransform(name: "second")
            let sink = CollectingSink()
            sinks.append(sink)
            graph.add(sink, input: graph.add(second, input: graph.add(first, input: graph.add(PatternSource(name: "source \(index)", count: frames)))))
            finished.enter()
            try graph.start { result in
                if case .failure = result { failures.add() }
                finished.leave()
            }
            if index % 50 == 0 { peak = max(peak, processThreads()) }
        }
        while finished.wait(timeout: .now() + .milliseconds(20)) == .timedOut { peak = max(peak, processThreads()) }
        #expect(failures.value == 0)
        #expect(sinks.allSatisfy { $0.indices == Array(0..<frames) && $0.finished })
        #expect(peak - before < 60, "threads went from \(before) to \(peak)")
        #expect(NodeScheduler.shared.threadCount <= NodeScheduler.shared.maxWorkers + 1)
    }

    /// A graph that has run, threaded or on its own threads, is freed with its nodes once its owner
    /// lets it go: nothing of the runtime (workers' queues, timers, the run) keeps it.
    @Test(arguments: [false, true])
    func aGraphThatHasRunIsFreedWithItsNodes(paced: Bool) throws {
        weak var source: PatternSource?
        weak var sink: CollectingSink?
        weak var graph: Graph?
        try {
            let running = Graph(edgeCapacity: 2)
            let made = PatternSource(count: 20, paced: paced), collecting = CollectingSink()
            running.add(collecting, input: running.add(StageTransform(name: "stage"), input: running.add(made)))
            try running.run()
            (source, sink, graph) = (made, collecting, running)
        }()
        // The completion may still be returning on a worker: give it a moment.
        for _ in 0..<100 where graph != nil || source != nil || sink != nil { Thread.sleep(forTimeInterval: 0.01) }
        // Bools: a failed expectation on the objects themselves would reflect their non-copyable fields
        // (and crash the test process instead of reporting).
        let (graphFreed, nodesFreed) = (graph == nil, source == nil && sink == nil)
        #expect(graphFreed, "the graph is kept")
        #expect(nodesFreed, "its nodes are kept")
    }

    /// A node that ends while its timer is pending (woken sooner through `NodeContext.wake`, as a
    /// receiver is by its stream's BYE before its silence limit) leaves nothing in the timers: its
    /// graph is freed at once, not when the timer would have fired.
    @Test func aNodeEndedBeforeItsTimerIsFreedAtOnce() throws {
        weak var source: WaitingSource?
        weak var graph: Graph?
        try {
            let running = Graph()
            let waiting = WaitingSource()
            running.add(CollectingSink(), input: running.add(waiting))
            let ended = DispatchSemaphore(value: 0)
            try running.start { _ in ended.signal() }
            let deadline = Date().addingTimeInterval(30)
            while !waiting.waits && Date() < deadline { usleep(1_000) }
            let waits = waiting.waits
            try #require(waits, "the source waits on its timer")
            waiting.end()
            #expect(ended.wait(timeout: .now() + .seconds(30)) == .success)
            (source, graph) = (waiting, running)
        }()
        for _ in 0..<100 where graph != nil || source != nil { Thread.sleep(forTimeInterval: 0.01) }
        let freed = graph == nil && source == nil  // a Bool: see aGraphThatHasRunIsFreedWithItsNodes
        #expect(freed, "kept until the timer a minute away")
    }

    /// Edges of one item, many graphs, many items: a wake-up lost between a node's last look at
    /// its edge and its parking would leave a graph stalled for ever (the test's time limit).
    @Test func noWakeUpIsLostOnBusyOneItemEdges() throws {
        let finished = DispatchGroup()
        let failures = Counter()
        var sinks: [CollectingSink] = []
        for index in 0..<40 {
            let graph = Graph(edgeCapacity: 1)
            let sink = CollectingSink()
            sinks.append(sink)
            var port = graph.add(PatternSource(name: "source \(index)", count: 2_000))
            for stage in 0..<3 { port = graph.add(StageTransform(name: "stage \(stage)"), input: port) }
            graph.add(sink, input: port)
            finished.enter()
            try graph.start { result in
                if case .failure = result { failures.add() }
                finished.leave()
            }
        }
        #expect(finished.wait(timeout: .now() + .seconds(120)) == .success, "a graph stalled")
        #expect(failures.value == 0)
        #expect(sinks.allSatisfy { $0.indices == (0..<2_000).map { $0 % 256 } })
    }

    /// Both workers of a scheduler are held by steps that block for a second; a third graph still
    /// runs at once, on a worker the scheduler adds because its queue stopped moving.
    @Test func aGraphIsNotStalledBehindBlockedWorkers() throws {
        let scheduler = NodeScheduler(workers: 2, maxWorkers: 4)
        let blocked = DispatchGroup()
        for index in 0..<2 {
            let graph = Graph(scheduler: scheduler)
            let stage = StageTransform(name: "blocking")
            stage.delayMicroseconds = 1_000_000
            graph.add(CollectingSink(), input: graph.add(stage, input: graph.add(PatternSource(name: "source \(index)", count: 2))))
            blocked.enter()
            try graph.start { _ in blocked.leave() }
        }
        usleep(50_000)   // both workers are inside their first second-long step
        let graph = Graph(scheduler: scheduler)
        let sink = CollectingSink()
        graph.add(sink, input: graph.add(StageTransform(name: "quick"), input: graph.add(PatternSource(count: 20))))
        let start = SystemClock().now
        try graph.run()
        let elapsed = (SystemClock().now - start).seconds
        #expect(sink.indices == Array(0..<20))
        #expect(elapsed < 0.8, "waited \(elapsed) s for the blocked workers")
        #expect(scheduler.threadCount <= 5)
        blocked.wait()
    }

    /// Both workers compute while four other threads spin on the machine's cores, so each worker
    /// runs only part of the time and its queue stands still for ticks at a time: the workers are
    /// preempted, not blocked (they wait on a run queue), and the scheduler adds none.
    @Test func workersPreemptedByOtherThreadsAreNotTakenForBlocked() throws {
        let scheduler = NodeScheduler(workers: 2, maxWorkers: 6)
        let spinning = Atomic<Bool>(true)
        let spinners = DispatchGroup()
        for _ in 0..<4 {
            spinners.enter()
            Thread.detachNewThread {
                while spinning.load(ordering: .relaxed) {}
                spinners.leave()
            }
        }
        defer {
            spinning.store(false, ordering: .relaxed)
            spinners.wait()
        }
        let finished = DispatchGroup()
        var sinks: [CollectingSink] = []
        for index in 0..<4 {
            let graph = Graph(scheduler: scheduler)
            let stage = StageTransform(name: "computing \(index)")
            stage.computeMicroseconds = 15_000
            let sink = CollectingSink()
            sinks.append(sink)
            graph.add(sink, input: graph.add(stage, input: graph.add(PatternSource(name: "source \(index)", count: 8))))
            finished.enter()
            try graph.start { _ in finished.leave() }
        }
        var peak = scheduler.threadCount
        while finished.wait(timeout: .now() + .milliseconds(2)) == .timedOut { peak = max(peak, scheduler.threadCount) }
        #expect(sinks.allSatisfy { $0.indices == Array(0..<8) })
        #expect(peak == 3, "\(peak - 3) workers added to the 2 that were only preempted")
    }

    /// A source that waits inside `produce()` says `.ownThread`, so even a scheduler with one
    /// worker and no extra ones keeps running other graphs while it waits.
    @Test func anOwnThreadNodeWaitsWithoutHoldingAWorker() throws {
        let scheduler = NodeScheduler(workers: 1, maxWorkers: 1)
        let gate = DispatchSemaphore(value: 0)
        let waiting = Graph(scheduler: scheduler)
        let waitingSink = CollectingSink(name: "after gate")
        waiting.add(waitingSink, input: waiting.add(GatedSource(gate: gate)))
        let waited = DispatchSemaphore(value: 0)
        try waiting.start { _ in waited.signal() }

        let other = Graph(scheduler: scheduler)
        let sink = CollectingSink()
        other.add(sink, input: other.add(StageTransform(name: "stage"), input: other.add(PatternSource(count: 50))))
        try other.run()
        #expect(sink.indices == Array(0..<50))
        #expect(waitingSink.indices.isEmpty)

        gate.signal()
        #expect(waited.wait(timeout: .now() + .seconds(30)) == .success)
        #expect(waitingSink.indices == [7])
    }

    /// A sink whose end takes time (`MediaSink.finishing()`, a network sender's linger) waits on
    /// the graph's timer: with one worker and no extra ones, other graphs run to their end while
    /// it waits, and its graph ends only once it says done.
    @Test func aFinishingSinkWaitsWithoutHoldingAWorker() throws {
        let scheduler = NodeScheduler(workers: 1, maxWorkers: 1)
        let lingering = Graph(scheduler: scheduler)
        let lingeringSink = LingeringSink()
        lingering.add(lingeringSink, input: lingering.add(PatternSource(count: 3)))
        let ended = DispatchSemaphore(value: 0)
        try lingering.start { _ in ended.signal() }
        let deadline = Date().addingTimeInterval(30)
        while lingeringSink.turns.value == 0 && Date() < deadline { usleep(1_000) }
        try #require(lingeringSink.turns.value > 0, "the sink began finishing")

        for _ in 0..<3 {
            let other = Graph(scheduler: scheduler)
            let sink = CollectingSink()
            other.add(sink, input: other.add(StageTransform(name: "stage"), input: other.add(PatternSource(count: 20))))
            try other.run()
            #expect(sink.indices == Array(0..<20))
        }
        #expect(ended.wait(timeout: .now()) == .timedOut, "still finishing")

        lingeringSink.release.store(true, ordering: .releasing)
        #expect(ended.wait(timeout: .now() + .seconds(30)) == .success)
        #expect(lingeringSink.indices == [0, 1, 2])
        #expect(lingeringSink.turns.value >= 2, "asked again at the times it gave")
    }

    private func processThreads() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }) else { return 0 }
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
}

/// Waits for its gate inside `produce()`, then gives one picture numbered 7 and ends.
private final class GatedSource: MediaSource {
    let name = "gated"
    let gate: DispatchSemaphore
    private var given = false
    private let pool = BufferPool(name: "gated")
    var execution: NodeExecution { .ownThread }

    init(gate: DispatchSemaphore) { self.gate = gate }

    func outputCaps() throws -> Caps { Caps(.video(smallVideo)) }
    func start(output: MediaFormat, context: NodeContext) throws {}
    func produce() throws -> Production<VideoFrame> {
        guard !given else { return .end }
        gate.wait()
        given = true
        let frame = VideoFrame(width: smallVideo.width, height: smallVideo.height, pts: .zero(smallVideo.frameRate.reciprocal), pool: pool)
        frame.plane(0)[0] = 7
        return .item(frame)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Collects what it is given, then finishes only once `release` is set, asking to be called again
/// every 5 ms until then.
private final class LingeringSink: MediaSink, @unchecked Sendable {
    let name = "lingering"
    let release = Atomic<Bool>(false)
    let turns = Counter()
    private(set) var indices: [Int] = []
    private var clock: any MediaClock = SystemClock()

    var inputCaps: Caps { .anyVideo }
    func start(input: MediaFormat, context: NodeContext) throws { clock = context.clock }
    func consume(_ item: VideoFrame) throws { indices.append(Int(item.plane(0)[0])) }
    func finish() throws {}
    func finishing() throws -> Finishing {
        turns.add()
        return release.load(ordering: .acquiring) ? .done : .wait(until: clock.now + .milliseconds(5))
    }
}

/// Waits a minute on its timer, unless `end()` wakes it first: then it ends.
private final class WaitingSource: MediaSource, @unchecked Sendable {
    let name = "waiting"
    private let isWaiting = Atomic<Bool>(false)
    private let ending = Atomic<Bool>(false)
    private var context: NodeContext?

    func outputCaps() throws -> Caps { Caps(.video(smallVideo)) }
    func start(output: MediaFormat, context: NodeContext) throws { self.context = context }
    func produce() throws -> Production<VideoFrame> {
        if ending.load(ordering: .acquiring) { return .end }
        isWaiting.store(true, ordering: .releasing)
        return .wait(until: context!.clock.now + .seconds(60))
    }

    var waits: Bool { isWaiting.load(ordering: .acquiring) }

    func end() {
        ending.store(true, ordering: .releasing)
        context?.wake()
    }
}
