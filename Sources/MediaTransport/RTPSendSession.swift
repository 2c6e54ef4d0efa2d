import Glibc
import MediaCore
import MediaRTP
import MediaSRTP
import Synchronization

/// The sending end of one RTP stream (RFC 3550) over a datagram transport (`RTPDatagramTransport`:
/// UDP with optional SDES SRTP, or a peer's bundled ICE + DTLS-SRTP transport): frames go out as
/// packets from an `RTPSender`; once `start()`ed, it reads the receiver's RTCP and answers it —
/// NACKs with retransmissions (RFC 4585 §6.2.1, as RTX when configured, RFC 4588), PLI and FIR
/// (RFC 4585 §6.3.1, RFC 5104 §4.3.1) with `onKeyframeRequest`, receiver reports with a round-trip
/// time — and sends a sender report with the source's CNAME every `reportInterval` and a BYE at
/// the end.
///
/// ```
///   send(frame) ─▶ RTPSender ─▶ transport (SRTP, [impairment], socket) ─▶ remote
///                      ▲                                                    │
///   onKeyframeRequest ◀┴── NACK / PLI / FIR / RR ◀── feedback reader ◀ transport ◀┘
/// ```
///
/// The feedback reader is a handler on `SocketReactor`'s thread, called when the transport's
/// sockets are readable, and a reactor timer does the periodic duties (what an impairment holds
/// back, sender reports while no frame goes out); so a session costs no thread. A transport the
/// reactor cannot watch (no `readinessDescriptors`) gets a thread that loops on `serviceTransport`.
///
/// The send path allocates nothing per packet once warm (without impairment): the sender writes each
/// packet's head into one buffer of the session's, the transport encrypts the rest from the frame
/// after it (or copies it there and protects the packet in place), and the sender keeps for
/// retransmissions only the head and a reference to the frame. Without `start()`, feedback and timers can be driven by
/// hand with `serviceTransport(timeout:)` or `receiveRTCP(_:at:)`, e.g. over an in-memory
/// transport with a manual clock.
public final class RTPSendSession<Packetizer: RTPPacketizer>: @unchecked Sendable {
    /// The session's settings. The addresses, `impairment` and `srtp` configure the UDP transport
    /// that `init(packetizer:configuration:clock:)` builds; a session given its transport ignores them.
    public struct Configuration: Sendable {
        /// Where RTP packets go.
        public var remote: SocketAddress
        /// Where RTCP goes; default: `remote` when multiplexed, else its port + 1 (RFC 3550 §11).
        public var remoteRTCP: SocketAddress?
        /// The local address to send from (port 0: the kernel's choice).
        public var local: SocketAddress
        /// RTP and RTCP on one port (RFC 5761).
        public var multiplexed: Bool
        public var sender: RTPSender<Packetizer>.Configuration
        /// The canonical name sent in SDES (RFC 3550 §6.5.1).
        public var cname: String
        /// Time between sender reports.
        public var reportInterval: ClockTime
        /// A network emulator on the way out, for tests and measurements (`--impair`).
        public var impairment: ImpairmentProfile?
        /// How long `close()` keeps answering NACKs before its BYE, so that the last frames can be
        /// repaired too; it also sends tail-loss probes in that time (none when zero).
        public var linger: ClockTime = Self.defaultLinger
        public static var defaultLinger: ClockTime { .milliseconds(300) }
        /// SRTP (RFC 3711): what goes out is protected with this key, and the RTCP that comes back
        /// is checked with it (an SDES key covers the stream both ways, RFC 4568 §6.1).
        public var srtp: SRTPParameters?
        /// Whether the first report from a receiver not heard before asks for a keyframe, as a PLI
        /// would: a receiver that joins late (opened the SDP after the first keyframe left) then
        /// decodes within a round trip instead of at the next periodic keyframe. At most one such
        /// keyframe per `newReceiverKeyframeInterval`, and none within the first interval of the
        /// session (the stream's first keyframe serves those receivers), so a flood of forged
        /// reports cannot turn every frame into a keyframe.
        public var keyframeOnNewReceiver = true
        public var newReceiverKeyframeInterval: ClockTime = .seconds(1)

        public init(remote: SocketAddress, remoteRTCP: SocketAddress? = nil, local: SocketAddress? = nil,
                    multiplexed: Bool = false, sender: RTPSender<Packetizer>.Configuration, cname: String = "sluice",
                    reportInterval: ClockTime = .seconds(1), impairment: ImpairmentProfile? = nil) throws {
            self.remote = remote
            self.remoteRTCP = remoteRTCP
            self.local = try local ?? SocketAddress(host: remote.isIPv6 ? "::" : "0.0.0.0", port: 0)
            self.multiplexed = multiplexed
            self.sender = sender
            self.cname = cname
            self.reportInterval = reportInterval
            self.impairment = impairment
        }

        var rtcpDestination: SocketAddress { remoteRTCP ?? (multiplexed ? remote : remote.withPort(remote.port &+ 1)) }
    }

    public let configuration: Configuration
    /// What packets go over and feedback comes from.
    public let transport: any RTPDatagramTransport
    /// The UDP sockets, when the transport is `UDPRTPTransport`.
    public var sockets: RTPSessionSockets? { (transport as? UDPRTPTransport)?.sockets }
    /// Called where feedback is read (the reactor's thread) when the receiver asks for a keyframe
    /// (PLI or FIR); it must not block.
    public var onKeyframeRequest: (@Sendable () -> Void)?
    /// Records `packetize`, `sendFirst` and `sendLast` of each frame; set with `trace(with:)`.
    public private(set) var tracer: FrameTracer?
    private let clock: any MediaClock
    /// Lock order: `outgoing`, then `heard`. Every send to the transport happens under `outgoing`.
    private let outgoing: Locked<Outgoing>
    private let heard = Locked(RTPSendStatistics())
    /// The receivers (reporting SSRCs) heard from, the latest `ReceiversHeard.capacity` of them.
    private let receivers: Locked<ReceiversHeard>
    private let stopping = Atomic<Bool>(false)
    /// Reads feedback over a transport the reactor cannot watch.
    private var rtcpThread: WorkerThread?
    /// The reactor's watch on the transport's sockets and the timer of the periodic duties, from
    /// `start()` to `close()`.
    private var reactorFeedback: (watches: Locked<[ReactorRegistration]>, timer: ReactorTimer)?
    /// `close()`'s progress; its lock is held for a turn of it.
    private let closing = Locked(Closing.open)
    /// The longest the periodic duties wait while an impairment holds packets back: what it
    /// releases goes out this late at most (the RTCP thread's old poll interval).
    private static var impairmentPollInterval: ClockTime { .milliseconds(20) }

    /// The sender and what only the sending side counts.
    private struct Outgoing: @unchecked Sendable {
        var sender: RTPSender<Packetizer>
        /// Where the sender writes each packet's head and the transport puts the packet together,
        /// protected (room for the largest packet and the transport's overhead), allocated once.
        var packetBuffer: UnsafeMutableRawBufferPointer
        var senderReports = 0
        var tailProbes = 0
        var nextReport: ClockTime?
        /// The latest time anything went out: the sending thread and the feedback reader (answering NACKs)
        /// read the clock before they take the lock, so the later one may hold the earlier time.
        var lastTransmit = ClockTime(nanoseconds: .min)

        /// `now`, or the latest transmission's time if that is later: the transport sees time go forward.
        mutating func transmissionTime(_ now: ClockTime) -> ClockTime {
            lastTransmit = max(lastTransmit, now)
            return lastTransmit
        }
    }

    /// Binds the UDP sockets the configuration describes (`UDPRTPTransport(sending:)`); nothing is
    /// sent before the first frame.
    public convenience init(packetizer: Packetizer, configuration: Configuration, clock: any MediaClock = SystemClock()) throws {
        try self.init(packetizer: packetizer, configuration: configuration,
                      transport: UDPRTPTransport(sending: configuration), clock: clock)
    }

    /// A session over `transport`, which it owns from now on (`close()` closes it).
    public init(packetizer: Packetizer, configuration: Configuration, transport: any RTPDatagramTransport,
                clock: any MediaClock = SystemClock()) {
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        let sender = RTPSender(packetizer: packetizer, configuration: configuration.sender)
        let packetBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: sender.maxPacketSize + transport.rtpOverhead,
                                                                 alignment: 16)
        outgoing = Locked(Outgoing(sender: sender, packetBuffer: packetBuffer))
        // The stream starts with a keyframe: receivers heard within the first interval had it.
        receivers = Locked(ReceiversHeard(lastKeyframe: clock.now))
    }

    deinit {
        close()
        outgoing.withLock { $0.packetBuffer.deallocate() }
    }

    /// Starts reading RTCP. Frames can be sent before, but feedback is answered only after.
    /// Until `close()`, the reactor's handlers hold the session.
    public func start() {
        guard rtcpThread == nil, reactorFeedback == nil else { return }
        let descriptors = transport.readinessDescriptors
        let reactor = SocketReactor.shared
        guard !descriptors.isEmpty else {
            rtcpThread = WorkerThread { [self] in
                while !stopping.load(ordering: .relaxed) { serviceTransport(timeout: Self.impairmentPollInterval) }
            }
            return
        }
        let watches = Locked<[ReactorRegistration]>([])
        let timer = reactor.timer { [self] in doPeriodicDuties() }
        reactorFeedback = (watches, timer)
        for descriptor in descriptors {
            guard let watch = try? reactor.register(descriptor: descriptor, handler: { [self] in
                readFeedback(waiting: .zero)
                watches.withLock { $0.forEach { $0.rearm() } }
            }) else { continue }
            watches.withLock { $0.append(watch) }
            // Its first readiness may have come before it was in `watches`, which then re-armed nothing.
            watch.rearm()
        }
        timer.schedule(at: SystemClock().now)
    }

    /// The reactor timer's turn: the transport's due work and sender report, then the next turn at
    /// the next report, the transport's next due work, or sooner while an impairment holds packets.
    private func doPeriodicDuties() {
        let now = clock.now
        var next = now + configuration.reportInterval
        outgoing.withLock { outgoing in
            sendDueWork(at: now, outgoing: &outgoing)
            if let report = outgoing.nextReport { next = min(next, report) }
        }
        if let due = transport.nextDue { next = min(next, due) }
        if transport.impairment != nil { next = min(next, now + Self.impairmentPollInterval) }
        reactorFeedback?.timer.schedule(at: SystemClock().now + max(.zero, next - now))
    }

    /// Stops the reactor's handlers: when this returns, none runs or will run.
    private func stopReactorFeedback() {
        guard let (watches, timer) = reactorFeedback else { return }
        for watch in watches.withLock({ $0 }) { watch.cancel() }
        // Each handler holds `watches`, which holds the registrations: a cycle through the session.
        watches.withLock { $0 = [] }
        timer.cancel()
        reactorFeedback = nil
    }

    /// Traces the frames sent in `tracer`, which from now on maps pts to this stream's RTP timestamps.
    public func trace(with tracer: FrameTracer) {
        tracer.mapTimestamps(.sending, clockRate: Packetizer.clockRate, offset: configuration.sender.timestampOffset)
        self.tracer = tracer
    }

    /// Sends `frame` as RTP packets now, and a sender report when one is due.
    public func send(_ frame: EncodedFrame) throws {
        let now = clock.now
        guard let tracer else {
            try outgoing.withLock { outgoing in
                let buffer = outgoing.packetBuffer, now = outgoing.transmissionTime(now)
                try outgoing.sender.send(frame, at: now, into: buffer) { (packet: RTPPacketParts) in
                    try transmit(buffer, packet, at: now)
                }
                try sendReportIfDue(at: now, outgoing: &outgoing)
            }
            return
        }
        let timestamp = Packetizer.rtpTimestamp(of: frame.pts, offset: configuration.sender.timestampOffset)
        tracer.record(.packetize, rtpTimestamp: timestamp)
        // Each packet's time is read before it goes out: the receiver may have it before `send` returns.
        var sent = (first: ClockTime?.none, last: ClockTime.zero)
        try outgoing.withLock { outgoing in
            let buffer = outgoing.packetBuffer, now = outgoing.transmissionTime(now)
            try outgoing.sender.send(frame, at: now, into: buffer) { (packet: RTPPacketParts) in
                sent.last = tracer.now
                if sent.first == nil { sent.first = sent.last }
                try transmit(buffer, packet, at: now)
            }
            try sendReportIfDue(at: now, outgoing: &outgoing)
        }
        if let first = sent.first {
            tracer.record(.sendFirst, rtpTimestamp: timestamp, at: first)
            tracer.record(.sendLast, rtpTimestamp: timestamp, at: sent.last)
        }
    }

    /// What the session has sent and heard; safe to read from any thread.
    public var statistics: RTPSendStatistics {
        outgoing.withLock { outgoing in
            var statistics = heard.withLock { $0 }
            statistics.framesSent = outgoing.sender.statistics.frameCount
            statistics.senderReports = outgoing.senderReports
            statistics.packetsSent = outgoing.sender.statistics.packetCount
            statistics.payloadBytesSent = outgoing.sender.statistics.octetCount
            statistics.retransmissions = outgoing.sender.statistics.retransmissions
            statistics.retransmittedPayloadBytes = outgoing.sender.statistics.retransmittedOctetCount
            statistics.retransmissionsMissed = outgoing.sender.statistics.retransmissionsMissed
            statistics.tailProbes = outgoing.tailProbes
            statistics.impairment = transport.impairment
            statistics.srtp = transport.sentProtection
            return statistics
        }
    }

    /// Keeps answering NACKs for `linger`, stops reading feedback (the reactor's handlers have
    /// returned and will not run again), sends what the impairment still holds, a last sender
    /// report and a BYE (RFC 3550 §6.6), and closes the transport: `closeStep()` until it is done,
    /// sleeping in between. Safe to call more than once, and from any thread.
    public func close() {
        while let wait = closeStep() { clock.sleep(until: clock.now + wait, unless: StopSignal()) }
    }

    /// One turn of `close()` that never sleeps: what a caller that must not hold its thread for the
    /// linger (a graph's sender node) calls, again after the returned time, until it returns nil
    /// (closed).
    ///
    /// A tail-loss probe, the last packet sent again, opens the linger, and another comes halfway:
    /// a receiver that lost the stream's last packets has no later one to show the gap, and it
    /// ends at the BYE (RFC 3550 §6.3.4), so without a probe nothing would NACK them (RFC 4585
    /// §6.2.1). The second covers a first one lost with them (a full socket buffer drops runs).
    public func closeStep() -> ClockTime? {
        closing.withLock { closing in
            switch closing {
            case .closed: return nil
            case .open:
                let lingers = (rtcpThread != nil || reactorFeedback != nil) && configuration.linger > .zero
                    && outgoing.withLock { $0.sender.statistics.packetCount > 0 }
                guard lingers else { break }
                closing = .lingering(since: clock.now, probesSent: 0)
                return lingerStep(&closing)
            case .lingering:
                if let wait = lingerStep(&closing) { return wait }
            }
            closing = .closed
            finishClosing()
            return nil
        }
    }

    /// Where `close()` stands.
    private enum Closing {
        case open
        /// Answering NACKs, with a tail-loss probe at the start and halfway.
        case lingering(since: ClockTime, probesSent: Int)
        case closed
    }

    /// Sends the tail-loss probes that are due; how long until the next turn, nil when the linger is over.
    private func lingerStep(_ closing: inout Closing) -> ClockTime? {
        guard case .lingering(let start, var probesSent) = closing else { return nil }
        let now = clock.now, half = ClockTime(nanoseconds: configuration.linger.nanoseconds / 2)
        while probesSent < 2 && now >= start + ClockTime(nanoseconds: half.nanoseconds * Int64(probesSent)) {
            sendTailProbe()
            probesSent += 1
        }
        closing = .lingering(since: start, probesSent: probesSent)
        let next = probesSent < 2 ? start + half : start + configuration.linger
        return now < next ? next - now : nil
    }

    /// The end of `close()` after the linger.
    private func finishClosing() {
        stopping.store(true, ordering: .relaxed)
        rtcpThread?.join()
        rtcpThread = nil
        stopReactorFeedback()
        // Whatever is still "in the network" arrives.
        outgoing.withLock { outgoing in
            try? transport.sendDue(until: .max)
            guard outgoing.sender.statistics.packetCount > 0 else { return }
            try? transport.sendRTCP(reportPackets(outgoing) + [.goodbye(Goodbye(sources: [configuration.sender.ssrc], reasonText: "end of stream"))],
                                    at: clock.now)
        }
        transport.close()
    }

    // MARK: Sending

    /// Hands the packet of `length` bytes at the start of `buffer` to the transport, which protects
    /// it there in place and sends it.
    private func transmit(_ buffer: UnsafeMutableRawBufferPointer, _ length: Int, at now: ClockTime) throws {
        try transport.sendRTP(buffer, length: length, at: now)
    }

    /// A packet sent as written: its head in `buffer`, its tail read from the frame by the transport.
    private func transmit(_ buffer: UnsafeMutableRawBufferPointer, _ packet: RTPPacketParts, at now: ClockTime) throws {
        try transport.sendRTP(buffer, packet, at: now)
    }

    /// Sends the stream's last packet again (as RTX when configured, RFC 4588 §4).
    private func sendTailProbe() {
        let now = clock.now
        outgoing.withLock { outgoing in
            let buffer = outgoing.packetBuffer, now = outgoing.transmissionTime(now)
            if (try? outgoing.sender.resendLast(into: buffer) { try transmit(buffer, $0, at: now) }) == true {
                outgoing.tailProbes += 1
            }
        }
    }

    private func sendReportIfDue(at now: ClockTime, outgoing: inout Outgoing) throws {
        guard now >= outgoing.nextReport ?? now else { return }
        outgoing.nextReport = now + configuration.reportInterval
        try transport.sendRTCP(reportPackets(outgoing), at: now)
        outgoing.senderReports += 1
    }

    /// A sender report and the SDES with the CNAME, which open every compound the session sends
    /// (RFC 3550 §6.1). The report pairs its RTP timestamp with the wall clock of one instant
    /// (§6.4.1), so the session's clock is read here beside it: a caller's `now` may be from before
    /// a frame's packets went out.
    private func reportPackets(_ outgoing: borrowing Outgoing) -> [RTCPPacket] {
        [.senderReport(outgoing.sender.senderReport(at: clock.now, wallClock: .now)),
         .sourceDescription(SourceDescription(source: configuration.sender.ssrc, cname: configuration.cname))]
    }

    // MARK: Feedback

    /// One turn of the RTCP thread (`start()` over a transport the reactor cannot watch), or of a
    /// caller driving the session by hand: waits up to `timeout` (less when the transport has work
    /// due sooner) for the receiver's RTCP and answers it, then lets the transport send what it has
    /// due and sends a sender report when one is due.
    public func serviceTransport(timeout: ClockTime) {
        var wait = timeout
        if let due = transport.nextDue { wait = max(.zero, min(wait, due - clock.now)) }
        readFeedback(waiting: wait)
        let now = clock.now
        outgoing.withLock { sendDueWork(at: now, outgoing: &$0) }
    }

    /// Lets the transport send what it has due by `now`, and sends a sender report when one is due.
    private func sendDueWork(at now: ClockTime, outgoing: inout Outgoing) {
        try? transport.sendDue(until: now)
        if outgoing.sender.statistics.packetCount > 0 { try? sendReportIfDue(at: now, outgoing: &outgoing) }
    }

    /// Answers the RTCP that arrives within `timeout` and what else is queued (a batch at most).
    /// Reports are timed by when the kernel had them (`receive(timeout:withQueueTimes:)`): the round
    /// trip from their LSR and DLSR (RFC 3550 §6.4.1) then leaves out how long they waited unread.
    private func readFeedback(waiting timeout: ClockTime) {
        _ = try? transport.receive(timeout: timeout, withQueueTimes: { [self] packet, queuedFor in
            let now = clock.now
            switch packet {
            case .rtcp(let bytes): return handleRTCP(bytes, at: now, queuedFor: queuedFor)
            case .rtp:
                // A sender expects feedback only: anything else is malformed RTCP to it.
                heard.withLock { $0.malformedRTCP += 1 }
                return false
            case .unprotectFailed:
                heard.withLock { $0.unprotectFailures += 1 }
                return false
            }
        })
    }

    /// Handles one RTCP compound packet from the receiver, unprotected, that arrived at `now`:
    /// retransmits what a NACK lists, calls `onKeyframeRequest` for PLI or FIR, notes reception
    /// reports. Safe from any thread. Returns false, counted, when the packet is malformed.
    @discardableResult
    public func receiveRTCP(_ bytes: UnsafeRawBufferPointer, at now: ClockTime) -> Bool {
        handleRTCP(bytes, at: now, queuedFor: .zero)
    }

    /// `receiveRTCP`, for a packet that waited `queuedFor` in the kernel before it was read.
    private func handleRTCP(_ bytes: UnsafeRawBufferPointer, at now: ClockTime, queuedFor: ClockTime) -> Bool {
        guard let compound = try? RTCPCompoundPacket(parsing: bytes, reducedSize: true) else {
            heard.withLock { $0.malformedRTCP += 1 }
            return false
        }
        let ssrc = configuration.sender.ssrc
        var keyframeRequested = false
        for packet in compound.packets {
            switch packet {
            case .genericNACK(let nack) where nack.mediaSSRC == ssrc:
                heard.withLock { $0.nacksReceived += 1 }
                outgoing.withLock { outgoing in
                    let buffer = outgoing.packetBuffer, now = outgoing.transmissionTime(now)
                    try? outgoing.sender.retransmit(nack, into: buffer) { try transmit(buffer, $0, at: now) }
                }
            case .pictureLossIndication(let pli) where pli.mediaSSRC == ssrc:
                heard.withLock { $0.pliReceived += 1 }
                keyframeRequested = true
            case .fullIntraRequest(let fir) where fir.entries.contains { $0.ssrc == ssrc }:
                heard.withLock { $0.firReceived += 1 }
                keyframeRequested = true
            case .receiverReport(let report):
                note(report.reportBlocks, arrival: .now(minus: queuedFor))
                keyframeRequested = newReceiver(report.ssrc, blocks: report.reportBlocks, at: now) || keyframeRequested
            case .senderReport(let report):
                note(report.reportBlocks, arrival: .now(minus: queuedFor))
                keyframeRequested = newReceiver(report.ssrc, blocks: report.reportBlocks, at: now) || keyframeRequested
            case .goodbye:
                heard.withLock { $0.goodbyeReceived = true }
            default:
                break
            }
        }
        if keyframeRequested {
            heard.withLock { $0.keyframeRequests += 1 }
            onKeyframeRequest?()
        }
        return true
    }

    /// Whether `reporter`'s report, with `blocks` about this stream, is the first from a new
    /// receiver and a keyframe should go to it (`Configuration.keyframeOnNewReceiver`).
    private func newReceiver(_ reporter: UInt32, blocks: [ReportBlock], at now: ClockTime) -> Bool {
        guard configuration.keyframeOnNewReceiver, blocks.contains(where: { $0.ssrc == configuration.sender.ssrc }) else { return false }
        let interval = configuration.newReceiverKeyframeInterval
        guard receivers.withLock({ $0.noteNew(reporter, at: now, interval: interval) }) else { return false }
        heard.withLock { $0.newReceivers += 1 }
        return true
    }

    /// Reception quality and round-trip time from the blocks about this stream, of a report that
    /// arrived at `arrival` on the wall clock (RFC 3550 §6.4.1).
    private func note(_ blocks: [ReportBlock], arrival: NTPTimestamp) {
        heard.withLock { statistics in
            for block in blocks where block.ssrc == configuration.sender.ssrc {
                statistics.receiverReports += 1
                statistics.fractionLost = Double(block.fractionLost) / 256
                statistics.cumulativeLost = Int(block.cumulativeLost)
                if let rtt = block.roundTripTime(arrival: arrival) { statistics.roundTripTime = rtt }
            }
        }
    }
}

/// What an `RTPSendSession` has sent and what its receiver reported.
public struct RTPSendStatistics: Sendable, Hashable {
    public var framesSent = 0
    /// RTP packets (not counting retransmissions) and their payload bytes.
    public var packetsSent = 0
    public var payloadBytesSent = 0
    /// Packets sent again: for NACKs, and the tail probes.
    public var retransmissions = 0
    /// The last packet sent again before the BYE, for a receiver that lost the stream's tail (see `close()`).
    public var tailProbes = 0
    /// NACKed packets no longer in the history.
    public var retransmissionsMissed = 0
    public var nacksReceived = 0
    /// Compound packets with a PLI or FIR (each a keyframe request), and the PLIs and FIRs themselves;
    /// with `keyframeOnNewReceiver`, also the first report of a new receiver (`newReceivers`).
    public var keyframeRequests = 0
    /// Receivers whose first report asked for a keyframe (`Configuration.keyframeOnNewReceiver`).
    public var newReceivers = 0
    public var pliReceived = 0
    public var firReceived = 0
    /// Bytes of retransmitted payloads (RTX's original sequence numbers not counted).
    public var retransmittedPayloadBytes = 0
    public var senderReports = 0
    public var receiverReports = 0
    /// The receiver's latest figures (RFC 3550 §6.4.1).
    public var fractionLost: Double?
    public var cumulativeLost: Int?
    /// Seconds, from the last receiver report that had an LSR.
    public var roundTripTime: Double?
    public var malformedRTCP = 0
    /// SRTCP packets that failed authentication or replay checks (dropped).
    public var unprotectFailures = 0
    public var goodbyeReceived = false
    /// What the impairment did, when one is configured.
    public var impairment: ImpairmentStatistics?
    /// Packets protected, when SRTP is on.
    public var srtp: SRTPStatistics?

    public init() {}
}

extension NTPTimestamp {
    /// The wall clock now (CLOCK_REALTIME), for sender reports and round-trip times.
    public static var now: NTPTimestamp { now(minus: .zero) }

    /// The wall clock `span` ago: when a packet that waited `span` in the kernel arrived.
    static func now(minus span: ClockTime) -> NTPTimestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return NTPTimestamp(unixSeconds: Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9 - span.seconds)
    }
}

/// The reporting SSRCs a sender has heard, in a fixed ring (a flood of forged reports evicts the
/// oldest and grows nothing), and when a new one last earned a keyframe.
struct ReceiversHeard: Sendable {
    static let capacity = 32
    private var ssrcs = [UInt32](repeating: 0, count: capacity)
    private var count = 0
    private var next = 0
    private var lastKeyframe: ClockTime

    init(lastKeyframe: ClockTime) { self.lastKeyframe = lastKeyframe }

    /// Notes `ssrc`; true when it was not heard before and no new receiver got a keyframe within `interval`.
    mutating func noteNew(_ ssrc: UInt32, at now: ClockTime, interval: ClockTime) -> Bool {
        guard !ssrcs[0..<count].contains(ssrc) else { return false }
        ssrcs[next] = ssrc
        next = (next + 1) % Self.capacity
        count = min(count + 1, Self.capacity)
        guard now - lastKeyframe >= interval else { return false }
        lastKeyframe = now
        return true
    }
}
