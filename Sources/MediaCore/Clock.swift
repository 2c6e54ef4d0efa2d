import Glibc

/// Tells waiting threads that a run is stopping, so that sleeps end early.
public final class StopSignal: Sendable {
    private let lock = ConditionLock()
    private nonisolated(unsafe) var stopped = false

    public init() {}

    public var isStopped: Bool { lock.withLock { stopped } }

    public func stop() {
        lock.withLock {
            stopped = true
            lock.broadcast()
        }
    }

    /// Sleeps until the monotonic clock reads `deadline` or until `stop()`; returns false if stopped.
    @discardableResult
    func sleep(untilMonotonic deadline: ClockTime) -> Bool {
        lock.withLock {
            while !stopped && SystemClock.monotonicNow < deadline { lock.wait(until: deadline) }
            return !stopped
        }
    }
}

/// The time source of a graph. Every component that waits, paces or times out takes one, so that
/// tests can drive a `ManualClock` and run faster than real time.
public protocol MediaClock: AnyObject, Sendable {
    var now: ClockTime { get }
    /// Blocks the calling thread until the clock reads `deadline`, or until `stop` fires.
    func sleep(until deadline: ClockTime, unless stop: StopSignal)
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`).
public final class SystemClock: MediaClock {
    public init() {}

    public var now: ClockTime { Self.monotonicNow }

    static var monotonicNow: ClockTime {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return ClockTime(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    public func sleep(until deadline: ClockTime, unless stop: StopSignal) {
        stop.sleep(untilMonotonic: deadline)
    }
}

/// A clock that moves only when told to. With `Graph.runDeterministic` it advances by itself to
/// the next deadline a node waits for; in threaded runs a test advances it.
public final class ManualClock: MediaClock {
    private let lock = ConditionLock()
    private nonisolated(unsafe) var current: ClockTime

    public init(start: ClockTime = .zero) { current = start }

    public var now: ClockTime { lock.withLock { current } }

    public func advance(by span: ClockTime) { advance(to: now + span) }

    /// Moves the clock forward (never backward) and wakes sleepers whose deadline has come.
    public func advance(to time: ClockTime) {
        lock.withLock {
            if time > current { current = time }
            lock.broadcast()
        }
    }

    public func sleep(until deadline: ClockTime, unless stop: StopSignal) {
        lock.withLock {
            // Wake now and then to notice `stop`, which signals on its own lock.
            while current < deadline && !stop.isStopped {
                lock.wait(until: SystemClock.monotonicNow + ClockTime(nanoseconds: 5_000_000))
            }
        }
    }
}
