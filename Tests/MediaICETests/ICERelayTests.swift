/// Agents with TURN servers (RFC 8656) on the in-memory network with the in-memory TURN server: relayed
/// candidates end to end, `iceTransportPolicy: relay` (webrtc-pc §4.2.1), wrong credentials, refreshes over a
/// long call, and the release of allocations on close. Manual clock.
import MediaCore
import MediaICE
import MediaSTUN
import Testing

@Suite struct ICERelayTests {
    static let turnAddress = TransportAddress(host: "198.51.100.9", port: 3478)!
    static let baseA = TransportAddress("192.168.1.10:5000")!
    static let baseB = TransportAddress("192.168.1.20:6000")!

    static func configuration(policy: ICETransportPolicy, credential: String = "secret",
                              withTURN: Bool = true) -> ICEConfiguration {
        ICEConfiguration(turnServers: withTURN ? [ICETURNServer(address: turnAddress, username: "alice",
                                                                credential: credential)] : [],
                         transportPolicy: policy)
    }

    /// A on 192.168.1.10:5000 and B on 192.168.1.20:6000 with the TURN server at 198.51.100.9:3478.
    static func network(_ configurationA: ICEConfiguration, _ configurationB: ICEConfiguration) -> InMemoryNetwork {
        var network = InMemoryNetwork()
        network.turnServer = TURNTestServer(address: turnAddress, users: ["alice": "secret"])
        network.add("A", ICEAgent(role: .controlling, local: ICEAgentTests.credentialsA, configuration: configurationA,
                                  tieBreaker: 1001), bases: ["192.168.1.10:5000"])
        network.add("B", ICEAgent(role: .controlled, local: ICEAgentTests.credentialsB, configuration: configurationB,
                                  tieBreaker: 2001), bases: ["192.168.1.20:6000"])
        network.exchangeCredentials()
        return network
    }

    static func signalled(_ peer: Peer) -> [ICECandidate] {
        peer.events.compactMap { if case .localCandidate(let candidate) = $0 { candidate } else { nil } }
    }

    /// Sends one datagram each way; true when both arrived unwrapped.
    static func exchange(_ network: inout InMemoryNetwork, _ tag: UInt8) -> Bool {
        let fromA: [UInt8] = [0x17, 0xFE, 0xFD, tag]  // a DTLS-looking record
        let fromB: [UInt8] = [0x80, 0x60, 0, tag]     // an RTP-looking packet
        let sent = network.sendApplication(from: 0, fromA) && network.sendApplication(from: 1, fromB)
        network.run(for: .milliseconds(200))
        return sent && network.peers[1].received.last == fromA && network.peers[0].received.last == fromB
    }

    @Test func relayOnlyOnBothSidesConnectsThroughTheServer() throws {
        var network = Self.network(Self.configuration(policy: .relay), Self.configuration(policy: .relay))
        let connected = network.run(for: .seconds(5), until: ICEAgentTests.bothConnected)
        #expect(connected)
        for peer in network.peers {
            // Only the relayed candidate is signalled: typ relay, raddr = the mapped address, type preference 0.
            let candidates = Self.signalled(peer)
            #expect(candidates.count == 1)
            #expect(candidates.allSatisfy { $0.type == .relay && $0.priority >> 24 == 0 })
            #expect(candidates.first?.address?.ip == IPAddress("203.0.113.1"))
            #expect(candidates.first?.relatedAddress == peer.bases[0].ip.description)
            #expect(peer.events.contains(.gatheringComplete))
            let pair = try #require(peer.agent.selectedPair)
            #expect(pair.local.type == .relay && pair.remote.type == .relay)
        }
        let relayedBefore = network.turnServer?.deliveredToPeers.count ?? 0
        let toClientsBefore = network.turnRelayedToClients
        let exchanged = Self.exchange(&network, 1)
        #expect(exchanged)
        // Both datagrams went through the server: one relayed out to a peer, one relayed in to a client, each way.
        #expect((network.turnServer?.deliveredToPeers.count ?? 0) - relayedBefore == 2)
        #expect(network.turnRelayedToClients - toClientsBefore == 2)
        #expect(network.turnServer?.deliveredToPeers.contains { $0.bytes == [0x17, 0xFE, 0xFD, 1] } == true)
    }

    @Test func mediaOnARelayedPairGoesAsChannelDataThroughSend() throws {
        var network = Self.network(Self.configuration(policy: .relay), Self.configuration(policy: .relay))
        let connected = network.run(for: .seconds(5), until: ICEAgentTests.bothConnected)
        #expect(connected)
        network.run(for: .milliseconds(300))  // the ChannelBind for the selected peer is answered
        #expect(network.peers[0].agent.selectedPathIsRelayed)
        // The caller cannot send the bytes as they are: route is nil (not a refusal), send wraps them.
        let refusedBefore = network.peers[0].agent.statistics.sendsRefused
        let route = network.peers[0].agent.route(forSending: 4, now: network.now)
        #expect(route == nil)
        #expect(network.peers[0].agent.statistics.sendsRefused == refusedBefore)
        let payload: [UInt8] = [0x80, 0x60, 0, 7, 0xAA, 0xBB]
        let sent = network.peers[0].agent.send(payload, now: network.now)
        let transmit = try #require(sent)
        #expect(transmit.source == Self.baseA && transmit.destination == Self.turnAddress && !transmit.relayed)
        // ChannelData (RFC 8656 §12.4): channel 0x4000-0x4FFF, length, the payload (padded to 4 bytes by
        // TURNChannelData, §12.5): a 4-byte header instead of a 36-byte Send indication.
        #expect((0x40...0x4F).contains(transmit.bytes[0]))
        #expect(Array(transmit.bytes[2..<4]) == [0, UInt8(payload.count)])
        #expect(Array(transmit.bytes[4..<(4 + payload.count)]) == payload)
        #expect(transmit.bytes.count == (payload.count + 4 + 3) / 4 * 4)
        network.route(transmit)
        network.run(for: .milliseconds(100))
        #expect(network.peers[1].received.last == payload)
    }

    @Test func relayOnlyPeerConnectsToAHostPeer() throws {
        var network = Self.network(Self.configuration(policy: .relay), Self.configuration(policy: .all, withTURN: false))
        let connected = network.run(for: .seconds(5), until: ICEAgentTests.bothConnected)
        #expect(connected)
        #expect(Self.signalled(network.peers[0]).allSatisfy { $0.type == .relay })
        #expect(Self.signalled(network.peers[1]).map(\.type) == [.host])
        let a = try #require(network.peers[0].agent.selectedPair)
        let b = try #require(network.peers[1].agent.selectedPair)
        #expect(a.local.type == .relay && a.remote.address == Self.baseB)
        #expect(b.local.address == Self.baseB && b.remote.type == .relay)
        let exchanged = Self.exchange(&network, 2)
        #expect(exchanged)
    }

    @Test func relayPolicyKeepsTheHostAddressFromPeersAndSTUNServers() throws {
        var configurationA = Self.configuration(policy: .relay)
        configurationA.stunServers = [InMemoryNetwork().stunServer]
        var network = Self.network(configurationA, Self.configuration(policy: .all, withTURN: false))
        let connected = network.run(for: .seconds(5), until: ICEAgentTests.bothConnected)
        #expect(connected)
        #expect(network.peers[0].agent.statistics.gatheringRequestsSent == 0)
        #expect(network.peers[0].agent.localCandidates.allSatisfy { $0.type == .relay })
        // B only ever heard of, or from, A's relayed address: no peer-reflexive candidate of A's host.
        #expect(network.peers[1].agent.remoteCandidates.allSatisfy { $0.address?.ip == IPAddress("203.0.113.1") })
    }

    @Test func relayPolicyWithoutTURNServersFailsAtOnce() throws {
        var network = Self.network(Self.configuration(policy: .relay, withTURN: false),
                                   Self.configuration(policy: .all, withTURN: false))
        let failed = network.run(for: .seconds(1)) { $0.peers[0].agent.state == .failed }
        #expect(failed)
        #expect(network.now == .zero)
        #expect(Self.signalled(network.peers[0]).isEmpty)
    }

    @Test func wrongCredentialsAreNamedAndFailARelayOnlyAgent() throws {
        var network = Self.network(Self.configuration(policy: .relay, credential: "wrong"),
                                   Self.configuration(policy: .all, withTURN: false))
        let failed = network.run(for: .seconds(10)) { $0.peers[0].agent.state == .failed }
        #expect(failed)
        #expect(network.now < .seconds(2), "fails as soon as the allocation is refused: \(network.now)")
        let peer = network.peers[0]
        #expect(peer.events.contains(.turnFailed(server: Self.turnAddress, error: .wrongCredentials)))
        #expect(peer.agent.statistics.turnFailures == ["wrong-credentials": 1])
        #expect(peer.events.contains(.gatheringComplete))
        #expect(Self.signalled(peer).isEmpty)
    }

    @Test func wrongCredentialsLeaveHostCandidatesWithPolicyAll() throws {
        var network = Self.network(Self.configuration(policy: .all, credential: "wrong"),
                                   Self.configuration(policy: .all, withTURN: false))
        let connected = network.run(for: .seconds(5), until: ICEAgentTests.bothConnected)
        #expect(connected)
        #expect(network.peers[0].events.contains(.turnFailed(server: Self.turnAddress, error: .wrongCredentials)))
        #expect(network.peers[0].agent.selectedPair?.local.type == .host)
    }

    @Test func allocationsAreRefreshedDuringATwentyMinuteCall() throws {
        var network = Self.network(Self.configuration(policy: .relay), Self.configuration(policy: .relay))
        let connected = network.run(for: .seconds(5), until: ICEAgentTests.bothConnected)
        #expect(connected)
        for minute in 1...20 {
            network.run(for: .seconds(60))
            let exchanged = Self.exchange(&network, UInt8(minute))
            #expect(exchanged, "data at minute \(minute)")
        }
        #expect(network.peers.allSatisfy { $0.agent.state.isConnected })
        #expect(network.peers.allSatisfy { !$0.events.contains(.consentLost) })
        var server = try #require(network.turnServer)
        for base in [Self.baseA, Self.baseB] {
            let allocation = server.allocation(of: base, at: network.now)
            #expect(allocation != nil)
        }
        // 600 s allocations over 20 minutes: at least two Refreshes per client; permissions (300 s) renewed too.
        let refreshes = server.requests.filter { $0.method == .refresh }.count
        let permissions = server.requests.filter { $0.method == .createPermission }.count
        #expect(refreshes >= 4)
        #expect(permissions >= 2 * 4)
    }

    @Test func closeReleasesTheAllocations() throws {
        var network = Self.network(Self.configuration(policy: .relay), Self.configuration(policy: .relay))
        let connected = network.run(for: .seconds(5), until: ICEAgentTests.bothConnected)
        #expect(connected)
        network.peers[0].agent.close()
        let release = try requireTransmit(&network.peers[0].agent)
        let request = try STUNMessage(parsing: release.bytes)
        #expect(release.destination == Self.turnAddress && request.method == .refresh && request.lifetime == 0)
        network.route(release)
        var server = try #require(network.turnServer)
        let (released, kept) = (server.allocation(of: Self.baseA, at: network.now),
                                server.allocation(of: Self.baseB, at: network.now))
        #expect(released == nil && kept != nil)
    }
}
