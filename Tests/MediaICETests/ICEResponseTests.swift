/// How an agent treats answers to its checks (RFC 8445 §7.2.5): symmetric addresses, role conflicts,
/// peer-reflexive local candidates, and the seam for relayed candidates.
import MediaCore
import MediaICE
import MediaSTUN
import Testing

@Suite struct ICEResponseTests {
    static let local = ICECredentials(ufrag: "ufrA", pwd: "passwordOfAgentA0123456789")
    static let remote = ICECredentials(ufrag: "ufrB", pwd: "passwordOfAgentB0123456789")
    static let base = TransportAddress("192.168.1.10:5000")!
    static let peer = TransportAddress("192.168.1.20:6000")!

    /// A controlling agent that has sent its first check to `peer`; returns the agent and that check.
    static func agentWithCheck(role: ICERole = .controlling) throws -> (ICEAgent, ICETransmit, STUNMessage) {
        var agent = ICEAgent(role: role, local: local, tieBreaker: 1000)
        agent.addLocalBase(base, now: .zero)
        agent.setRemoteCredentials(remote, now: .zero)
        agent.addRemoteCandidate(ICECandidate(type: .host, address: peer, foundation: "1"), now: .zero)
        agent.handleTimeout(now: .zero)
        let check = try requireTransmit(&agent)
        return (agent, check, try STUNMessage(parsing: check.bytes))
    }

    /// The peer's answer, authenticated with the peer's password (RFC 8445 §7.3).
    static func answer(_ request: STUNMessage, attributes: [STUNAttribute], error: Bool = false) -> [UInt8] {
        STUNMessage(method: .binding, messageClass: error ? .errorResponse : .successResponse,
                    transactionID: request.transactionID, attributes: attributes)
            .serialized(integrity: .shortTerm(password: remote.pwd), fingerprint: true)
    }

    @Test func checkCarriesTheICEAttributes() throws {
        let (_, transmit, request) = try Self.agentWithCheck()
        #expect(transmit.source == Self.base && transmit.destination == Self.peer)
        #expect(request.username == "ufrB:ufrA")
        #expect(request.iceControlling == 1000 && request.iceControlled == nil)
        #expect(request.priority == ICECandidate.priority(type: .prflx, localPreference: 65535, component: 1))
        #expect(request.hasFingerprint)
        try STUNMessage.verifyIntegrity(of: transmit.bytes, key: .shortTerm(password: Self.remote.pwd))
    }

    /// A success from another address than the check went to fails the pair (RFC 8445 §7.2.5.2.1).
    @Test func asymmetricResponseFailsThePair() throws {
        var (agent, _, request) = try Self.agentWithCheck()
        let bytes = Self.answer(request, attributes: [.xorMappedAddress(Self.base)])
        let result = agent.handleReceive(bytes, from: TransportAddress("192.168.1.99:6000")!, to: Self.base, now: .milliseconds(20))
        #expect(result == .dropped(reason: "asymmetric-response"))
        #expect(agent.statistics.pairs.map(\.state) == [.failed])
    }

    /// A success whose mapped address is no local candidate makes a peer-reflexive local candidate with the
    /// check's PRIORITY, and the valid pair uses it (RFC 8445 §7.2.5.3.1, §7.2.5.3.2).
    @Test func unknownMappedAddressMakesALocalPeerReflexive() throws {
        var (agent, _, request) = try Self.agentWithCheck()
        let mapped = TransportAddress("203.0.113.50:1234")!
        let result = agent.handleReceive(Self.answer(request, attributes: [.xorMappedAddress(mapped)]),
                                         from: Self.peer, to: Self.base, now: .milliseconds(20))
        #expect(result == .handled)
        let prflx = try #require(agent.localCandidates.last)
        #expect(prflx.type == .prflx && prflx.address == mapped && prflx.priority == request.priority)
        #expect(prflx.relatedAddress == "192.168.1.10" && prflx.relatedPort == 5000)
        let pairs = agent.statistics.pairs
        #expect(pairs.count == 2 && pairs.allSatisfy { $0.state == .succeeded })
        #expect(pairs.contains { $0.local.type == .prflx })
        #expect(pairs.first { $0.local.type == .host }?.currentRoundTripTime == .milliseconds(20))
    }

    /// A 487 answer (RFC 8445 §7.2.5.1): the agent takes the other role and checks the pair again.
    @Test func roleConflictResponseSwitchesRole() throws {
        var (agent, _, request) = try Self.agentWithCheck()
        let result = agent.handleReceive(Self.answer(request, attributes: [.errorCode(.roleConflict)], error: true),
                                         from: Self.peer, to: Self.base, now: .milliseconds(20))
        #expect(result == .handled)
        #expect(agent.role == .controlled)
        agent.handleTimeout(now: .milliseconds(50))
        let again = try STUNMessage(parsing: try requireTransmit(&agent).bytes)
        #expect(again.iceControlled == 1000 && again.iceControlling == nil)
        #expect(agent.statistics.pairs.map(\.state) == [.inProgress])
    }

    /// An answer forged with another password is dropped and the check goes on.
    @Test func forgedAnswerIsDropped() throws {
        var (agent, _, request) = try Self.agentWithCheck()
        let forged = STUNMessage(method: .binding, messageClass: .successResponse, transactionID: request.transactionID,
                                 attributes: [.xorMappedAddress(Self.base)])
            .serialized(integrity: .shortTerm(password: "someoneElsesPassword0123"), fingerprint: true)
        let result = agent.handleReceive(forged, from: Self.peer, to: Self.base, now: .milliseconds(20))
        #expect(result == .dropped(reason: "integrity-mismatch"))
        #expect(agent.statistics.pairs.map(\.state) == [.inProgress])
    }

    /// An unanswered check is sent again with a doubling timeout, then the pair fails (RFC 8489 §6.2.1).
    @Test func retransmissionsThenFailure() throws {
        var (agent, first, _) = try Self.agentWithCheck()
        var sentAt: [ClockTime] = [.zero]
        var now = ClockTime.zero
        while let due = agent.nextTimeout, due < .seconds(60), agent.statistics.pairs.first?.state == .inProgress {
            now = due
            agent.handleTimeout(now: now)
            while let transmit = agent.pollTransmit() {
                #expect(transmit.bytes == first.bytes)
                sentAt.append(now)
            }
        }
        #expect(sentAt.map(\.nanoseconds) == [0, 500, 1500, 3500, 6500, 9500, 12500].map { $0 * 1_000_000 })
        #expect(now == .milliseconds(15500))
        #expect(agent.statistics.pairs.map(\.state) == [.failed])
        #expect(agent.statistics.retransmissions == 6)
    }

    /// Relayed candidates (the TURN seam): signalled with their mapped address as related address, paired,
    /// and their checks leave as `relayed` transmits from the relayed address.
    @Test func relayedCandidateSeam() throws {
        var agent = ICEAgent(role: .controlling, local: Self.local, tieBreaker: 1000)
        let relayed = TransportAddress("198.51.100.9:61022")!
        let mapped = TransportAddress("203.0.113.7:40000")!
        agent.addRelayedCandidate(relayed: relayed, mapped: mapped, server: TransportAddress("198.51.100.9:3478")!,
                                  now: .zero)
        let event = agent.pollEvent()
        guard case .localCandidate(let candidate) = event else {
            Issue.record("expected a local candidate, got \(String(describing: event))")
            return
        }
        #expect(candidate.type == .relay && candidate.address == relayed)
        #expect(candidate.relatedAddress == "203.0.113.7" && candidate.relatedPort == 40000)
        #expect(candidate.priority == ICECandidate.priority(type: .relay, localPreference: 65535, component: 1))
        agent.setRemoteCredentials(Self.remote, now: .zero)
        agent.addRemoteCandidate(ICECandidate(type: .host, address: Self.peer, foundation: "1"), now: .zero)
        agent.handleTimeout(now: .zero)
        let check = try requireTransmit(&agent)
        #expect(check.relayed && check.source == relayed && check.destination == Self.peer)
        // The answer comes back through the TURN client, to the relayed address.
        let request = try STUNMessage(parsing: check.bytes)
        let result = agent.handleReceive(Self.answer(request, attributes: [.xorMappedAddress(relayed)]),
                                         from: Self.peer, to: relayed, now: .milliseconds(40))
        #expect(result == .handled)
        #expect(agent.statistics.pairs.map(\.state) == [.succeeded])
    }
}
