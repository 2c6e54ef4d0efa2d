import MediaCore
import MediaDTLS
import MediaSCTP
import MediaTransport

/// Data channels over a `PeerTransportLoop`'s DTLS application data (SCTP over DTLS, RFC 8261): the I/O
/// adapter of `DataChannels`. Hand it every event of the loop (`handle`, from the loop's `onEvent`):
/// SCTP starts when DTLS connects, and application data records are its packets. A timer of the
/// process's `SocketReactor` runs the SCTP timers, so the channels cost no thread; what SCTP sends
/// goes out through the loop's `sendApplicationData`.
///
/// ```
///  loop onEvent ─▶ handle(.applicationData) ─▶ DataChannels ─▶ pollTransmit ─▶ loop.withTransport
///  app threads ──▶ withChannels (open, send, close)   ▲             (sendApplicationData)
///  reactor timer ─▶ handleTimeout at nextTimeout ─────┘ ─▶ pollEvent ─▶ onEvent (caller's thread)
/// ```
///
/// The core is used under a lock, by one party at a time; whoever drove it last arms the timer at
/// its `nextTimeout`, under the lock. Packets and events are handed out after it is released, so
/// `onEvent` may call back into the adapter or the loop; when the timer drives, they are handed out
/// on the reactor thread, where `onEvent` must not block. Until `close()`, the timer holds the adapter.
public final class PeerDataChannelLoop: @unchecked Sendable {
    private let lock = ConditionLock()
    /// Under `lock`.
    private let channels: DataChannels
    private var stopped = false
    private var started = false
    private var sendFailures = 0
    private var lastSendFailure: PeerTransportError?
    /// The time the timer is set for (nil: not set, or fired).
    private var timerDeadline: ClockTime?
    /// Runs SCTP's timers; set once by `init`.
    private var timer: ReactorTimer?
    private weak var loop: PeerTransportLoop?
    private let onEvent: @Sendable (DataChannelEvent) -> Void
    private let clock = SystemClock()

    /// Channels for the transport `loop` runs; `configuration.isDTLSClient` from the DTLS role it plays.
    public init(loop: PeerTransportLoop, configuration: DataChannels.Configuration,
                onEvent: @escaping @Sendable (DataChannelEvent) -> Void) throws(SCTPError) {
        channels = try DataChannels(configuration: configuration)
        self.loop = loop
        self.onEvent = onEvent
        timer = SocketReactor.shared.timer { [self] in runTimeout() }
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

    /// Aborts the association (its ABORT goes out) and stops the timer: when this returns, its action
    /// is not running (unless this is called from it) and will not run again.
    public func close() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        drive { channels, now in channels.close(now: now) }
        timer?.cancel()
    }

    // MARK: Internals

    private func drive<T>(_ body: (DataChannels, ClockTime) throws -> T) rethrows -> T {
        var packets: [[UInt8]] = []
        var events: [DataChannelEvent] = []
        let result = try lock.withLock {
            let value = try body(channels, clock.now)
            while let packet = channels.pollTransmit() { packets.append(packet) }
            while let event = channels.pollEvent() { events.append(event) }
            if let timer, let next = channels.nextTimeout, next != timerDeadline, !stopped {
                timerDeadline = next
                timer.schedule(at: next)
            }
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

    /// The timer fired: SCTP's timeouts due by now, then the timer is armed at the next one.
    private func runTimeout() {
        drive { channels, now in
            timerDeadline = nil
            if let due = channels.nextTimeout, due <= now { channels.handleTimeout(now: now) }
        }
    }
}
