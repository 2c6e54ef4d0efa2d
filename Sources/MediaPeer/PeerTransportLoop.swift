import MediaCore
import MediaICE
import MediaSTUN
import MediaTransport
import Synchronization

/// Runs a `PeerTransport` over real UDP sockets: the I/O adapter of the sans-I/O core. One socket per
/// local address (each a host candidate's base), one thread that waits for a datagram or the core's
/// next timeout, the system clock.
///
/// ```
///  sockets ──▶ loop thread: handleReceive / handleTimeout ──▶ onRTP, onRTCP, onEvent (loop thread)
///                 ▲                │
///  app threads ───┘ withTransport  └──▶ pollTransmit ──▶ sockets
///  (signalling,      (locked, then
///   sendRTP)          wakes the loop)
/// ```
///
/// The transport is used under a lock, by the loop and by the app's calls; handlers run on the loop
/// thread without the lock held, so they may call back into the loop. Received packets are handed to
/// `onRTP`/`onRTCP` in the loop's own buffer, valid during the call only.
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
    private let waker: EventWaker
    private let clock = SystemClock()
    private let stopped = Atomic<Bool>(false)
    private var thread: WorkerThread?
    /// Datagrams the kernel refused, and datagrams for a base this loop has no socket for.
    private let sendFailures = Atomic<Int>(0)

    /// The core under its lock, with the address caches that keep the media path free of allocations.
    /// Unchecked: the core is a class used from one thread at a time, which the mutex guarantees.
    private struct TransportBox: ~Copyable, @unchecked Sendable {
        let core: PeerTransport
        /// Remote socket addresses as the core names them, and back: filled on first sight.
        var transportAddresses: [SocketAddress: TransportAddress] = [:]
        var socketAddresses: [TransportAddress: SocketAddress] = [:]
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
        waker = try EventWaker()
    }

    deinit { close() }

    /// Gathers (the bases become host candidates, STUN and TURN servers are asked) and starts the thread.
    public func start() {
        guard thread == nil else { return }
        let bases = localBases
        withTransport { core, now in core.addLocalBases(bases, now: now) }
        thread = WorkerThread { [self] in run() }
    }

    /// Calls `body` with the transport and the time, under the lock; then sends what it queued, hands
    /// out its events and wakes the loop, whose next timeout may have changed. For signalling
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
        waker.wake()
        return result
    }

    /// Protects the RTP packet in `buffer[0..<length]` in place and sends it on the selected pair;
    /// false when the transport refused it (no keys yet, no path, consent lost). `buffer` needs the
    /// transport's `rtpOverhead` bytes spare.
    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws -> Bool {
        try sendProtected(buffer, length: length, rtcp: false)
    }

    /// As `sendRTP`, for an RTCP compound packet.
    public func sendRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws -> Bool {
        try sendProtected(buffer, length: length, rtcp: true)
    }

    /// Datagrams that could not be sent (the kernel refused them, or no socket has their base).
    public var failedSends: Int { sendFailures.load(ordering: .relaxed) }

    /// Closes the transport (DTLS close_notify goes out), stops the thread and closes the sockets.
    public func close() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        withTransport { core, now in core.close(now: now) }
        waker.wake()
        thread?.join()
        thread = nil
        for socket in sockets { socket.close() }
    }

    // MARK: The loop

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !stopped.load(ordering: .acquiring) {
            let deadline = transport.withLock { $0.core.nextTimeout }
            let wait = deadline.map { max(.zero, $0 - clock.now) }
            guard let ready = try? UDPSocket.waitForDatagram(on: sockets, waker: waker, timeout: wait) else { return }
            for index in ready {
                // Take what is queued on this socket, a bounded batch so that timers keep their time.
                for _ in 0..<64 {
                    guard receive(on: index, into: &buffer) else { break }
                }
            }
            var events: [PeerTransport.Event] = []
            transport.withLock { box in
                let now = clock.now
                if let due = box.core.nextTimeout, due <= now { box.core.handleTimeout(now: now) }
                flush(&box, events: &events)
            }
            deliver(events)
        }
    }

    /// Receives one datagram on socket `index` if there is one; false when there was none.
    private func receive(on index: Int, into buffer: inout [UInt8]) -> Bool {
        var events: [PeerTransport.Event] = []
        let received: PeerTransport.Received? = buffer.withUnsafeMutableBytes { raw in
            guard let datagram = try? sockets[index].receive(into: raw, timeout: .zero), !datagram.truncated else {
                return nil
            }
            return transport.withLock { box in
                guard let source = transportAddress(of: datagram.from, in: &box) else { return .consumed }
                let result = box.core.handleReceive(raw, length: datagram.count, from: source, to: localBases[index],
                                                    now: clock.now)
                flush(&box, events: &events)
                return result
            }
        }
        deliver(events)
        guard let received else { return false }
        buffer.withUnsafeBytes { raw in
            switch received {
            case .rtp(let length): handlers.onRTP(UnsafeRawBufferPointer(rebasing: raw[..<length]))
            case .rtcp(let length): handlers.onRTCP(UnsafeRawBufferPointer(rebasing: raw[..<length]))
            case .consumed: break
            }
        }
        return true
    }

    private func sendProtected(_ buffer: UnsafeMutableRawBufferPointer, length: Int, rtcp: Bool) throws -> Bool {
        var events: [PeerTransport.Event] = []
        let direct = try transport.withLock { box -> (sent: Bool, socket: UDPSocket?, destination: SocketAddress?, length: Int) in
            let now = clock.now
            switch rtcp ? try box.core.sendRTCP(buffer, length: length, now: now)
                        : try box.core.sendRTP(buffer, length: length, now: now) {
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

    /// Sends what the core queued and collects its events; called with the lock held.
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
