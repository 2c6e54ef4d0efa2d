import MediaCore
import MediaSTUN
import Testing

@testable import MediaICE

/// A `TURNClient` and a `TURNTestServer` wired together in memory, with a manual clock.
struct TURNHarness {
    static let serverAddress = TransportAddress(host: "198.51.100.1", port: 3478)!
    static let clientAddress = TransportAddress(host: "192.0.2.10", port: 50000)!
    static let peer = TransportAddress(host: "192.0.2.99", port: 6000)!

    var client: TURNClient
    var server: TURNTestServer
    var now = ClockTime.zero
    var events: [TURNEvent] = []
    var peerData: [(bytes: [UInt8], from: TransportAddress)] = []
    /// Every datagram the client sent to the server, with its time.
    var wire: [(time: ClockTime, bytes: [UInt8])] = []

    init(password: String = "secret", configuration: TURNConfiguration = TURNConfiguration()) {
        client = TURNClient(server: Self.serverAddress, username: "sluice", password: password,
                            configuration: configuration)
        server = TURNTestServer(address: Self.serverAddress, users: ["sluice": "secret"])
    }

    /// Started and allocated.
    static func allocated(configuration: TURNConfiguration = TURNConfiguration()) -> TURNHarness {
        var harness = TURNHarness(configuration: configuration)
        harness.client.start(now: harness.now)
        harness.pump()
        return harness
    }

    /// Carries the client's datagrams to the server and its answers back until both are quiet.
    mutating func pump() {
        while let datagram = client.pollTransmit() {
            wire.append((now, datagram))
            for reply in server.receive(datagram, from: Self.clientAddress, now: now) { deliver(reply) }
        }
        while let event = client.pollEvent() { events.append(event) }
    }

    /// Hands the client a datagram from the server.
    @discardableResult
    mutating func deliver(_ bytes: [UInt8]) -> TURNReceiveResult {
        let result = client.handleReceive(bytes, from: Self.serverAddress, at: now)
        if case .peerData(let data, let from) = result { peerData.append((data, from)) }
        return result
    }

    /// Runs the client's timers, in order, until `end`.
    mutating func run(until end: ClockTime) {
        pump()
        while let next = client.nextTimeout, next <= end {
            now = max(now, next)
            client.handleTimeout(now: now)
            pump()
        }
        now = end
    }

    /// A peer's datagram to our relayed address, through the server, into the client.
    @discardableResult
    mutating func peerSends(_ bytes: [UInt8], from peer: TransportAddress = Self.peer) -> [UInt8]? {
        guard let relayed = client.relayedAddress,
              let datagram = server.peerSends(bytes, from: peer, to: relayed, now: now) else { return nil }
        deliver(datagram)
        pump()
        return datagram
    }

    /// When the client sent requests of `method` (retransmissions included), in seconds.
    func requestTimes(_ method: STUNMethod) -> [Double] {
        wire.compactMap { datagram in
            guard let message = try? STUNMessage(parsing: datagram.bytes),
                  message.messageClass == .request, message.method == method else { return nil }
            return datagram.time.seconds
        }
    }
}

private func seconds(_ value: Double) -> ClockTime { .seconds(value) }

@Suite struct TURNAllocationTests {
    @Test func allocateAnswersTheChallengeWithLongTermCredentials() throws {
        let harness = TURNHarness.allocated()
        #expect(harness.client.state == .allocated)
        let relayed = try #require(harness.client.relayedAddress)
        #expect(harness.events == [.allocated(relayed: relayed, mapped: TURNHarness.clientAddress, lifetime: 600)])
        #expect(relayed.ip == IPAddress("203.0.113.1"))
        #expect(harness.client.mappedAddress == TURNHarness.clientAddress)

        // §7.1: first without credentials; after the 401, USERNAME, REALM, NONCE, MESSAGE-INTEGRITY.
        let requests = harness.server.requests
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.method == .allocate && $0.attributes.contains(.requestedTransport(17)) })
        #expect(requests[0].username == nil)
        #expect(!requests[0].attributes.contains { if case .messageIntegrity = $0 { true } else { false } })
        #expect(requests[1].username == "sluice")
        #expect(requests[1].realm == "sluice.test")
        #expect(requests[1].nonce == "nonce-1")
        #expect(requests[1].transactionID != requests[0].transactionID)
        // The key is MD5("sluice:sluice.test:secret") (RFC 8489 §9.2.2).
        let key = STUNIntegrityKey.longTerm(username: "sluice", realm: "sluice.test", password: "secret")
        #expect(throws: Never.self) { try STUNMessage.verifyIntegrity(of: harness.wire[1].bytes, key: key) }
        #expect(harness.client.statistics.requestsSent == 2)
        #expect(harness.client.statistics.responsesReceived == 2)
        #expect(harness.client.statistics.dropCount == 0)
    }

    @Test func requestedLifetimeIsSentAndTheGrantedOneReported() throws {
        var harness = TURNHarness(configuration: TURNConfiguration(requestedLifetime: 1200))
        harness.client.start(now: .zero)
        harness.pump()
        #expect(harness.server.requests.last?.lifetime == 1200)
        #expect(harness.events.first.map { if case .allocated(relayed: _, mapped: _, lifetime: 1200) = $0 { true } else { false } } == true)
    }

    @Test func wrongPasswordFailsNamedWrongCredentials() {
        var harness = TURNHarness(password: "not-the-secret")
        harness.client.start(now: .zero)
        harness.pump()
        #expect(harness.events == [.failed(.wrongCredentials)])
        #expect(harness.client.state == .failed(.wrongCredentials))
        #expect(TURNError.wrongCredentials.reason == "wrong-credentials")
        // One challenge answered, then no third try and nothing pending.
        #expect(harness.server.requests.count == 2)
        #expect(harness.client.nextTimeout == nil)
        #expect(harness.client.pollTransmit() == nil)
    }

    @Test func staleNonceIsRetriedWithTheNewNonce() {
        var harness = TURNHarness()
        harness.server.staleNonceOnce = true
        harness.client.start(now: .zero)
        harness.pump()
        #expect(harness.client.state == .allocated)
        let nonces = harness.server.requests.map(\.nonce)
        #expect(nonces == [nil, "nonce-1", "nonce-2"])
        #expect(harness.events.count == 1)
    }

    @Test func errorResponsesFailByName() {
        let cases: [(code: STUNErrorCode, expected: TURNError)] = [
            (.allocationMismatch, .allocationMismatch),
            (.wrongCredentials, .wrongCredentials),
            (.insufficientCapacity, .serverError(code: 508)),
        ]
        for (code, expected) in cases {
            var client = TURNClient(server: TURNHarness.serverAddress, username: "u", password: "p")
            client.start(now: .zero)
            let request = try? STUNMessage(parsing: client.pollTransmit() ?? [])
            let response = STUNMessage(method: .allocate, messageClass: .errorResponse,
                                       transactionID: request?.transactionID ?? .random(),
                                       attributes: [.errorCode(code)]).serialized()
            #expect(client.handleReceive(response, from: TURNHarness.serverAddress, at: .zero) == .handled)
            #expect(client.pollEvent() == .failed(expected), "\(code)")
        }
    }

    @Test func challengeWithoutRealmOrNonceFails() {
        var client = TURNClient(server: TURNHarness.serverAddress, username: "u", password: "p")
        client.start(now: .zero)
        let request = try? STUNMessage(parsing: client.pollTransmit() ?? [])
        let response = STUNMessage(method: .allocate, messageClass: .errorResponse,
                                   transactionID: request?.transactionID ?? .random(),
                                   attributes: [.errorCode(.unauthorized), .realm("r")]).serialized()
        _ = client.handleReceive(response, from: TURNHarness.serverAddress, at: .zero)
        #expect(client.pollEvent() == .failed(.missingRealmOrNonce))
    }
}

@Suite struct TURNLifetimeTests {
    @Test func refreshKeepsTheAllocationPastItsLifetimeForThirtyMinutes() {
        var harness = TURNHarness.allocated()
        harness.run(until: seconds(30 * 60))
        #expect(harness.client.state == .allocated)
        #expect(harness.server.allocation(of: TURNHarness.clientAddress, at: harness.now) != nil)
        // Refreshes at 540 s, 1080 s, 1620 s (a minute before each end of a 600 s lifetime).
        #expect(harness.requestTimes(.refresh) == [540, 1080, 1620])
        #expect(harness.events.filter { $0 == .refreshed(lifetime: 600) }.count == 3)
    }

    @Test func withoutRefreshesTheServerForgetsTheAllocation() {
        // The counter-check: the test server does expire allocations, so the test above can fail.
        var harness = TURNHarness.allocated()
        #expect(harness.server.allocation(of: TURNHarness.clientAddress, at: seconds(599)) != nil)
        #expect(harness.server.allocation(of: TURNHarness.clientAddress, at: seconds(600)) == nil)
    }

    @Test func shortLifetimesAreRefreshedAtHalfTime() {
        var harness = TURNHarness(configuration: TURNConfiguration(requestedLifetime: 60))
        harness.client.start(now: .zero)
        harness.run(until: seconds(100))
        #expect(harness.requestTimes(.refresh) == [30, 60, 90])
        #expect(harness.server.requests.filter { $0.method == .refresh }.allSatisfy { $0.lifetime == 60 })
    }

    @Test func aStaleNonceOnARefreshIsRetriedAndTheAllocationLives() {
        var harness = TURNHarness.allocated()
        harness.server.staleNonceOnce = true
        harness.run(until: seconds(600))
        let refreshes = harness.server.requests.filter { $0.method == .refresh }
        #expect(refreshes.map(\.nonce) == ["nonce-1", "nonce-2"])
        #expect(harness.client.state == .allocated)
        #expect(harness.server.allocation(of: TURNHarness.clientAddress, at: harness.now) != nil)
    }

    @Test func endlessStaleNoncesFailNamedStaleNonce() throws {
        var client = TURNClient(server: TURNHarness.serverAddress, username: "u", password: "p",
                                configuration: TURNConfiguration(maxStaleNonceRetries: 2))
        client.start(now: .zero)
        var answers = 0
        while let datagram = client.pollTransmit() {
            let request = try STUNMessage(parsing: datagram)
            let code: STUNErrorCode = answers == 0 ? .unauthorized : .staleNonce
            answers += 1
            let response = STUNMessage(method: .allocate, messageClass: .errorResponse, transactionID: request.transactionID,
                                       attributes: [.errorCode(code), .realm("r"), .nonce("n\(answers)")]).serialized()
            _ = client.handleReceive(response, from: TURNHarness.serverAddress, at: .zero)
        }
        // The challenge, then the first try and two retries each answered 438.
        #expect(answers == 4)
        #expect(client.pollEvent() == .failed(.staleNonce))
    }

    @Test func anUnansweredRefreshLosesTheAllocationWhenItsLifetimeEnds() {
        var harness = TURNHarness(configuration: TURNConfiguration(requestedLifetime: 60))
        harness.client.start(now: .zero)
        harness.pump()
        harness.server.silent = true
        harness.run(until: seconds(59.9))
        #expect(harness.client.state == .allocated)
        harness.run(until: seconds(60))
        #expect(harness.events.last == .failed(.allocationExpired))
    }

    @Test func allocationLostOnTheServerFailsTheRefreshAsMismatch() {
        var harness = TURNHarness.allocated()
        // The server restarts: it forgets every allocation.
        harness.server = TURNTestServer(address: TURNHarness.serverAddress, users: ["sluice": "secret"])
        harness.run(until: seconds(541))
        #expect(harness.events.last == .failed(.allocationMismatch))
        #expect(harness.client.state == .failed(.allocationMismatch))
    }

    @Test func closeSendsRefreshWithLifetimeZero() throws {
        var harness = TURNHarness.allocated()
        harness.client.close(now: harness.now)
        harness.pump()
        let last = try #require(harness.server.requests.last)
        #expect(last.method == .refresh)
        #expect(last.lifetime == 0)
        #expect(last.username == "sluice")
        #expect(harness.events.last == .closed)
        #expect(harness.client.state == .closed)
        #expect(harness.server.allocation(of: TURNHarness.clientAddress, at: harness.now) == nil)
        #expect(harness.client.nextTimeout == nil)
        #expect(harness.client.send([1], to: TURNHarness.peer, now: harness.now) == nil)
        #expect(harness.client.statistics.drops["not-allocated"] == 1)
    }

    @Test func closeBeforeAllocationSendsNothing() {
        var client = TURNClient(server: TURNHarness.serverAddress, username: "u", password: "p")
        client.close(now: .zero)
        #expect(client.state == .closed)
        #expect(client.pollTransmit() == nil)
        #expect(client.pollEvent() == .closed)
    }
}

@Suite struct TURNRetransmissionTests {
    @Test func silentServerTimesOutOnTheRFC8489Schedule() {
        var harness = TURNHarness()
        harness.server.silent = true
        harness.client.start(now: .zero)
        harness.run(until: seconds(39.499))
        #expect(harness.events.isEmpty)
        harness.run(until: seconds(39.5))
        #expect(harness.events == [.failed(.timeout)])
        // RFC 8489 §6.2.1: Rc = 7 transmissions at 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s, then 16 × RTO = 8 s.
        #expect(harness.wire.map(\.time.seconds) == [0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5])
        #expect(Set(harness.wire.map(\.bytes)).count == 1)
        #expect(harness.client.statistics.retransmissions == 6)
        #expect(harness.client.nextTimeout == nil)
    }

    @Test func aLateAnswerToARetransmittedRequestIsTaken() {
        var harness = TURNHarness()
        harness.server.silent = true
        harness.client.start(now: .zero)
        harness.run(until: seconds(2))  // three transmissions
        harness.server.silent = false
        let replies = harness.server.receive(harness.wire[2].bytes, from: TURNHarness.clientAddress, now: harness.now)
        for reply in replies { harness.deliver(reply) }
        harness.pump()
        #expect(harness.client.state == .allocated)
    }

    @Test func unmatchedAndMalformedResponsesAreCountedAndDropped() {
        var harness = TURNHarness.allocated()
        let stray = STUNMessage(method: .allocate, messageClass: .successResponse,
                                attributes: [.lifetime(600)]).serialized()
        #expect(harness.deliver(stray) == .dropped(.unmatchedTransaction))
        let truncated = Array(stray.prefix(24))  // header says more than there is
        if case .dropped(.malformed) = harness.deliver(truncated) {} else { Issue.record("truncated not dropped") }
        let request = STUNMessage(method: .binding, messageClass: .request).serialized()
        #expect(harness.deliver(request) == .dropped(.unexpectedRequest))
        let dataWithoutPeer = STUNMessage(method: .data, messageClass: .indication, attributes: [.data([1])]).serialized()
        #expect(harness.deliver(dataWithoutPeer) == .dropped(.incompleteDataIndication))
        let unboundChannel = TURNChannelData(channel: 0x4123, data: [1, 2]).serialized()
        #expect(harness.deliver(unboundChannel) == .dropped(.unknownChannel))
        #expect(harness.client.statistics.drops["unmatched-transaction"] == 1)
        #expect(harness.client.statistics.drops["unexpected-request"] == 1)
        #expect(harness.client.statistics.drops["incomplete-data-indication"] == 1)
        #expect(harness.client.statistics.drops["unknown-channel"] == 1)
        #expect(harness.client.statistics.dropCount == 5)
        #expect(harness.client.state == .allocated)
    }

    @Test func aForgedSuccessWithoutIntegrityIsDropped() throws {
        var harness = TURNHarness.allocated()
        harness.server.silent = true
        harness.client.createPermission(for: TURNHarness.peer.ip, now: harness.now)
        harness.pump()
        let request = try #require(harness.server.requests.last)
        let forged = STUNMessage(method: .createPermission, messageClass: .successResponse,
                                 transactionID: request.transactionID).serialized()
        #expect(harness.deliver(forged) == .dropped(.badIntegrity))
        let wrongKey = STUNIntegrityKey.longTerm(username: "sluice", realm: "sluice.test", password: "guess")
        let signedWrong = STUNMessage(method: .createPermission, messageClass: .successResponse,
                                      transactionID: request.transactionID).serialized(integrity: wrongKey)
        #expect(harness.deliver(signedWrong) == .dropped(.badIntegrity))
        harness.pump()
        #expect(!harness.events.contains(.permissionCreated(TURNHarness.peer.ip)))
    }

    @Test func datagramsNotFromTheServerAreNotTURN() {
        var harness = TURNHarness.allocated()
        let data = STUNMessage(method: .data, messageClass: .indication,
                               attributes: [.xorPeerAddress(TURNHarness.peer), .data([1])]).serialized()
        #expect(harness.client.handleReceive(data, from: TURNHarness.peer, at: harness.now) == .notTURN)
        #expect(harness.client.handleReceive([0x80, 0x60, 0, 0], from: TURNHarness.serverAddress, at: harness.now)
            == .notTURN)  // an RTP-looking datagram
        #expect(harness.client.statistics.dropCount == 0)
    }
}

@Suite struct TURNRelayTests {
    @Test func permissionThenSendIndicationReachesThePeerAndDataComesBack() throws {
        var harness = TURNHarness.allocated()
        let peer = TURNHarness.peer
        // Before the permission exists the datagram waits, and CreatePermission goes out.
        #expect(harness.client.send([1, 2, 3], to: peer, now: harness.now) == nil)
        harness.pump()
        #expect(harness.events.contains(.permissionCreated(peer.ip)))
        let permissionRequest = try #require(harness.server.requests.last)
        #expect(permissionRequest.method == .createPermission)
        #expect(permissionRequest.xorPeerAddress?.ip == peer.ip)
        // The queued datagram went as a Send indication once the permission was there.
        #expect(harness.server.deliveredToPeers.map(\.bytes) == [[1, 2, 3]])
        #expect(harness.server.deliveredToPeers.first?.peer == peer)
        #expect(harness.server.deliveredToPeers.first?.relayed == harness.client.relayedAddress)

        // Now sends go out at once as Send indications (STUN: first byte 0x00, method Send, indication).
        let datagramResult = harness.client.send([4, 5], to: peer, now: harness.now)
        let datagram = try #require(datagramResult)
        let message = try STUNMessage(parsing: datagram)
        #expect(message.method == .send && message.messageClass == .indication)
        #expect(message.xorPeerAddress == peer && message.data == [4, 5])
        #expect(harness.server.receive(datagram, from: TURNHarness.clientAddress, now: harness.now).isEmpty)
        #expect(harness.server.deliveredToPeers.count == 2)

        // The peer answers: a Data indication, unwrapped as .peerData.
        let backResult = harness.peerSends([9, 8, 7])
        let back = try #require(backResult)
        #expect(back[0] == 0x00)
        #expect(harness.peerData.map(\.bytes) == [[9, 8, 7]])
        #expect(harness.peerData.first?.from == peer)
        #expect(harness.client.statistics.sendIndicationsSent == 2)
        #expect(harness.client.statistics.peerDataReceived == 1)
    }

    @Test func aPeerWithoutPermissionIsNotRelayed() {
        var harness = TURNHarness.allocated()
        #expect(harness.peerSends([1]) == nil)
        #expect(harness.server.relayDrops["no-permission"] == 1)
        #expect(harness.peerData.isEmpty)
    }

    @Test func permissionsAreRefreshedEveryFourMinutes() {
        var harness = TURNHarness.allocated()
        harness.client.createPermission(for: TURNHarness.peer.ip, now: harness.now)
        harness.run(until: seconds(19 * 60))
        #expect(harness.requestTimes(.createPermission) == [0, 240, 480, 720, 960])
        // Still open after 19 minutes: the peer's datagrams come through.
        #expect(harness.peerSends([1]) != nil)
        #expect(harness.events.filter { $0 == .permissionCreated(TURNHarness.peer.ip) }.count == 1)
    }

    @Test func sendsBeforeTheAllocationWaitAndGoOutAfterIt() {
        var harness = TURNHarness()
        #expect(harness.client.send([7], to: TURNHarness.peer, now: .zero) == nil)
        harness.client.start(now: .zero)
        harness.pump()
        #expect(harness.server.deliveredToPeers.map(\.bytes) == [[7]])
    }

    @Test func theQueueBeforeAPermissionIsBounded() {
        var harness = TURNHarness(configuration: TURNConfiguration(maxQueuedPerPeer: 2))
        for byte: UInt8 in 1...4 { _ = harness.client.send([byte], to: TURNHarness.peer, now: .zero) }
        #expect(harness.client.statistics.drops["queue-full"] == 2)
        harness.client.start(now: .zero)
        harness.pump()
        #expect(harness.server.deliveredToPeers.map(\.bytes) == [[1], [2]])
    }

    @Test func channelBindSwitchesToChannelData() throws {
        var harness = TURNHarness.allocated()
        let peer = TURNHarness.peer
        let channel = harness.client.bindChannel(to: peer, now: harness.now)
        #expect(channel == 0x4000)
        harness.pump()
        #expect(harness.events.contains(.channelBound(peer, channel: 0x4000)))
        // RFC 8656 §12.2: the binding also installed the permission.
        #expect(harness.events.contains(.permissionCreated(peer.ip)))
        let bind = try #require(harness.server.requests.last)
        #expect(bind.method == .channelBind && bind.channelNumber == 0x4000 && bind.xorPeerAddress == peer)

        let datagramResult = harness.client.send([1, 2, 3, 4, 5], to: peer, now: harness.now)
        let datagram = try #require(datagramResult)
        #expect(datagram == [
            0x40, 0x00,             // channel 0x4000
            0x00, 0x05,             // length 5
            1, 2, 3, 4, 5, 0, 0, 0, // data, padded to 4 (RFC 8656 §12.5)
        ])
        _ = harness.server.receive(datagram, from: TURNHarness.clientAddress, now: harness.now)
        #expect(harness.server.deliveredToPeers.map(\.bytes) == [[1, 2, 3, 4, 5]])

        let backResult = harness.peerSends([6, 7])
        let back = try #require(backResult)
        #expect(back[0] == 0x40)
        #expect(harness.peerData.map(\.bytes) == [[6, 7]])
        #expect(harness.peerData.first?.from == peer)
        #expect(harness.client.statistics.channelDataSent == 1)
        #expect(harness.client.bindChannel(to: peer, now: harness.now) == 0x4000)
        let other = TransportAddress(host: "192.0.2.100", port: 1)!
        #expect(harness.client.bindChannel(to: other, now: harness.now) == 0x4001)
    }

    @Test func channelsAreRefreshedBeforeTenMinutes() {
        var harness = TURNHarness.allocated()
        harness.client.bindChannel(to: TURNHarness.peer, now: harness.now)
        harness.run(until: seconds(25 * 60))
        #expect(harness.requestTimes(.channelBind) == [0, 540, 1080])
        let back = harness.peerSends([1])
        #expect(back?.first == 0x40)
        #expect(harness.peerData.count == 1)
    }

    @Test func aRefusedChannelBindFallsBackToSendIndications() throws {
        var harness = TURNHarness.allocated()
        harness.client.createPermission(for: TURNHarness.peer.ip, now: harness.now)
        harness.pump()
        harness.client.bindChannel(to: TURNHarness.peer, now: harness.now)
        // Answer the ChannelBind with 400 Bad Request instead of passing it on.
        let bindResult = harness.client.pollTransmit()
        let bind = try #require(bindResult)
        let request = try STUNMessage(parsing: bind)
        let key = STUNIntegrityKey.longTerm(username: "sluice", realm: "sluice.test", password: "secret")
        let refusal = STUNMessage(method: .channelBind, messageClass: .errorResponse, transactionID: request.transactionID,
                                  attributes: [.errorCode(.badRequest)]).serialized(integrity: key)
        #expect(harness.deliver(refusal) == .handled)
        harness.pump()
        #expect(harness.events.last == .channelBindFailed(TURNHarness.peer, .serverError(code: 400)))
        let datagramResult = harness.client.send([1], to: TURNHarness.peer, now: harness.now)
        let datagram = try #require(datagramResult)
        #expect(datagram[0] == 0x00)
    }
}
