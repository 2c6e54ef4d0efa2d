import CEpoll
import Glibc

/// A wake-up another thread can wait for: an `eventfd(2)`, readable from a `wake()` until the next
/// `reset()`, so a thread waiting in `UDPSocket.waitForDatagram(on:waker:timeout:)` or a
/// `SocketReactor` watch on `descriptor` hears it. Wakes before a reset fold into one. Neither call
/// blocks nor allocates.
public final class EventWaker: @unchecked Sendable {
    /// The descriptor to poll or watch: readable while a wake is pending.
    public let descriptor: Int32

    public init() throws {
        descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard descriptor >= 0 else { throw SocketError.system(operation: "eventfd", errno: errno) }
    }

    deinit { Glibc.close(descriptor) }

    /// Makes `descriptor` readable, now or for the next wait.
    public func wake() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// Takes the pending wakes: `descriptor` is not readable until the next `wake()`.
    public func reset() {
        var count: UInt64 = 0
        _ = read(descriptor, &count, MemoryLayout<UInt64>.size)
    }
}
