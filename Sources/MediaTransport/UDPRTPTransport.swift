import MediaCore
import MediaRTP
import MediaSRTP

/// RTP over a UDP socket pair (`RTPSessionSockets`: one port with RTCP multiplexed, RFC 5761, or
/// RTCP on a port of its own, RFC 3550 §11), protected with SDES keys when `SRTPParameters` are
/// given (RFC 3711, RFC 4568), optionally through a `NetworkImpairment` on the way out. What
/// `sluice send` and `sluice receive` run their sessions over.
///
/// A receiver learns where to send its RTCP from what it hears (symmetric RTP, RFC 4961): the
/// source of the sender's RTCP, or before any, the source of its RTP (port + 1 unless
/// multiplexed), unless `remoteRTCP` is fixed.
///
/// Threads: sends come one at a time (the session serialises them); `receive` runs where the
/// session reads (the reactor's thread, a graph worker) and may run at the same time as sends. The
/// impairment, shared by both (sends submit, the send session's timer flushes), has a lock of its own.
public final class UDPRTPTransport: RTPDatagramTransport, @unchecked Sendable {
    public let sockets: RTPSessionSockets
    /// Where RTP goes (nil for a receiver, which sends none).
    public let remote: SocketAddress?
    /// Where RTCP goes: fixed, or learned when `learnsRemote`.
    public private(set) var rtcpDestination: SocketAddress?
    /// Whether datagrams are sorted into RTP and RTCP; else (a sender, which expects feedback only)
    /// all are taken as RTCP.
    public let receivesRTP: Bool
    private let configuredRTCP: SocketAddress?
    private let learnsRemote: Bool
    private var heardRTCP = false
    private let outbound: SRTPSession?
    private let inbound: SRTPSession?
    private let impairer: Locked<NetworkImpairment<[UInt8]>?>
    private let impaired: Bool
    private var datagram: [UInt8]

    /// A transport over `sockets`. `remote` is where RTP goes; `remoteRTCP` where RTCP goes (nil
    /// and `learnsRemote`: learned from what arrives).
    public init(sockets: RTPSessionSockets, remote: SocketAddress?, remoteRTCP: SocketAddress?, learnsRemote: Bool,
                receivesRTP: Bool, srtp: SRTPParameters?, impairment: ImpairmentProfile? = nil) throws {
        self.sockets = sockets
        self.remote = remote
        configuredRTCP = remoteRTCP
        rtcpDestination = remoteRTCP
        self.learnsRemote = learnsRemote
        self.receivesRTP = receivesRTP
        (outbound, inbound) = try srtp?.sessions() ?? (nil, nil)
        impairer = Locked(impairment.map { NetworkImpairment(profile: $0) })
        impaired = impairment != nil
        datagram = [UInt8](repeating: 0, count: 65_536)
    }

    /// The transport of `RTPSendSession(packetizer:configuration:)`: binds `configuration.local`,
    /// sends to `configuration.remote` and its RTCP destination, reads RTCP only, with the kernel's
    /// arrival stamps on (round trips from receiver reports, RFC 3550 §6.4.1).
    public convenience init<Packetizer>(sending configuration: RTPSendSession<Packetizer>.Configuration) throws {
        let sockets = try RTPSessionSockets(local: configuration.local, multiplexed: configuration.multiplexed)
        try? sockets.rtcp.enableArrivalTimestamps()
        do {
            try self.init(sockets: sockets, remote: configuration.remote, remoteRTCP: configuration.rtcpDestination,
                          learnsRemote: false, receivesRTP: false, srtp: configuration.srtp, impairment: configuration.impairment)
        } catch {
            sockets.close()
            throw error
        }
    }

    /// The transport of `RTPReceiveSession(depacketizer:configuration:)`: binds `configuration.local`
    /// (and its RTCP port), with `receiveBufferSize` for bursts and the kernel's arrival stamps on,
    /// and learns where feedback goes unless `configuration.remoteRTCP` says.
    public convenience init<Depacketizer>(receiving configuration: RTPReceiveSession<Depacketizer>.Configuration) throws {
        let sockets = try RTPSessionSockets(local: configuration.local, multiplexed: configuration.multiplexed,
                                            rtcpPort: configuration.rtcpPort)
        for socket in sockets.isMultiplexed ? [sockets.rtp] : [sockets.rtp, sockets.rtcp] {
            try? socket.enableArrivalTimestamps()
            try? socket.enableDropCounts()
        }
        try? sockets.rtp.setReceiveBufferSize(Self.receiveBufferSize)
        do {
            try self.init(sockets: sockets, remote: nil, remoteRTCP: configuration.remoteRTCP, learnsRemote: true,
                          receivesRTP: true, srtp: configuration.srtp)
        } catch {
            sockets.close()
            throw error
        }
    }

    /// The kernel receive buffer a receiver asks for on its RTP socket: 4 MiB, what an unprivileged
    /// process may set where `net.core.rmem_max` is raised to it (the kernel caps the request at
    /// rmem_max, 208 KiB by default, and doubles it; SO_RCVBUFFORCE needs CAP_NET_ADMIN). It
    /// holds over a second of a 20 Mbit/s stream while the reader is starved, or a flood's
    /// garbage beside it.
    public static var receiveBufferSize: Int { 4 << 20 }

    public var rtpOverhead: Int { outbound?.rtpOverhead ?? 0 }
    public var rtcpOverhead: Int { outbound?.rtcpOverhead ?? 0 }
    public var canSendRTCP: Bool { rtcpDestination != nil }
    public var name: String { "\(sockets.rtp.localAddress)" }

    public func close() { sockets.close() }

    public var sentProtection: SRTPStatistics? { outbound?.statistics }
    public var receivedProtection: SRTPStatistics? { inbound?.statistics }
    /// Both ports' drops (`UDPSocket.kernelDrops`), when this transport receives RTP.
    public var kernelDrops: Int? {
        guard receivesRTP else { return nil }
        return sockets.rtp.kernelDrops + (sockets.isMultiplexed ? 0 : sockets.rtcp.kernelDrops)
    }
    public var impairment: ImpairmentStatistics? { impaired ? impairer.withLock { $0?.statistics } : nil }

    // MARK: Sending

    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws {
        guard remote != nil else { throw SocketError.noDestination }
        try send(UnsafeRawBufferPointer(rebasing: buffer[0..<(outbound?.protect(buffer, length: length) ?? length)]), at: now)
    }

    /// With SRTP the cipher reads the tail where it is; without, it is copied after the head.
    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, _ packet: RTPPacketParts, at now: ClockTime) throws {
        guard remote != nil else { throw SocketError.noDestination }
        let length = try outbound?.protect(buffer, length: packet.headLength, followedBy: packet.tail) ?? packet.joined(in: buffer)
        try send(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), at: now)
    }

    /// Sends the RTP `packet`, ready to go, through the impairment if there is one.
    private func send(_ packet: UnsafeRawBufferPointer, at now: ClockTime) throws {
        guard let remote else { throw SocketError.noDestination }
        guard impaired else {
            try sockets.rtp.send(packet, to: remote)
            return
        }
        // The impairment holds copies (an allocation per packet: a test tool, not the hot path).
        _ = impairer.withLock { $0!.submit(Array(packet), bytes: packet.count, at: now) }
        try sendDue(until: now)
    }

    /// RTCP goes straight out, past the impairment, as it always has.
    public func sendRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, at now: ClockTime) throws {
        guard let destination = rtcpDestination else { throw SocketError.noDestination }
        let length = try outbound?.protectRTCP(buffer, length: length) ?? length
        try sockets.rtcp.send(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), to: destination)
    }

    public var nextDue: ClockTime? { impaired ? impairer.withLock { $0?.nextDelivery } : nil }

    public func sendDue(until now: ClockTime) throws {
        guard impaired, let remote else { return }
        try impairer.withLock { impairer in
            while let packet = impairer!.deliverNext(until: now) {
                try packet.withUnsafeBytes { try sockets.rtp.send($0, to: remote) }
            }
        }
    }

    // MARK: Receiving

    /// The RTP socket (a receiver's) and the RTCP socket when it is another one.
    public var readinessDescriptors: [Int32] {
        let rtcp = sockets.rtcp.pollingDescriptor
        guard receivesRTP else { return [rtcp] }
        return sockets.isMultiplexed ? [sockets.rtp.pollingDescriptor] : [sockets.rtp.pollingDescriptor, rtcp]
    }

    /// The most datagrams one `receive` reads from a socket: a flood that arrives faster than the
    /// session reads must not keep it in here, past its frames' deadlines and its feedback.
    static var batchLimit: Int { 256 }

    /// Reads what arrives within `timeout` on either port, and what else is already queued, up to
    /// `batchLimit` datagrams a socket: RTCP first when it has a port of its own. A sender reads its
    /// RTCP port only.
    public func receive(timeout: ClockTime?, _ deliver: (RTPTransportPacket) -> Bool) throws -> Bool {
        try receive(timeout: timeout, withQueueTimes: { packet, _ in deliver(packet) })
    }

    /// `receive(timeout:_:)`, with how long each datagram waited in the kernel (zero without its
    /// arrival stamp).
    public func receive(timeout: ClockTime?, withQueueTimes deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool {
        try receive(timeout: timeout, unprotectingRTPInto: { nil }, withQueueTimes: deliver)
    }

    /// `receive(timeout:withQueueTimes:)`, SRTP packets decrypted from the read buffer into `rtpSlot`.
    public func receive(timeout: ClockTime?, unprotectingRTPInto rtpSlot: () -> UnsafeMutableRawBufferPointer?,
                        withQueueTimes deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool {
        guard receivesRTP else {
            return try receiveBatch(on: sockets.rtcp, timeout: timeout, isRTCP: { _ in true }, rtpSlot, deliver)
        }
        var wait = timeout
        var any = false
        if !sockets.isMultiplexed {
            let ready = try sockets.rtp.waitForDatagram(orOn: sockets.rtcp, timeout: timeout ?? .seconds(3600))
            if ready.other { any = try receiveBatch(on: sockets.rtcp, timeout: .zero, isRTCP: { _ in true }, rtpSlot, deliver) }
            guard ready.mine else { return any }
            wait = .zero
        }
        let multiplexed = sockets.isMultiplexed
        return try receiveBatch(on: sockets.rtp, timeout: wait, isRTCP: { multiplexed && RTPSessionSockets.isRTCP($0) },
                                rtpSlot, deliver) || any
    }

    /// Reads what arrives on `socket` within `timeout` and what else is queued, at most `batchLimit`
    /// datagrams; whether any came.
    private func receiveBatch(on socket: UDPSocket, timeout: ClockTime?, isRTCP: (UnsafeRawBufferPointer) -> Bool,
                              _ rtpSlot: () -> UnsafeMutableRawBufferPointer?,
                              _ deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool {
        var count = 0
        while count < Self.batchLimit,
              try receiveDatagram(on: socket, timeout: count == 0 ? timeout : .zero, isRTCP: isRTCP, rtpSlot, deliver) {
            count += 1
        }
        return count > 0
    }

    /// Reads one datagram from `socket` (false when none came within `timeout`), checks and
    /// decrypts it when SRTP is on (RTP into `rtpSlot()` when it gives one), hands it on as RTP or
    /// RTCP, and learns the return address from it when the session took it.
    private func receiveDatagram(on socket: UDPSocket, timeout: ClockTime?, isRTCP: (UnsafeRawBufferPointer) -> Bool,
                                 _ rtpSlot: () -> UnsafeMutableRawBufferPointer?,
                                 _ deliver: (RTPTransportPacket, ClockTime) -> Bool) throws -> Bool {
        guard let received = try datagram.withUnsafeMutableBytes({ try socket.receiveStamped(into: $0, timeout: timeout) }) else {
            return false
        }
        let queuedFor = received.queuedFor ?? .zero
        let outcome = datagram.withUnsafeMutableBytes { raw -> (rtcp: Bool, accepted: Bool) in
            let rtcp = isRTCP(UnsafeRawBufferPointer(rebasing: raw[0..<received.count]))
            return (rtcp, RTPTransportPacket.unprotect(raw, length: received.count, rtcp: rtcp, truncated: received.truncated,
                                                       with: inbound, into: rtcp || inbound == nil ? nil : rtpSlot(),
                                                       to: { deliver($0, queuedFor) }))
        }
        if outcome.accepted { learn(from: received.from, rtcp: outcome.rtcp) }
        return true
    }

    /// Where feedback goes (RFC 4961): the sender's RTCP source once heard, before that its RTP
    /// source (port + 1 unless multiplexed, RFC 3550 §11).
    private func learn(from source: SocketAddress, rtcp: Bool) {
        guard learnsRemote, configuredRTCP == nil || !rtcp else { return }
        if rtcp {
            rtcpDestination = source
            heardRTCP = true
        } else if rtcpDestination == nil || !heardRTCP {
            rtcpDestination = configuredRTCP ?? (sockets.isMultiplexed ? source : source.withPort(source.port &+ 1))
        }
    }
}
