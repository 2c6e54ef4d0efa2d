import MediaCore
import MediaRTP
import MediaSRTP

/// What an RTP session (`RTPSendSession`, `RTPReceiveSession`) needs from below: a way to send its
/// RTP and RTCP packets, protected as the transport protects them (SRTP, RFC 3711), and a way to
/// read what arrives, unprotected and sorted into RTP and RTCP (RFC 5761 §4 when they share a port).
/// `UDPRTPTransport` is a UDP socket pair with optional SDES keys (`sluice send`/`receive`); a
/// WebRTC peer's bundled transport (ICE + DTLS-SRTP on one 5-tuple, RFC 9143) is another.
///
/// Sending: the session writes a packet at the start of a buffer of its own with `rtpOverhead`
/// (or `rtcpOverhead`) spare bytes after it; the transport protects it there, in place, and sends
/// it (retransmissions are written into the same buffer again: the history keeps no packet the
/// transport could protect in its place). The session never calls the send methods concurrently
/// with each other (its lock serialises them), so a transport needs no lock of its own for its
/// outgoing SRTP context.
///
/// Receiving is pulled: the session's caller (a handler on `SocketReactor`'s thread, the thread in
/// `RTPReceiveSession.next(until:)`) calls `receive(timeout:_:)`, which waits for datagrams and
/// hands each one, already unprotected, to a non-escaping closure that calls the session's
/// `receiveRTP(_:at:)` or `receiveRTCP(_:at:)`. So the packet lives in the transport's buffer for
/// the time of the call only: no copy, no queue, no allocation per packet, and the receive
/// session's jitter buffer stays on one thread with no lock. A receive session also says where an
/// RTP packet should land (its jitter buffer's receive slot): a transport with SRTP decrypts it from
/// its read buffer straight there (`receive(timeout:unprotectingRTPInto:withQueueTimes:)`), and the
/// jitter buffer keeps it with no copy of its own. A transport fed by a thread of its own
/// (a bundled socket demultiplexing to several sessions) keeps per session a small ring of buffers
/// allocated once, which this call drains (one copy, no allocation); or, for a send session, whose
/// `receiveRTCP(_:at:)` is safe from any thread, it may call that directly.
///
/// Timers stay with the session, driven by `now` from its clock: report intervals, NACK and PLI
/// (the jitter buffer's deadlines), frame release. A transport with time-driven work of its own
/// (an impairment holding packets back) says when with `nextDue` and does it in `sendDue(until:)`.
public protocol RTPDatagramTransport: AnyObject, Sendable {
    /// Spare bytes needed after an RTP packet to protect it in place (SRTP's authentication tag and
    /// MKI, RFC 3711 §3.1); 0 when packets go as they are.
    var rtpOverhead: Int { get }
    /// Spare bytes needed after an RTCP compound packet (SRTCP's E flag, index and tag, RFC 3711 §3.4).
    var rtcpOverhead: Int { get }
    /// Whether RTCP has somewhere to go yet (a receiver over UDP learns it from the first packet).
    var canSendRTCP: Bool { get }
    /// What logs and errors call this transport, e.g. its local address.
    var name: String { get }

    /// Protects the RTP packet of `length` bytes at the start of `buffer` in place and sends it.
    /// `buffer` has `rtpOverhead` bytes to spare after the packet.
    func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws
    /// Sends the RTP packet `RTPSender.send(_:at:into:emitParts:)` wrote: its head at the start of
    /// `buffer` and its tail, a frame's bytes, elsewhere, put together and protected in `buffer`,
    /// which has room for the whole packet and `rtpOverhead` bytes after it. By default the tail is
    /// copied after the head and the packet sent with `sendRTP(_:length:at:)`; a transport with SRTP
    /// encrypts it from where it is instead.
    func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, _ packet: RTPPacketParts, at now: ClockTime) throws
    /// Protects the RTCP compound packet of `length` bytes at the start of `buffer` in place and sends it.
    func sendRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws

    /// Waits up to `timeout` (nil: until one comes) for packets, then hands each one that has
    /// arrived (or a bounded batch of them, so that a flood cannot hold the caller) to `deliver` and
    /// says whether any did. `deliver` returns whether the packet belonged
    /// to the session (parsed, of its stream): a transport that learns where to send back (symmetric
    /// RTP, RFC 4961) learns it only from those.
    func receive(timeout: ClockTime?, _ deliver: (RTPTransportPacket) -> Bool) throws -> Bool

    /// `receive(timeout:_:)` that also says how long each packet waited in the kernel before it was
    /// read (its arrival stamp against the time of the read): a receiver starved of CPU then still
    /// times packets by when they came, not when it got to them (RFC 3550 §6.4.1's jitter is of
    /// arrivals). Zero when the transport cannot tell; by default it never can.
    func receive(timeout: ClockTime?, withQueueTimes deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool

    /// `receive(timeout:withQueueTimes:)` that unprotects each SRTP packet (RFC 3711 §3.3) out of place
    /// into the buffer `rtpSlot` gives when it is not nil and has room for the whole datagram, and
    /// delivers it from there; otherwise as `receive(timeout:withQueueTimes:)` does. `rtpSlot` is
    /// asked again for each packet (what it gives may change once a packet was delivered). By default
    /// it is never used.
    func receive(timeout: ClockTime?, unprotectingRTPInto rtpSlot: () -> UnsafeMutableRawBufferPointer?,
                 withQueueTimes deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool

    /// The descriptors that turn readable when `receive` has something to hand out, for a
    /// `SocketReactor` to watch so that no thread waits in `receive(timeout:_:)`; empty when the
    /// transport cannot say (one fed by a thread of its own), and its sessions then keep a thread.
    var readinessDescriptors: [Int32] { get }

    /// When the transport next has work of its own to do (nil: none).
    var nextDue: ClockTime? { get }
    /// Does the transport's work due by `now` (sends packets an impairment held back until then).
    func sendDue(until now: ClockTime) throws

    /// SRTP on the way out (packets protected), when on; read where sends are serialised.
    var sentProtection: SRTPStatistics? { get }
    /// SRTP on the way in (packets checked, failures, replays), when on; read on the receiving thread.
    var receivedProtection: SRTPStatistics? { get }
    /// What an impairment on the way out did, when one is configured; safe from any thread.
    var impairment: ImpairmentStatistics? { get }
    /// Datagrams the kernel dropped on the receiving sockets because their buffers were full (the
    /// reader fell behind), when the transport can tell; read on the receiving thread.
    var kernelDrops: Int? { get }

    /// Releases the sockets (or detaches from the shared transport). Sends fail after.
    func close()
}

/// One datagram as a transport hands it to a session, already unprotected.
public enum RTPTransportPacket {
    /// An RTP packet; `truncated` when it was cut to the receive buffer's size.
    case rtp(UnsafeRawBufferPointer, truncated: Bool)
    /// An RTCP compound packet.
    case rtcp(UnsafeRawBufferPointer)
    /// A packet that failed SRTP's or SRTCP's authentication or replay check (RFC 3711 §3.3), dropped.
    case unprotectFailed(rtcp: Bool)
}

extension RTPTransportPacket {
    /// Checks and decrypts the datagram of `length` bytes at the start of `buffer` with `inbound` when
    /// SRTP is on (RFC 3711 §3.3, §3.4), and hands it to `deliver` as RTP or RTCP, or as
    /// `.unprotectFailed`. An RTP packet is decrypted into `rtpSlot` when one is given with room for
    /// the datagram (`SRTPSession.unprotect(_:into:)`), else in place. Returns what `deliver` did
    /// (false for a packet that failed its check).
    public static func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int, rtcp: Bool, truncated: Bool = false,
                                 with inbound: SRTPSession?, into rtpSlot: UnsafeMutableRawBufferPointer? = nil,
                                 to deliver: (RTPTransportPacket) -> Bool) -> Bool {
        var packet = buffer, length = length
        if let inbound {
            do {
                if rtcp {
                    length = try inbound.unprotectRTCP(buffer, length: length)
                } else if let rtpSlot, length <= rtpSlot.count {
                    length = try inbound.unprotect(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), into: rtpSlot)
                    packet = rtpSlot
                } else {
                    length = try inbound.unprotect(buffer, length: length)
                }
            } catch {
                _ = deliver(.unprotectFailed(rtcp: rtcp))
                return false
            }
        }
        let bytes = UnsafeRawBufferPointer(rebasing: packet[0..<length])
        return deliver(rtcp ? .rtcp(bytes) : .rtp(bytes, truncated: truncated))
    }
}

extension RTPDatagramTransport {
    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, _ packet: RTPPacketParts, at now: ClockTime) throws {
        try sendRTP(buffer, length: packet.joined(in: buffer), at: now)
    }

    /// A transport with no work of its own, no SRTP and no impairment.
    public var nextDue: ClockTime? { nil }
    public var readinessDescriptors: [Int32] { [] }
    public func sendDue(until now: ClockTime) throws {}
    public var sentProtection: SRTPStatistics? { nil }
    public var receivedProtection: SRTPStatistics? { nil }
    public var impairment: ImpairmentStatistics? { nil }
    public var kernelDrops: Int? { nil }

    public func receive(timeout: ClockTime?, withQueueTimes deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool {
        try receive(timeout: timeout) { deliver($0, .zero) }
    }

    public func receive(timeout: ClockTime?, unprotectingRTPInto rtpSlot: () -> UnsafeMutableRawBufferPointer?,
                        withQueueTimes deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool {
        try receive(timeout: timeout, withQueueTimes: deliver)
    }

    /// Sends `packets` as one compound RTCP packet (RFC 3550 §6.1). RTCP is a few packets a second:
    /// the datagram is built in a fresh array.
    public func sendRTCP(_ packets: [RTCPPacket], at now: ClockTime) throws {
        let compound = RTCPCompoundPacket(packets)
        var bytes = [UInt8](repeating: 0, count: compound.marshalSize + rtcpOverhead)
        try bytes.withUnsafeMutableBytes { buffer in
            let length = try compound.write(into: buffer)
            try sendRTCP(buffer, length: length, at: now)
        }
    }
}
