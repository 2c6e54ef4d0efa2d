import MediaCore
import MediaRTP
import MediaTransport
import Synchronization

/// One RTP session's view of a WebRTC peer's bundled transport (RFC 9143: every stream on one
/// ICE + DTLS-SRTP 5-tuple): an `RTPDatagramTransport` that sends through a shared
/// `PeerTransportLoop` and receives what a `BundledRTPDemultiplexer` routes to it.
///
/// ```
///  reactor (loop's handler) ──▶ demultiplexer ──▶ ring (fixed slots) ──▶ session: receive(timeout:)
///                                                   └─ readiness eventfd ──▶ reactor wakes the session's reader
///  session: sendRTP / sendRTCP ──▶ loop.sendRTP / sendRTCP (protected in place, selected pair)
/// ```
///
/// Sending before the DTLS-SRTP keys are agreed (RFC 5764 §4.2), or with no ICE path, is refused
/// and counted (`sendsRefused`), not thrown: a session throws its send errors up to its caller, and
/// a packet lost here is as a packet lost on the network (NACK, RFC 4585, repairs it). Sending
/// after `close()` throws `SocketError.closed`. `rtpOverhead` and `rtcpOverhead` are the largest of
/// the SRTP profiles the peer offers (RFC 3711 §3.1, §3.4), known before the keys are, so that a
/// session built early leaves room enough whatever profile is agreed.
///
/// Receiving: packets arrive unprotected (the loop checked them) and wait in a ring of `slots`
/// buffers of 1500 bytes allocated once; when the ring is full a packet is dropped and counted.
/// One party at a time (the session's reader) calls `receive`. The ring's eventfd is the transport's
/// `readinessDescriptors`, readable while packets are queued, so a receiver node runs on the shared
/// workers woken by `SocketReactor` and a send session reads its feedback in a reactor handler, as
/// over UDP: a session over a peer costs no thread. `close()` detaches from the demultiplexer, wakes
/// a waiting `receive` (and the watch), which then throws `SocketError.closed`; the loop stays open
/// for the others.
public final class BundledRTPTransport: RTPDatagramTransport, @unchecked Sendable {
    /// What this transport did; safe from any thread.
    public struct Statistics: Sendable, Hashable {
        /// Packets routed here and queued for the session.
        public var packetsQueued = 0
        /// Packets dropped because the session had not drained the ring in time.
        public var droppedRingFull = 0
        /// Packets larger than a slot, dropped.
        public var droppedOversized = 0
        /// Sends the peer transport refused (no keys yet, no path, consent lost).
        public var sendsRefused = 0
    }

    public let name: String
    public let route: BundledRoute
    public let rtpOverhead: Int
    public let rtcpOverhead: Int
    private let loop: PeerTransportLoop
    private let demultiplexer: BundledRTPDemultiplexer
    private let ring: BundledPacketRing
    private let closed = Atomic<Bool>(false)
    private let keysAgreed = Atomic<Bool>(false)
    private let refused = Atomic<Int>(0)

    /// Attaches a transport for one session to `demultiplexer`, which the handlers of `loop` feed.
    public init(loop: PeerTransportLoop, demultiplexer: BundledRTPDemultiplexer, route: BundledRoute,
                name: String = "bundled", slots: Int = 128) {
        self.loop = loop
        self.demultiplexer = demultiplexer
        self.route = route
        self.name = name
        ring = BundledPacketRing(slots: slots)
        let (rtp, rtcp) = loop.withTransport { core, _ in
            (max(core.configuration.srtpProfiles.map(\.rtpOverhead).max() ?? 0, core.rtpOverhead ?? 0),
             max(core.configuration.srtpProfiles.map(\.rtcpOverhead).max() ?? 0, core.rtcpOverhead ?? 0))
        }
        (rtpOverhead, rtcpOverhead) = (rtp, rtcp)
        demultiplexer.attach(ring, route: route)
    }

    deinit { close() }

    public var statistics: Statistics {
        let counts = ring.statistics
        return Statistics(packetsQueued: counts.queued, droppedRingFull: counts.droppedFull,
                          droppedOversized: counts.droppedOversized, sendsRefused: refused.load(ordering: .relaxed))
    }

    /// Whether the DTLS-SRTP keys are agreed (checked with the loop until they are, then remembered).
    public var canSendRTCP: Bool {
        guard !closed.load(ordering: .relaxed) else { return false }
        if keysAgreed.load(ordering: .relaxed) { return true }
        let agreed = loop.withTransport { core, _ in core.rtcpOverhead != nil }
        if agreed { keysAgreed.store(true, ordering: .relaxed) }
        return agreed
    }

    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws {
        guard !closed.load(ordering: .relaxed) else { throw SocketError.closed }
        if try !loop.sendRTP(buffer, length: length) { refused.add(1, ordering: .relaxed) }
    }

    /// SRTP encrypts the tail from where it is (`PeerTransport.sendRTP(_:length:followedBy:now:)`).
    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, _ packet: RTPPacketParts, at now: ClockTime) throws {
        guard !closed.load(ordering: .relaxed) else { throw SocketError.closed }
        if try !loop.sendRTP(buffer, length: packet.headLength, followedBy: packet.tail) { refused.add(1, ordering: .relaxed) }
    }

    public func sendRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws {
        guard !closed.load(ordering: .relaxed) else { throw SocketError.closed }
        if try !loop.sendRTCP(buffer, length: length) { refused.add(1, ordering: .relaxed) }
    }

    /// Waits up to `timeout` for packets routed here and hands each to `deliver`, from its slot.
    public func receive(timeout: ClockTime?, _ deliver: (RTPTransportPacket) -> Bool) throws -> Bool {
        // A timeout of a day or more (`.max` among them) is "for ever": no deadline to overflow.
        let deadline = timeout.flatMap { $0 < .seconds(86_400) ? BundledPacketRing.monotonicNow() + $0 : nil }
        let handed = ring.drain(until: deadline) { bytes, rtcp in
            _ = deliver(rtcp ? .rtcp(bytes) : .rtp(bytes, truncated: false))
        }
        guard let handed else { throw SocketError.closed }
        return handed > 0
    }

    /// The ring's eventfd (see the type's notes); empty when none could be had, and the sessions then
    /// wait in `receive` on threads of their own.
    public var readinessDescriptors: [Int32] { ring.readinessDescriptor.map { [$0] } ?? [] }

    /// Detaches from the demultiplexer and ends a waiting `receive`. The loop is not closed.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        ring.close()
        demultiplexer.detach(ring)
    }
}
