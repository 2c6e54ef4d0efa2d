
/// An output of a node in a graph, typed by what it carries. Connect it to the input of one or
/// more nodes added later (fan-out shares the items, not copies of their bytes).
public struct Port<Item: MediaPayload>: @unchecked Sendable {
    let runner: NodeRunner
    let graph: ObjectIdentifier
}

/// A set of connected nodes that runs as one pipeline.
///
/// ```
///   data, end of stream ─────────────────────────────────────────▶
///   ┌────────┐  edge  ┌───────────┐  edge  ┌─────────┐
///   │ source │ ─────▶ │ transform │ ─────▶ │  sink   │   (stepped by shared workers)
///   └────────┘ ◀───── └───────────┘ ◀───── └─────────┘
///   ◀───────────────── upstream events (keyframe request, bitrate change)
///   errors: the first one stops every node; run() throws it with the node's name.
///   A failing source (a truncated file, a lost device) ends its stream instead, so that
///   downstream completes what it already has, and then run() throws its error.
/// ```
///
/// Build a graph with `add`, which only accepts typed connections (pictures to a picture input);
/// `build()` then negotiates formats from the sources down: each node's offer is intersected with
/// what its consumers accept, and fixated. A connection with nothing in common fails there, naming
/// both nodes and both formats. `run()` (or `start`) hands the nodes to the process's
/// `NodeScheduler`, which steps each one whenever it has input and room for output: stages overlap
/// on several cores while bounded edges keep memory flat, and a graph costs no thread of its own.
/// `runDeterministic()` runs the same nodes on the calling thread with a `ManualClock`, for tests.
public final class Graph: @unchecked Sendable {
    public let clock: any MediaClock
    public let edgeCapacity: Int
    private var runners: [NodeRunner] = []
    private var built = false
    private var ran = false
    private let running = Locked<Running>(Running())
    /// Where threaded runs' nodes go.
    let scheduler: NodeScheduler

    private struct Running {
        var run: GraphRun?
        var cancelled = false
    }

    /// - Parameters:
    ///   - clock: the time every node sees; a `ManualClock` for deterministic runs.
    ///   - edgeCapacity: items an edge holds before its producer waits.
    public convenience init(clock: any MediaClock = SystemClock(), edgeCapacity: Int = 4) {
        self.init(clock: clock, edgeCapacity: edgeCapacity, scheduler: .shared)
    }

    /// A graph whose threaded runs go to `scheduler` instead of the process's (tests).
    init(clock: any MediaClock = SystemClock(), edgeCapacity: Int = 4, scheduler: NodeScheduler) {
        self.clock = clock
        self.edgeCapacity = edgeCapacity
        self.scheduler = scheduler
    }

    /// Per-frame latency tracing: nodes find the tracer in their `NodeContext`; set before `build()`.
    public var tracing: FrameTracing? {
        willSet { precondition(!built, "graph already built") }
    }

    // MARK: Building

    @discardableResult
    public func add<Source: MediaSource>(_ source: Source) -> Port<Source.Output> {
        Port(runner: append(SourceRunner(source)), graph: ObjectIdentifier(self))
    }

    @discardableResult
    public func add<Transform: MediaTransform>(_ transform: Transform, input: Port<Transform.Input>) -> Port<Transform.Output> {
        let runner = TransformRunner(transform)
        runner.input = connect(input, to: runner)
        return Port(runner: append(runner), graph: ObjectIdentifier(self))
    }

    public func add<Sink: MediaSink>(_ sink: Sink, input: Port<Sink.Input>) {
        let runner = SinkRunner(sink)
        runner.input = connect(input, to: runner)
        append(runner)
    }

    private func connect<Item>(_ port: Port<Item>, to runner: NodeRunner) -> Edge<Item> {
        precondition(port.graph == ObjectIdentifier(self), "port of another graph")
        precondition(!built, "graph already built")
        let edge = Edge<Item>(capacity: edgeCapacity, from: port.runner, to: runner)
        port.runner.attachOutput(edge)
        port.runner.downstream.append(runner)
        runner.upstream = port.runner.link
        return edge
    }

    @discardableResult
    private func append(_ runner: NodeRunner) -> NodeRunner {
        precondition(!built, "graph already built")
        runners.append(runner)
        return runner
    }

    /// Negotiates every edge's format and starts every node. Called by `run()` if not called before.
    ///
    /// Nodes were added after their inputs, so the order of addition is an order in which every
    /// node's input format is known before the node is asked what it can produce from it.
    public func build() throws {
        guard !built else { return }
        built = true
        var names = Set<String>()
        for runner in runners where !names.insert(runner.name).inserted {
            throw GraphError.duplicateNodeName(runner.name)
        }
        var started: [NodeRunner] = []
        do {
            for runner in runners {
                try negotiateOutput(of: runner)
                try configuring(runner) { try runner.start(context: context(for: runner)) }
                started.append(runner)
            }
        } catch {
            started.forEach { $0.node.close() }
            throw error
        }
    }

    private func negotiateOutput(of runner: NodeRunner) throws {
        guard let offered = try configuring(runner, runner.offeredCaps) else { return }
        guard !runner.downstream.isEmpty else { throw GraphError.unconnectedOutput(node: runner.name) }
        var agreed = offered
        for consumer in runner.downstream {
            let accepted = consumer.acceptedCaps ?? Caps([])
            agreed = agreed.intersection(accepted)
            if agreed.isEmpty {
                throw GraphError.incompatibleFormats(upstream: runner.name, offered: offered,
                                                     downstream: consumer.name, accepted: accepted)
            }
        }
        guard let format = agreed.fixated else { throw GraphError.unfixedFormat(node: runner.name, caps: agreed) }
        runner.outputFormat = format
        for consumer in runner.downstream { consumer.inputFormat = format }
    }

    private func configuring<T>(_ runner: NodeRunner, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as GraphError { throw error } catch {
            throw GraphError.configurationFailed(node: runner.name, error: error)
        }
    }

    private func context(for runner: NodeRunner) -> NodeContext {
        if let tracing { runner.trace(with: tracing) }
        let link = runner.link
        return NodeContext(nodeName: runner.name, clock: clock, tracing: tracing, wake: { link.wake() }) { link.postUpstream($0) }
    }

    /// The format negotiated on the output of `node` (after `build()`).
    public func outputFormat(of node: some MediaNode) -> MediaFormat? { runner(of: node)?.outputFormat }

    // MARK: Running

    /// Runs the graph until every node reaches end of stream, one fails, or `cancel()`, and
    /// returns then. Every node is closed afterwards, whatever the outcome.
    /// - Throws: `GraphError.nodeFailed` with the first failing node, or `GraphError.cancelled`.
    @discardableResult
    public func run() throws -> GraphReport {
        let outcome = OutcomeSlot()
        try start { outcome.fill($0) }
        return try outcome.wait().get()
    }

    /// Builds the graph if needed, starts it and returns at once: nodes run on the process's shared
    /// workers (`NodeScheduler`), those that wait on the outside world on threads of their own.
    /// `completion` gets the outcome once every node has ended and has been closed, on the thread
    /// of the node that ended last.
    /// - Throws: what `build()` throws, or `GraphError.alreadyRun`.
    public func start(completion: @escaping @Sendable (Result<GraphReport, any Error>) -> Void) throws {
        try beginRun()
        let startTime = SystemClock().now
        let run = GraphRun(runners: runners, clock: clock, scheduler: scheduler) { [self] in
            completion(Result { try endRun(elapsed: SystemClock().now - startTime) })
        }
        for runner in runners {
            runner.run = run
            if runner.node.execution == .ownThread { runner.parker = ThreadParker() }
        }
        let cancelledEarly = running.withLock { state -> Bool in
            state.run = run
            return state.cancelled
        }
        guard !runners.isEmpty else {
            completion(Result { try endRun(elapsed: .zero) })
            return
        }
        scheduler.startIfNeeded()
        scheduler.runStarted()
        if cancelledEarly { run.cancel() }
        for runner in runners {
            if runner.parker != nil {
                WorkerThread.detached(name: "sluice-node") { runner.runOnOwnThread() }
            } else {
                runner.wake()
            }
        }
    }

    /// Runs every node on the calling thread, one step at a time, in a fixed order. When no node
    /// can progress, the `ManualClock` jumps to the earliest time a node waits for. Same inputs,
    /// same outputs, every time; paced sources run as fast as the machine allows.
    @discardableResult
    public func runDeterministic() throws -> GraphReport {
        guard let manual = clock as? ManualClock else { throw GraphError.needsManualClock }
        try beginRun()
        let run = GraphRun(runners: [], clock: clock, scheduler: scheduler) {}
        running.withLock { $0.run = run }
        let startTime = manual.now
        do {
            while runners.contains(where: { !$0.isDone }) {
                if run.isStopping || running.withLock({ $0.cancelled }) { break }
                var progressed = false
                var earliestWake: ClockTime?
                for runner in runners where !runner.isDone {
                    let result: StepResult
                    do { result = try runner.step() } catch { run.fail(runner.name, error); break }
                    switch result {
                    case .progressed: progressed = true
                    case .done: runner.isDone = true; progressed = true
                    case .ended(let error):
                        run.record(runner.name, error)
                        runner.isDone = true
                        progressed = true
                    case .idle(let wake?): earliestWake = min(earliestWake ?? wake, wake)
                    case .idle(nil): break
                    }
                }
                if !progressed {
                    guard let wake = earliestWake else {
                        throw GraphError.stalled(nodes: runners.filter { !$0.isDone }.map(\.name))
                    }
                    manual.advance(to: wake)
                }
            }
        } catch {
            runners.forEach { $0.node.close() }
            throw error
        }
        return try endRun(elapsed: manual.now - startTime)
    }

    /// Like `start(completion:)`, but builds and starts the graph on a short-lived thread of its
    /// own, for graphs whose negotiation waits (a network stream's first keyframe); a build error
    /// goes to `completion` too. The thread ends once the graph has started.
    public func startBuildingAside(completion: @escaping @Sendable (Result<GraphReport, any Error>) -> Void) {
        WorkerThread.detached { [self] in
            do { try start(completion: completion) } catch { completion(.failure(error)) }
        }
    }

    /// Runs the graph without blocking the caller's thread; cancelling the calling task cancels
    /// the graph. It is built aside (`startBuildingAside`).
    @discardableResult
    public func run() async throws -> GraphReport {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                startBuildingAside { continuation.resume(with: $0) }
            }
        } onCancel: {
            cancel()
        }
    }

    private func beginRun() throws {
        guard !ran else { throw GraphError.alreadyRun }
        ran = true
        try build()
    }

    private func endRun(elapsed: ClockTime) throws -> GraphReport {
        runners.forEach { $0.node.close() }
        let (run, cancelled) = running.withLock { ($0.run, $0.cancelled) }
        let outcome = run?.outcome
        if let failure = outcome?.failure { throw GraphError.nodeFailed(node: failure.node, error: failure.error) }
        if cancelled || outcome?.cancelled == true { throw GraphError.cancelled }
        return GraphReport(elapsed: elapsed, nodes: runners.map(\.report))
    }

    /// Stops a run from any thread: queued items are dropped, every node is closed, and `run()`
    /// throws `GraphError.cancelled`. A graph cancelled before it starts ends at once.
    public func cancel() {
        let run = running.withLock { state -> GraphRun? in
            state.cancelled = true
            return state.run
        }
        run?.cancel()
    }

    /// Sends an upstream event to `node` from outside the graph (e.g. an application asking an
    /// encoder for a keyframe). It is handled where the node runs, before its next item.
    public func post(_ event: UpstreamEvent, to node: some MediaNode) {
        runner(of: node)?.post(event)
    }

    /// Counters of every node so far; safe to call from another thread while running.
    public var progress: [NodeReport] { runners.map(\.report) }

    private func runner(of node: some MediaNode) -> NodeRunner? {
        runners.first { $0.node === node }
    }
}

protocol ClosableEdge: AnyObject { func close() }
extension Edge: ClosableEdge {}

/// Where a blocking `run()` waits for the outcome that `start` hands over.
private final class OutcomeSlot: @unchecked Sendable {
    private let lock = ConditionLock()
    private var result: Result<GraphReport, any Error>?

    func fill(_ result: Result<GraphReport, any Error>) {
        lock.withLock {
            self.result = result
            lock.broadcast()
        }
    }

    func wait() -> Result<GraphReport, any Error> {
        lock.withLock {
            while result == nil { lock.wait() }
            return result!
        }
    }
}

/// Counters of one node after (or during) a run.
public struct NodeReport: Sendable, Hashable {
    public var name: String
    public var itemsIn: Int
    public var itemsOut: Int
    /// Upstream events that reached the first node without being handled.
    public var unhandledEvents: Int
}

/// What a finished run did.
/// How a graph traces frames: the tracer its nodes record their stages in, the side of the call
/// the graph is (nodes record only their side's stages: a decoder before an encoder on the sending
/// side records nothing), and the stages its runtime records for every item a source produces and
/// a sink takes (nil: none).
public struct FrameTracing: Sendable {
    public var tracer: FrameTracer
    public var side: FrameTracer.Side
    public var sources: FrameStage?
    public var sinks: FrameStage?

    public init(tracer: FrameTracer, side: FrameTracer.Side, sources: FrameStage? = nil, sinks: FrameStage? = nil) {
        self.tracer = tracer
        self.side = side
        self.sources = sources
        self.sinks = sinks
    }

    /// A sending graph: its sources' items are captured frames.
    public static func sending(_ tracer: FrameTracer) -> FrameTracing {
        FrameTracing(tracer: tracer, side: .sending, sources: .capture)
    }

    /// A receiving graph: its sinks' items are delivered frames.
    public static func receiving(_ tracer: FrameTracer) -> FrameTracing {
        FrameTracing(tracer: tracer, side: .receiving, sinks: .sink)
    }
}

public struct GraphReport: Sendable {
    /// Wall time (threaded) or clock time (deterministic) from start to end.
    public var elapsed: ClockTime
    public var nodes: [NodeReport]

    public subscript(name: String) -> NodeReport? { nodes.first { $0.name == name } }
}

/// Why a graph could not be built or did not run to the end.
public enum GraphError: Error, CustomStringConvertible {
    /// Two connected nodes have no format in common.
    case incompatibleFormats(upstream: String, offered: Caps, downstream: String, accepted: Caps)
    /// The agreed formats leave a field open (e.g. no frame rate anywhere).
    case unfixedFormat(node: String, caps: Caps)
    /// A node's output goes nowhere: its data would be lost.
    case unconnectedOutput(node: String)
    case duplicateNodeName(String)
    /// A node rejected its negotiated format or failed to start.
    case configurationFailed(node: String, error: any Error)
    /// A node failed while running; the run stopped there.
    case nodeFailed(node: String, error: any Error)
    case cancelled
    /// No node can make progress and none waits for the clock (a node that never ends).
    case stalled(nodes: [String])
    case needsManualClock
    case alreadyRun

    public var description: String {
        switch self {
        case .incompatibleFormats(let up, let offered, let down, let accepted):
            return "cannot connect \(up) to \(down): \(up) offers \(offered), \(down) accepts \(accepted)"
        case .unfixedFormat(let node, let caps): return "\(node): format not fully determined: \(caps)"
        case .unconnectedOutput(let node): return "\(node): output is not connected"
        case .duplicateNodeName(let name): return "two nodes are named \(name)"
        case .configurationFailed(let node, let error): return "\(node): \(error)"
        case .nodeFailed(let node, let error): return "\(node): \(error)"
        case .cancelled: return "cancelled"
        case .stalled(let nodes): return "graph stalled: \(nodes.joined(separator: ", ")) cannot progress"
        case .needsManualClock: return "deterministic runs need a ManualClock"
        case .alreadyRun: return "a graph runs once"
        }
    }

    /// The name of the node the error concerns, if any.
    public var nodeName: String? {
        switch self {
        case .incompatibleFormats(_, _, let down, _): return down
        case .unfixedFormat(let n, _), .unconnectedOutput(let n), .configurationFailed(let n, _), .nodeFailed(let n, _): return n
        default: return nil
        }
    }
}
