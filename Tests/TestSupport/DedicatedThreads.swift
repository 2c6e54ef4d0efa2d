import Foundation
import Testing

/// A task executor (SE-0417) with threads of its own, for tests whose async work must progress in
/// real time.
///
/// Swift Testing calls synchronous tests on Swift's cooperative pool, which has one thread per core:
/// two on the CI machine. A synchronous test that waits seconds for ffmpeg, a socket or a real-time
/// graph holds one of them, and two such tests hold the whole pool; every async test then stalls,
/// and one with a deadline (an HTTP client's read timeout, a graph that must deliver within a
/// minute) fails. Tasks preferring this executor run on its threads instead, so nothing the
/// synchronous tests do can starve them.
public final class DedicatedThreadsExecutor: TaskExecutor, @unchecked Sendable {
    /// The executor the `.onDedicatedThreads` trait runs tests on.
    public static let shared = DedicatedThreadsExecutor(threads: 4, name: "test-async")

    private let ready = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0

    public init(threads: Int, name: String) {
        for index in 0..<threads {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        ready.lock()
        jobs.append(job)
        ready.signal()
        ready.unlock()
    }

    private func work() {
        while true {
            ready.lock()
            while next == jobs.count { ready.wait() }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            ready.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs each test case of a suite (or one test) with `DedicatedThreadsExecutor.shared` as its task
/// executor preference, inherited by the child tasks it creates.
public struct DedicatedThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(DedicatedThreadsExecutor.shared) { try await function() }
    }
}

extension Trait where Self == DedicatedThreadsTrait {
    /// Async tests with real-time deadlines: run them where synchronous tests cannot starve them.
    public static var onDedicatedThreads: Self { Self() }
}
