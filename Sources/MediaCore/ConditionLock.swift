import Glibc

/// A mutex with one condition variable whose timed waits use the monotonic clock.
///
/// The graph runtime's queues and clocks block on it, and so do other modules' queues that a thread
/// waits on (MediaPeer's packet rings); it is a thin owner of the pthread objects.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a broadcast; call with the lock held (inside `withLock`).
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a broadcast or until the monotonic clock reaches `deadline`; call with the lock held.
    public func wait(until deadline: ClockTime) {
        var spec = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                            tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        _ = pthread_cond_timedwait(condition, mutex, &spec)
    }

    /// Wakes every waiter; call with the lock held.
    public func broadcast() { pthread_cond_broadcast(condition) }
}

/// An OS thread that runs one closure; `join()` waits for it. Graph nodes get one each, because
/// codec libraries block the calling thread for milliseconds at a time; network sessions use one
/// for their RTCP.
public final class WorkerThread: @unchecked Sendable {
    private var thread = pthread_t()

    private final class Payload { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }

    public init(_ body: @escaping @Sendable () -> Void) {
        let payload = Unmanaged.passRetained(Payload(body))
        let result = pthread_create(&thread, nil, { raw in
            let payload = Unmanaged<Payload>.fromOpaque(raw!).takeRetainedValue()
            payload.body()
            return nil
        }, payload.toOpaque())
        precondition(result == 0, "pthread_create failed: \(result)")
    }

    public func join() { pthread_join(thread, nil) }

    /// Starts a thread nobody joins; its resources go when it ends.
    static func detached(_ body: @escaping @Sendable () -> Void) {
        pthread_detach(WorkerThread(body).thread)
    }
}
