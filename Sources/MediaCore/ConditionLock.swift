import Glibc

/// A mutex with one condition variable whose timed waits use the monotonic clock.
///
/// The graph runtime's queues and clocks block on it, and so do other modules' queues that a thread
/// waits on (MediaPeer's packet rings); it is a thin owner of the pthread objects.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = makeMutex()
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        destroyMutex(mutex)
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

/// A value guarded by a mutex: what Sluice uses instead of `Synchronization.Mutex`.
///
/// `Synchronization.Mutex` on Linux takes a contended lock in the kernel (a priority-inheritance
/// futex) from code that ThreadSanitizer does not see, so a value handed from one thread to another
/// through a contended `Mutex` looked like a data race to it. A pthread mutex is intercepted by the
/// sanitizer, and uncontended it costs the same atomic operation (BENCHMARKS.md has the hot path
/// before and after).
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    @usableFromInline let mutex = makeMutex()
    /// Reached only with the mutex held, which is what the runtime's exclusivity check would enforce.
    @exclusivity(unchecked) @usableFromInline var value: Value

    public init(_ value: consuming sending Value) { self.value = value }

    deinit { destroyMutex(mutex) }

    /// Runs `body` on the value with the lock held.
    @inlinable @inline(__always)
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

@usableFromInline func makeMutex() -> UnsafeMutablePointer<pthread_mutex_t> {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
    return mutex
}

func destroyMutex(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
}

/// An OS thread that runs one closure; `join()` waits for it. Graph nodes get one each, because
/// codec libraries block the calling thread for milliseconds at a time; network sessions use one
/// for their RTCP.
public final class WorkerThread: @unchecked Sendable {
    private var thread = pthread_t()

    private final class Payload {
        let name: String
        let body: () -> Void
        init(_ name: String, _ body: @escaping () -> Void) { (self.name, self.body) = (name, body) }
    }

    /// A thread named `name` (at most 15 bytes are kept; `top -H` and /proc/PID/task/*/comm show
    /// it): the engine's threads are named "sluice…", so that they can be told from the runtime's
    /// and the application's.
    public init(name: String = "sluice", _ body: @escaping @Sendable () -> Void) {
        let payload = Unmanaged.passRetained(Payload(name, body))
        let result = pthread_create(&thread, nil, { raw in
            let payload = Unmanaged<Payload>.fromOpaque(raw!).takeRetainedValue()
            WorkerThread.nameCurrent(payload.name)
            payload.body()
            return nil
        }, payload.toOpaque())
        precondition(result == 0, "pthread_create failed: \(result)")
    }

    public func join() { pthread_join(thread, nil) }

    /// Names the calling thread (its `comm`, at most 15 bytes kept), through /proc/thread-self:
    /// glibc's `pthread_setname_np` is not visible from Swift here.
    public static func nameCurrent(_ name: String) {
        let file = open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        close(file)
    }

    /// Runs `body` on a new thread whose nice value is `niceness` above the caller's (at most 19)
    /// and returns its result. Threads that `body` starts (a codec's workers) inherit that
    /// priority; the caller's stays as it was, since an unprivileged process may lower a thread's
    /// priority but never raise it back.
    public static func atLowerPriority<T>(by niceness: Int32, _ body: () throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            let outcome = Outcome(body)
            let thread = WorkerThread {
                // PRIO_PROCESS (0) with who 0 is the calling thread on Linux, where nice is per thread.
                let which = __priority_which_t(0)
                setpriority(which, 0, min(19, getpriority(which, 0) + niceness))
                outcome.result = Result { try outcome.body() }
            }
            thread.join()
            return try outcome.result!.get()
        }
    }

    /// Starts a thread nobody joins; its resources go when it ends.
    static func detached(name: String = "sluice", _ body: @escaping @Sendable () -> Void) {
        pthread_detach(WorkerThread(name: name, body).thread)
    }
}

/// What `WorkerThread.atLowerPriority` hands to its thread and back (the join orders the accesses).
private final class Outcome<T>: @unchecked Sendable {
    let body: () throws -> T
    var result: Result<T, any Error>?
    init(_ body: @escaping () throws -> T) { self.body = body }
}
