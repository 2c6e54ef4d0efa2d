import Glibc

/// Wakes a thread waiting in `UDPSocket.waitForDatagram(on:waker:timeout:)` from another thread (a
/// non-blocking pipe): a loop that owns sockets learns this way that its work changed, e.g. a new timer.
public final class EventWaker: @unchecked Sendable {
    /// The end the waiter polls.
    let descriptor: Int32
    private let writeEnd: Int32

    public init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SocketError.system(operation: "pipe", errno: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        descriptor = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        Glibc.close(descriptor)
        Glibc.close(writeEnd)
    }

    /// Wakes the waiter, now or at its next wait; wakes before it waits again fold into one. Never
    /// blocks: when the pipe is full, a wake is pending anyway.
    public func wake() {
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    /// Takes the pending wake-ups.
    func reset() {
        var sink = [UInt8](repeating: 0, count: 64)
        while read(descriptor, &sink, sink.count) > 0 {}
    }
}
