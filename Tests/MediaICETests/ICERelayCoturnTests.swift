import Foundation
import MediaCore
import MediaICE
import MediaSTUN
import MediaTransport
import Testing
import TestSupport

/// Two `ICEAgent`s with `iceTransportPolicy: relay` through a real coturn on 127.0.0.1: real UDP sockets,
/// the real clock, every wait bounded. Both selected pairs are relay-relay and data crosses both ways.
@Suite(.serialized, .enabled(if: CoturnServer.executable != nil, "turnserver (coturn) is not installed"))
struct ICERelayCoturnTests {
    @Test func relayOnlyAgentsExchangeDataThroughCoturn() throws {
        try CoturnServer.with { server in
            let configuration = ICEConfiguration(includeLoopback: true,
                                                 turnServers: [ICETURNServer(address: server.address, username: "sluice",
                                                                             credential: "secret")],
                                                 transportPolicy: .relay)
            var loop = try SocketLoop(agents: [
                ICEAgent(role: .controlling, local: ICEAgentTests.credentialsA, configuration: configuration),
                ICEAgent(role: .controlled, local: ICEAgentTests.credentialsB, configuration: configuration),
            ])
            let connected = try loop.run(within: 10) { $0.agents.allSatisfy { $0.state.isConnected } }
            #expect(connected)
            for agent in loop.agents {
                #expect(agent.selectedPair?.local.type == .relay && agent.selectedPair?.remote.type == .relay)
            }
            let fromA = Array("dtls-ish from A".utf8).map { $0 | 0x80 }
            let fromB = Array("rtp-ish from B".utf8).map { $0 | 0x80 }
            try loop.send(fromA, from: 0)
            try loop.send(fromB, from: 1)
            let arrived = try loop.run(within: 5) { $0.received[1].contains(fromA) && $0.received[0].contains(fromB) }
            #expect(arrived)
            #expect(loop.agents.allSatisfy { $0.statistics.turnFailures.isEmpty })
        }
    }
}

/// The adapter of the test: one UDP socket per agent on 127.0.0.1, the monotonic clock, candidates
/// signalled from one agent to the other.
struct SocketLoop {
    var agents: [ICEAgent]
    let sockets: [UDPSocket]
    let bases: [TransportAddress]
    var received: [[[UInt8]]] = [[], []]

    init(agents: [ICEAgent]) throws {
        self.agents = agents
        sockets = try (0..<2).map { _ in try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0)) }
        bases = sockets.compactMap { TransportAddress(host: "127.0.0.1", port: $0.localAddress.port) }
        let now = SystemClock().now
        for index in 0..<2 { self.agents[index].addLocalBase(bases[index], now: now) }
        self.agents[0].setRemoteCredentials(self.agents[1].localCredentials, now: now)
        self.agents[1].setRemoteCredentials(self.agents[0].localCredentials, now: now)
    }

    mutating func send(_ bytes: [UInt8], from index: Int) throws {
        let transmit = agents[index].send(bytes, now: SystemClock().now)
        if let transmit { try output(transmit, from: index) }
    }

    /// Runs until `condition` holds (true) or `seconds` pass (false).
    mutating func run(within seconds: Double, until condition: (SocketLoop) -> Bool) throws -> Bool {
        let deadline = SystemClock().now + .seconds(seconds)
        while SystemClock().now < deadline {
            try drain()
            if condition(self) { return true }
            for index in 0..<2 { try receive(on: index, waiting: .milliseconds(5)) }
            let now = SystemClock().now
            for index in 0..<2 where agents[index].nextTimeout.map({ $0 <= now }) ?? false {
                agents[index].handleTimeout(now: now)
            }
        }
        try drain()
        return condition(self)
    }

    private mutating func drain() throws {
        for index in 0..<2 {
            while let transmit = agents[index].pollTransmit() { try output(transmit, from: index) }
            while let event = agents[index].pollEvent() {
                let now = SystemClock().now
                switch event {
                case .localCandidate(let candidate): agents[1 - index].addRemoteCandidate(candidate, now: now)
                case .gatheringComplete: agents[1 - index].endOfRemoteCandidates(now: now)
                default: break
                }
            }
        }
    }

    private func output(_ transmit: ICETransmit, from index: Int) throws {
        #expect(transmit.source == bases[index] && !transmit.relayed, "the agent sends everything from its socket")
        let destination = try SocketAddress(host: transmit.destination.ip.description, port: transmit.destination.port)
        try transmit.bytes.withUnsafeBytes { try sockets[index].send($0, to: destination) }
    }

    private mutating func receive(on index: Int, waiting timeout: ClockTime) throws {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let got = try buffer.withUnsafeMutableBytes { try sockets[index].receive(into: $0, timeout: timeout) }
        guard let got, let source = TransportAddress(host: got.from.host, port: got.from.port) else { return }
        let result = agents[index].handleReceive(Array(buffer[..<got.count]), from: source, to: bases[index],
                                                 now: SystemClock().now)
        if case .relayedApplication(let bytes) = result { received[index].append(bytes) }
    }
}
