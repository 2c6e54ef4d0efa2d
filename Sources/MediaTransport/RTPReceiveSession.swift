import MediaCore
import MediaRTP
import MediaSRTP

/// The receiving end of one RTP stream (RFC 3550) over a datagram transport (`RTPDatagramTransport`:
/// UDP with optional SDES SRTP, or a peer's bundled ICE + DTLS-SRTP transport): packets from the
/// transport go into a `JitterBuffer`, which hands out whole, decodable frames at their playout
/// time; what the jitter buffer asks for goes back as RTCP feedback — NACK (RFC 4585 §6.2.1) and
/// PLI (§6.3.1) at once, receiver reports with the source's CNAME every `reportInterval` (RFC 3550
/// §6.4.2).
///
/// ```
///   remote ─▶ transport ─▶ receiveRTP ─▶ JitterBuffer ─▶ next(until:) ─▶ frame
///     ▲                                  │ NACK, PLI, reception report
///     └──────────── transport ◀──────────┘        (SR and BYE come in the other way, receiveRTCP)
/// ```
///
/// One thread at a time calls `next(until:)`, which blocks in the transport until a frame is due,
/// or `poll()`, which never blocks: a caller woken by `SocketReactor` when the transport's
/// `readinessDescriptors` turn readable polls, and sleeps until `timeToNextDeadline()` otherwise, so
/// the session needs no thread of its own. `receiveRTP(_:at:)` and `receiveRTCP(_:at:)` run on
/// that caller's thread too.
///
/// **Hostile traffic.** Whatever else reaches the port is counted by reason and dropped, and
/// disturbs nothing: datagrams that are not RTP (`malformedPackets`), larger than the jitter
/// buffer keeps (`oversizedPackets`), of another SSRC or payload type (`foreignPackets`), of a
/// source still on probation that never proved itself (`probationPackets`), SRTP that fails
/// authentication or replay checks (`unprotectFailures`, split in `srtp`), RTCP that does not parse
/// (`malformedRTCP`) or says nothing of the stream (`foreignRTCP`: it neither ends the stream nor
/// teaches where feedback goes). The stream is the SSRC configured (an SDP's `a=ssrc`, RFC 5576
/// §4.1), else the first source of the configured payload type (or any) to send
/// `SourceProbation.minimumSequential` packets in sequence (RFC 3550 §A.1); it is never changed
/// after. The probation's held packets live in buffers allocated once. Another source's RTCP is
/// told apart without decoding it (`RTCPCompoundPacket.isFrom`), so that a flood of report bombs
/// costs little more than its reads; what the kernel dropped unread when the reader fell behind
/// is counted too (`kernelDrops`).
public final class RTPReceiveSession<Depacketizer: RTPDepacketizer>: @unchecked Sendable {
    /// The session's settings. The addresses and `srtp` configure the UDP transport that
    /// `init(depacketizer:configuration:clock:pool:)` builds; a session given its transport ignores them.
    public struct Configuration: Sendable {
        /// Where to listen for RTP (and RTCP, when multiplexed).
        public var local: SocketAddress
        /// RTP and RTCP on one port (RFC 5761); else RTCP on `rtcpPort`, default the RTP port + 1.
        public var multiplexed: Bool
        public var rtcpPort: UInt16?
        /// Where feedback goes; default: where the sender's RTCP comes from (before any, its RTP
        /// source address, port + 1 unless multiplexed).
        public var remoteRTCP: SocketAddress?
        /// The media payload type to accept; nil accepts the first one heard.
        public var payloadType: UInt8?
        /// The stream to accept; nil accepts the first one heard.
        public var ssrc: UInt32?
        public var jitterBuffer: JitterBuffer<Depacketizer>.Configuration
        /// This receiver's own SSRC, named in its reports and feedback.
        public var localSSRC: UInt32
        public var cname: String
        public var reportInterval: ClockTime
        /// SRTP (RFC 3711): packets that fail its checks are counted and dropped.
        public var srtp: SRTPParameters?

        public init(local: SocketAddress, multiplexed: Bool = false, rtcpPort: UInt16? = nil,
                    remoteRTCP: SocketAddress? = nil, payloadType: UInt8? = nil, ssrc: UInt32? = nil,
                    jitterBuffer: JitterBuffer<Depacketizer>.Configuration = .init(),
                    localSSRC: UInt32 = .random(in: 1...UInt32.max), cname: String = "sluice-receiver",
                    reportInterval: ClockTime = .seconds(1)) {
            self.local = local
            self.multiplexed = multiplexed
            self.rtcpPort = rtcpPort
            self.remoteRTCP = remoteRTCP
            self.payloadType = payloadType
            self.ssrc = ssrc
            self.jitterBuffer = jitterBuffer
            self.localSSRC = localSSRC
            self.cname = cname
            self.reportInterval = reportInterval
        }
    }

    /// What `next(until:)` returns.
    public enum Event {
        case frame(EncodedFrame)
        /// The sender said BYE (RFC 3550 §6.6) and every frame before it has been handed out.
        case goodbye
        /// The deadline came first.
        case timedOut
    }

    public let configuration: Configuration
    /// What packets come from and feedback goes over.
    public let transport: any RTPDatagramTransport
    /// The UDP sockets, when the transport is `UDPRTPTransport`.
    public var sockets: RTPSessionSockets? { (transport as? UDPRTPTransport)?.sockets }
    /// Records `receiveFirst`, `receiveLast` and `jitterRelease` of each frame, and maps the
    /// tracer's receiving timestamps at the first frame; set before receiving. Arrival times are the
    /// session clock's: give the tracer the same clock.
    public var tracer: FrameTracer?
    private let clock: any MediaClock
    /// Whether packets are timed by when the kernel had them (see `receive`): on the system's
    /// clock only, so that a `ManualClock` run stays deterministic.
    private let timesByKernelArrival: Bool
    private var jitterBuffer: JitterBuffer<Depacketizer>
    private var stream: (ssrc: UInt32, payloadType: UInt8)?
    private var probation: SourceProbation
    /// The last packet of each source on probation, `heldSlotSize` bytes a slot (see `SourceProbation`).
    private var held: [UInt8]
    private var heldLengths: [Int]
    private let heldSlotSize: Int
    private var goodbye = false
    /// When the BYE was heard, until what was queued before it has been taken in (see `next`).
    private var goodbyeDraining: ClockTime?
    /// How long after a BYE its stream's packets queued behind it are still read before the end.
    private static var goodbyeDrainLimit: ClockTime { .milliseconds(500) }
    private var closed = false
    /// When the last `receive` read a whole batch (more may wait in the kernel), the arrival of the
    /// last datagram it read; nil when it read less, and the queue was empty.
    private var readUpTo: ClockTime?
    /// The latest sender report of the stream's source: one instant as RTP time and NTP wall clock.
    private var senderClock: (rtpTimestamp: UInt32, ntp: NTPTimestamp)?
    /// Sender reports heard before probation chose a source (a sender's first SR often precedes
    /// its first RTP packet), at most `earlyReportLimit`, one per source.
    private var earlyReports: [(report: SenderReport, arrival: ClockTime)] = []
    private static var earlyReportLimit: Int { 4 }
    /// The RTP timestamp of pts zero of the frames handed out, from the first one.
    private var ptsOrigin: UInt32?
    private let publishedOrigin = Locked<Double?>(nil)
    private var nextReport: ClockTime?
    private var counts = RTPReceiveStatistics()
    private let published = Locked(RTPReceiveStatistics())

    /// Binds the UDP sockets the configuration describes (`UDPRTPTransport(receiving:)`); packets
    /// that arrive before the first `next(until:)` wait in the kernel.
    public convenience init(depacketizer: Depacketizer, configuration: Configuration, clock: any MediaClock = SystemClock(),
                            pool: BufferPool = BufferPool(name: "rtp-frames")) throws {
        try self.init(depacketizer: depacketizer, configuration: configuration,
                      transport: UDPRTPTransport(receiving: configuration), clock: clock, pool: pool)
    }

    /// A session over `transport`, which it owns from now on (`close()` closes it).
    public init(depacketizer: Depacketizer, configuration: Configuration, transport: any RTPDatagramTransport,
                clock: any MediaClock = SystemClock(), pool: BufferPool = BufferPool(name: "rtp-frames")) {
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        timesByKernelArrival = clock is SystemClock
        jitterBuffer = JitterBuffer(depacketizer: depacketizer, configuration: configuration.jitterBuffer, pool: pool)
        stream = configuration.ssrc.map { ($0, configuration.payloadType ?? 0) }
        probation = SourceProbation(chosen: configuration.ssrc)
        heldSlotSize = configuration.jitterBuffer.slotSize
        held = [UInt8](repeating: 0, count: configuration.ssrc == nil ? probation.capacity * heldSlotSize : 0)
        heldLengths = [Int](repeating: 0, count: probation.capacity)
    }

    /// The next frame due, waiting for packets until `deadline`; `.goodbye` once the sender has left
    /// and everything before its BYE is out.
    ///
    /// What is already queued is taken in first, before any frame is judged: when the calling thread
    /// was away (handing the last frame on, or starved on a busy machine), the retransmission a frame
    /// waits for may be in the socket while the frame's deadline has passed on the clock. And while
    /// more is queued than one read takes (a batch, so that a flood cannot hold this thread), frames
    /// are judged at the arrival of the last datagram read instead of now: what is still queued
    /// came after it, and a frame is not given up for packets that came in time and wait unread.
    public func next(until deadline: ClockTime) throws -> Event {
        try receive(timeout: .zero)
        while true {
            let now = clock.now
            if let heard = goodbyeDraining {
                // The BYE may overtake the stream's last packets (RTCP on a port of its own is read
                // first, and an RTP socket behind a flood has a long queue): what is queued is taken
                // in before the rest of the buffer is handed out at once, for a bounded time.
                if try receive(timeout: .zero), now < heard + Self.goodbyeDrainLimit {
                    // Polled (a shared worker): one batch a call, the rest when the socket wakes it again.
                    if deadline <= now { publish(); return .timedOut }
                    continue
                }
                goodbyeDraining = nil
            }
            if let frame = jitterBuffer.nextFrame(at: goodbye ? .max : min(now, readUpTo ?? now)) {
                if ptsOrigin == nil, let release = jitterBuffer.lastRelease {
                    ptsOrigin = release.rtpTimestamp &- UInt32(truncatingIfNeeded: frame.pts.value)
                }
                publish()
                if let tracer, let release = jitterBuffer.lastRelease { trace(frame, release, in: tracer) }
                return .frame(frame)
            }
            try sendFeedback(at: now)
            if goodbye { publish(); return .goodbye }
            if now >= deadline { publish(); return .timedOut }
            var wake = min(deadline, nextReport ?? deadline)
            if let due = jitterBuffer.nextDeadline { wake = min(wake, due) }
            try receive(timeout: max(.zero, wake - now))
        }
    }

    /// The frame due now, without waiting: what is queued is taken in (a batch at most, as in
    /// `next(until:)`), then `.timedOut` when no frame is due.
    public func poll() throws -> Event { try next(until: clock.now) }

    /// How long from now, on the session's clock, until the session has work with no packet
    /// arriving: a frame's release, a NACK or PLI (the jitter buffer's deadlines), the next receiver
    /// report, the end of the drain after a BYE. Nil when only a packet can change anything. A
    /// caller that `poll()`s polls again then, or when the transport is readable.
    public func timeToNextDeadline() -> ClockTime? {
        var due = jitterBuffer.nextDeadline
        if let report = nextReport { due = min(due ?? report, report) }
        if let heard = goodbyeDraining { due = min(due ?? .max, heard + Self.goodbyeDrainLimit) }
        return due.map { max(.zero, $0 - clock.now) }
    }

    private func trace(_ frame: EncodedFrame, _ release: JitterBuffer<Depacketizer>.Release, in tracer: FrameTracer) {
        if !tracer.hasMapping(.receiving) {
            // The jitter buffer's pts count in RTP units from its first frame's timestamp.
            let ticks = UInt32(truncatingIfNeeded: frame.pts.rescaled(to: Rational(1, Depacketizer.clockRate)).value)
            tracer.mapTimestamps(.receiving, clockRate: Depacketizer.clockRate, offset: release.rtpTimestamp &- ticks)
        }
        tracer.record(.receiveFirst, rtpTimestamp: release.rtpTimestamp, at: release.firstArrival)
        tracer.record(.receiveLast, rtpTimestamp: release.rtpTimestamp, at: release.lastArrival)
        // After the BYE the buffer releases everything at once; the frame leaves now.
        tracer.record(.jitterRelease, rtpTimestamp: release.rtpTimestamp, at: goodbye ? clock.now : release.releasedAt)
    }

    /// What the session received and sent; safe to read from any thread (updated at each `next`).
    public var statistics: RTPReceiveStatistics { published.withLock { $0 } }

    /// The sender's wall-clock time (NTP seconds since 1900) of pts zero of the frames handed out:
    /// the latest sender report's NTP time moved by the RTP time between its instant and the first
    /// frame's (RFC 3550 §6.4.1). Streams of one sender share that clock, so this places them on
    /// one timeline (lip sync). Nil before both a sender report and a frame; safe from any thread.
    public var originWallClock: Double? { publishedOrigin.withLock { $0 } }

    /// Sends a last receiver report and a BYE, and closes the transport.
    public func close() {
        guard !closed else { return }
        closed = true
        if stream != nil {
            try? sendRTCP(extra: [.goodbye(Goodbye(sources: [configuration.localSSRC]))], at: clock.now)
        }
        publish()
        transport.close()
    }

    // MARK: Receiving

    /// Hands what the transport receives within `timeout`, and what else is already queued (a batch
    /// at most), to `receiveRTP` and `receiveRTCP`; whether anything came. A packet arrived when the
    /// kernel stamped it (SO_TIMESTAMPNS on `UDPRTPTransport`), which may be well before the read
    /// when this thread was starved: the jitter (RFC 3550 §6.4.1), the frames' lateness, the round
    /// trips from NACKs and the DLSR of reports are then of the network, not of the scheduler.
    /// SRTP packets are decrypted in place, in the transport's read buffer: the jitter buffer appends a
    /// packet that comes in order straight to its frame from there, and copies others into a slot.
    @discardableResult
    func receive(timeout: ClockTime) throws -> Bool {
        var count = 0, lastArrival = ClockTime.zero
        defer { readUpTo = count >= UDPRTPTransport.batchLimit ? lastArrival : nil }
        return try transport.receive(timeout: timeout, unprotectingRTPInto: { nil },
                                     withQueueTimes: { [self] packet, queuedFor in
            let now = timesByKernelArrival ? clock.now - queuedFor : clock.now
            (count, lastArrival) = (count + 1, now)
            switch packet {
            case .rtp(let bytes, let truncated): return handleRTP(bytes, truncated: truncated, at: now)
            case .rtcp(let bytes): return receiveRTCP(bytes, at: now)
            case .unprotectFailed:
                counts.unprotectFailures += 1
                return false
            }
        })
    }

    /// Takes one RTP packet, unprotected, that arrived at `now`, into the jitter buffer when it is of
    /// the stream (or its RTX stream). Call it on the thread that calls `next(until:)`. Returns false,
    /// counted, when it is malformed or of another stream.
    @discardableResult
    public func receiveRTP(_ bytes: UnsafeRawBufferPointer, at now: ClockTime) -> Bool {
        handleRTP(bytes, truncated: false, at: now)
    }

    private func handleRTP(_ bytes: UnsafeRawBufferPointer, truncated: Bool, at now: ClockTime) -> Bool {
        if truncated {
            counts.oversizedPackets += 1
            return false
        }
        var packet = RTPPacket()
        do { try packet.parse(bytes) } catch {
            counts.malformedPackets += 1
            return false
        }
        let header = packet.header
        guard packet.payloadRange.count <= configuration.jitterBuffer.maxPacketSize else {
            counts.oversizedPackets += 1
            return false
        }
        let rtx = configuration.jitterBuffer.rtx
        let isRTX = rtx.map { header.payloadType == $0.payloadType && header.ssrc == $0.ssrc } ?? false
        guard isRTX || configuration.payloadType.map({ $0 == header.payloadType }) ?? true else {
            counts.foreignPackets += 1
            return false
        }
        if !isRTX && stream == nil {
            return probe(packet, in: bytes, at: now)
        }
        guard let stream, isRTX || (header.ssrc == stream.ssrc && header.payloadType == stream.payloadType) else {
            counts.foreignPackets += 1
            return false
        }
        insert(packet, in: bytes, isRTX: isRTX, at: now)
        return true
    }

    /// A packet heard before the stream is chosen: held while its source is on probation; when it
    /// proves the source, the packet held before it goes into the jitter buffer first.
    private func probe(_ packet: RTPPacket, in bytes: UnsafeRawBufferPointer, at now: ClockTime) -> Bool {
        let header = packet.header
        let waiting = probation.candidatesOnProbation
        switch probation.admit(ssrc: header.ssrc, sequenceNumber: header.sequenceNumber) {
        case .foreign:
            counts.foreignPackets += 1
            return false
        case .probation(let slot, let dropping):
            if dropping { counts.probationPackets += 1 }
            hold(bytes, in: slot)
            return false
        case .chosen(let releasing):
            stream = (header.ssrc, header.payloadType)
            for early in earlyReports where early.report.ssrc == header.ssrc { noteSenderReport(early.report, arrival: early.arrival) }
            earlyReports = []
            // Every other candidate's held packet is given up with its source.
            counts.probationPackets += max(0, waiting - 1)
            if let slot = releasing, heldLengths[slot] > 0 {
                held.withUnsafeBytes { storage in
                    let previous = UnsafeRawBufferPointer(rebasing: storage[slot * heldSlotSize..<slot * heldSlotSize + heldLengths[slot]])
                    if let earlier = try? RTPPacket(parsing: previous) { insert(earlier, in: previous, isRTX: false, at: now) }
                }
            }
            for slot in heldLengths.indices { heldLengths[slot] = 0 }
            insert(packet, in: bytes, isRTX: false, at: now)
            return true
        }
    }

    private func hold(_ bytes: UnsafeRawBufferPointer, in slot: Int) {
        guard bytes.count <= heldSlotSize else {
            heldLengths[slot] = 0
            return
        }
        held.withUnsafeMutableBytes { storage in
            UnsafeMutableRawBufferPointer(rebasing: storage[slot * heldSlotSize..<slot * heldSlotSize + bytes.count]).copyMemory(from: bytes)
        }
        heldLengths[slot] = bytes.count
    }

    private func insert(_ packet: RTPPacket, in bytes: UnsafeRawBufferPointer, isRTX: Bool, at now: ClockTime) {
        counts.packetsReceived += 1
        counts.bytesReceived += bytes.count
        counts.payloadBytesReceived += packet.payloadRange.count - (isRTX ? 2 : 0)
        _ = jitterBuffer.insert(packet, in: bytes, arrival: now)
    }

    /// Takes one RTCP compound packet, unprotected, that arrived at `now`: the sender's reports
    /// (for lip sync and the reception report's LSR/DLSR) and its BYE. Call it on the thread that
    /// calls `next(until:)`. Returns false, counted, when it is malformed.
    @discardableResult
    public func receiveRTCP(_ bytes: UnsafeRawBufferPointer, at now: ClockTime) -> Bool {
        // Only RTCP of the stream's source counts: a compound from anyone else (an RTCP bomb of
        // reports, a BYE for other sources) neither ends the stream nor becomes the feedback address.
        // It is told apart by its framing and sources alone; only the stream's own is decoded
        // (and every compound while no stream is chosen, for its sender reports).
        if let stream {
            do {
                guard try RTCPCompoundPacket.isFrom(stream.ssrc, bytes, reducedSize: true) else {
                    counts.foreignRTCP += 1
                    return false
                }
            } catch {
                counts.malformedRTCP += 1
                return false
            }
        }
        guard let compound = try? RTCPCompoundPacket(parsing: bytes, reducedSize: true) else {
            counts.malformedRTCP += 1
            return false
        }
        guard let ssrc = stream?.ssrc else {
            keepEarlyReports(of: compound, at: now)
            counts.foreignRTCP += 1
            return false
        }
        counts.rtcpPacketsReceived += 1
        for packet in compound.packets {
            switch packet {
            case .senderReport(let report) where report.ssrc == ssrc:
                noteSenderReport(report, arrival: now)
            case .goodbye(let bye) where bye.sources.contains(ssrc):
                if !goodbye { goodbyeDraining = now }
                goodbye = true
            default:
                break
            }
        }
        return true
    }

    private func noteSenderReport(_ report: SenderReport, arrival: ClockTime) {
        jitterBuffer.noteSenderReport(report, arrival: arrival)
        senderClock = (report.rtpTimestamp, report.ntpTimestamp)
        counts.senderReports += 1
    }

    /// Keeps the latest sender report of each source while none is chosen (bounded: a flood of
    /// made-up sources pushes out the oldest, never grows the list).
    private func keepEarlyReports(of compound: RTCPCompoundPacket, at now: ClockTime) {
        for case .senderReport(let report) in compound.packets {
            earlyReports.removeAll { $0.report.ssrc == report.ssrc }
            if earlyReports.count == Self.earlyReportLimit { earlyReports.removeFirst() }
            earlyReports.append((report, now))
        }
    }

    // MARK: Feedback

    /// NACK and PLI as soon as the jitter buffer wants them, a receiver report when one is due.
    private func sendFeedback(at now: ClockTime) throws {
        guard let stream else { return }
        let feedback = jitterBuffer.feedback(at: now)
        var extra: [RTCPPacket] = []
        if !feedback.nacks.isEmpty {
            extra.append(.genericNACK(GenericNACK(senderSSRC: configuration.localSSRC, mediaSSRC: stream.ssrc,
                                                  lostSequenceNumbers: feedback.nacks)))
            counts.nacksSent += 1
            counts.packetsNACKed += feedback.nacks.count
        }
        if feedback.keyframeRequest {
            extra.append(.pictureLossIndication(PictureLossIndication(senderSSRC: configuration.localSSRC, mediaSSRC: stream.ssrc)))
            counts.keyframeRequestsSent += 1
        }
        guard !extra.isEmpty || now >= nextReport ?? now else { return }
        try sendRTCP(extra: extra, at: now)
    }

    /// A compound packet (RFC 3550 §6.1): a receiver report, the CNAME, then `extra`.
    private func sendRTCP(extra: [RTCPPacket], at now: ClockTime) throws {
        guard transport.canSendRTCP else { return }
        nextReport = now + configuration.reportInterval
        let report = ReceiverReport(ssrc: configuration.localSSRC, reportBlocks: jitterBuffer.receptionReport(at: now).map { [$0] } ?? [])
        try transport.sendRTCP([.receiverReport(report),
                                .sourceDescription(SourceDescription(source: configuration.localSSRC, cname: configuration.cname))]
                               + extra, at: now)
        counts.receiverReports += 1
    }

    private func publish() {
        var snapshot = counts
        snapshot.ssrc = stream?.ssrc
        snapshot.jitterBuffer = jitterBuffer.statistics
        snapshot.srtp = transport.receivedProtection
        snapshot.kernelDrops = transport.kernelDrops
        published.withLock { $0 = snapshot }
        if let origin = ptsOrigin, let sender = senderClock {
            let ticks = Int32(bitPattern: origin &- sender.rtpTimestamp)
            let wallClock = sender.ntp.secondsSince1900 + Double(ticks) / Double(Depacketizer.clockRate)
            publishedOrigin.withLock { $0 = wallClock }
        }
    }
}

/// What an `RTPReceiveSession` received and sent back.
public struct RTPReceiveStatistics: Sendable {
    /// The stream received, once one is.
    public var ssrc: UInt32?
    /// RTP packets of the stream (RTX included) and their bytes, whole and payload only.
    public var packetsReceived = 0
    public var bytesReceived = 0
    public var payloadBytesReceived = 0
    /// Datagrams that are not RTP (too short, wrong version, lengths past the end).
    public var malformedPackets = 0
    /// RTP packets whose payload is larger than the jitter buffer keeps, or cut to the receive buffer.
    public var oversizedPackets = 0
    /// RTP packets of other streams or payload types.
    public var foreignPackets = 0
    /// RTP packets of sources on probation (RFC 3550 §A.1) that were given up: a source that never
    /// proved itself, or a packet not followed by its successor.
    public var probationPackets = 0
    /// RTCP compound packets of the stream's source.
    public var rtcpPacketsReceived = 0
    public var malformedRTCP = 0
    /// RTCP compound packets that parse but say nothing of the stream's source (dropped).
    public var foreignRTCP = 0
    /// SRTP or SRTCP packets that failed authentication or replay checks (dropped).
    public var unprotectFailures = 0
    /// Datagrams the kernel dropped before they could be read, its receive buffer full: this
    /// receiver fell behind what arrived (a flood, a starved thread). The stream's own packets among
    /// them show as losses. Nil when the transport cannot tell.
    public var kernelDrops: Int?
    public var senderReports = 0
    public var receiverReports = 0
    /// Generic NACK packets sent, and the sequence numbers they listed (retries included).
    public var nacksSent = 0
    public var packetsNACKed = 0
    /// PLIs sent.
    public var keyframeRequestsSent = 0
    /// What the jitter buffer did: received, lost, recovered, late, duplicates, jitter, delay.
    public var jitterBuffer: JitterBufferStatistics?
    /// What SRTP checked, when it is on: packets unprotected, authentication failures, replays.
    public var srtp: SRTPStatistics?

    public init() {}
}
