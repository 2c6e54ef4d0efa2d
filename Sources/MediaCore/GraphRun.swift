import Synchronization

/// One threaded run of a graph, as its nodes and the scheduler see it: whether it is stopping, its
/// first error, how many nodes are still going, and the graph's clock in the scheduler's terms.
final class GraphRun: @unchecked Sendable {
    let scheduler: NodeScheduler
    let clock: any MediaClock
    private let clockIsMonotonic: Bool
    private let stopping = Atomic<Bool>(false)
    private let remaining: Atomic<Int>
    private let state: Locked<State>

    struct State {
        /// Every node of the run, until it ends (then the runners' references to the run are the
        /// only ones left, and nothing keeps the graph's nodes alive in a cycle).
        var runners: [NodeRunner]
        var failure: (node: String, error: any Error)?
        var cancelled = false
        /// Called once, when the last node ends, and dropped then (it holds the graph).
        var onFinished: (@Sendable () -> Void)?
    }

    /// The outcome so far.
    var outcome: (failure: (node: String, error: any Error)?, cancelled: Bool) {
        state.withLock { ($0.failure, $0.cancelled) }
    }

    init(runners: [NodeRunner], clock: any MediaClock, scheduler: NodeScheduler, onFinished: @escaping @Sendable () -> Void) {
        self.scheduler = scheduler
        self.clock = clock
        clockIsMonotonic = clock is SystemClock
        remaining = Atomic(runners.count)
        state = Locked(State(runners: runners, onFinished: onFinished))
    }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Stops the run at the first error.
    func fail(_ node: String, _ error: any Error) {
        record(node, error)
        stop()
    }

    /// Keeps the first error as the run's outcome.
    func record(_ node: String, _ error: any Error) {
        state.withLock { state in
            if state.failure == nil && !state.cancelled { state.failure = (node, error) }
        }
    }

    func cancel() {
        state.withLock { $0.cancelled = true }
        stop()
    }

    /// Closes every edge (queued items are dropped) and wakes every node, which then ends.
    private func stop() {
        stopping.store(true, ordering: .releasing)
        let runners = state.withLock { $0.runners }
        for runner in runners {
            for edge in runner.outputEdges { (edge as? any ClosableEdge)?.close() }
        }
        for runner in runners { runner.wake() }
    }

    /// Counts a node out; the last one ends the run.
    func nodeFinished() {
        let left = remaining.subtract(1, ordering: .acquiringAndReleasing).newValue
        precondition(left >= 0, "a node of the graph ended twice")
        guard left == 0 else { return }
        let onFinished = state.withLock { state in
            state.runners = []
            return state.onFinished.take()
        }
        scheduler.runEnded()
        onFinished?()
    }

    /// A time of the graph's clock as a time of the monotonic clock, which the scheduler's timers
    /// use. Another clock (a `ManualClock` a test advances) cannot be followed exactly: its
    /// waiters look again every 5 ms.
    func monotonicDeadline(for time: ClockTime) -> ClockTime {
        if clockIsMonotonic { return time }
        let delay = time - clock.now
        return SystemClock.monotonicNow + min(max(delay, .zero), .milliseconds(5))
    }
}

extension NodeRunner {
    /// Runs an `.ownThread` node on the calling thread until it ends, sleeping whenever it has
    /// nothing to do.
    func runOnOwnThread() {
        guard let run, let parker else { return }
        var steps = 0
        while true {
            switch runSlice(until: .max, steps: &steps) {
            case .idle(let wake): parker.park(until: wake.map(run.monotonicDeadline))
            case .yielded: continue
            case .finished:
                run.nodeFinished()
                return
            }
        }
    }
}
