import Glibc
import MediaCore
import Testing

@testable import MediaTransport

/// The process's I/O reactor: readiness handlers, one-shot re-arming, safe deregistration, timers.
@Suite struct SocketReactorTests {
    static func socket() throws -> UDPSocket { try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0)) }

    static func send(to socket: UDPSocket, from sender: UDPSocket, count: Int = 1) throws {
        let bytes: [UInt8] = [1, 2, 3, 4]
        for _ in 0..<count { try bytes.withUnsafeBytes { try sender.send($0, to: socket.localAddress) } }
    }

    /// Waits up to 5 s for `condition`.
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = SystemClock().now + .seconds(5)
        while !condition() {
            if SystemClock().now > deadline { return false }
            usleep(1_000)
        }
        return true
    }

    @Test func aReadableSocketCallsItsHandlerOnceUntilRearmed() throws {
        let (socket, sender) = (try Self.socket(), try Self.socket())
        let calls = Locked(0)
        let watch = try SocketReactor.shared.register(descriptor: socket.pollingDescriptor) { calls.withLock { $0 += 1 } }
        defer { watch.cancel() }
        usleep(20_000)
        #expect(calls.withLock { $0 } == 0, "nothing to read, no call")
        try Self.send(to: socket, from: sender)
        #expect(Self.eventually { calls.withLock { $0 } == 1 })
        try Self.send(to: socket, from: sender)
        usleep(50_000)
        #expect(calls.withLock { $0 } == 1, "one-shot: disabled until re-armed")
        watch.rearm()
        #expect(Self.eventually { calls.withLock { $0 } == 2 }, "re-armed while readable: called at once")
    }

    /// The handler runs slowly on a socket that stays readable and re-arms itself; `cancel()` is
    /// called while it runs, and once it has returned the handler is never seen running.
    @Test func afterCancelReturnsTheHandlerNeitherRunsNorRunsAgain() throws {
        let (socket, sender) = (try Self.socket(), try Self.socket())
        try Self.send(to: socket, from: sender, count: 10)
        let calls = Locked(0), cancelled = Locked(false), seenAfterCancel = Locked(0)
        let box = Locked<ReactorRegistration?>(nil)
        let watch = try SocketReactor.shared.register(descriptor: socket.pollingDescriptor) {
            if cancelled.withLock({ $0 }) { seenAfterCancel.withLock { $0 += 1 } }
            calls.withLock { $0 += 1 }
            usleep(20_000)
            if cancelled.withLock({ $0 }) { seenAfterCancel.withLock { $0 += 1 } }
            box.withLock { $0?.rearm() }
        }
        box.withLock { $0 = watch }
        watch.rearm()
        #expect(Self.eventually { calls.withLock { $0 } >= 3 })
        watch.cancel()
        cancelled.withLock { $0 = true }
        let callsAtCancel = calls.withLock { $0 }
        socket.close()   // the owner may close the descriptor now
        usleep(100_000)
        #expect(seenAfterCancel.withLock { $0 } == 0)
        #expect(calls.withLock { $0 } == callsAtCancel)
    }

    @Test func timersFireInTheOrderOfTheirTimesAndCancelledOnesNever() throws {
        let reactor = SocketReactor.shared
        let fired = Locked<[Int]>([])
        let start = SystemClock().now
        let delays = [50, 10, 30, 20, 40]
        let timers = delays.map { delay in reactor.timer { fired.withLock { $0.append(delay) } } }
        for (timer, delay) in zip(timers, delays) { timer.schedule(at: start + .milliseconds(Int64(delay))) }
        let cancelled = reactor.timer { fired.withLock { $0.append(-1) } }
        cancelled.schedule(at: start + .milliseconds(15))
        cancelled.cancel()
        cancelled.schedule(at: start + .milliseconds(15))   // no effect once cancelled
        let moved = reactor.timer { fired.withLock { $0.append(60) } }
        moved.schedule(at: start + .milliseconds(5))
        moved.schedule(at: start + .milliseconds(60))      // replaces the earlier time
        #expect(Self.eventually { fired.withLock { $0.count } == 6 })
        usleep(30_000)
        #expect(fired.withLock { $0 } == [10, 20, 30, 40, 50, 60])
        #expect(SystemClock().now - start >= .milliseconds(60), "no timer fires early")
    }

    @Test func manyRegistrationsEachHearTheirOwnSocket() throws {
        let count = 200
        let sender = try Self.socket()
        let sockets = try (0..<count).map { _ in try Self.socket() }
        let calls = Locked([Int](repeating: 0, count: count))
        let watches = try sockets.indices.map { index in
            try SocketReactor.shared.register(descriptor: sockets[index].pollingDescriptor) { calls.withLock { $0[index] += 1 } }
        }
        for socket in sockets.prefix(count / 2) { try Self.send(to: socket, from: sender) }
        #expect(Self.eventually { calls.withLock { $0.prefix(count / 2).allSatisfy { $0 == 1 } } })
        usleep(20_000)
        #expect(calls.withLock { $0.suffix(count / 2).allSatisfy { $0 == 0 } })
        for watch in watches { watch.cancel() }
        for socket in sockets.suffix(count / 2) { try Self.send(to: socket, from: sender) }
        usleep(50_000)
        #expect(calls.withLock { $0.suffix(count / 2).allSatisfy { $0 == 0 } }, "cancelled: no call")
    }
}
