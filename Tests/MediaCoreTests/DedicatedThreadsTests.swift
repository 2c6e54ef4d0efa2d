import Foundation
import Testing
import TestSupport

/// The `.onDedicatedThreads` trait that real-time async tests rely on (TestSupport): it must keep them
/// going while synchronous work holds every thread of Swift's cooperative pool, which is what failed
/// CI's full runs (an HTTP client's read timeout, a graph's deadline).
@Suite struct DedicatedThreadsTests {
    /// Blocks one task per core on the global executor, then sleeps, runs child tasks and awaits a
    /// continuation resumed from a plain thread. All of it must finish while the pool is still held;
    /// the pool is released after 10 s whatever happens, so a starved run fails instead of hanging.
    ///
    /// The holders may not all start: synchronous tests running beside this one (the interop
    /// suites wait minutes for their peers) can hold pool threads themselves. The pool is full
    /// either way: a pool thread idles only when nothing is queued, so while a holder waits, every
    /// thread is busy. The test goes on after a short wait instead of requiring every holder to run
    /// (that requirement failed it after 30 s whenever a synchronous test held a pool thread).
    @Test(.onDedicatedThreads) func asyncWorkProgressesWhileTheCooperativePoolIsHeld() async throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let pool = HeldPool()
        for _ in 0..<cores { Task.detached { pool.hold() } }
        pool.waitUntilHeld(by: cores, seconds: 2)
        Thread.detachNewThread { pool.release(after: 10) }

        try await Task.sleep(for: .milliseconds(20))
        let sum = await withTaskGroup(of: Int.self) { group in
            for value in 1...3 { group.addTask { value } }
            return await group.reduce(0, +)
        }
        let resumed = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: true) }
        }
        let whilePoolHeld = !pool.isReleased
        pool.release(after: 0)
        #expect(sum == 6 && resumed)
        #expect(whilePoolHeld, "the async work waited for the cooperative pool")
    }
}

/// Threads of the cooperative pool parked until released.
private final class HeldPool: @unchecked Sendable {
    private let state = NSCondition()
    private var holding = 0
    private var released = false

    var isReleased: Bool {
        state.lock()
        defer { state.unlock() }
        return released
    }

    func hold() {
        state.lock()
        holding += 1
        state.broadcast()
        while !released { state.wait() }
        state.unlock()
    }

    /// Waits until `count` threads hold the pool, or `seconds` have passed.
    func waitUntilHeld(by count: Int, seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        state.lock()
        defer { state.unlock() }
        while holding < count && state.wait(until: deadline) {}
    }

    func release(after seconds: Double) {
        state.lock()
        defer { state.unlock() }
        let deadline = Date().addingTimeInterval(seconds)
        while !released && state.wait(until: deadline) {}
        released = true
        state.broadcast()
    }
}
