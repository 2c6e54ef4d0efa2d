import MediaCore
import MediaICE
import MediaSTUN
import MediaTransport
import Synchronization

/// Runs a `PeerTransport` over real UDP sockets: the I/O adapter of the sans-I/O core. One socket per
/// local address (each a host candidate's base), watched by the process's `SocketReactor`, one
/// reactor timer armed at the core's next timeout, the system clock. A loop costs no thread.
///
/// ```
///  sockets ──▶ reactor: handleReceive ─┐
///  timer ────▶ reactor: handleTimeout ─┴──▶ onRTP, onRTCP, onEvent (reactor thread)
///                 ▲                │
///  app threads ───┘ withTransport  └──▶ pollTransmit ──▶ sockets
///  (signalling,      (locked, then
///   sendRTP)          re-arms the timer)
/// ```
///
/// The core is a class driven by one party at a time: the reactor's handlers and the app's calls
/// each take the lock around it. Whoever drove it last arms the timer at its `nextTimeout` (under
/// the lock, so a stale time never replaces a newer one), so a timer the app's call brought forward
/// is heard without a wake-up pipe. Handlers run on the reactor thread without the lock held, so
/// they may call back into the loop; like every reactor handler they must not block (DTLS's
/// handshake crypto runs there, a bounded computation, never a wait). Received packets are handed
/// to `onRTP`/`onRTCP` in the loop's own buffer, valid during the call only. Until `close()`, the
/// reactor's handlers hold the loop.
public final class PeerTransportLoop: @unchecked Sendable {
    public struct Handlers: Sendable {
        public var onEvent: @Sendable (PeerTransport.Event) -> Void
        /// An unprotected RTP packet, in a buffer valid during the call.
        public var onRTP: @Sendable (UnsafeRawBufferPointer) -> Void
        public var onRTCP: @Sendable (UnsafeRawBufferPointer) -> Void

        public init(onEvent: @escaping @Sendable (PeerTransport.Event) -> Void = { _ in },
                    onRTP: @escaping @Sendable (UnsafeRawBufferPointer) -> Void = { _ in },
                    onRTCP: @escaping @Sendable (UnsafeRawBufferPointer) -> Void = { _ in }) {
            self.onEvent = onEvent
            self.onRTP = onRTP
            self.onRTCP = onRTCP
        }
    }

    /// The bases, in the order of the sockets: the addresses the host candidates carry.
    public let localBases: [TransportAddress]
    private let sockets: [UDPSocket]
    private let transport: Locked<TransportBox>
    private let handlers: Handlers
    private let clock = SystemClock()
    private let started = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    /// The reactor's watches on `sockets`, in their order; set by `start()`, emptied by `close()`.
    private let watches = Locked<[ReactorRegistration]>([])
    /// Where datagrams are read: only the reactor's handlers use it, one at a time.
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    /// Datagrams the kernel refused, and datagrams for a base this loop has no socket for.
    private let sendFailures = Atomic<Int>(0)

    /// At most this many datagrams are read from a socket per readiness, so that timers and other
    /// sockets of the process keep their time; the rest are read when the re-armed watch fires again.
    private static let receiveBatch = 64

    /// The core under its lock, with the address caches that keep the media path free of allocations.
    /// Unchecked: the core is a class used from one thread at a time, which the mutex guarantees.
    private struct TransportBox: ~Copyable, @unchecked Sendable {
        let core: PeerTransport
        /// Remote socket addresses as the core names them, and back: filled on first sight.
        var transportAddresses: [SocketAddress: TransportAddress] = [:]
        var socketAddresses: [TransportAddress: SocketAddress] = [:]
        /// The reactor timer that runs the core's timeouts, from `start()`; and the time it is set
        /// for (nil: not set, or fired).
        var timer: ReactorTimer?
        var timerDeadline: ClockTime?
    }

    /// Binds one UDP socket to each of `addresses` (port 0 lets the kernel choose) for `transport`.
    public init(transport: PeerTransport, bindingTo addresses: [SocketAddress], handlers: Handlers = Handlers()) throws {
        sockets = try addresses.map { try UDPSocket(bindingTo: $0) }
        for socket in sockets { try socket.setReceiveBufferSize(1 << 20) }
        localBases = try sockets.map { socket in
            guard let base = TransportAddress(host: socket.localAddress.host, port: socket.localAddress.port) else {
                throw SocketError.invalidAddress(socket.localAddress.description)
            }
            return base
        }
        self.transport = Locked(TransportBox(core: transport))
        self.handlers = handlers
    }

    deinit {
        close()
        receiveBuffer.deallocate()
    }

    /// Gathers (the bases become host candidates, STUN and TURN servers are asked), then has the
    /// reactor watch the sockets and run the core's timer. Nothing after `close()`.
    public func start() {
        guard !stopped.load(ordering: .acquiring), !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let reactor = SocketReactor.shared
        let timer = reactor.timer { [self] in runTimeout() }
        transport.withLock { $0.timer = timer }
        let bases = localBases
        withTransport { core, now in core.addLocalBases(bases, now: now) }
        for index in sockets.indices {
            guard let watch = try? reactor.register(descriptor: sockets[index].pollingDescriptor, handler: { [self] in
                readable(index)
            }) else { continue }
            watches.withLock { $0.append(watch) }
        }
        // A watch that fired before it was in `watches` could not re-arm itself: ask again.
        for watch in watches.withLock({ $0 }) { watch.rearm() }
    }

    /// Calls `body` with the transport and the time, under the lock; then sends what it queued, hands
    /// out its events and re-arms the timer, as the next timeout may have changed. For signalling
    /// (`setRemote`, `addRemoteCandidate`) and statistics.
    @discardableResult
    public func withTransport<T>(_ body: (PeerTransport, ClockTime) throws -> T) rethrows -> T {
        var events: [PeerTransport.Event] = []
        let result = try transport.withLock { box in
            let value = try body(box.core, clock.now)
            flush(&box, events: &events)
            return value
        }
        deliver(events)
        return result
    }

    /// Protects the RTP packet in `buffer[0..<length]` in place and sends it on the selected pair;
    /// false when the transport refused it (no keys yet, no path, consent lost). `buffer` needs the
    /// transport's `rtpOverhead` bytes spare.
    /// With a `tail`, the packet is `buffer[0..<length]` and then the tail, which SRTP encrypts from
    /// where it is into `buffer` after the head (room for it too).
    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int,
                        followedBy tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) throws -> Bool {
        try sendProtected(buffer, length: length, followedBy: tail, rtcp: false)
    }

    /// As `sendRTP`, for an RTCP compound packet.
    public func sendRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws -> Bool {
        try sendProtected(buffer, length: length, rtcp: true)
    }

    /// Datagrams that could not be sent (the kernel refused them, or no socket has their base).
    public var failedSends: Int { sendFailures.load(ordering: .relaxed) }

    /// Closes the transport (DTLS close_notify goes out), stops the reactor's handlers and closes the
    /// sockets. When it returns, no handler of this loop runs (unless this is called from one of them:
    /// then none runs after it returns) or will run.
    public func close() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        withTransport { core, now in core.close(now: now) }
        // Each watch's handler holds the loop, and `watches` holds the watches: a cycle until here.
        for watch in watches.withLock({ $0 }) { watch.cancel() }
        watches.withLock { $0 = [] }
        transport.withLock { $0.timer }?.cancel()
        for socket in sockets { socket.close() }
    }

    // MARK: The reactor's handlers

    /// Socket `index` is readable: reads a bounded batch of what it holds, then asks for its next
    /// readiness (level-triggered: at once when datagrams are left).
    private func readable(_ index: Int) {
        for _ in 0..<Self.receiveBatch {
            guard receive(on: index) else { break }
        }
        watches.withLock { $0.indices.contains(index) ? $0[index] : nil }?.rearm()
    }

    /// The timer fired: the core's timeouts due by now (retransmissions, checks, consent), then the
    /// timer is armed at the next one.
    private func runTimeout() {
        var events: [PeerTransport.Event] = []
        transport.withLock { box in
            box.timerDeadline = nil
            let now = clock.now
            if let due = box.core.nextTimeout, due <= now { box.core.handleTimeout(now: now) }
            flush(&box, events: &events)
        }
        deliver(events)
    }

    /// Receives one datagram on socket `index` if there is one, without waiting; false when there
    /// was none (or the socket is closed).
    private func receive(on index: Int) -> Bool {
        var events: [PeerTransport.Event] = []
        let raw = receiveBuffer
        guard let datagram = try? sockets[index].receive(into: raw, timeout: .zero) else { return false }
        guard !datagram.truncated else { return true }   // larger than any datagram of the bundle: dropped
        let received = transport.withLock { box -> PeerTransport.Received in
            guard let source = transportAddress(of: datagram.from, in: &box) else { return .consumed }
            let result = box.core.handleReceive(raw, length: datagram.count, from: source, to: localBases[index],
                                                now: clock.now)
            flush(&box, events: &events)
            return result
        }
        deliver(events)
        switch received {
        case .rtp(let length): handlers.onRTP(UnsafeRawBufferPointer(rebasing: raw[..<length]))
        case .rtcp(let length): handlers.onRTCP(UnsafeRawBufferPointer(rebasing: raw[..<length]))
        case .consumed: break
        }
        return true
    }

    private func sendProtected(_ buffer: UnsafeMutableRawBufferPointer, length: Int,
                               followedBy tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                               rtcp: Bool) throws -> Bool {
        var events: [PeerTransport.Event] = []
        let direct = try transport.withLock { box -> (sent: Bool, socket: UDPSocket?, destination: SocketAddress?, length: Int) in
            let now = clock.now
            switch rtcp ? try box.core.sendRTCP(buffer, length: length, now: now)
                        : try box.core.sendRTP(buffer, length: length, followedBy: tail, now: now) {
            case nil:
                return (false, nil, nil, 0)
            case .relayed:
                flush(&box, events: &events)
                return (true, nil, nil, 0)
            case .direct(let protected, let route):
                return (true, socket(for: route.source), socketAddress(of: route.destination, in: &box), protected)
            }
        }
        deliver(events)
        guard direct.sent else { return false }
        guard direct.length > 0 else { return true }   // relayed: sent by the flush
        guard let socket = direct.socket, let destination = direct.destination else {
            sendFailures.add(1, ordering: .relaxed)
            return true
        }
        do {
            try socket.send(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<direct.length]), to: destination)
        } catch {
            sendFailures.add(1, ordering: .relaxed)
        }
        return true
    }

    /// Sends what the core queued, collects its events and arms the timer at the core's next timeout
    /// when that moved; called with the lock held. With no next timeout the timer is left as it is:
    /// firing early finds nothing due.
    private func flush(_ box: inout TransportBox, events: inout [PeerTransport.Event]) {
        while let transmit = box.core.pollTransmit() {
            guard let socket = socket(for: transmit.source), let destination = socketAddress(of: transmit.destination, in: &box)
            else {
                sendFailures.add(1, ordering: .relaxed)
                continue
            }
            do {
                try transmit.bytes.withUnsafeBytes { try socket.send($0, to: destination) }
            } catch {
                sendFailures.add(1, ordering: .relaxed)
            }
        }
        while let event = box.core.pollEvent() { events.append(event) }
        if let timer = box.timer, let next = box.core.nextTimeout, next != box.timerDeadline {
            box.timerDeadline = next
            timer.schedule(at: next)
        }
    }

    private func deliver(_ events: [PeerTransport.Event]) {
        for event in events { handlers.onEvent(event) }
    }

    private func socket(for base: TransportAddress) -> UDPSocket? {
        localBases.firstIndex(of: base).map { sockets[$0] }
    }

    /// At most this many addresses are remembered each way; past it the caches start again, so that
    /// datagrams from many (spoofed) sources cannot make the loop grow.
    private static let addressCacheLimit = 256

    private func transportAddress(of address: SocketAddress, in box: inout TransportBox) -> TransportAddress? {
        if let known = box.transportAddresses[address] { return known }
        guard let converted = TransportAddress(host: address.host, port: address.port) else { return nil }
        if box.transportAddresses.count >= Self.addressCacheLimit { box.transportAddresses.removeAll(keepingCapacity: true) }
        box.transportAddresses[address] = converted
        return converted
    }

    private func socketAddress(of address: TransportAddress, in box: inout TransportBox) -> SocketAddress? {
        if let known = box.socketAddresses[address] { return known }
        // A numeric address: getaddrinfo resolves nothing.
        guard let converted = try? SocketAddress(host: address.ip.description, port: address.port) else { return nil }
        if box.socketAddresses.count >= Self.addressCacheLimit { box.socketAddresses.removeAll(keepingCapacity: true) }
        box.socketAddresses[address] = converted
        return converted
    }
}
