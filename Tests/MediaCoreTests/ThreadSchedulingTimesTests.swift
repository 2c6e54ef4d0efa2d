import Foundation
@testable import MediaCore
import Synchronization
import Testing

/// A thread's time on a CPU and waiting for one, and its state, as the scheduler's starvation check
/// reads them from another thread (`ThreadSchedulingTimes`).
@Suite struct ThreadSchedulingTimesTests {
    private func schedstat(_ text: String) -> ThreadSchedulingTimes.Reading? {
        Array(text.utf8).withUnsafeBytes { ThreadSchedulingTimes.parseSchedstat($0) }
    }

    private func state(_ text: String) -> Character? {
        Array(text.utf8).withUnsafeBytes { ThreadSchedulingTimes.parseState($0) }.map { Character(Unicode.Scalar($0)) }
    }

    @Test func schedstatGivesTheTimeOnACPUAndTheTimeWaiting() {
        #expect(schedstat("125720900 229618 7\n") == .init(onCPU: ClockTime(nanoseconds: 125_720_900), waiting: ClockTime(nanoseconds: 229_618)))
        #expect(schedstat("0 0 0\n") == .init(onCPU: .zero, waiting: .zero))
        #expect(schedstat("12 34") == nil)             // cut short: the second number may go on
        #expect(schedstat("12\n") == nil)
        #expect(schedstat("") == nil)
        #expect(schedstat("12 x4 5\n") == nil)
        #expect(schedstat("1234567890123456789 1 1\n") == nil)   // beyond what a thread can have run
    }

    @Test func theStateFollowsTheLastParenthesisOfTheName() {
        #expect(state("41 (sluice-worker) R 1 41 0") == "R")
        #expect(state("41 (a) b) S 1") == "S")
        #expect(state("41 (name with spaces) D 1") == "D")
        #expect(state("41 (cut") == nil)
        #expect(state("41 (cut)") == nil)
    }

    /// A thread that spins shows as runnable and its time on a CPU grows; asleep, it shows as not
    /// runnable and its times stand still.
    @Test func aSpinningThreadRunsAndASleepingOneDoesNot() throws {
        let phase = Atomic<Int>(0)   // 0: spin, 1: sleep, 2: end
        let ready = DispatchSemaphore(value: 0)
        let times = Mutex<ThreadSchedulingTimes?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            times.withLock { $0 = ThreadSchedulingTimes() }
            ready.signal()
            while phase.load(ordering: .relaxed) == 0 {}
            while phase.load(ordering: .relaxed) == 1 { usleep(50_000) }
            done.signal()
        }
        ready.wait()
        let thread = try #require(times.withLock { $0 })
        let first = thread.read()
        usleep(100_000)
        let spun = thread.read()
        #expect(thread.isRunnable)
        #expect((spun.onCPU - first.onCPU) + (spun.waiting - first.waiting) >= .milliseconds(50))
        phase.store(1, ordering: .relaxed)
        usleep(20_000)
        var asleep = 0
        for _ in 0..<20 where !thread.isRunnable { asleep += 1 }
        let before = thread.read()
        usleep(100_000)
        let after = thread.read()
        #expect(asleep >= 19, "asleep in \(asleep) of 20 looks")
        #expect((after.onCPU - before.onCPU) + (after.waiting - before.waiting) < .milliseconds(20))
        phase.store(2, ordering: .relaxed)
        done.wait()
    }
}
