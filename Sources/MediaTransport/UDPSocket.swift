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
/// serialises them), but `receive` from one thread at a time (it reads into the socket's one
/// control buffer); `close()` must not race with them.
public final class UDPSocket: @unchecked Sendable {
    private var descriptor: Int32
    /// The address the socket is bound to (with the port the kernel chose, when bound to port 0).
    public let localAddress: SocketAddress
    /// Room for the ancillary data `recvmsg` returns (the kernel's arrival stamp and drop count),
    /// allocated once.
    private let control = UnsafeMutableRawPointer.allocate(byteCount: UDPSocket.controlSize, alignment: MemoryLayout<Int>.alignment)
    private static var controlSize: Int { 64 }
    /// Datagrams the kernel dropped on this socket before they could be read (with
    /// `enableDropCounts()`): its receive buffer was full, because the reader fell behind what
    /// arrived. The kernel gives the count it had when it queued each datagram, so drops show with
    /// the first datagram read that came after them. Updated by `receive`, read on its thread.
    public private(set) var kernelDrops = 0

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

    deinit {
        close()
        control.deallocate()
    }

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

    /// The kernel's receive buffer as it reports it (SO_RCVBUF: Linux doubles what was asked for,
    /// after capping it at `net.core.rmem_max`, for its bookkeeping).
    public var receiveBufferSize: Int {
        get throws {
            let fd = try open()
            var value: Int32 = 0, length = socklen_t(MemoryLayout<Int32>.size)
            _ = try retryingInterrupts("getsockopt SO_RCVBUF") { getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, &length) }
            return Int(value)
        }
    }

    /// Has the kernel stamp each datagram with its arrival time (SO_TIMESTAMPNS, socket(7)), which
    /// `receiveStamped` then gives as `queuedFor`: a reader that was starved still learns when a datagram
    /// came, not when it was read. When no socket on the machine had stamps on, Linux turns stamping
    /// on a moment later (from a work queue); a datagram that arrives before is stamped when it is
    /// read, which is what a socket without stamps assumes anyway.
    public func enableArrivalTimestamps() throws {
        let fd = try open()
        var on: Int32 = 1
        try retryingInterrupts("setsockopt SO_TIMESTAMPNS") {
            setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Has the kernel say, with each datagram read, how many it has dropped on this socket so far
    /// (SO_RXQ_OVFL, socket(7)): `kernelDrops`. Drops are what a full receive buffer costs, and no
    /// reader can see them otherwise: a stream's packets lost there look like the network's losses.
    public func enableDropCounts() throws {
        let fd = try open()
        var on: Int32 = 1
        try retryingInterrupts("setsockopt SO_RXQ_OVFL") {
            setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, socklen_t(MemoryLayout<Int32>.size))
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
        try receiveStamped(into: buffer, timeout: timeout).map { ($0.count, $0.from, $0.truncated) }
    }

    /// `receive(into:timeout:)`, also saying how long the datagram had waited in the kernel when it
    /// was read: the time of the read less the kernel's arrival stamp (with
    /// `enableArrivalTimestamps()`; nil without a stamp, or when the wall clock was stepped between
    /// the two). Both are `CLOCK_REALTIME`, so the difference holds on any clock: the arrival is
    /// that much before the reader's now. No allocation: the control buffer is the socket's own.
    public func receiveStamped(into buffer: UnsafeMutableRawBufferPointer, timeout: ClockTime?) throws
        -> (count: Int, from: SocketAddress, truncated: Bool, queuedFor: ClockTime?)?
    {
        let fd = try open()
        if let timeout, timeout > .zero {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: max(0, (timeout.nanoseconds + 999_999) / 1_000_000))
            guard try retryingInterrupts("poll", { poll(&poller, 1, milliseconds) }) > 0 else { return nil }
        }
        // Without a wait, the read itself says whether a datagram is queued: one call a datagram,
        // not a poll before each (a reader draining a flood makes hundreds of thousands a second).
        let flags = Int32(MSG_TRUNC) | (timeout == .zero ? Int32(MSG_DONTWAIT) : 0)
        var storage = sockaddr_storage()
        var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var message = msghdr()
        let count = try withUnsafeMutableBytes(of: &storage) { address in
            try withUnsafeMutablePointer(to: &vector) { vector -> Int? in
                message = msghdr(msg_name: address.baseAddress, msg_namelen: socklen_t(address.count), msg_iov: vector,
                                 msg_iovlen: 1, msg_control: control, msg_controllen: Self.controlSize, msg_flags: 0)
                while true {
                    let count = recvmsg(fd, &message, flags)
                    if count >= 0 { return count }
                    switch errno {
                    case EINTR: continue
                    case EAGAIN where flags & Int32(MSG_DONTWAIT) != 0: return nil
                    case let code: throw SocketError.system(operation: "receive", errno: code)
                    }
                }
            }
        }
        guard let count else { return nil }
        let ancillary = Self.ancillary(in: UnsafeRawBufferPointer(start: control, count: min(Int(message.msg_controllen), Self.controlSize)))
        if let drops = ancillary.drops { kernelDrops = Int(drops) }
        let queuedFor = ancillary.stamp
            .flatMap { stamp -> ClockTime? in
                var now = timespec()
                clock_gettime(CLOCK_REALTIME, &now)
                let waited = (Int64(now.tv_sec) - Int64(stamp.tv_sec)) * 1_000_000_000 + Int64(now.tv_nsec) - Int64(stamp.tv_nsec)
                return waited >= 0 && waited < 60_000_000_000 ? ClockTime(nanoseconds: waited) : nil
            }
        return (min(count, buffer.count), SocketAddress(storage: storage, length: message.msg_namelen), count > buffer.count, queuedFor)
    }

    /// The SCM_TIMESTAMPNS stamp and the SO_RXQ_OVFL drop count among the control messages
    /// `control` holds, walked as glibc's CMSG_FIRSTHDR, CMSG_NXTHDR and CMSG_DATA walk them (macros
    /// Swift cannot call): a `cmsghdr`, its data after it, the next header at the length aligned to
    /// `size_t`. The kernel sends the drop count only once it is above zero.
    private static func ancillary(in control: UnsafeRawBufferPointer) -> (stamp: timespec?, drops: UInt32?) {
        let header = MemoryLayout<cmsghdr>.size, align = MemoryLayout<Int>.size
        var found: (stamp: timespec?, drops: UInt32?) = (nil, nil)
        var offset = 0
        while offset + header <= control.count {
            let message = control.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
            let length = Int(message.cmsg_len)
            guard length >= header, offset + length <= control.count else { break }
            if message.cmsg_level == SOL_SOCKET {
                switch message.cmsg_type {
                case SCM_TIMESTAMPNS where length - header >= MemoryLayout<timespec>.size:
                    found.stamp = control.loadUnaligned(fromByteOffset: offset + header, as: timespec.self)
                case SO_RXQ_OVFL where length - header >= MemoryLayout<UInt32>.size:
                    found.drops = control.loadUnaligned(fromByteOffset: offset + header, as: UInt32.self)
                default: break
                }
            }
            offset += (length + align - 1) & ~(align - 1)
        }
        return found
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

    /// The descriptor, for a `SocketReactor` to watch (-1 once closed): the socket's owner registers
    /// it and keeps the socket open until the registration is cancelled.
    public var pollingDescriptor: Int32 { descriptor }

    private func open() throws -> Int32 {
        guard descriptor >= 0 else { throw SocketError.closed }
        return descriptor
    }
}
