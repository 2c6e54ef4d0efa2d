import Glibc
import MediaCore

/// A UDP socket over the POSIX calls, for RTP and RTCP.
///
/// Why POSIX sockets and not SwiftNIO: a network node reads its datagrams itself, on the thread
/// that runs it, when `SocketReactor` (one thread for the process, epoll) says the socket is
/// readable. Non-blocking calls into caller-owned buffers cost no thread hop and no allocation per
/// datagram; NIO would add event loops, a hop back to the node's thread and a `ByteBuffer` and
/// envelope per datagram, for no gain here (no TLS, no protocol pipeline). Calls interrupted by signals are retried; failures are
/// `SocketError`s that keep the `errno`.
///
/// `send` and `receive` may be called from different threads at the same time (the kernel
/// serialises them); `close()` must not race with them.
public final class UDPSocket: @unchecked Sendable {
    private var descriptor: Int32
    /// The address the socket is bound to (with the port the kernel chose, when bound to port 0).
    public let localAddress: SocketAddress

    /// A socket bound to `address`; port 0 lets the kernel choose one (see `localAddress`).
    public init(bindingTo address: SocketAddress) throws {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = try retryingInterrupts("socket") { socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            try address.withSocketAddress { pointer, length in
                try retryingInterrupts("bind to \(address)") { bind(fd, pointer, length) }
            }
            var storage = sockaddr_storage(), length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = try withUnsafeMutableBytes(of: &storage) { raw in
                try retryingInterrupts("getsockname") {
                    getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
                }
            }
            localAddress = SocketAddress(storage: storage, length: length)
            descriptor = fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    deinit { close() }

    /// Closes the socket; later calls fail with `SocketError.closed`.
    public func close() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)
        descriptor = -1
    }

    /// Sets the kernel's receive buffer (SO_RCVBUF), which absorbs bursts while the receiver is busy.
    public func setReceiveBufferSize(_ bytes: Int) throws {
        let fd = try open()
        var value = Int32(clamping: bytes)
        try retryingInterrupts("setsockopt SO_RCVBUF") {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Sends one datagram of `bytes` to `address`.
    public func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress) throws {
        let fd = try open()
        try address.withSocketAddress { pointer, length in
            try retryingInterrupts("send to \(address)") { sendto(fd, bytes.baseAddress, bytes.count, 0, pointer, length) }
        }
    }

    /// Waits up to `timeout` (forever when nil) for a datagram and copies it into `buffer`. Returns its
    /// length and sender, or nil when the time ran out. A datagram longer than `buffer` is cut to its
    /// size; `truncated` says so.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: ClockTime?) throws
        -> (count: Int, from: SocketAddress, truncated: Bool)?
    {
        let fd = try open()
        if let timeout {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: max(0, (timeout.nanoseconds + 999_999) / 1_000_000))
            guard try retryingInterrupts("poll", { poll(&poller, 1, milliseconds) }) > 0 else { return nil }
        }
        var storage = sockaddr_storage(), length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let count = try withUnsafeMutableBytes(of: &storage) { raw in
            try retryingInterrupts("receive") {
                recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_TRUNC),
                         raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
            }
        }
        return (min(count, buffer.count), SocketAddress(storage: storage, length: length), count > buffer.count)
    }

    /// Waits up to `timeout` until this socket or `other` has a datagram to read, and says which
    /// do (neither, when the time ran out): one thread serves an RTP and an RTCP port this way.
    public func waitForDatagram(orOn other: UDPSocket, timeout: ClockTime) throws -> (mine: Bool, other: Bool) {
        let ready = try UDPSocket.waitForDatagram(on: [self, other], timeout: timeout)
        return (ready.contains(0), ready.contains(1))
    }

    /// Waits up to `timeout` (forever when nil) until one of `sockets` has a datagram to read, or
    /// `waker` is woken, and gives the indices of the sockets that have one (none, when the time ran
    /// out or only the waker woke): one thread serves every socket of an ICE agent this way.
    public static func waitForDatagram(on sockets: [UDPSocket], waker: EventWaker? = nil, timeout: ClockTime?) throws
        -> [Int]
    {
        var pollers = try sockets.map { pollfd(fd: try $0.open(), events: Int16(POLLIN), revents: 0) }
        if let waker { pollers.append(pollfd(fd: waker.descriptor, events: Int16(POLLIN), revents: 0)) }
        let milliseconds = timeout.map { Int32(clamping: max(0, ($0.nanoseconds + 999_999) / 1_000_000)) } ?? -1
        guard try retryingInterrupts("poll", { poll(&pollers, nfds_t(pollers.count), milliseconds) }) > 0 else { return [] }
        if let waker, pollers[sockets.count].revents != 0 { waker.reset() }
        return sockets.indices.filter { pollers[$0].revents != 0 }
    }

    /// The descriptor, for a `SocketReactor` to watch (-1 once closed).
    var pollingDescriptor: Int32 { descriptor }

    private func open() throws -> Int32 {
        guard descriptor >= 0 else { throw SocketError.closed }
        return descriptor
    }
}
