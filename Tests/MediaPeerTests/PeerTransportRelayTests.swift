/// Calls where both sides may use only relayed candidates (`iceTransportPolicy: relay`), through a real
/// coturn on 127.0.0.1: ICE, DTLS and SRTP all cross the TURN server; wrong credentials end in the named
/// failure quickly.
import Glibc
import MediaCore
import MediaDTLS
import MediaICE
import MediaPeer
import MediaSTUN
import MediaTransport
import Testing
import TestSupport

@Suite(.serialized, .enabled(if: CoturnServer.executable != nil, "turnserver (coturn) is not installed"))
struct PeerTransportRelayTests {
    /// What one side's handlers saw, and the loop its candidates go to.
    private final class Seen: Sendable {
        let states = Locked<[PeerTransport.State]>([])
        let turnFailures = Locked<[String]>([])
        let rtp = Locked<[[UInt8]]>([])
        let other = Locked<PeerTransportLoop?>(nil)
    }

    /// One side of a relay-only call.
    private final class Side: Sendable {
        let loop: PeerTransportLoop
        let seen = Seen()

        init(role: ICERole, turn: ICETURNServer) throws {
            let configuration = PeerTransport.Configuration(
                ice: ICEConfiguration(includeLoopback: true, turnServers: [turn], transportPolicy: .relay))
            let transport = PeerTransport(iceRole: role, certificate: try DTLSCertificate(), configuration: configuration)
            let seen = self.seen
            loop = try PeerTransportLoop(
                transport: transport, bindingTo: [try SocketAddress(parsing: "127.0.0.1:0")],
                handlers: .init(
                    onEvent: { event in
                        switch event {
                        case .localCandidate(let candidate):
                            seen.other.withLock { $0 }?.withTransport { core, now in core.addRemoteCandidate(candidate, now: now) }
                        case .stateChanged(let state): seen.states.withLock { $0.append(state) }
                        case .turnFailed(_, let reason): seen.turnFailures.withLock { $0.append(reason) }
                        default: break
                        }
                    },
                    onRTP: { packet in seen.rtp.withLock { $0.append(Array(packet)) } }))
        }

        var state: PeerTransport.State? { seen.states.withLock { $0.last } }
    }

    private static func call(turn: ICETURNServer) throws -> (offerer: Side, answerer: Side) {
        let offerer = try Side(role: .controlling, turn: turn), answerer = try Side(role: .controlled, turn: turn)
        offerer.seen.other.withLock { $0 = answerer.loop }
        answerer.seen.other.withLock { $0 = offerer.loop }
        try exchangeTransportDescriptions(offerer: offerer.loop, answerer: answerer.loop)
        offerer.loop.start()
        answerer.loop.start()
        return (offerer, answerer)
    }

    /// Waits up to `seconds` for `condition`.
    private static func wait(seconds: Double, for condition: () -> Bool) -> Bool {
        let clock = SystemClock(), end = clock.now + .seconds(seconds)
        while clock.now < end {
            if condition() { return true }
            usleep(2000)
        }
        return condition()
    }

    @Test func aRelayOnlyCallCarriesSRTPThroughCoturn() throws {
        try CoturnServer.with { server in
            let (offerer, answerer) = try Self.call(
                turn: ICETURNServer(address: server.address, username: "sluice", credential: "secret"))
            defer {
                offerer.loop.close()
                answerer.loop.close()
            }
            #expect(Self.wait(seconds: 10) { offerer.state == .connected && answerer.state == .connected },
                    "offerer \(String(describing: offerer.state)), answerer \(String(describing: answerer.state))")
            let pairs = [offerer, answerer].map { side in side.loop.withTransport { core, _ in core.ice.selectedPair } }
            for pair in pairs {
                #expect(pair?.local.type == .relay && pair?.remote.type == .relay, "\(String(describing: pair))")
            }
            var buffer = [UInt8](repeating: 0, count: 1500)
            var sent: [[UInt8]] = []
            for sequence in 0..<100 as Range<UInt16> {
                let packet = rtpPacket(sequence: sequence, size: 300)
                sent.append(packet)
                buffer.replaceSubrange(0..<packet.count, with: packet)
                #expect(try buffer.withUnsafeMutableBytes { try offerer.loop.sendRTP($0, length: packet.count) })
                if sequence % 20 == 0 { usleep(2000) }
            }
            #expect(Self.wait(seconds: 5) { answerer.seen.rtp.withLock { $0.count } == sent.count })
            #expect(answerer.seen.rtp.withLock { $0 } == sent)
        }
    }

    @Test func wrongTURNCredentialsFailTheCallByName() throws {
        try CoturnServer.with { server in
            let start = SystemClock().now
            let (offerer, answerer) = try Self.call(
                turn: ICETURNServer(address: server.address, username: "sluice", credential: "not-the-secret"))
            defer {
                offerer.loop.close()
                answerer.loop.close()
            }
            #expect(Self.wait(seconds: 10) { offerer.state == .failed && answerer.state == .failed })
            #expect(SystemClock().now - start < .seconds(10))
            #expect(offerer.seen.turnFailures.withLock { $0 } == ["wrong-credentials"])
        }
    }
}
