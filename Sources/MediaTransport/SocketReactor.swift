import CEpoll
import Glibc
import MediaCore

/// The process's I/O reactor: one thread, started on first use, that waits in `epoll_wait(2)` for
/// the descriptors registered with it to become readable and for its timers to come due, and calls
/// their handlers. So sockets that would each need a thread blocked in `poll` (an RTP receiver, a
/// sender reading its RTCP feedback) cost a registration each, and the process's thread count does
/// not grow with its calls.
///
/// Handlers run on the reactor thread, one at a time: they must be cheap and never block (read what
/// is queued without waiting, wake a graph node, send a datagram). A handler that takes long delays
/// every other socket and timer of the process.
///
/// Descriptors are registered with `EPOLLONESHOT` (epoll(7)): once a readiness event is reported,
/// the descriptor is disabled until its owner calls `ReactorRegistration.rearm()`. So a handler is
/// never called again for readiness its owner has not looked at yet, and the owner decides when it
/// wants to hear more. Registration is level-triggered: re-arming a descriptor that still has data
/// queued reports it again at once, so no datagram that arrived before the re-arm goes unnoticed.
/// Changes from other threads (registrations, timers) wake the reactor through an `EventWaker`.
public final class SocketReactor: @unchecked Sendable {
    /// The process's reactor; its thread starts on first use and lives as long as the process.
    public static let shared = SocketReactor()

    private let epoll: Int32
    private let waker: EventWaker
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var registrations: [UInt64: ReactorRegistration] = [:]
    private var timers = DeadlineHeap<(generation: UInt64, timer: ReactorTimer)>()
    private var nextIdentifier: UInt64 = 1
    /// The registration or timer whose handler runs now, so that cancelling it can wait for its end.
    private var dispatching: AnyObject?
    private var thread = pthread_t()
    private var started = false

    /// The `epoll_data` of the waker's descriptor; registrations count from 1.
    private static let wakeIdentifier: UInt64 = 0

    init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: \(errno)")
        do { waker = try EventWaker() } catch { preconditionFailure("the reactor's waker: \(error)") }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeIdentifier
        precondition(epoll_ctl(epoll, EPOLL_CTL_ADD, waker.descriptor, &event) == 0, "epoll_ctl failed: \(errno)")
    }

    /// Watches `descriptor` and calls `handler` on the reactor thread when it is readable; armed at
    /// once. After each call the descriptor stays disabled until `rearm()`. The descriptor must
    /// stay open until `cancel()` has returned.
    public func register(descriptor: Int32, handler: @escaping @Sendable () -> Void) throws -> ReactorRegistration {
        startIfNeeded()
        let registration = lock.withLock { () -> ReactorRegistration in
            defer { nextIdentifier += 1 }
            let registration = ReactorRegistration(reactor: self, descriptor: descriptor, identifier: nextIdentifier, handler: handler)
            registrations[registration.identifier] = registration
            return registration
        }
        var event = Self.oneShotEvent(registration.identifier)
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event) == 0 else {
            let error = errno
            _ = lock.withLock { registrations.removeValue(forKey: registration.identifier) }
            throw SocketError.system(operation: "epoll_ctl add", errno: error)
        }
        return registration
    }

    /// A timer whose `action` runs on the reactor thread each time the monotonic clock reaches
    /// the time given to `ReactorTimer.schedule(at:)`. Not scheduled yet.
    public func timer(_ action: @escaping @Sendable () -> Void) -> ReactorTimer {
        startIfNeeded()
        return ReactorTimer(reactor: self, action: action)
    }

    private static func oneShotEvent(_ identifier: UInt64) -> epoll_event {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLONESHOT.rawValue
        event.data.u64 = identifier
        return event
    }

    // MARK: What registrations and timers call

    /// Enables `registration`'s descriptor again (`EPOLL_CTL_MOD`, epoll(7)'s way to re-arm a
    /// one-shot descriptor); reported at once when it is readable already.
    func rearm(_ registration: ReactorRegistration) {
        var event = Self.oneShotEvent(registration.identifier)
        _ = epoll_ctl(epoll, EPOLL_CTL_MOD, registration.descriptor, &event)
    }

    /// Removes `registration`; when its handler runs on another thread now, waits for it to
    /// return. Events already taken from the kernel for it are dropped (its identifier is gone).
    func remove(_ registration: ReactorRegistration) {
        var event = epoll_event()
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, registration.descriptor, &event)
        lock.withLock {
            registrations.removeValue(forKey: registration.identifier)
            waitUntilNotDispatching(registration)
        }
    }

    func schedule(_ timer: ReactorTimer, at deadline: ClockTime) {
        let earliest = lock.withLock { () -> Bool in
            guard !timer.isCancelled else { return false }
            timer.generation &+= 1
            timers.insert((timer.generation, timer), at: deadline)
            return timers.first?.element.timer === timer && timers.first?.element.generation == timer.generation
        }
        if earliest { wake() }
    }

    func cancel(_ timer: ReactorTimer) {
        lock.withLock {
            timer.isCancelled = true
            timer.generation &+= 1
            waitUntilNotDispatching(timer)
            // Its stale heap entry may stay until it comes due: it must not keep the owner alive.
            timer.action = nil
        }
    }

    /// Waits (the lock held) while `object`'s handler runs, unless this is the reactor thread,
    /// where it is the caller itself.
    private func waitUntilNotDispatching(_ object: AnyObject) {
        guard started, pthread_equal(pthread_self(), thread) == 0 else { return }
        while dispatching === object { lock.wait() }
    }

    private func wake() { waker.wake() }

    // MARK: The reactor thread

    private func startIfNeeded() {
        lock.withLock {
            guard !started else { return }
            started = true
            let reference = Unmanaged.passRetained(self)
            let result = pthread_create(&thread, nil, { raw in
                Unmanaged<SocketReactor>.fromOpaque(raw!).takeRetainedValue().loop()
                return nil
            }, reference.toOpaque())
            precondition(result == 0, "pthread_create failed: \(result)")
        }
    }

    private func loop() {
        WorkerThread.nameCurrent("sluice-reactor")
        let capacity = 64
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        while true {
            let count = epoll_wait(epoll, events, Int32(capacity), waitMilliseconds())
            if count > 0 {
                for index in 0..<Int(count) {
                    let identifier = events[index].data.u64
                    if identifier == Self.wakeIdentifier {
                        waker.reset()
                        continue
                    }
                    let registration = lock.withLock { () -> ReactorRegistration? in
                        let registration = registrations[identifier]
                        dispatching = registration
                        return registration
                    }
                    guard let registration else { continue }
                    registration.handler()
                    finishDispatch()
                }
            }
            runDueTimers()
        }
    }

    /// How long `epoll_wait` may sleep: until the earliest timer, rounded up to whole milliseconds
    /// (so that a timer never fires early), or forever.
    private func waitMilliseconds() -> Int32 {
        lock.withLock {
            timers.dropStale()
            guard let first = timers.first else { return -1 }
            let delay = first.deadline - SystemClock().now
            return Int32(clamping: max(0, (delay.nanoseconds + 999_999) / 1_000_000))
        }
    }

    private func runDueTimers() {
        while true {
            let now = SystemClock().now
            let due = lock.withLock { () -> (@Sendable () -> Void)? in
                timers.dropStale()
                guard let first = timers.first, first.deadline <= now else { return nil }
                timers.removeFirst()
                dispatching = first.element.timer
                return first.element.timer.action
            }
            guard let due else { return }
            due()
            finishDispatch()
        }
    }

    private func finishDispatch() {
        lock.withLock {
            dispatching = nil
            lock.broadcast()
        }
    }
}

/// A descriptor watched by a `SocketReactor`.
public final class ReactorRegistration: @unchecked Sendable {
    private unowned let reactor: SocketReactor
    let descriptor: Int32
    let identifier: UInt64
    let handler: @Sendable () -> Void
    private var cancelled = false

    init(reactor: SocketReactor, descriptor: Int32, identifier: UInt64, handler: @escaping @Sendable () -> Void) {
        self.reactor = reactor
        self.descriptor = descriptor
        self.identifier = identifier
        self.handler = handler
    }

    /// Asks for the next readiness of the descriptor: the handler is called once more when it is
    /// readable, at once if it is now. Safe from any thread, once per handler call or more (a
    /// re-arm of an armed descriptor changes nothing).
    public func rearm() { reactor.rearm(self) }

    /// Stops watching. When this returns, the handler is not running (unless this is called from
    /// the handler itself) and will not be called again: the owner may close the descriptor and
    /// release what the handler uses. Call once, from the owner.
    public func cancel() {
        guard !cancelled else { return }
        cancelled = true
        reactor.remove(self)
    }
}

/// A one-shot timer of a `SocketReactor`, scheduled again as often as its owner wants.
public final class ReactorTimer: @unchecked Sendable {
    private unowned let reactor: SocketReactor
    /// What runs when the timer fires; dropped by `cancel()`. Guarded by the reactor's lock.
    var action: (@Sendable () -> Void)?
    /// Counts the timer's schedulings and cancellations; guarded by the reactor's lock.
    var generation: UInt64 = 0
    /// Set for good by `cancel()`; guarded by the reactor's lock.
    var isCancelled = false

    init(reactor: SocketReactor, action: @escaping @Sendable () -> Void) {
        self.reactor = reactor
        self.action = action
    }

    /// Runs the action once when the monotonic clock (`SystemClock`) reaches `deadline`, replacing
    /// the time set before, if any. Safe from any thread, the action included.
    public func schedule(at deadline: ClockTime) { reactor.schedule(self, at: deadline) }

    /// Stops the timer for good (later `schedule` calls do nothing, the action's own included). When
    /// this returns, the action is not running (unless this is called from the action itself) and
    /// will not run again.
    public func cancel() { reactor.cancel(self) }
}

/// The reactor's pending timers, earliest first. Rescheduling or cancelling a timer leaves its old
/// entry behind, stale: its generation no longer matches the timer's, and it is dropped when it
/// comes to the top.
extension DeadlineHeap where Element == (generation: UInt64, timer: ReactorTimer) {
    /// Drops stale entries from the top (the lock held).
    mutating func dropStale() {
        while let first, first.element.generation != first.element.timer.generation { removeFirst() }
    }
}
