/// How an agent answers Binding requests (RFC 8445 §7.3, RFC 8489 §9.1.3) and what it drops, by reason.
import MediaCore
import MediaICE
import MediaSTUN
import Testing
import TestSupport

@Suite struct ICERequestTests {
    static let local = ICECredentials(ufrag: "ufrB", pwd: "passwordOfAgentB0123456789")
    static let remote = ICECredentials(ufrag: "ufrA", pwd: "passwordOfAgentA0123456789")
    static let base = TransportAddress("192.168.1.20:6000")!
    static let peer = TransportAddress("192.168.1.10:5000")!

    /// A controlled agent B on `base` that knows A's credentials but none of its candidates.
    static func agent(role: ICERole = .controlled, tieBreaker: UInt64 = 2000) -> ICEAgent {
        var agent = ICEAgent(role: role, local: local, tieBreaker: tieBreaker)
        agent.addLocalBase(base, now: .zero)
        agent.setRemoteCredentials(remote, now: .zero)
        while agent.pollEvent() != nil {}
        return agent
    }

    /// A check from A as RFC 8445 §7.2.2 writes it.
    static func check(username: String = "ufrB:ufrA", password: String? = local.pwd, fingerprint: Bool = true,
                      extra: [STUNAttribute] = [.iceControlling(1000)], id: UInt8 = 1) -> [UInt8] {
        let message = STUNMessage(method: .binding, messageClass: .request,
                                  transactionID: STUNTransactionID(bytes: [UInt8](repeating: id, count: 12)),
                                  attributes: [.username(username), .priority(1_862_270_975)] + extra)
        return message.serialized(integrity: password.map { STUNIntegrityKey.shortTerm(password: $0) },
                                  fingerprint: fingerprint)
    }

    @Test func answersAValidCheck() throws {
        var agent = Self.agent()
        let result = agent.handleReceive(Self.check(), from: Self.peer, to: Self.base, now: .milliseconds(5))
        #expect(result == .handled)
        let transmit = try requireTransmit(&agent)
        #expect(transmit.source == Self.base && transmit.destination == Self.peer && !transmit.relayed)
        let response = try STUNMessage(parsing: transmit.bytes)
        #expect(response.messageClass == .successResponse && response.method == .binding)
        #expect(response.transactionID == STUNTransactionID(bytes: [UInt8](repeating: 1, count: 12)))
        #expect(response.xorMappedAddress == Self.peer)
        #expect(response.hasFingerprint)
        try STUNMessage.verifyIntegrity(of: transmit.bytes, key: .shortTerm(password: Self.local.pwd))
        // The unknown source became a peer-reflexive remote candidate with the request's PRIORITY (§7.3.1.3).
        #expect(agent.remoteCandidates.map(\.type) == [.prflx])
        #expect(agent.remoteCandidates.first?.priority == 1_862_270_975)
        let event = agent.pollEvent()
        #expect(event == .peerReflexiveCandidate(agent.remoteCandidates[0]))
        #expect(agent.statistics.checksReceived == 1 && agent.statistics.responsesSent == 1)
        // A triggered check goes back at once (§7.3.1.4), with B's role and A's password.
        agent.handleTimeout(now: .milliseconds(5))
        let triggered = try requireTransmit(&agent)
        let request = try STUNMessage(parsing: triggered.bytes)
        #expect(request.messageClass == .request && request.username == "ufrA:ufrB")
        #expect(request.iceControlled == 2000 && request.iceControlling == nil && !request.useCandidate)
        try STUNMessage.verifyIntegrity(of: triggered.bytes, key: .shortTerm(password: Self.remote.pwd))
        #expect(triggered.destination == Self.peer)
    }

    /// A PRIORITY beyond 2^31 − 1 in a check is clamped for the peer-reflexive candidate.
    @Test func outOfRangePriorityIsClamped() throws {
        var agent = Self.agent()
        let bytes = STUNMessage(method: .binding, messageClass: .request,
                                attributes: [.username("ufrB:ufrA"), .priority(.max), .iceControlling(1000)])
            .serialized(integrity: .shortTerm(password: Self.local.pwd), fingerprint: true)
        #expect(agent.handleReceive(bytes, from: Self.peer, to: Self.base, now: .zero) == .handled)
        #expect(agent.remoteCandidates.first?.priority == 0x7FFF_FFFF)
        #expect(agent.statistics.pairs.first?.priority ?? 0 > 0)
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var reason: String
        /// The error code of the response sent, nil for none.
        var responseCode: Int?
        var testDescription: String { name }
    }

    static let badInputs: [BadInput] = {
        var badCookie = check()
        badCookie[4] ^= 0xFF
        var badFingerprint = check()
        badFingerprint[badFingerprint.count - 1] ^= 0x01
        let strayResponse = STUNMessage(method: .binding, messageClass: .successResponse,
                                        transactionID: STUNTransactionID(bytes: [UInt8](repeating: 9, count: 12)),
                                        attributes: [.xorMappedAddress(base)]).serialized(fingerprint: true)
        return [
            BadInput(name: "empty", bytes: [], reason: "empty-datagram"),
            BadInput(name: "three bytes of STUN range", bytes: [0x00, 0x01, 0x00], reason: "too-short"),
            BadInput(name: "bad magic cookie", bytes: badCookie, reason: "bad-magic-cookie"),
            BadInput(name: "bad fingerprint", bytes: badFingerprint, reason: "bad-fingerprint"),
            BadInput(name: "no fingerprint", bytes: check(fingerprint: false), reason: "missing-fingerprint"),
            BadInput(name: "no integrity", bytes: check(password: nil), reason: "missing-integrity", responseCode: 400),
            BadInput(name: "wrong ufrag", bytes: check(username: "nope:ufrA"), reason: "unknown-username", responseCode: 401),
            BadInput(name: "wrong password", bytes: check(password: "wrongPasswordForB012345"),
                     reason: "integrity-mismatch", responseCode: 401),
            BadInput(name: "unknown comprehension-required attribute",
                     bytes: check(extra: [.iceControlling(1000), .other(type: 0x7F00, value: [1, 2, 3, 4])]),
                     reason: "unknown-attribute", responseCode: 420),
            BadInput(name: "response to no request", bytes: strayResponse, reason: "unknown-transaction"),
            BadInput(name: "application data from an unknown address", bytes: [0x80, 0x60, 0, 1], reason: "unknown-source"),
        ]
    }()

    @Test(arguments: badInputs)
    func dropsAndCountsByReason(input: BadInput) throws {
        var agent = Self.agent()
        let result = agent.handleReceive(input.bytes, from: Self.peer, to: Self.base, now: .milliseconds(5))
        #expect(result == .dropped(reason: input.reason))
        #expect(agent.statistics.drops == [input.reason: 1])
        #expect(agent.remoteCandidates.isEmpty, "nothing learned from a refused message")
        if let code = input.responseCode {
            let transmit = try requireTransmit(&agent)
            let response = try STUNMessage(parsing: transmit.bytes)
            #expect(response.messageClass == .errorResponse && response.errorCode?.code == code)
        }
        let nothingElse = agent.pollTransmit()
        #expect(nothingElse == nil)
    }

    /// Both controlling, ours the larger tie-breaker: 487, authenticated, and we stay controlling (§7.3.1.1).
    @Test func roleConflictAnswer() throws {
        var agent = Self.agent(role: .controlling, tieBreaker: 5000)
        let result = agent.handleReceive(Self.check(), from: Self.peer, to: Self.base, now: .zero)
        #expect(result == .handled)
        let transmit = try requireTransmit(&agent)
        let response = try STUNMessage(parsing: transmit.bytes)
        #expect(response.errorCode?.code == 487)
        try STUNMessage.verifyIntegrity(of: transmit.bytes, key: .shortTerm(password: Self.local.pwd))
        #expect(agent.role == .controlling && agent.statistics.roleConflicts == 1)
        // The smaller tie-breaker switches to controlled and answers with success.
        var smaller = Self.agent(role: .controlling, tieBreaker: 10)
        let smallerResult = smaller.handleReceive(Self.check(), from: Self.peer, to: Self.base, now: .zero)
        #expect(smallerResult == .handled && smaller.role == .controlled)
        let answer = try STUNMessage(parsing: try requireTransmit(&smaller).bytes)
        #expect(answer.messageClass == .successResponse)
        let event = smaller.pollEvent()
        #expect(event == .roleChanged(.controlled))
    }

    /// Checks may come before the peer's credentials (RFC 8445 §7.3): they are answered and their triggered
    /// check waits for the credentials.
    @Test func checksBeforeRemoteCredentials() throws {
        var agent = ICEAgent(role: .controlled, local: Self.local, tieBreaker: 2000)
        agent.addLocalBase(Self.base, now: .zero)
        let result = agent.handleReceive(Self.check(), from: Self.peer, to: Self.base, now: .zero)
        #expect(result == .handled)
        let answer = try STUNMessage(parsing: try requireTransmit(&agent).bytes)
        #expect(answer.messageClass == .successResponse)
        agent.handleTimeout(now: .milliseconds(100))
        let early = agent.pollTransmit()
        #expect(early == nil, "no check without the peer's password")
        agent.setRemoteCredentials(Self.remote, now: .milliseconds(100))
        agent.handleTimeout(now: .milliseconds(100))
        let triggered = try requireTransmit(&agent)
        #expect(try STUNMessage(parsing: triggered.bytes).username == "ufrA:ufrB")
    }

    /// The triggered-check queue goes before ordinary checks (RFC 8445 §6.1.4.2, §7.3.1.4): a check from a
    /// new address is answered by a check there first, although signalled host pairs rank higher.
    @Test func triggeredCheckGoesFirst() throws {
        var agent = Self.agent()
        for port in UInt16(7000)...7002 {
            let candidate = ICECandidate(type: .host, address: TransportAddress(ip: Self.peer.ip, port: port),
                                         foundation: "host\(port)", localPreference: 65535 - (port - 7000))
            agent.addRemoteCandidate(candidate, now: .zero)
        }
        let result = agent.handleReceive(Self.check(), from: Self.peer, to: Self.base, now: .zero)
        #expect(result == .handled)
        _ = try requireTransmit(&agent)  // the success response
        agent.handleTimeout(now: .zero)
        #expect(try requireTransmit(&agent).destination == Self.peer)
        // The ordinary checks follow, one per Ta (50 ms), highest priority first.
        agent.handleTimeout(now: .milliseconds(20))
        let paced = agent.pollTransmit()
        #expect(paced == nil, "paced at Ta")
        agent.handleTimeout(now: .milliseconds(50))
        #expect(try requireTransmit(&agent).destination.port == 7000)
        #expect(agent.statistics.pairs.count == 4)
    }

    /// The controlled agent selects a pair the controlling one nominated (RFC 8445 §7.3.1.5, §8.1.1): at once
    /// when its own check of the pair already succeeded, otherwise when that check succeeds.
    @Test(arguments: [false, true])
    func controlledAgentSelectsTheNominatedPair(ownCheckFirst: Bool) throws {
        var agent = Self.agent()
        agent.addRemoteCandidate(ICECandidate(type: .host, address: Self.peer, foundation: "1"), now: .zero)
        agent.handleTimeout(now: .zero)
        let ownCheck = try STUNMessage(parsing: try requireTransmit(&agent).bytes)
        let answer = ownCheck.successResponse(attributes: [.xorMappedAddress(Self.base)])
            .serialized(integrity: .shortTerm(password: Self.remote.pwd), fingerprint: true)
        if ownCheckFirst {
            #expect(agent.handleReceive(answer, from: Self.peer, to: Self.base, now: .milliseconds(20)) == .handled)
            #expect(agent.selectedPair == nil, "not selected without a nomination")
        }
        let nomination = Self.check(extra: [.iceControlling(1000), .useCandidate])
        #expect(agent.handleReceive(nomination, from: Self.peer, to: Self.base, now: .milliseconds(30)) == .handled)
        if !ownCheckFirst {
            #expect(agent.selectedPair == nil, "not selected before its own check succeeds")
            #expect(agent.handleReceive(answer, from: Self.peer, to: Self.base, now: .milliseconds(40)) == .handled)
        }
        let selected = try #require(agent.selectedPair)
        #expect(selected.remote.address == Self.peer && selected.local.address == Self.base)
        #expect(agent.state == .connected)
        #expect(agent.statistics.pairs.first?.nominated == true)
        var events: [ICEEvent] = []
        while let event = agent.pollEvent() { events.append(event) }
        #expect(events.contains(.selectedPairChanged(local: selected.local, remote: selected.remote)))
        #expect(events.last == .stateChanged(.connected))
    }

    /// A STUN server that never answers: the request is retransmitted, then gathering completes without a
    /// server-reflexive candidate.
    @Test func unansweredSTUNServerEndsGathering() {
        let server = TransportAddress("198.51.100.1:3478")!
        var agent = ICEAgent(role: .controlling, local: Self.local, configuration: ICEConfiguration(stunServers: [server]),
                             tieBreaker: 1)
        agent.addLocalBase(Self.base, now: .zero)
        var requests = 0
        var now = ClockTime.zero
        var complete = false
        while !complete, let due = agent.nextTimeout, due < .seconds(60) {
            while let transmit = agent.pollTransmit() {
                #expect(transmit.destination == server && transmit.source == Self.base)
                requests += 1
            }
            now = due
            agent.handleTimeout(now: now)
            while let event = agent.pollEvent() { if event == .gatheringComplete { complete = true } }
        }
        #expect(complete && requests == 7 && now == .milliseconds(15500))
        #expect(agent.localCandidates.map(\.type) == [.host])
        #expect(agent.statistics.gatheringRequestsSent == 1 && agent.statistics.retransmissions == 6)
    }

    /// Mutated checks and responses (seeded): never a trap, every datagram handled or dropped by a named
    /// reason, and the drops add up.
    @Test func mutatedDatagramsAreCountedNotFatal() throws {
        var agent = Self.agent()
        agent.addRemoteCandidate(ICECandidate(type: .host, address: Self.peer, foundation: "1"), now: .zero)
        agent.handleTimeout(now: .zero)
        let ownCheck = try STUNMessage(parsing: try requireTransmit(&agent).bytes)
        let seeds = [Self.check(), Self.check(extra: [.iceControlling(1000), .useCandidate]),
                     ownCheck.successResponse(attributes: [.xorMappedAddress(Self.base)])
                         .serialized(integrity: .shortTerm(password: Self.remote.pwd), fingerprint: true)]
        var random = SplitMix64(seed: 12)
        var dropped = 0
        for round in 0..<3000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0...Int(random.next() % 4) {
                let index = Int(random.next() % UInt64(bytes.count))
                bytes[index] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            }
            if random.next() % 8 == 0 { bytes.removeLast(Int(random.next() % UInt64(bytes.count))) }
            let result = agent.handleReceive(bytes, from: Self.peer, to: Self.base, now: .milliseconds(Int64(round)))
            if case .dropped(let reason) = result {
                #expect(!reason.isEmpty)
                dropped += 1
            }
            while agent.pollTransmit() != nil {}
        }
        #expect(dropped > 2500)
        #expect(agent.statistics.drops.values.reduce(0, +) == dropped)
        #expect(agent.statistics.drops.keys.contains("bad-fingerprint"))
    }
}
