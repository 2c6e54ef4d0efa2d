import MediaCore
import Testing

/// `Locked`, the lock that Sluice uses instead of `Synchronization.Mutex`. Under ThreadSanitizer
/// (`tools/sanitize --filter LockedTests`) this is also the check that the sanitizer sees the lock:
/// with `Synchronization.Mutex` the same threads taking turns on a plain counter were reported as a
/// data race as soon as the lock was contended (the contended path runs in the kernel).
@Suite struct LockedTests {
    final class Shared: @unchecked Sendable {
        /// Not `Locked(())`: in a debug build TSan puts the access to an empty value at the lock
        /// object's own address, which every caller reads unlocked (a Swift access race, falsely).
        let lock = Locked(0)
        var plain = 0
    }

    @Test func threadsTakingTurnsSeeEachOthersWrites() {
        let shared = Shared()
        let threads = 4, rounds = 50_000
        let workers = (0..<threads).map { _ in
            WorkerThread {
                for _ in 0..<rounds { shared.lock.withLock { turns in turns += 1; shared.plain += 1 } }
            }
        }
        workers.forEach { $0.join() }
        #expect(shared.plain == threads * rounds && shared.lock.withLock { $0 } == threads * rounds)
    }

    @Test func holdsANoncopyableValue() {
        struct Token: ~Copyable { var uses = 0 }
        let token = Locked(Token())
        token.withLock { $0.uses += 1 }
        #expect(token.withLock { $0.uses } == 1)
    }
}
