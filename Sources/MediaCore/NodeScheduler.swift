import DequeModule
import Glibc
import Synchronization

/// Where a node stands with the shared workers. `wake()` moves idle to scheduled (and queues the
/// node) or running to notified; the worker running it moves running back to idle only if nobody
/// woke it meanwhile, so that no wake-up is lost between a node's last look at its edges and its
/// parking.
enum ScheduleState: UInt8 {
    case idle, scheduled, running, notified, finished
}

/// What a slice of a node's work came to.
enum SliceOutcome {
    /// The node has nothing to do; wake it at this time of the graph's clock, if given.
    case idle(wakeAt: ClockTime?)
    /// The slice's time is spent and the node could go on.
    case yielded
    /// The node reached its end, failed, or the run is stopping.
    case finished
}

/// Runs the nodes of every threaded graph in the process on a few shared threads.
///
/// A node runs only when it can progress: it has input and room for output, an upstream event, or
/// a due timer. The edges wake the node on the other side when that changes (`Edge`), timers wake
/// paced sources (`Production.wait`), and a woken node joins a queue of ready nodes. Workers take
/// nodes from that queue and step each for a slice (until it parks, or for at most `slice`), so
/// a crossing between nodes costs a queue operation, not a thread switch. A node woken by the node a
/// worker is running goes to that worker's own queue and runs after it on the same thread, with its
/// input still in the cache and no other thread woken: a chain of cheap nodes (an Opus decode of
/// 30 µs between a depacketizer and a sink) runs on one core with no wake-up at all. Before a
/// *heavy* node (its steps take over `heavyStep`: a video codec), the worker hands its own queue to
/// the shared one and an idle worker, and a heavy node woken by another heavy one goes to the
/// shared queue, so that heavy stages overlap on several cores. Otherwise a heavy node stays with
/// the worker that ran it last (woken there by a cheap node, or at the end of its slice while
/// another worker idles): moved to another core, a video decoder refetches its reference pictures.
/// Slices are taken in order of readiness, so a ready node waits at most for the steps already
/// running, never for a whole graph's backlog.
///
/// There are as many workers as cores. Codec calls are compute, and more threads than cores would
/// only add switches; but a step can also take long or block (a 4K encode, a node that should have
/// said `.ownThread`, a nested `Graph.run()`). The timer thread checks every `tick` whether work is
/// queued while no worker has taken anything since its last look and fewer workers than cores were
/// on a CPU or waiting for one (their threads' scheduler statistics: a worker preempted by other
/// threads is not blocked, and one more would not help it); if so a worker is blocked, and it
/// starts one more, up to `maxWorkers`. An extra worker that stays idle for `retireAfter` ends.
/// So the thread count follows the load that truly blocks, not the number of nodes or graphs: 500
/// calls run on the same few threads. Only `.ownThread` nodes add one each (capture devices,
/// multi-threaded codecs); a node waiting on a socket is woken through `NodeContext.wake` by
/// MediaTransport's `SocketReactor` instead.
final class NodeScheduler: @unchecked Sendable {
    /// The process's scheduler, started on first use: one worker per core, or `SLUICE_WORKERS`.
    static let shared = NodeScheduler(workers: getenv("SLUICE_WORKERS").flatMap { Int(String(cString: $0)) }.map { max(1, $0) }
                                          ?? max(2, sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    /// The longest a node runs before the ready queue's next node gets its turn.
    static let slice = ClockTime.milliseconds(2)
    /// How often the timer thread checks for starvation while every worker is busy.
    static let tick = ClockTime.milliseconds(5)
    static let retireAfter = ClockTime.seconds(2)
    /// How many nodes in a row a worker takes from its own queue before looking at the shared one.
    static let localStreak = 16
    /// How many woken nodes a worker keeps to itself; more go to the shared queue.
    static let localCapacity = 16
    /// A node whose steps take longer (a video codec's) is worth a core of its own: it goes to the
    /// shared queue when woken, and before running it a worker hands what it keeps to itself to
    /// the shared queue and an idle worker.
    static let heavyStep = ClockTime(nanoseconds: 200_000)

    let baseWorkers: Int
    let maxWorkers: Int

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let workAvailable = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let timersChanged = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    // Guarded by `mutex`.
    private var ready = Deque<NodeRunner>(minimumCapacity: 256)
    private var timers = DeadlineHeap<NodeRunner>(capacity: 256)
    private var workers = 0
    private var idleWorkers = 0 {
        didSet { idleCount.store(idleWorkers, ordering: .relaxed) }
    }
    /// `idleWorkers`, readable without the lock (a hint).
    private let idleCount = Atomic<Int>(0)
    /// Counts the nodes taken from `ready`, so that the timer thread can tell a stalled queue.
    private var taken = 0
    /// When the timer thread will next look; `.max` when it sleeps until signalled.
    private var timerThreadWakes = ClockTime.max
    private var started = false
    private var due: [NodeRunner] = []
    /// The workers whose threads have begun; `workers` also counts those still starting.
    private var running: [Worker] = []
    private var activeRuns = 0

    /// A worker's thread-local state: its next slot.
    final class Worker {
        /// Unchecked: a worker lives inside `work(retiring:)`, a method of the scheduler, whose thread holds it.
        unowned(unsafe) let scheduler: NodeScheduler
        // Touched by the worker's own thread alone, so without the runtime's exclusivity checks.
        /// Nodes this worker woke, which it runs next, in order, unseen by the other workers.
        @exclusivity(unchecked) var local = Deque<NodeRunner>(minimumCapacity: NodeScheduler.localCapacity)
        @exclusivity(unchecked) var streak = 0
        /// Whether the node this worker runs now is heavy.
        @exclusivity(unchecked) var runningHeavy = false
        /// The scheduling times of the worker's thread, and their reading at the timer thread's
        /// last look (guarded by the scheduler's lock).
        private let times = ThreadSchedulingTimes()
        private var atLastLook = ThreadSchedulingTimes.Reading(onCPU: .zero, waiting: .zero)

        /// Called on the worker's thread.
        init(scheduler: NodeScheduler) {
            self.scheduler = scheduler
        }

        /// Whether the thread was on a CPU or waiting for one for at least half of `span` since
        /// the last look, even if other threads held the cores. The times lag by the current turn
        /// of a thread that runs or waits now: see `isRunnableNow`.
        func wasRunnable(forHalfOf span: ClockTime) -> Bool {
            let now = times.read()
            defer { atLastLook = now }
            let runnable = (now.onCPU - atLastLook.onCPU) + (now.waiting - atLastLook.waiting)
            return runnable.nanoseconds * 2 >= span.nanoseconds
        }

        /// Whether the thread is on a CPU or waiting for one now.
        var isRunnableNow: Bool { times.isRunnable }
    }

    private static let currentWorker: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0)
        return key
    }()

    init(workers: Int, maxWorkers: Int? = nil) {
        baseWorkers = workers
        self.maxWorkers = maxWorkers ?? max(8, 4 * workers)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(workAvailable, &attributes)
        pthread_cond_init(timersChanged, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    /// The threads the scheduler has now (workers and its timer thread).
    var threadCount: Int { locked { started ? workers + 1 : 0 } }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Starts the workers and the timer thread, once.
    func startIfNeeded() {
        locked {
            guard !started else { return }
            started = true
            for _ in 0..<baseWorkers { startWorker(retiring: false) }
            WorkerThread.detached(name: "sluice-timers") { [self] in runTimers() }
        }
    }

    /// Called with the lock held.
    private func startWorker(retiring: Bool) {
        workers += 1
        // An extra worker, started for a blocked one and ending when idle, is named apart: a count of
        // the engine's threads can tell it from a thread that stays.
        WorkerThread.detached(name: retiring ? "sluice-extra" : "sluice-worker") { [self] in work(retiring: retiring) }
    }

    // MARK: Ready nodes

    /// Queues a node that `wake()` moved to scheduled: a cheap one on the waking worker's own queue
    /// if it is one of ours (no lock, no signal), and a heavy one too if that worker ran it last
    /// (its state, a codec's reference pictures, is in that core's cache) and runs a cheap one now;
    /// other heavy ones, and nodes woken from elsewhere, on the shared queue, where an idle worker
    /// takes them (heavy stages overlap).
    func enqueue(_ runner: NodeRunner) {
        // The worker is borrowed from its thread, not retained: its thread holds it.
        let kept = pthread_getspecific(Self.currentWorker).map { opaque in
            Unmanaged<Worker>.fromOpaque(opaque)._withUnsafeGuaranteedRef { worker in
                guard worker.scheduler === self, runner.stepCost <= Self.heavyStep
                        || runner.lastWorker == ObjectIdentifier(worker) && !worker.runningHeavy else { return false }
                if worker.local.count >= Self.localCapacity, let oldest = worker.local.popFirst() { push(oldest) }
                worker.local.append(runner)
                return true
            }
        } ?? false
        if !kept { push(runner) }
    }

    private func push(_ runner: NodeRunner) {
        locked {
            ready.append(runner)
            if idleWorkers > 0 { pthread_cond_signal(workAvailable) }
        }
    }

    /// Moves what `worker` keeps to itself to the shared queue, and wakes an idle worker for it.
    private func share(_ worker: Worker) {
        guard !worker.local.isEmpty else { return }
        locked {
            while let runner = worker.local.popFirst() { ready.append(runner) }
            if idleWorkers > 0 { pthread_cond_signal(workAvailable) }
        }
    }

    /// Counts a graph in; while any runs, the timer thread looks for starvation every `tick`.
    func runStarted() {
        locked {
            activeRuns += 1
            if activeRuns == 1 {
                timerThreadWakes = .zero
                pthread_cond_signal(timersChanged)
            }
        }
    }

    func runEnded() { locked { activeRuns -= 1 } }

    private func work(retiring: Bool) {
        let worker = Worker(scheduler: self)
        pthread_setspecific(Self.currentWorker, Unmanaged.passUnretained(worker).toOpaque())
        locked { running.append(worker) }
        while true {
            let runner: NodeRunner
            if worker.streak < Self.localStreak, let next = worker.local.popFirst() {
                worker.streak += 1
                runner = next
            } else {
                // Let the shared queue go first now and then, if anything waits there: handing this
                // worker's own nodes to it otherwise only wakes another worker to take them.
                worker.streak = 0
                if !worker.local.isEmpty && locked({ ready.isEmpty }) { continue }
                share(worker)
                guard let taken = takeReady(retiring: retiring, worker) else { break }
                runner = taken
            }
            // Cheap nodes handed from one to the next stay on this worker (a wake-up of another
            // would cost more than their work); a heavy one leaves the rest to an idle worker.
            if runner.stepCost > Self.heavyStep && idleCount.load(ordering: .relaxed) > 0 { share(worker) }
            run(runner, on: worker)
        }
        pthread_setspecific(Self.currentWorker, nil)
        withExtendedLifetime(worker) {}
    }

    /// The oldest ready node, waiting for one; nil when an extra worker has been idle long enough.
    private func takeReady(retiring: Bool, _ worker: Worker) -> NodeRunner? {
        locked {
            while ready.isEmpty {
                idleWorkers += 1
                if retiring {
                    let deadline = SystemClock.monotonicNow + Self.retireAfter
                    wait(workAvailable, until: deadline)
                    idleWorkers -= 1
                    if ready.isEmpty && SystemClock.monotonicNow >= deadline {
                        workers -= 1
                        running.removeAll { $0 === worker }
                        return nil
                    }
                } else {
                    pthread_cond_wait(workAvailable, mutex)
                    idleWorkers -= 1
                }
            }
            taken &+= 1
            return ready.removeFirst()
        }
    }

    private func run(_ runner: NodeRunner, on worker: Worker) {
        runner.schedule.store(ScheduleState.running.rawValue, ordering: .releasing)
        runner.lastWorker = ObjectIdentifier(worker)
        worker.runningHeavy = runner.stepCost > Self.heavyStep
        let sliceStart = SystemClock.monotonicNow
        let sliceEnd = sliceStart + Self.slice
        var steps = 0
        while true {
            let outcome = runner.runSlice(until: sliceEnd, steps: &steps)
            // Before the node can be woken again: `enqueue` reads it then.
            runner.stepCost = ClockTime(nanoseconds: (SystemClock.monotonicNow - sliceStart).nanoseconds / Int64(max(1, steps)))
            switch outcome {
            case .yielded:
                runner.schedule.store(ScheduleState.scheduled.rawValue, ordering: .releasing)
                // A heavy node keeps its core while another worker idles: what this one holds goes there.
                if runner.stepCost > Self.heavyStep && idleCount.load(ordering: .relaxed) > 0 {
                    worker.local.prepend(runner)
                } else {
                    push(runner)
                }
                return
            case .finished:
                let previous = runner.schedule.exchange(ScheduleState.finished.rawValue, ordering: .acquiringAndReleasing)
                precondition(previous != ScheduleState.finished.rawValue, "\(runner.name) ended twice")
                dropTimer(of: runner)
                runner.run?.nodeFinished()
                return
            case .idle(let wake):
                if let wake, let run = runner.run { addTimer(runner, at: run.monotonicDeadline(for: wake)) }
                let (parked, _) = runner.schedule.compareExchange(
                    expected: ScheduleState.running.rawValue, desired: ScheduleState.idle.rawValue,
                    ordering: .acquiringAndReleasing)
                if parked { return }
                // Woken while it looked: go on.
                runner.schedule.store(ScheduleState.running.rawValue, ordering: .releasing)
                if SystemClock.monotonicNow >= sliceEnd {
                    runner.schedule.store(ScheduleState.scheduled.rawValue, ordering: .releasing)
                    push(runner)
                    return
                }
            }
        }
    }

    // MARK: Timers

    /// Wakes `runner` when the monotonic clock reads `deadline`; an earlier pending timer of the
    /// node stands (the node asks again when it runs).
    func addTimer(_ runner: NodeRunner, at deadline: ClockTime) {
        locked {
            if let pending = runner.timerDeadline, pending <= deadline { return }
            runner.timerDeadline = deadline
            timers.insert(runner, at: deadline)
            if deadline < timerThreadWakes {
                timerThreadWakes = deadline
                pthread_cond_signal(timersChanged)
            }
        }
    }

    /// Forgets `runner`'s pending timer, if any: a node that has ended is not woken, and the heap
    /// would keep it (and its graph's memory) until the deadline (a receiver's silence limit: seconds).
    private func dropTimer(of runner: NodeRunner) {
        locked {
            guard runner.timerDeadline != nil else { return }
            runner.timerDeadline = nil
            timers.removeAll { $0 === runner }
        }
    }

    private func runTimers() {
        pthread_mutex_lock(mutex)
        var lastTaken = taken
        var lastLook = SystemClock.monotonicNow
        while true {
            let now = SystemClock.monotonicNow
            while let (deadline, runner) = timers.first, deadline <= now {
                timers.removeFirst()
                // A timer that an earlier one replaced is stale.
                if runner.timerDeadline == deadline {
                    runner.timerDeadline = nil
                    due.append(runner)
                }
            }
            if !due.isEmpty {
                pthread_mutex_unlock(mutex)
                var index = 0
                while index < due.count { due[index].wake(); index += 1 }
                pthread_mutex_lock(mutex)
                due.removeAll(keepingCapacity: true)
                continue
            }
            var wakeAt = timers.first?.deadline ?? .max
            if activeRuns > 0 {
                // Signalling this thread whenever every worker is busy would cost a wake-up per
                // node handed over; looking every tick costs 200 a second. The look spans the
                // whole tick since the last one: this loop also turns for every timer due, and
                // over a shorter span no worker could show its half tick of CPU (a soak's paced
                // nodes, woken together while both workers ran, started three extra workers).
                if now >= lastLook + Self.tick {
                    let stalled = !ready.isEmpty && idleWorkers == 0 && taken == lastTaken && workers < maxWorkers
                    let runnable = runnableWorkers(over: now - lastLook, lookingNow: stalled)
                    if stalled && runnable < baseWorkers {
                        startWorker(retiring: true)
                    }
                    lastTaken = taken
                    lastLook = now
                }
                wakeAt = min(wakeAt, lastLook + Self.tick)
            } else {
                lastTaken = taken
                lastLook = now
            }
            timerThreadWakes = wakeAt
            if wakeAt == .max { pthread_cond_wait(timersChanged, mutex) } else { wait(timersChanged, until: wakeAt) }
        }
    }

    /// How many workers were on a CPU or waiting for one for at least half of `span`, the time
    /// since the last look, or (with `lookingNow`) are now: the others sleep inside a step (a
    /// blocking call) and leave a core unused. A worker preempted by other threads waits on a run
    /// queue, and another worker would only wait with it. A worker whose thread has not begun yet
    /// counts too: on a loaded machine a new thread can wait more than a tick for its first turn
    /// while the first graphs queue up, and taking it for blocked added a worker for nothing.
    /// Called with the lock held.
    private func runnableWorkers(over span: ClockTime, lookingNow: Bool) -> Int {
        var runnable = workers - running.count
        for worker in running where worker.wasRunnable(forHalfOf: span) || lookingNow && worker.isRunnableNow {
            runnable += 1
        }
        return runnable
    }

    /// Waits on `condition` (with the lock held) until signalled or the monotonic clock reads `deadline`.
    private func wait(_ condition: UnsafeMutablePointer<pthread_cond_t>, until deadline: ClockTime) {
        var spec = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                            tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        _ = pthread_cond_timedwait(condition, mutex, &spec)
    }
}

/// What an `.ownThread` node's thread sleeps on between steps: `unpark()` ends the current or the
/// next `park`.
final class ThreadParker: @unchecked Sendable {
    private let lock = ConditionLock()
    private var notified = false

    func unpark() {
        lock.withLock {
            notified = true
            lock.broadcast()
        }
    }

    /// Sleeps until unparked or until the monotonic clock reads `deadline` (nil: no limit).
    func park(until deadline: ClockTime?) {
        lock.withLock {
            while !notified {
                if let deadline {
                    guard SystemClock.monotonicNow < deadline else { break }
                    lock.wait(until: deadline)
                } else {
                    lock.wait()
                }
            }
            notified = false
        }
    }
}
