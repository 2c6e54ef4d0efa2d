import Glibc
import MediaCore
import MediaRTP
import MediaSRTP

@testable import MediaTransport

/// One end of an RTP link in memory, for tests: what one end sends lands in the other's inbox, RTP
/// through an optional `NetworkImpairment` (delivered when `sendDue(until:)` reaches its time), RTCP
/// straight, as `UDPRTPTransport` does. With `SRTPParameters` both ends protect and check packets,
/// so the session's copy-then-protect path runs too. `receive` never waits: a test drives both
/// sessions by hand with a `ManualClock`. `loseNext(_:)` drops chosen packets; `sendTime` makes
/// each RTP packet take that long to go out (a busy core, a slow link); a `watchable` end
/// has a descriptor that never turns readable, so that a started session reads no feedback on
/// its own and the test's `serviceTransport` calls are the only reader.
final class InMemoryRTPTransport: RTPDatagramTransport, @unchecked Sendable {
    let name: String
    private weak var peer: InMemoryRTPTransport?
    private let state: Locked<State>
    private let outbound: SRTPSession?
    private let inbound: SRTPSession?
    /// The `watchable` end's descriptor, never woken.
    private let idle: EventWaker?
    /// How long each RTP packet takes to send, on the sending thread.
    private let sendTime: ClockTime

    private struct State: @unchecked Sendable {
        var inbox: [(rtcp: Bool, bytes: [UInt8])] = []
        var impairment: NetworkImpairment<[UInt8]>?
        var closed = false
        var losing = 0
    }

    private init(name: String, impairment: ImpairmentProfile?, srtp: SRTPParameters?, watchable: Bool = false,
                 sendTime: ClockTime = .zero) throws {
        self.name = name
        self.sendTime = sendTime
        idle = watchable ? try EventWaker() : nil
        state = Locked(State(impairment: impairment.map { NetworkImpairment(profile: $0) }))
        (outbound, inbound) = try srtp?.sessions() ?? (nil, nil)
    }

    /// Two ends joined to each other; `impairment` applies to RTP from `a` to `b`, `watchable` and
    /// `sendTime` to `a`.
    static func pair(impairment: ImpairmentProfile? = nil, srtp: SRTPParameters? = nil, watchable: Bool = false,
                     sendTime: ClockTime = .zero) throws -> (a: InMemoryRTPTransport, b: InMemoryRTPTransport) {
        let a = try InMemoryRTPTransport(name: "memory-a", impairment: impairment, srtp: srtp, watchable: watchable,
                                         sendTime: sendTime)
        let b = try InMemoryRTPTransport(name: "memory-b", impairment: nil, srtp: srtp)
        a.peer = b
        b.peer = a
        return (a, b)
    }

    var rtpOverhead: Int { outbound?.rtpOverhead ?? 0 }
    var rtcpOverhead: Int { outbound?.rtcpOverhead ?? 0 }
    var canSendRTCP: Bool { true }
    var isClosed: Bool { state.withLock { $0.closed } }

    var sentProtection: SRTPStatistics? { outbound?.statistics }
    var receivedProtection: SRTPStatistics? { inbound?.statistics }
    var impairment: ImpairmentStatistics? { state.withLock { $0.impairment?.statistics } }

    var readinessDescriptors: [Int32] { idle.map { [$0.descriptor] } ?? [] }

    func close() { state.withLock { $0.closed = true } }

    /// Drops the next `count` RTP packets this end sends (RTX included), as a network would.
    func loseNext(_ count: Int) { state.withLock { $0.losing = count } }

    func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws {
        if sendTime > .zero { usleep(UInt32(sendTime.nanoseconds / 1000)) }
        let length = try outbound?.protect(buffer, length: length) ?? length
        let packet = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
        // Nil: lost on the way.
        let impaired: Bool? = try state.withLock { state in
            guard !state.closed else { throw SocketError.closed }
            guard state.losing == 0 else {
                state.losing -= 1
                return nil
            }
            guard state.impairment != nil else { return false }
            state.impairment!.submit(packet, bytes: packet.count, at: now)
            return true
        }
        switch impaired {
        case true?: try sendDue(until: now)
        case false?: peer?.arrive(packet, rtcp: false)
        case nil: break
        }
    }

    func sendRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws {
        let length = try outbound?.protectRTCP(buffer, length: length) ?? length
        guard !isClosed else { throw SocketError.closed }
        peer?.arrive(Array(UnsafeRawBufferPointer(rebasing: buffer[0..<length])), rtcp: true)
    }

    var nextDue: ClockTime? { state.withLock { $0.impairment?.nextDelivery } }

    func sendDue(until now: ClockTime) throws {
        var due: [[UInt8]] = []
        state.withLock { state in
            while let packet = state.impairment?.deliverNext(until: now) { due.append(packet) }
        }
        for packet in due { peer?.arrive(packet, rtcp: false) }
    }

    private func arrive(_ bytes: [UInt8], rtcp: Bool) {
        state.withLock { if !$0.closed { $0.inbox.append((rtcp, bytes)) } }
    }

    /// Hands over everything in the inbox, unprotected; never waits (the clock is the test's).
    func receive(timeout: ClockTime?, _ deliver: (RTPTransportPacket) -> Bool) throws -> Bool {
        try receive(timeout: timeout, unprotectingRTPInto: { nil }, withQueueTimes: { packet, _ in deliver(packet) })
    }

    /// SRTP packets decrypted into `rtpSlot` as `UDPRTPTransport` does.
    func receive(timeout: ClockTime?, unprotectingRTPInto rtpSlot: () -> UnsafeMutableRawBufferPointer?,
                 withQueueTimes deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool {
        let arrived = state.withLock { state in
            defer { state.inbox.removeAll() }
            return state.inbox
        }
        for (rtcp, bytes) in arrived {
            var datagram = bytes
            _ = datagram.withUnsafeMutableBytes { raw in
                RTPTransportPacket.unprotect(raw, length: raw.count, rtcp: rtcp, with: inbound,
                                             into: rtcp || inbound == nil ? nil : rtpSlot(), to: { deliver($0, .zero) })
            }
        }
        return !arrived.isEmpty
    }
}
