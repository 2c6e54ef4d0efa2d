/// Two transports on real UDP sockets over 127.0.0.1, each run by its loop on `SocketReactor` with the system clock:
/// ICE, DTLS-SRTP and SRTP as they run in an application.
import Glibc
import MediaCore
import MediaDTLS
import MediaICE
import MediaPeer
import MediaSTUN
import MediaTransport
import Testing

/// What one side's handlers saw.
private final class Observed: Sendable {
    let states = Locked<[PeerTransport.State]>([])
    let rtp = Locked<[[UInt8]]>([])
    let rtcp = Locked<Int>(0)

    var lastState: PeerTransport.State? { states.withLock { $0.last } }

    /// Waits up to `seconds` for `condition`, polling; false on time out.
    func wait(seconds: Double, for condition: () -> Bool) -> Bool {
        let clock = SystemClock(), end = clock.now + .seconds(seconds)
        while clock.now < end {
            if condition() { return true }
            usleep(2000)
        }
        return condition()
    }
}

/// The loop of the other side, set once both exist: candidates trickle to it.
private final class Peer: Sendable {
    let loop = Locked<PeerTransportLoop?>(nil)
}

@Suite(.serialized) struct PeerTransportLoopTests {
    private static func makeSide(role: ICERole, observed: Observed, other: Peer) throws -> PeerTransportLoop {
        let configuration = PeerTransport.Configuration(ice: ICEConfiguration(includeLoopback: true))
        let transport = PeerTransport(iceRole: role, certificate: try DTLSCertificate(), configuration: configuration)
        let handlers = PeerTransportLoop.Handlers(
            onEvent: { event in
                switch event {
                case .localCandidate(let candidate):
                    other.loop.withLock { $0 }?.withTransport { core, now in core.addRemoteCandidate(candidate, now: now) }
                case .stateChanged(let state):
                    observed.states.withLock { $0.append(state) }
                default: break
                }
            },
            onRTP: { packet in observed.rtp.withLock { $0.append(Array(packet)) } },
            onRTCP: { _ in observed.rtcp.withLock { $0 += 1 } })
        return try PeerTransportLoop(transport: transport, bindingTo: [try SocketAddress(parsing: "127.0.0.1:0")],
                                     handlers: handlers)
    }

    @Test func twoLoopsConnectOverLoopbackAndCarrySRTP() throws {
        let offererSeen = Observed(), answererSeen = Observed()
        let toOfferer = Peer(), toAnswerer = Peer()
        let offerer = try Self.makeSide(role: .controlling, observed: offererSeen, other: toAnswerer)
        let answerer = try Self.makeSide(role: .controlled, observed: answererSeen, other: toOfferer)
        toOfferer.loop.withLock { $0 = offerer }
        toAnswerer.loop.withLock { $0 = answerer }
        defer {
            offerer.close()
            answerer.close()
        }
        try exchangeTransportDescriptions(offerer: offerer, answerer: answerer)
        let started = SystemClock().now
        offerer.start()
        answerer.start()

        #expect(offererSeen.wait(seconds: 10) { offererSeen.lastState == .connected && answererSeen.lastState == .connected },
                "offerer \(String(describing: offererSeen.lastState)), answerer \(String(describing: answererSeen.lastState))")
        let setup = SystemClock().now - started
        #expect(setup < .seconds(5), "connected after \(setup)")

        var sent: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 1500)
        for sequence in 0..<300 as Range<UInt16> {
            let packet = rtpPacket(sequence: sequence, size: 200 + Int(sequence) % 900)
            sent.append(packet)
            buffer.replaceSubrange(0..<packet.count, with: packet)
            #expect(try buffer.withUnsafeMutableBytes { try offerer.sendRTP($0, length: packet.count) })
            if sequence % 50 == 0 { usleep(1000) }
        }
        let report = rtcpReceiverReport()
        buffer.replaceSubrange(0..<report.count, with: report)
        #expect(try buffer.withUnsafeMutableBytes { try answerer.sendRTCP($0, length: report.count) })

        #expect(answererSeen.wait(seconds: 5) { answererSeen.rtp.withLock { $0.count } == sent.count && offererSeen.rtcp.withLock { $0 } == 1 })
        #expect(answererSeen.rtp.withLock { $0 } == sent)
        #expect(offerer.failedSends == 0 && answerer.failedSends == 0)
        let drops = answerer.withTransport { core, _ in core.statistics.drops }
        #expect(drops.isEmpty, "\(drops)")

        // Closing one side sends close_notify: the other ends closed, not failed.
        offerer.close()
        #expect(answererSeen.wait(seconds: 5) { answererSeen.lastState == .closed })
    }
}
