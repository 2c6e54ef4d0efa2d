import Glibc
import MediaCore
import Testing

/// `WorkerThread.atLowerPriority`: the threads a codec starts inside it inherit the lower priority,
/// while the caller's own thread keeps its priority (an unprivileged process could not restore it).
@Suite struct WorkerThreadTests {
    final class Seen: @unchecked Sendable { var nice: Int32 = -100 }
    struct Refused: Error {}

    private static func ownNice() -> Int32 { getpriority(__priority_which_t(0), 0) }

    @Test func threadsStartedInsideInheritTheLowerPriority() throws {
        let before = Self.ownNice()
        let seen = Seen()
        let inside = try WorkerThread.atLowerPriority(by: 5) { () -> Int32 in
            let helper = WorkerThread { seen.nice = Self.ownNice() }
            helper.join()
            return Self.ownNice()
        }
        #expect(inside == min(19, before + 5))
        #expect(seen.nice == inside, "a thread started inside runs at \(seen.nice), not \(inside)")
        #expect(Self.ownNice() == before, "the caller's priority changed")
    }

    @Test func theLowestPriorityIsTheFloor() throws {
        let inside = try WorkerThread.atLowerPriority(by: 40) { Self.ownNice() }
        #expect(inside == 19)
    }

    @Test func anErrorComesBackToTheCaller() {
        #expect(throws: Refused.self) { try WorkerThread.atLowerPriority(by: 19) { () throws -> Int in throw Refused() } }
    }
}
