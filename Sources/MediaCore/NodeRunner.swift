import Synchronization

/// What one step of a node's work came to.
enum StepResult {
    case progressed
    /// Nothing to do now; if a time is given, the node wants to run again when the clock reads it.
    case idle(wakeAt: ClockTime?)
    case done
    /// A source failed: its consumers were sent end of stream so that they can complete what they
    /// already have; the run then reports this error.
    case ended(by: any Error)
}

/// The graph's side of a node: its edges, negotiated formats, mailbox of upstream events and
/// counters. Subclasses drive the three node roles; `step()` is shared by the threaded and the
/// deterministic executors (edges decide whether waiting blocks).
class NodeRunner: @unchecked Sendable {
    let name: String
    var node: any MediaNode { fatalError("subclass") }
    /// Where this node's unhandled upstream events go: the upstream runner's link, which does not
    /// keep it (the graph owns its runners, and `downstream` points the other way; both strong made
    /// every graph's nodes a cycle that outlived it: each call of pipebench's scale.audio left
    /// 2.8 MiB behind).
    var upstream: RunnerLink?
    /// How this runner is reached by what may outlive it: its upstream's downstream runners, its
    /// node's context. Severed when the runner goes.
    private(set) lazy var link = RunnerLink(self)
    var downstream: [NodeRunner] = []
    var inputFormat: MediaFormat?
    var outputFormat: MediaFormat?
    var isDone = false

    private let mailbox = Locked<[UpstreamEvent]>([])
    /// How many events the mailbox holds, written under its lock: a step finds an empty mailbox
    /// with one load, without the lock (a post that this load misses wakes the node again).
    private let mailCount = Atomic<Int>(0)
    private var pendingEvents: [UpstreamEvent] = []
    let itemsIn = Atomic<Int>(0)
    let itemsOut = Atomic<Int>(0)
    let eventsUnhandled = Atomic<Int>(0)

    /// The stage the runtime records for this node's items (a source's output, a sink's input).
    /// Set while the graph is built (unchecked, like the edges).
    @exclusivity(unchecked) var traced: (tracer: FrameTracer, stage: FrameStage)?

    init(name: String) {
        self.name = name
        _ = link  // made here, on the thread that builds the graph, not by whoever asks first
    }

    deinit { link.sever() }

    /// Records the stage `tracing` gives this kind of node, if any.
    func trace(with tracing: FrameTracing) {}

    // MARK: Negotiation (see Graph.build)

    /// What this node accepts; `nil` for sources.
    var acceptedCaps: Caps? { nil }
    /// What this node can produce given `inputFormat`; `nil` for sinks.
    func offeredCaps() throws -> Caps? { nil }
    func start(context: NodeContext) throws {}
    var outputEdges: [AnyObject] { [] }
    func attachOutput(_ edge: AnyObject) { preconditionFailure("\(name) has no output") }

    // MARK: Running

    func step() throws -> StepResult { fatalError("subclass") }

    /// Queues an event for this node; it is handled where the node runs, before its next step.
    func post(_ event: UpstreamEvent) {
        mailbox.withLock {
            $0.append(event)
            mailCount.add(1, ordering: .releasing)
        }
        wake()
    }

    // MARK: Scheduling (see NodeScheduler)

    /// The threaded run this node is part of; nil in a deterministic run, where nothing is woken.
    /// Set once, before the node can be woken.
    var run: GraphRun? {
        didSet { scheduler = run.map { Unmanaged.passUnretained($0.scheduler) } }
    }
    /// The run's scheduler, not retained (the run keeps it): a wake-up that loaded `run` and its
    /// scheduler as references paid two reference counts up and down, each an atomic operation.
    private var scheduler: Unmanaged<NodeScheduler>?
    /// Where the node stands with the shared workers (`ScheduleState`).
    let schedule = Atomic<UInt8>(ScheduleState.idle.rawValue)
    /// What an `.ownThread` node's thread sleeps on.
    var parker: ThreadParker?
    /// When the node's pending timer fires; guarded by the scheduler's lock.
    var timerDeadline: ClockTime?
    /// How long a step of the node took in its last slice on a shared worker (written before the
    /// node can be woken again, read when it is).
    @exclusivity(unchecked) var stepCost = ClockTime.zero
    /// The shared worker that ran the node's last slice (written and read like `stepCost`).
    @exclusivity(unchecked) var lastWorker: ObjectIdentifier?

    /// Makes the node run again soon: it has input, room for output, an event or a due timer. Safe
    /// from any thread; costs one atomic operation when the node is already scheduled or running.
    func wake() {
        guard let scheduler else { return }
        if let parker { parker.unpark(); return }
        var state = schedule.load(ordering: .acquiring)
        while true {
            let next: ScheduleState
            switch ScheduleState(rawValue: state)! {
            case .idle: next = .scheduled
            case .running: next = .notified
            case .scheduled, .notified, .finished: return
            }
            let (exchanged, original) = schedule.compareExchange(expected: state, desired: next.rawValue,
                                                                 ordering: .acquiringAndReleasing)
            if exchanged {
                if next == .scheduled { scheduler._withUnsafeGuaranteedRef { $0.enqueue(self) } }
                return
            }
            state = original
        }
    }

    /// Steps cheaper than this are timed against the slice's end in eights.
    static let cheapStep = ClockTime(nanoseconds: 20_000)

    /// Steps the node until it has nothing to do, ends, or the monotonic clock passes `sliceEnd`;
    /// counts its steps into `steps`.
    func runSlice(until sliceEnd: ClockTime, steps: inout Int) -> SliceOutcome {
        guard let run else { return .finished }
        // A cheap node's steps (under `cheapStep` in its last slice) read the clock every eighth
        // step: a read costs as much as such a step's own bookkeeping.
        let clockMask = stepCost > .zero && stepCost < Self.cheapStep ? 7 : 0
        while true {
            if run.isStopping { return .finished }
            let result: StepResult
            steps += 1
            do { result = try step() } catch {
                run.fail(name, error)
                return .finished
            }
            switch result {
            case .progressed:
                if steps & clockMask == 0 && SystemClock.monotonicNow >= sliceEnd { return .yielded }
            case .idle(let wake): return .idle(wakeAt: wake)
            case .done: return .finished
            case .ended(let error):
                run.record(name, error)
                return .finished
            }
        }
    }

    /// Hands queued events to the node; those it does not handle travel on upstream.
    func deliverEvents() throws {
        guard mailCount.load(ordering: .acquiring) > 0 else { return }
        mailbox.withLock {
            swap(&$0, &pendingEvents)
            mailCount.store(0, ordering: .relaxed)
        }
        for event in pendingEvents where try !node.handle(event) {
            if upstream?.post(event) != true { eventsUnhandled.add(1, ordering: .relaxed) }
        }
        pendingEvents.removeAll(keepingCapacity: true)
    }

    var report: NodeReport {
        NodeReport(name: name, itemsIn: itemsIn.load(ordering: .relaxed), itemsOut: itemsOut.load(ordering: .relaxed),
                   unhandledEvents: eventsUnhandled.load(ordering: .relaxed))
    }
}

// The runners are generic over node types of other modules, so their code runs unspecialised:
// every generic value it touches costs a metadata lookup. The per-item helpers below and the edges'
// push and pop are generic over the payload alone and specialised for the three payloads, which
// their generic entries dispatch to (`@_specialize`). They loop by index: unspecialised, `for in`
// over an array goes through protocol witnesses whose coroutine frames are allocated on every call.
// A role's step entry only calls its body (never inlined): an entry that held a value of a generic
// type (a popped packet) looked up that type's metadata on every call, before the check that
// picks the specialised code.

/// Moves every item of `outbox` onto each output edge and, at the end, end-of-stream. Returns what
/// the last push found, `.closed` as soon as an edge is; an empty outbox reports room (its node
/// had room before its step, and has pushed nothing since).
@_specialize(where Item == VideoFrame)
@_specialize(where Item == AudioFrame)
@_specialize(where Item == EncodedFrame)
private func deliver<Item>(_ outbox: inout Outbox<Item>, end: Bool, to outputs: [Edge<Item>], counter: borrowing Atomic<Int>) -> PushOutcome {
    var delivered = 0
    defer { counter.add(delivered, ordering: .relaxed) }
    var outcome = PushOutcome.roomLeft
    while let item = outbox.items.popFirst() {
        // Moved into its packet: without `consume` the item was copied, then the original released.
        outcome = push(.item(consume item), to: outputs)
        guard outcome != .closed else {
            _ = outbox.items.removeAll()
            return .closed
        }
        delivered += 1
    }
    return end ? push(.end, to: outputs) : outcome
}

/// Hands `packet` to each of `outputs`: a copy to all but the last, which takes it. Room is left
/// only if every edge has some.
@_specialize(where Item == VideoFrame)
@_specialize(where Item == AudioFrame)
@_specialize(where Item == EncodedFrame)
private func push<Item>(_ packet: consuming Packet<Item>, to outputs: [Edge<Item>]) -> PushOutcome {
    guard let last = outputs.indices.last else { return .roomLeft }
    var outcome = PushOutcome.roomLeft
    var index = 0
    while index < last {
        switch outputs[index].push(copy packet) {
        case .closed: return .closed
        case .full: outcome = .full
        case .roomLeft: break
        }
        index += 1
    }
    let lastOutcome = outputs[last].push(packet)
    return lastOutcome == .roomLeft ? outcome : lastOutcome
}

/// Whether every output can take an item without exceeding its capacity.
@_specialize(where Item == VideoFrame)
@_specialize(where Item == AudioFrame)
@_specialize(where Item == EncodedFrame)
private func haveRoom<Item>(_ outputs: [Edge<Item>]) -> Bool {
    var index = 0
    while index < outputs.count {
        guard outputs[index].hasRoom else { return false }
        index += 1
    }
    return true
}

/// What sources and transforms share: output edges, and an outbox for what the node emits.
class ProducerRunner<Output: MediaPayload>: NodeRunner, @unchecked Sendable {
    /// Set while the graph is built, read by the node's steps: no exclusivity check per read.
    @exclusivity(unchecked) private var outputs: [Edge<Output>] = []
    /// Touched only by the step that runs the node (one at a time: `ScheduleState`), so the
    /// runtime's exclusivity check on each access is left out.
    @exclusivity(unchecked) var outbox = Outbox<Output>()
    /// Every output is known to have room: the last push to each left some, or `hasRoom` said so
    /// and nothing was pushed since. Only this node makes its outputs grow, so room known stays
    /// room, and the step that knows it does not take the edges' locks to ask (touched like
    /// `outbox`).
    @exclusivity(unchecked) private var roomKnown = false

    override var outputEdges: [AnyObject] { outputs }
    override func attachOutput(_ edge: AnyObject) { outputs.append(edge as! Edge<Output>) }

    var outputsHaveRoom: Bool {
        if !roomKnown { roomKnown = haveRoom(outputs) }
        return roomKnown
    }

    /// Sends the outbox on (then end of stream if `end`); false when the run is stopping.
    func deliverOutbox(end: Bool) -> Bool { delivered(deliver(&outbox, end: end, to: outputs, counter: itemsOut)) }

    /// Notes what pushes found; false when an edge was closed (the run is stopping).
    private func delivered(_ outcome: PushOutcome) -> Bool {
        roomKnown = outcome == .roomLeft
        return outcome != .closed
    }

    /// A source's step, with its `produce()`.
    @_specialize(where Output == VideoFrame)
    @_specialize(where Output == AudioFrame)
    @_specialize(where Output == EncodedFrame)
    final func sourceStep(_ produce: () throws -> Production<Output>) throws -> StepResult { try sourceStepBody(produce) }

    @inline(never)
    private final func sourceStepBody(_ produce: () throws -> Production<Output>) throws -> StepResult {
        try deliverEvents()
        guard outputsHaveRoom else { return .idle(wakeAt: nil) }
        let production: Production<Output>
        do {
            production = try produce()
        } catch {
            _ = deliverOutbox(end: true)
            return .ended(by: error)
        }
        switch consume production {
        case .item(let item):
            return send(item) ? .progressed : .done
        case .wait(let deadline):
            return .idle(wakeAt: deadline)
        case .end:
            _ = deliverOutbox(end: true)
            return .done
        }
    }

    /// Hands a source's item to its outputs; false when the run is stopping. A source's outbox is
    /// empty between steps, so its one item goes straight to the edges.
    private final func send(_ item: consuming Output) -> Bool {
        if let traced { traced.tracer.record(traced.stage, pts: item.pts) }
        itemsOut.add(1, ordering: .relaxed)
        return delivered(push(.item(item), to: outputs))
    }

    /// A transform's step: the next item of `input` through `process`, or `finish` at its end.
    @_specialize(where Input == VideoFrame, Output == VideoFrame)
    @_specialize(where Input == VideoFrame, Output == EncodedFrame)
    @_specialize(where Input == EncodedFrame, Output == VideoFrame)
    @_specialize(where Input == EncodedFrame, Output == EncodedFrame)
    @_specialize(where Input == AudioFrame, Output == AudioFrame)
    @_specialize(where Input == AudioFrame, Output == EncodedFrame)
    @_specialize(where Input == EncodedFrame, Output == AudioFrame)
    final func transformStep<Input>(_ input: Edge<Input>, process: (Input, inout Outbox<Output>) throws -> Void,
                                    finish: (inout Outbox<Output>) throws -> Void) throws -> StepResult {
        try transformStepBody(input, process: process, finish: finish)
    }

    @inline(never)
    private final func transformStepBody<Input>(_ input: Edge<Input>, process: (Input, inout Outbox<Output>) throws -> Void,
                                                finish: (inout Outbox<Output>) throws -> Void) throws -> StepResult {
        try deliverEvents()
        guard outputsHaveRoom else { return .idle(wakeAt: nil) }
        guard let packet = input.pop() else { return .idle(wakeAt: nil) }
        switch consume packet {
        case .item(let item):
            itemsIn.add(1, ordering: .relaxed)
            try process(item, &outbox)
            return deliverOutbox(end: false) ? .progressed : .done
        case .end:
            try finish(&outbox)
            _ = deliverOutbox(end: true)
            return .done
        }
    }
}

// The runners of each role are generic over their node's type, which lives in another module; their
// steps hand the node's calls to the steps above, which are generic over the payloads alone. The
// calls go as closure literals: a method reference passed instead is a heap-allocated closure.

final class SourceRunner<Source: MediaSource>: ProducerRunner<Source.Output>, @unchecked Sendable {
    let source: Source

    init(_ source: Source) {
        self.source = source
        super.init(name: source.name)
    }

    override var node: any MediaNode { source }
    override func trace(with tracing: FrameTracing) { traced = tracing.sources.map { (tracing.tracer, $0) } }
    override func offeredCaps() throws -> Caps? { try source.outputCaps() }
    override func start(context: NodeContext) throws { try source.start(output: outputFormat!, context: context) }
    override func step() throws -> StepResult { try sourceStep { try source.produce() } }
}

final class TransformRunner<Transform: MediaTransform>: ProducerRunner<Transform.Output>, @unchecked Sendable {
    let transform: Transform
    /// Set while the graph is built, read by the node's steps: no exclusivity check per read.
    @exclusivity(unchecked) var input: Edge<Transform.Input>!

    init(_ transform: Transform) {
        self.transform = transform
        super.init(name: transform.name)
    }

    override var node: any MediaNode { transform }
    override var acceptedCaps: Caps? { transform.inputCaps }
    override func offeredCaps() throws -> Caps? { try transform.outputCaps(for: inputFormat!) }
    override func start(context: NodeContext) throws {
        try transform.start(input: inputFormat!, output: outputFormat!, context: context)
    }
    override func step() throws -> StepResult {
        try transformStep(input, process: { try transform.process($0, into: &$1) }, finish: { try transform.finish(into: &$0) })
    }
}

final class SinkRunner<Sink: MediaSink>: NodeRunner, @unchecked Sendable {
    let sink: Sink
    /// Set while the graph is built, read by the node's steps: no exclusivity check per read.
    @exclusivity(unchecked) var input: Edge<Sink.Input>!

    init(_ sink: Sink) {
        self.sink = sink
        super.init(name: sink.name)
    }

    override var node: any MediaNode { sink }
    override func trace(with tracing: FrameTracing) { traced = tracing.sinks.map { (tracing.tracer, $0) } }
    override var acceptedCaps: Caps? { sink.inputCaps }
    override func start(context: NodeContext) throws { try sink.start(input: inputFormat!, context: context) }
    /// Whether the input has ended and the sink is finishing (`MediaSink.finishing()`).
    private var ending = false

    override func step() throws -> StepResult {
        if ending { return try finishing() }
        return try sinkStep(input, consume: { try sink.consume($0) }, finish: { try finishing() })
    }

    /// One turn of the sink's end of stream: done, or idle until the time it asks for.
    private func finishing() throws -> StepResult {
        ending = true
        switch try sink.finishing() {
        case .done: return .done
        case .wait(let time): return .idle(wakeAt: time)
        }
    }
}

extension NodeRunner {
    /// A sink's step: the next item of `input` to `consume`, or `finish` at its end.
    @_specialize(where Input == VideoFrame)
    @_specialize(where Input == AudioFrame)
    @_specialize(where Input == EncodedFrame)
    final func sinkStep<Input: MediaPayload>(_ input: Edge<Input>, consume: (Input) throws -> Void,
                                             finish: () throws -> StepResult) throws -> StepResult {
        try sinkStepBody(input, consume: consume, finish: finish)
    }

    @inline(never)
    private final func sinkStepBody<Input: MediaPayload>(_ input: Edge<Input>, consume: (Input) throws -> Void,
                                                         finish: () throws -> StepResult) throws -> StepResult {
        try deliverEvents()
        guard let packet = input.pop() else { return .idle(wakeAt: nil) }
        switch consume packet {
        case .item(let item):
            try consume(item)
            if let traced { traced.tracer.record(traced.stage, pts: item.pts) }
            itemsIn.add(1, ordering: .relaxed)
            return .progressed
        case .end:
            return try finish()
        }
    }
}

/// A runner, reached without a reference that keeps it or a weak one: a weak reference gives its
/// target a side table, and every retain and release of a runner (a few per item) then takes the
/// slow path. The runner severs its link as it goes; a call through a severed link does nothing.
/// While a call holds the lock the runner cannot finish going, and a runner that is going is in no
/// run (a run holds its runners), so a wake-up then schedules nothing.
final class RunnerLink: @unchecked Sendable {
    private let lock = Locked(())
    private unowned(unsafe) var runner: NodeRunner?

    init(_ runner: NodeRunner) { self.runner = runner }

    /// Makes the runner run again soon, if it is still there.
    func wake() { lock.withLock { _ in runner?.wake() } }

    /// Queues `event` for the runner; false when it is gone.
    func post(_ event: UpstreamEvent) -> Bool {
        lock.withLock { _ in
            guard let runner else { return false }
            runner.post(event)
            return true
        }
    }

    /// Sends `event` from the runner's node to its upstream (a node's context does this); counted
    /// as unhandled when there is none. Locks are taken downstream first, then upstream: a graph has
    /// no cycle, so two calls cannot wait on each other.
    func postUpstream(_ event: UpstreamEvent) {
        lock.withLock { _ in
            guard let runner else { return }
            if runner.upstream?.post(event) != true { runner.eventsUnhandled.add(1, ordering: .relaxed) }
        }
    }

    func sever() { lock.withLock { _ in runner = nil } }
}
