import Glibc
import MediaCore
import MediaRTP
import MediaSRTP
import Synchronization

/// The sending end of one RTP stream over UDP (RFC 3550): frames go out as packets from an
/// `RTPSender`; a thread of its own reads the receiver's RTCP and answers it — NACKs with
/// retransmissions (RFC 4585 §6.2.1, as RTX when configured, RFC 4588), PLI and FIR (RFC 4585
/// §6.3.1, RFC 5104 §4.3.1) with `onKeyframeRequest`, receiver reports with a round-trip time — and
/// sends a sender report with the source's CNAME every `reportInterval` and a BYE at the end.
///
/// ```
///   send(frame) ─▶ RTPSender ─▶ [impairment] ─▶ RTP socket ─▶ remote
///                      ▲                                          │
///   onKeyframeRequest ◀┴── NACK / PLI / FIR / RR ◀── RTCP thread ◀┘
/// ```
///
/// The send path allocates nothing per packet once warm (without impairment): packets are written
/// into the sender's history and sent from there.
public final class RTPSendSession<Packetizer: RTPPacketizer>: @unchecked Sendable {
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
        /// repaired too.
        public var linger: ClockTime = .milliseconds(300)
        /// SRTP (RFC 3711): what goes out is protected with this key, and the RTCP that comes back
        /// is checked with it (an SDES key covers the stream both ways, RFC 4568 §6.1).
        public var srtp: SRTPParameters?

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
    public let sockets: RTPSessionSockets
    /// Called on the RTCP thread when the receiver asks for a keyframe (PLI or FIR).
    public var onKeyframeRequest: (@Sendable () -> Void)?
    /// Records `packetize`, `sendFirst` and `sendLast` of each frame; set with `trace(with:)`.
    public private(set) var tracer: FrameTracer?
    private let clock: any MediaClock
    private let outgoing: Mutex<Outgoing>
    /// Lock order: `outgoing`, then `impairment`, then `heard`.
    private let impairment: Mutex<NetworkImpairment<[UInt8]>?>
    private let heard = Mutex(RTPSendStatistics())
    /// SRTP: the outgoing side is used under `outgoing`'s lock, the incoming one on the RTCP thread.
    private let outbound: SRTPSession?
    private let inbound: SRTPSession?
    private let stopping = Atomic<Bool>(false)
    private var rtcpThread: WorkerThread?
    private var closed = false

    /// The sender and what only the sending side counts.
    private struct Outgoing: @unchecked Sendable {
        var sender: RTPSender<Packetizer>
        /// Where a packet is copied to be protected (the history keeps the plain one), allocated once.
        var protectBuffer: UnsafeMutableRawBufferPointer?
        var senderReports = 0
        var nextReport: ClockTime?
    }

    /// Binds the sockets; nothing is sent before the first frame.
    public init(packetizer: Packetizer, configuration: Configuration, clock: any MediaClock = SystemClock()) throws {
        self.configuration = configuration
        self.clock = clock
        (outbound, inbound) = try configuration.srtp?.sessions() ?? (nil, nil)
        sockets = try RTPSessionSockets(local: configuration.local, multiplexed: configuration.multiplexed)
        let sender = RTPSender(packetizer: packetizer, configuration: configuration.sender)
        let protectBuffer = outbound.map {
            UnsafeMutableRawBufferPointer.allocate(byteCount: sender.maxPacketSize + $0.rtpOverhead, alignment: 16)
        }
        outgoing = Mutex(Outgoing(sender: sender, protectBuffer: protectBuffer))
        impairment = Mutex(configuration.impairment.map { NetworkImpairment(profile: $0) })
    }

    deinit {
        close()
        outgoing.withLock { $0.protectBuffer?.deallocate() }
    }

    /// Starts reading RTCP. Frames can be sent before, but feedback is answered only after.
    public func start() {
        guard rtcpThread == nil else { return }
        rtcpThread = WorkerThread { [self] in readRTCP() }
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
                let protectBuffer = outgoing.protectBuffer
                try outgoing.sender.send(frame, at: now) { try transmit($0, at: now, protectingIn: protectBuffer) }
                try sendReportIfDue(at: now, outgoing: &outgoing)
            }
            return
        }
        let timestamp = Packetizer.rtpTimestamp(of: frame.pts, offset: configuration.sender.timestampOffset)
        tracer.record(.packetize, rtpTimestamp: timestamp)
        // Each packet's time is read before it goes out: the receiver may have it before `send` returns.
        var sent = (first: ClockTime?.none, last: ClockTime.zero)
        try outgoing.withLock { outgoing in
            let protectBuffer = outgoing.protectBuffer
            try outgoing.sender.send(frame, at: now) { packet in
                sent.last = tracer.now
                if sent.first == nil { sent.first = sent.last }
                try transmit(packet, at: now, protectingIn: protectBuffer)
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
            statistics.impairment = impairment.withLock { $0?.statistics }
            statistics.srtp = outbound?.statistics
            return statistics
        }
    }

    /// Keeps answering NACKs for `linger`, sends what the impairment still holds, a last sender
    /// report and a BYE (RFC 3550 §6.6), stops the RTCP thread and closes the sockets. Safe to call
    /// more than once.
    public func close() {
        guard !closed else { return }
        closed = true
        if rtcpThread != nil, outgoing.withLock({ $0.sender.statistics.packetCount > 0 }) {
            clock.sleep(until: clock.now + configuration.linger, unless: StopSignal())
        }
        stopping.store(true, ordering: .relaxed)
        rtcpThread?.join()
        rtcpThread = nil
        // Whatever is still "in the network" arrives.
        try? flushImpairment(until: .max)
        outgoing.withLock { outgoing in
            guard outgoing.sender.statistics.packetCount > 0 else { return }
            try? sendRTCP([.senderReport(outgoing.sender.senderReport(at: clock.now, wallClock: .now)),
                           .sourceDescription(SourceDescription(source: configuration.sender.ssrc, cname: configuration.cname)),
                           .goodbye(Goodbye(sources: [configuration.sender.ssrc], reasonText: "end of stream"))])
        }
        sockets.close()
    }

    // MARK: Sending

    /// Sends `packet`, as SRTP (copied into `protectBuffer` and protected there) when configured.
    private func transmit(_ packet: UnsafeRawBufferPointer, at now: ClockTime, protectingIn protectBuffer: UnsafeMutableRawBufferPointer?) throws {
        var packet = packet
        if let outbound, let protectBuffer {
            protectBuffer.copyMemory(from: packet)
            let length = try outbound.protect(protectBuffer, length: packet.count)
            packet = UnsafeRawBufferPointer(rebasing: protectBuffer[0..<length])
        }
        guard configuration.impairment != nil else {
            try sockets.rtp.send(packet, to: configuration.remote)
            return
        }
        // The impairment holds copies (an allocation per packet: a test tool, not the hot path).
        _ = impairment.withLock { $0!.submit(Array(packet), bytes: packet.count, at: now) }
        try flushImpairment(until: now)
    }

    private func flushImpairment(until now: ClockTime) throws {
        try impairment.withLock { impairment in
            guard impairment != nil else { return }
            while let packet = impairment!.deliverNext(until: now) {
                try packet.withUnsafeBytes { try sockets.rtp.send($0, to: configuration.remote) }
            }
        }
    }

    private func sendReportIfDue(at now: ClockTime, outgoing: inout Outgoing) throws {
        guard now >= outgoing.nextReport ?? now else { return }
        outgoing.nextReport = now + configuration.reportInterval
        try sendRTCP([.senderReport(outgoing.sender.senderReport(at: now, wallClock: .now)),
                      .sourceDescription(SourceDescription(source: configuration.sender.ssrc, cname: configuration.cname))])
        outgoing.senderReports += 1
    }

    private func sendRTCP(_ packets: [RTCPPacket]) throws {
        try sockets.sendRTCP(packets, to: configuration.rtcpDestination, protection: outbound)
    }

    // MARK: Feedback

    /// The RTCP thread: reads the receiver's packets until `close()`, and keeps impaired packets and
    /// sender reports flowing between frames.
    private func readRTCP() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !stopping.load(ordering: .relaxed) {
            // Wake for the next impaired packet due, else at least every 20 ms to notice `close()`.
            var wait = ClockTime.milliseconds(20)
            if let due = impairment.withLock({ $0?.nextDelivery }) { wait = max(.zero, min(wait, due - clock.now)) }
            let received = buffer.withUnsafeMutableBytes { try? sockets.rtcp.receive(into: $0, timeout: wait) }
            let now = clock.now
            if let received = received ?? nil {
                buffer.withUnsafeMutableBytes { raw in
                    guard let length = unprotect(raw, length: received.count) else { return }
                    handleRTCP(UnsafeRawBufferPointer(rebasing: raw[0..<length]), at: now)
                }
            }
            try? flushImpairment(until: now)
            outgoing.withLock { outgoing in
                if outgoing.sender.statistics.packetCount > 0 { try? sendReportIfDue(at: now, outgoing: &outgoing) }
            }
        }
    }

    /// The length of the RTCP packet in `buffer` once SRTCP is checked and decrypted (when
    /// configured); nil, counted, when it fails (a tampered, replayed or foreign packet).
    private func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Int? {
        guard let inbound else { return length }
        do { return try inbound.unprotectRTCP(buffer, length: length) } catch {
            heard.withLock { $0.unprotectFailures += 1 }
            return nil
        }
    }

    private func handleRTCP(_ bytes: UnsafeRawBufferPointer, at now: ClockTime) {
        guard let compound = try? RTCPCompoundPacket(parsing: bytes, reducedSize: true) else {
            heard.withLock { $0.malformedRTCP += 1 }
            return
        }
        let ssrc = configuration.sender.ssrc
        var keyframeRequested = false
        for packet in compound.packets {
            switch packet {
            case .genericNACK(let nack) where nack.mediaSSRC == ssrc:
                heard.withLock { $0.nacksReceived += 1 }
                outgoing.withLock { outgoing in
                    let protectBuffer = outgoing.protectBuffer
                    try? outgoing.sender.retransmit(nack) { try transmit($0, at: now, protectingIn: protectBuffer) }
                }
            case .pictureLossIndication(let pli) where pli.mediaSSRC == ssrc:
                heard.withLock { $0.pliReceived += 1 }
                keyframeRequested = true
            case .fullIntraRequest(let fir) where fir.entries.contains { $0.ssrc == ssrc }:
                heard.withLock { $0.firReceived += 1 }
                keyframeRequested = true
            case .receiverReport(let report):
                note(report.reportBlocks)
            case .senderReport(let report):
                note(report.reportBlocks)
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
    }

    /// Reception quality and round-trip time from the blocks about this stream (RFC 3550 §6.4.1).
    private func note(_ blocks: [ReportBlock]) {
        heard.withLock { statistics in
            for block in blocks where block.ssrc == configuration.sender.ssrc {
                statistics.receiverReports += 1
                statistics.fractionLost = Double(block.fractionLost) / 256
                statistics.cumulativeLost = Int(block.cumulativeLost)
                if let rtt = block.roundTripTime(arrival: .now) { statistics.roundTripTime = rtt }
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
    public var retransmissions = 0
    /// NACKed packets no longer in the history.
    public var retransmissionsMissed = 0
    public var nacksReceived = 0
    /// Compound packets with a PLI or FIR (each a keyframe request), and the PLIs and FIRs themselves.
    public var keyframeRequests = 0
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
    public static var now: NTPTimestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return NTPTimestamp(unixSeconds: Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9)
    }
}
