/// Two agents on the in-memory network (manual clock): host, peer-reflexive and server-reflexive paths,
/// role conflicts, loss, wrong credentials, consent expiry, ICE restart and trickle.
import MediaCore
import MediaICE
import MediaSTUN
import Testing

@Suite struct ICEAgentTests {
    static let credentialsA = ICECredentials(ufrag: "ufrA", pwd: "passwordOfAgentA0123456789")
    static let credentialsB = ICECredentials(ufrag: "ufrB", pwd: "passwordOfAgentB0123456789")

    /// A on 192.168.1.10:5000 and B on 192.168.1.20:6000, credentials exchanged, candidates signalled.
    static func twoAgents(roleA: ICERole = .controlling, roleB: ICERole = .controlled, seed: UInt64 = 1,
                          configuration: ICEConfiguration = ICEConfiguration()) -> InMemoryNetwork {
        var network = InMemoryNetwork(seed: seed)
        network.add("A", ICEAgent(role: roleA, local: credentialsA, configuration: configuration, tieBreaker: 1000 + seed),
                    bases: ["192.168.1.10:5000"])
        network.add("B", ICEAgent(role: roleB, local: credentialsB, configuration: configuration, tieBreaker: 2000 + seed),
                    bases: ["192.168.1.20:6000"])
        network.exchangeCredentials()
        return network
    }

    static func bothConnected(_ network: InMemoryNetwork) -> Bool {
        network.peers.allSatisfy { $0.agent.state.isConnected }
    }

    /// Both agents selected the same path: A's local is B's remote and the other way round.
    static func expectSamePath(_ network: InMemoryNetwork, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let a = try #require(network.peers[0].agent.selectedPair, sourceLocation: sourceLocation)
        let b = try #require(network.peers[1].agent.selectedPair, sourceLocation: sourceLocation)
        #expect(a.remote.address == b.local.address || b.local.type == .srflx || b.local.type == .prflx,
                sourceLocation: sourceLocation)
        #expect(a.remote.address != nil && b.remote.address != nil, sourceLocation: sourceLocation)
    }

    static func exchangeData(_ network: inout InMemoryNetwork) -> Bool {
        let sentA = network.sendApplication(from: 0, [0x17, 0xFE, 0xFD, 1, 2, 3])  // a DTLS-looking record
        let sentB = network.sendApplication(from: 1, [0x80, 0x60, 0, 1])              // an RTP-looking packet
        network.run(for: .milliseconds(100))
        return sentA && sentB && network.peers[1].received.last == [0x17, 0xFE, 0xFD, 1, 2, 3]
            && network.peers[0].received.last == [0x80, 0x60, 0, 1]
    }

    @Test(arguments: [(ICERole.controlling, ICERole.controlled), (.controlled, .controlling)])
    func hostCandidatesConnect(roleA: ICERole, roleB: ICERole) throws {
        var network = Self.twoAgents(roleA: roleA, roleB: roleB)
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        #expect(network.now < .seconds(1), "connects in well under a second on a 10 ms path: \(network.now)")
        let a = try #require(network.peers[0].agent.selectedPair)
        let b = try #require(network.peers[1].agent.selectedPair)
        #expect(a.local.address?.description == "192.168.1.10:5000" && a.remote.address?.description == "192.168.1.20:6000")
        #expect(b.local.address?.description == "192.168.1.20:6000" && b.remote.address?.description == "192.168.1.10:5000")
        // Both signalled end-of-candidates and gathered: completed.
        network.run(for: .milliseconds(200))
        #expect(network.peers.allSatisfy { $0.agent.state == .completed })
        #expect(network.peers.allSatisfy { $0.states == [.checking, .connected, .completed] })
        #expect(network.peers[0].events.contains(.gatheringComplete))
        let dataFlows = Self.exchangeData(&network)
        #expect(dataFlows)
        // Statistics of the selected pair.
        let stats = network.peers[0].agent.statistics
        let selected = try #require(stats.pairs.first { $0.selected })
        #expect(selected.nominated && selected.state == .succeeded)
        #expect(selected.packetsSent == 1 && selected.bytesSent == 6)
        #expect(selected.packetsReceived == 1 && selected.bytesReceived == 4)
        #expect(selected.requestsSent >= 1 && selected.responsesReceived >= 1)
        #expect(selected.currentRoundTripTime == .milliseconds(20))
        #expect(stats.checksSent >= 1 && stats.checksReceived >= 1 && stats.drops.isEmpty)
    }

    /// The controlled side gets no candidates at all (as Chromium may answer): it learns the controlling
    /// side as peer-reflexive from its checks (RFC 8445 §7.3.1.3) and connects through triggered checks.
    @Test(arguments: [0, 1])
    func connectsWithoutRemoteCandidatesThroughPeerReflexive(silent: Int) throws {
        var network = Self.twoAgents()
        network.peers[silent].signalsCandidates = false
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        let learner = 1 - silent
        #expect(network.peers[learner].agent.remoteCandidates.count == 1)
        #expect(network.peers[learner].agent.remoteCandidates.first?.type == .prflx)
        #expect(network.peers[learner].events.contains { if case .peerReflexiveCandidate = $0 { true } else { false } })
        let pair = try #require(network.peers[learner].agent.selectedPair)
        #expect(pair.remote.type == .prflx)
        #expect(pair.remote.address == network.peers[silent].bases.first)
        let dataFlows = Self.exchangeData(&network)
        #expect(dataFlows)
    }

    /// A behind a NAT (10.0.0.2 seen as 203.0.113.7) gathers a server-reflexive candidate from the STUN
    /// server; B reaches A through it.
    @Test func natAndStunServerGiveServerReflexive() throws {
        var network = InMemoryNetwork()
        network.nats = [NAT(privateIP: IPAddress("10.0.0.2")!, publicIP: IPAddress("203.0.113.7")!)]
        let configuration = ICEConfiguration(stunServers: [network.stunServer])
        network.add("A", ICEAgent(role: .controlling, local: Self.credentialsA, configuration: configuration, tieBreaker: 1),
                    bases: ["10.0.0.2:5000"])
        network.add("B", ICEAgent(role: .controlled, local: Self.credentialsB, tieBreaker: 2), bases: ["198.51.100.20:6000"])
        network.exchangeCredentials()
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        let candidates = network.peers[0].events.compactMap { if case .localCandidate(let c) = $0 { c } else { nil } }
        #expect(candidates.map(\.type) == [.host, .srflx])
        let srflx = try #require(candidates.last)
        #expect(srflx.address?.description == "203.0.113.7:40000")
        #expect(srflx.relatedAddress == "10.0.0.2" && srflx.relatedPort == 5000)
        #expect(srflx.priority == ICECandidate.priority(type: .srflx, localPreference: 65535, component: 1))
        #expect(network.peers[0].events.contains(.gatheringComplete))
        let seenByB = try #require(network.peers[1].agent.selectedPair)
        #expect(seenByB.remote.address?.description == "203.0.113.7:40000")
        let a = try #require(network.peers[0].agent.selectedPair)
        #expect(a.local.type == .srflx && a.local.address?.description == "203.0.113.7:40000")
        let dataFlows = Self.exchangeData(&network)
        #expect(dataFlows)
    }

    @Test func hostEqualToMappedAddressGivesNoServerReflexive() {
        var network = InMemoryNetwork()
        network.add("A", ICEAgent(role: .controlling, local: Self.credentialsA,
                                  configuration: ICEConfiguration(stunServers: [network.stunServer]), tieBreaker: 1),
                    bases: ["198.51.100.10:5000"])
        network.run(for: .seconds(1), until: { $0.peers[0].events.contains(.gatheringComplete) })
        #expect(network.peers[0].agent.localCandidates.map(\.type) == [.host])
        #expect(network.peers[0].events.contains(.gatheringComplete))
    }

    /// Both start controlling: the 487 repair leaves exactly one controlling agent, and they connect.
    @Test(arguments: [ICERole.controlling, .controlled])
    func roleConflictIsRepaired(role: ICERole) throws {
        var network = Self.twoAgents(roleA: role, roleB: role)
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        let roles = network.peers.map(\.agent.role)
        #expect(Set(roles) == [.controlling, .controlled])
        // A's tie-breaker (1001) is the smaller: A ends controlled whichever role both claimed (§7.3.1.1).
        #expect(roles == [.controlled, .controlling])
        #expect(network.peers.contains { $0.events.contains { if case .roleChanged = $0 { true } else { false } } })
        try Self.expectSamePath(network)
        let dataFlows = Self.exchangeData(&network)
        #expect(dataFlows)
    }

    /// Each side has the other's password wrong: every check is refused with 401, all pairs fail, and with
    /// end-of-candidates both agents report failed quickly (and surely within the failure timeout).
    @Test func wrongPasswordFails() {
        var network = Self.twoAgents()
        network.peers[0].agent.setRemoteCredentials(ICECredentials(ufrag: "ufrB", pwd: "notThePasswordOfB0123456"),
                                                    now: network.now)
        network.peers[1].agent.setRemoteCredentials(ICECredentials(ufrag: "ufrA", pwd: "notThePasswordOfA0123456"),
                                                    now: network.now)
        let failed = network.run(for: .seconds(31), until: { $0.peers.allSatisfy { $0.agent.state == .failed } })
        #expect(failed)
        #expect(network.now < .seconds(2), "all pairs failed on 401s: \(network.now)")
        #expect(network.peers.allSatisfy { $0.agent.selectedPair == nil })
        #expect(network.peers.allSatisfy { ($0.agent.statistics.drops["integrity-mismatch"] ?? 0) >= 1 })
        #expect(network.peers.allSatisfy { $0.agent.statistics.errorResponsesReceived >= 1 })
        let sent = network.sendApplication(from: 0, [0x80])
        #expect(sent == false)
    }

    /// Without end-of-candidates an unanswered agent fails at the failure timeout.
    @Test func unansweredChecksFailAtTheFailureTimeout() {
        var network = Self.twoAgents(configuration: ICEConfiguration(failureTimeout: .seconds(10)))
        network.peers[0].signalsCandidates = false
        network.peers[1].vanished = true
        let failed = network.run(for: .seconds(30), until: { $0.peers[0].agent.state == .failed })
        #expect(failed)
        #expect(network.now >= .seconds(10) && network.now < .seconds(11))
    }

    /// The peer vanishes after connecting: disconnected after `disconnectedTimeout`, consent lost after 30 s
    /// without a response (RFC 7675), state failed, and `send` refuses.
    @Test func consentExpiresWhenThePeerVanishes() throws {
        var network = Self.twoAgents()
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        // A minute of idle time keeps the pair up on consent traffic alone.
        network.run(for: .seconds(60))
        #expect(network.peers.allSatisfy { $0.agent.state == .completed })
        #expect(network.peers[0].agent.statistics.consentRequestsSent >= 10)
        let vanishedAt = network.now
        network.peers[1].vanished = true
        let disconnected = network.run(for: .seconds(10), until: { $0.peers[0].agent.state == .disconnected })
        #expect(disconnected)
        #expect(network.now - vanishedAt <= .seconds(7.5))
        let sent = network.sendApplication(from: 0, [0x80])
        #expect(sent, "still sending while disconnected")
        let failed = network.run(for: .seconds(40), until: { $0.peers[0].agent.state == .failed })
        #expect(failed)
        let elapsed = (network.now - vanishedAt).seconds
        #expect(elapsed >= 24 && elapsed <= 31, "consent lost \(elapsed) s after the last answer")
        #expect(network.peers[0].events.contains(.consentLost))
        #expect(network.peers[0].states.suffix(2) == [.disconnected, .failed])
        let refusedBefore = network.peers[0].agent.statistics.sendsRefused
        let sentAfterConsentLost = network.sendApplication(from: 0, [0x80])
        #expect(sentAfterConsentLost == false)
        #expect(network.peers[0].agent.statistics.sendsRefused == refusedBefore + 1)
        // Nothing left to do: no timer spinning in the past, no more consent requests.
        let consentRequests = network.peers[0].agent.statistics.consentRequestsSent
        network.run(for: .seconds(60))
        #expect(network.peers[0].agent.statistics.consentRequestsSent == consentRequests)
        #expect(network.peers[0].agent.state == .failed)
    }

    /// Consent survives 20 % loss on an idle path for ten minutes: each consent request is retransmitted
    /// until the next one is due. (With one datagram per request, these seeds lost consent.)
    @Test(arguments: [UInt64(3), 6, 10])
    func consentSurvivesLoss(seed: UInt64) {
        var network = Self.twoAgents(seed: seed)
        network.loss = 0.2
        network.jitter = .milliseconds(30)
        let connected = network.run(for: .seconds(20), until: Self.bothConnected)
        #expect(connected)
        network.run(for: .seconds(600))
        #expect(network.peers.allSatisfy { !$0.events.contains(.consentLost) && $0.agent.state == .completed })
        #expect(network.peers.allSatisfy { $0.agent.statistics.consentRequestsSent >= 100 })
    }

    /// 20 % loss both ways (and reordering): retransmissions still get both agents connected.
    @Test(arguments: [UInt64(3), 4, 5, 6])
    func connectsWithTwentyPercentLoss(seed: UInt64) throws {
        var network = Self.twoAgents(seed: seed)
        network.loss = 0.2
        network.jitter = .milliseconds(30)
        let connected = network.run(for: .seconds(20), until: Self.bothConnected)
        #expect(connected)
        try Self.expectSamePath(network)
        #expect(network.lost > 0)
        #expect(network.peers.contains { $0.agent.statistics.retransmissions > 0 } || network.lost < 3)
    }

    /// ICE restart (RFC 8445 §9): new credentials both sides, the old pair keeps carrying data until the new
    /// checklist selects a pair, and the new pair answers with the new credentials.
    @Test func restartReconnectsWithNewCredentials() throws {
        var network = Self.twoAgents()
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        let newA = ICECredentials(ufrag: "newA", pwd: "restartedPasswordA012345")
        let newB = ICECredentials(ufrag: "newB", pwd: "restartedPasswordB012345")
        let changesBefore = network.peers.map { $0.events.filter { if case .selectedPairChanged = $0 { true } else { false } }.count }
        network.peers[0].agent.restart(newA, now: network.now)
        network.peers[1].agent.restart(newB, now: network.now)
        #expect(network.peers[0].agent.state.isConnected, "the old pair stays up during the restart")
        let dataFlows = Self.exchangeData(&network)
        #expect(dataFlows, "data flows on the old pair during the restart")
        network.exchangeCredentials()
        #expect(network.peers[0].agent.remoteCredentials == newB && network.peers[1].agent.remoteCredentials == newA)
        let reconnected = network.run(for: .seconds(5), until: { network in
            network.peers.indices.allSatisfy { index in
                network.peers[index].events.filter { if case .selectedPairChanged = $0 { true } else { false } }.count
                    > changesBefore[index]
            }
        })
        #expect(reconnected)
        #expect(Self.bothConnected(network))
        let dataFlowsAgain = Self.exchangeData(&network)
        #expect(dataFlowsAgain)
        // Consent now runs with the new credentials: a minute later all is well.
        network.run(for: .seconds(60))
        #expect(network.peers.allSatisfy { $0.agent.state == .completed })
        #expect(network.peers.allSatisfy { $0.agent.statistics.drops.isEmpty })
    }

    /// Trickle (RFC 8838): checks start with no candidates; candidates arriving later still connect.
    @Test func trickledCandidatesAfterChecksStarted() {
        var network = Self.twoAgents()
        network.peers[0].signalsCandidates = false
        network.peers[1].signalsCandidates = false
        network.run(for: .seconds(2))
        #expect(network.peers.allSatisfy { $0.agent.state == .checking })
        #expect(network.peers.allSatisfy { $0.agent.selectedPair == nil })
        let candidateOfB = network.peers[1].agent.localCandidates[0]
        network.peers[0].agent.addRemoteCandidate(candidateOfB, now: network.now)
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
    }

    /// mDNS and TCP remote candidates are counted and left alone.
    @Test func mdnsAndTCPCandidatesAreIgnored() throws {
        var agent = ICEAgent(role: .controlling, local: Self.credentialsA, tieBreaker: 1)
        agent.addLocalBase(TransportAddress("192.168.1.10:5000")!, now: .zero)
        agent.addRemoteCandidate(try ICECandidate(parsing: "candidate:1 1 udp 2122260223 abc.local 5000 typ host"), now: .zero)
        agent.addRemoteCandidate(try ICECandidate(parsing: "candidate:2 1 tcp 1518280447 192.168.1.5 9 typ host tcptype active"),
                                 now: .zero)
        #expect(agent.remoteCandidates.isEmpty && agent.statistics.pairs.isEmpty)
        #expect(agent.statistics.mdnsCandidatesIgnored == 1 && agent.statistics.tcpCandidatesIgnored == 1)
    }

    /// A candidate trickled with the previous generation's ufrag after a restart is not paired.
    @Test func candidatesOfAnotherGenerationAreIgnored() throws {
        var agent = ICEAgent(role: .controlling, local: Self.credentialsA, tieBreaker: 1)
        agent.addLocalBase(TransportAddress("192.168.1.10:5000")!, now: .zero)
        agent.setRemoteCredentials(Self.credentialsB, now: .zero)
        agent.addRemoteCandidate(try ICECandidate(parsing: "candidate:1 1 udp 2122260223 192.168.1.20 6000 typ host ufrag old1"),
                                 now: .zero)
        agent.addRemoteCandidate(try ICECandidate(parsing: "candidate:2 1 udp 2122260223 192.168.1.21 6000 typ host ufrag ufrB"),
                                 now: .zero)
        #expect(agent.remoteCandidates.map(\.connectionAddress) == ["192.168.1.21"])
        #expect(agent.statistics.drops == ["stale-candidate-generation": 1])
    }

    @Test func loopbackBasesOnlyWhenConfigured() {
        var plain = ICEAgent(role: .controlling, local: Self.credentialsA, tieBreaker: 1)
        plain.addLocalBases([TransportAddress("127.0.0.1:5000")!, TransportAddress("192.168.1.10:5000")!], now: .zero)
        #expect(plain.localCandidates.map(\.connectionAddress) == ["192.168.1.10"])
        var loopback = ICEAgent(role: .controlling, local: Self.credentialsA,
                                configuration: ICEConfiguration(includeLoopback: true), tieBreaker: 1)
        loopback.addLocalBases([TransportAddress("127.0.0.1:5000")!], now: .zero)
        #expect(loopback.localCandidates.map(\.connectionAddress) == ["127.0.0.1"])
        // Two bases: distinct local preferences.
        var twoBases = ICEAgent(role: .controlling, local: Self.credentialsA, tieBreaker: 1)
        twoBases.addLocalBases([TransportAddress("192.168.1.10:5000")!, TransportAddress("10.1.1.1:5000")!], now: .zero)
        #expect(twoBases.localCandidates.map(\.priority) == [2_130_706_431, 2_130_706_175])
    }

    @Test func closeStopsEverything() {
        var network = Self.twoAgents()
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        network.peers[0].agent.close()
        #expect(network.peers[0].agent.state == .closed)
        #expect(network.peers[0].agent.nextTimeout == nil)
        let sent = network.sendApplication(from: 0, [0x80])
        #expect(sent == false)
        #expect(network.peers[0].agent.handleReceive([0x80], from: TransportAddress("192.168.1.20:6000")!,
                                                     to: TransportAddress("192.168.1.10:5000")!, now: network.now)
            == .dropped(reason: "closed"))
    }

    /// Pairs only join candidates of one address family (RFC 8445 §6.1.2.2): A has IPv4 and IPv6 bases, B
    /// only IPv6, and they connect over IPv6.
    @Test func pairsKeepToOneAddressFamily() throws {
        var network = InMemoryNetwork()
        network.add("A", ICEAgent(role: .controlling, local: Self.credentialsA, tieBreaker: 1),
                    bases: ["192.168.1.10:5000", "[2001:db8::10]:5000"])
        network.add("B", ICEAgent(role: .controlled, local: Self.credentialsB, tieBreaker: 2), bases: ["[2001:db8::20]:6000"])
        #expect(network.peers[0].bases.count == 2 && network.peers[1].bases.count == 1)
        network.exchangeCredentials()
        let connected = network.run(for: .seconds(5), until: Self.bothConnected)
        #expect(connected)
        #expect(network.peers[0].agent.statistics.pairs.count == 1)
        let pair = try #require(network.peers[0].agent.selectedPair)
        #expect(pair.local.connectionAddress == "2001:db8::10" && pair.remote.connectionAddress == "2001:db8::20")
    }
}
