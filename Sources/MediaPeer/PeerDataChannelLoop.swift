import MediaCore
import MediaDTLS
import MediaSCTP

/// Data channels over a `PeerTransportLoop`'s DTLS application data (SCTP over DTLS, RFC 8261): the I/O
/// adapter of `DataChannels`. Hand it every event of the loop (`handle`, from the loop's `onEvent`):
/// SCTP starts when DTLS connects, and application data records are its packets. A thread of its own
/// runs the SCTP timers; what SCTP sends goes out through the loop's `sendApplicationData`.
///
/// ```
///  loop onEvent ─▶ handle(.applicationData) ─▶ DataChannels ─▶ pollTransmit ─▶ loop.withTransport
///  app threads ──▶ withChannels (open, send, close)   ▲             (sendApplicationData)
///  timer thread ──▶ handleTimeout at nextTimeout ─────┘ ─▶ pollEvent ─▶ onEvent (caller's thread)
/// ```
///
/// The core is used under a lock; packets and events are handed out after it is released, so `onEvent`
/// may call back into the adapter or the loop.
public final class PeerDataChannelLoop: @unchecked Sendable {
    private let lock = ConditionLock()
    /// Under `lock`.
    private let channels: DataChannels
    private var stopped = false
    private var started = false
    private var sendFailures = 0
    private var lastSendFailure: PeerTransportError?
    private var thread: WorkerThread?
    private weak var loop: PeerTransportLoop?
    private let onEvent: @Sendable (DataChannelEvent) -> Void
    private let clock = SystemClock()

    /// Channels for the transport `loop` runs; `configuration.isDTLSClient` from the DTLS role it plays.
    public init(loop: PeerTransportLoop, configuration: DataChannels.Configuration,
                onEvent: @escaping @Sendable (DataChannelEvent) -> Void) throws(SCTPError) {
        channels = try DataChannels(configuration: configuration)
        self.loop = loop
        self.onEvent = onEvent
        thread = WorkerThread { [self] in runTimers() }
    }

    deinit { close() }

    /// An event of the loop's transport: application data is SCTP's; a connected DTLS starts it.
    public func handle(_ event: PeerTransport.Event) {
        switch event {
        case .applicationData(let packet): drive { channels, now in channels.handleReceive(packet, now: now) }
        case .dtlsStateChanged(.connected):
            drive { channels, now in
                guard !started else { return }
                started = true
                do { try channels.start(now: now) } catch { channels.close(now: now) }
            }
        case .stateChanged(.closed), .stateChanged(.failed): drive { channels, now in channels.close(now: now) }
        default: break
        }
    }

    /// Calls `body` with the channels and the time, under the lock (open, send, close, statistics); then
    /// sends what they queued and hands out their events.
    @discardableResult
    public func withChannels<T>(_ body: (DataChannels, ClockTime) throws -> T) rethrows -> T {
        try drive(body)
    }

    /// Application data records the transport refused (not connected yet, or closed).
    public var failedSends: Int { lock.withLock { sendFailures } }

    /// Why the last of them was refused.
    public var lastFailedSend: PeerTransportError? { lock.withLock { lastSendFailure } }

    /// Aborts the association (its ABORT goes out) and stops the timer thread.
    public func close() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            lock.broadcast()
            return !stopped
        }
        guard first else { return }
        drive { channels, now in channels.close(now: now) }
        thread?.join()
        thread = nil
    }

    // MARK: Internals

    private func drive<T>(_ body: (DataChannels, ClockTime) throws -> T) rethrows -> T {
        var packets: [[UInt8]] = []
        var events: [DataChannelEvent] = []
        let result = try lock.withLock {
            let value = try body(channels, clock.now)
            while let packet = channels.pollTransmit() { packets.append(packet) }
            while let event = channels.pollEvent() { events.append(event) }
            lock.broadcast()   // the next timeout may have moved
            return value
        }
        send(packets)
        for event in events { onEvent(event) }
        return result
    }

    private func send(_ packets: [[UInt8]]) {
        guard !packets.isEmpty else { return }
        guard let loop else {
            lock.withLock { sendFailures += packets.count }
            return
        }
        let (failed, error) = loop.withTransport { core, now -> (Int, PeerTransportError?) in
            var failed = 0
            var last: PeerTransportError?
            for packet in packets {
                do throws(PeerTransportError) {
                    try core.sendApplicationData(packet, now: now)
                } catch {
                    failed += 1
                    last = error
                }
            }
            return (failed, last)
        }
        if failed > 0 {
            lock.withLock {
                sendFailures += failed
                lastSendFailure = error
            }
        }
    }

    private func runTimers() {
        while true {
            let due = lock.withLock { () -> Bool? in
                while !stopped {
                    let now = clock.now
                    guard let deadline = channels.nextTimeout else {
                        lock.wait(until: now + .seconds(1))
                        continue
                    }
                    if deadline <= now { return true }
                    lock.wait(until: deadline)
                }
                return nil
            }
            guard due != nil else { return }
            drive { channels, now in channels.handleTimeout(now: now) }
        }
    }
}
