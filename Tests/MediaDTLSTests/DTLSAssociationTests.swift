// DTLS-SRTP associations (RFC 5764, RFC 6347) driven against each other in memory.
import CSSL
import Foundation
import MediaCore
import MediaDTLS
import MediaSRTP
import Testing
import TestSupport

@Suite struct DTLSHandshakeTests {
    @Test func bothSidesConnectWithMirroredKeys() throws {
        var pair = try AssociationPair()
        pair.handshake()
        let clientKeys = try #require(pair.client.connectedKeys())
        let serverKeys = try #require(pair.server.connectedKeys())
        #expect(pair.client.state == .connected && pair.server.state == .connected)
        #expect(clientKeys.profile == .aeadAes128Gcm)               // the first of the default list
        #expect(serverKeys.profile == clientKeys.profile)
        #expect(clientKeys.local.masterKey == serverKeys.remote.masterKey)
        #expect(clientKeys.local.masterSalt == serverKeys.remote.masterSalt)
        #expect(clientKeys.remote.masterKey == serverKeys.local.masterKey)
        #expect(clientKeys.remote.masterSalt == serverKeys.local.masterSalt)
        #expect(clientKeys.local.masterKey != clientKeys.remote.masterKey)
        #expect(clientKeys.local.masterKey.count == 16 && clientKeys.local.masterSalt.count == 12)
        // No flight waits for an answer any more: no retransmission timer, and the handshake timeout is off.
        #expect(pair.client.nextTimeout == nil && pair.server.nextTimeout == nil)
    }

    /// RTP protected with one side's local key opens with the other side's remote key, both ways.
    @Test func exportedKeysProtectSRTPBetweenTheSides() throws {
        var pair = try AssociationPair()
        pair.handshake()
        let clientKeys = try #require(pair.client.connectedKeys())
        let serverKeys = try #require(pair.server.connectedKeys())
        for (senderKeys, receiverKeys) in [(clientKeys, serverKeys), (serverKeys, clientKeys)] {
            let sender = try SRTPSession(profile: senderKeys.profile, key: senderKeys.local, direction: .sender)
            let receiver = try SRTPSession(profile: receiverKeys.profile, key: receiverKeys.remote, direction: .receiver)
            let packet = rtpPacket(sequenceNumber: 7)
            let protected = try sender.apply(to: packet)
            #expect(protected.count == packet.count + senderKeys.profile.rtpOverhead)
            #expect(try receiver.apply(to: protected) == packet)
            // The receiver's own local key does not open it.
            let wrong = try SRTPSession(profile: receiverKeys.profile, key: receiverKeys.local, direction: .receiver)
            #expect(throws: SRTPError.self) { try wrong.apply(to: protected) }
        }
    }

    /// The server picks the profile; each one is selected when it is the only one in common.
    @Test(arguments: SRTPProfile.allCases)
    func selectsTheOnlyCommonProfile(profile: SRTPProfile) throws {
        var pair = try AssociationPair(clientProfiles: SRTPProfile.allCases.reversed(), serverProfiles: [profile])
        pair.handshake()
        let clientKeys = try #require(pair.client.connectedKeys())
        let serverKeys = try #require(pair.server.connectedKeys())
        #expect(clientKeys.profile == profile && serverKeys.profile == profile)
        #expect(clientKeys.local.keyLength == profile.masterKeyLength)
        #expect(clientKeys.local.saltLength == profile.masterSaltLength)
        #expect(clientKeys.local.masterKey == serverKeys.remote.masterKey)
        #expect(clientKeys.remote.masterSalt == serverKeys.local.masterSalt)
    }

    /// RFC 5764 §4.1.1: the server chooses among the client's profiles (OpenSSL by its own order).
    @Test func serverPreferenceDecides() throws {
        var pair = try AssociationPair(clientProfiles: [.aes128CmHmacSha1_80, .aeadAes256Gcm],
                                       serverProfiles: [.aeadAes256Gcm, .aes128CmHmacSha1_80])
        pair.handshake()
        #expect(pair.client.connectedKeys()?.profile == .aeadAes256Gcm)
        #expect(pair.server.connectedKeys()?.profile == .aeadAes256Gcm)
    }

    @Test func noCommonProfileFails() throws {
        var pair = try AssociationPair(clientProfiles: [.aes128CmHmacSha1_80], serverProfiles: [.aeadAes256Gcm])
        pair.handshake()
        #expect(pair.client.failure() == .noSRTPProfile)
        #expect(pair.server.failure() == .noSRTPProfile)
        #expect(pair.client.state == .failed && pair.server.state == .failed)
        #expect(pair.client.srtpKeys == nil)
    }

    /// A fingerprint known in advance is checked as the certificate arrives: the handshake ends there
    /// with a bad_certificate alert, so the peer fails too (RFC 5763 §5).
    @Test(arguments: [DTLSRole.client, .server])
    func wrongFingerprintFailsNamingBoth(checker: DTLSRole) throws {
        let stranger = try DTLSCertificate().fingerprint
        var pair = try AssociationPair(clientKnowsFingerprint: checker != .client, serverKnowsFingerprint: checker != .server)
        let (checking, peer) = checker == .client ? (pair.client, pair.server) : (pair.server, pair.client)
        let peerCertificate = checker == .client ? pair.serverCertificate : pair.clientCertificate
        checking.setRemoteFingerprint(stranger)
        pair.handshake()
        #expect(checking.failure() == .fingerprintMismatch(expected: stranger, actual: peerCertificate.fingerprint))
        #expect(checking.state == .failed && peer.state == .failed)
        let peerError = try #require(peer.failure())
        #expect(peerError.reason == "handshake-failed")
        #expect("\(peerError)".contains("bad certificate"))
        #expect(ERR_peek_error() == 0)
    }

    /// A ServerKeyExchange whose signature was altered in flight: the client refuses it with an alert,
    /// both sides fail with OpenSSL's reason, and no OpenSSL error is left queued.
    @Test func alteredSignatureFailsTheHandshake() throws {
        var pair = try AssociationPair()
        let client = pair.client
        pair.server.start(at: .zero)
        pair.client.start(at: .zero)
        pair.pump(at: .zero) { role, datagram in
            // OpenSSL packs a flight's records into datagrams up to the MTU: find the handshake record (22)
            // holding ServerKeyExchange (12) after its 13-byte header (RFC 6347 §4.1, §4.2.2).
            let exchange = records(in: datagram).first { datagram[$0.lowerBound] == 22 && datagram[$0.lowerBound + 13] == 12 }
            if role == .server, let exchange {
                var altered = datagram
                altered[exchange.upperBound - 5] ^= 0x01                // inside the ECDSA signature
                client.handleDatagram(altered, at: .zero)
                return false
            }
            return true
        }
        let clientError = try #require(pair.client.failure())
        let serverError = try #require(pair.server.failure())
        #expect(clientError.reason == "handshake-failed" && serverError.reason == "handshake-failed")
        guard case .handshakeFailed(let text) = clientError else { return }
        #expect(!text.isEmpty && text != "unknown OpenSSL error")
        #expect(ERR_peek_error() == 0)
    }

    /// A fingerprint of another algorithm is checked with that algorithm.
    @Test func checksASHA1Fingerprint() throws {
        var pair = try AssociationPair(serverKnowsFingerprint: false)
        let sha1 = try #require(DTLSFingerprint(algorithm: "sha-1", digestingDER: pair.clientCertificate.der))
        pair.server.setRemoteFingerprint(try DTLSFingerprint(sdpValue: sha1.sdpValue))
        pair.handshake()
        #expect(pair.server.connectedKeys() != nil)
    }

    /// RFC 8842 §5 (answer before the fingerprint): the handshake completes, `.connected` waits for it.
    @Test func fingerprintGivenLateConnectsOnlyThen() throws {
        var pair = try AssociationPair(serverKnowsFingerprint: false)
        pair.handshake()
        #expect(pair.client.connectedKeys() != nil)
        #expect(pair.server.state == .awaitingFingerprint)
        #expect(pair.server.events().isEmpty)
        // Data the client sends meanwhile is held, then delivered after `.connected`.
        try pair.client.send(applicationData: [1, 2, 3])
        pair.pump(at: .milliseconds(5))
        #expect(pair.server.events().isEmpty)
        pair.server.setRemoteFingerprint(pair.clientCertificate.fingerprint)
        let events = pair.server.events()
        #expect(events.count == 2)
        guard events.count == 2, case .connected(let keys) = events[0], case .applicationData(let data) = events[1] else {
            Issue.record("expected .connected then the held data, got \(events)")
            return
        }
        #expect(keys.profile == .aeadAes128Gcm)
        #expect(data == [1, 2, 3])
    }

    @Test func lateWrongFingerprintFails() throws {
        var pair = try AssociationPair(serverKnowsFingerprint: false)
        pair.handshake()
        let stranger = try DTLSCertificate().fingerprint
        pair.server.setRemoteFingerprint(stranger)
        #expect(pair.server.failure() == .fingerprintMismatch(expected: stranger, actual: pair.clientCertificate.fingerprint))
        #expect(pair.server.srtpKeys != nil && pair.server.state == .failed)
    }

    /// The handshake timeout runs on the given clock: nobody answers, it fails at start + 30 s.
    @Test func handshakeTimesOutOnTheGivenClock() throws {
        let pair = try AssociationPair()
        pair.client.start(at: .seconds(100))
        #expect(pair.client.pollTransmit() != nil)                 // the ClientHello, never delivered
        let next = try #require(pair.client.nextTimeout)
        #expect(next > .seconds(100) && next <= .seconds(130))
        pair.client.handleTimeout(at: .seconds(129))
        #expect(pair.client.events().isEmpty)
        pair.client.handleTimeout(at: .seconds(130))
        #expect(pair.client.failure() == .handshakeTimeout)
        #expect(pair.client.nextTimeout == nil)
    }

    /// Records and so datagrams stay within the MTU, handshake messages fragmented (RFC 6347 §4.2.3).
    @Test(arguments: [256, 300, 1200])
    func datagramsNeverExceedTheMTU(mtu: Int) throws {
        var pair = try AssociationPair(mtu: mtu)
        pair.handshake()
        #expect(pair.client.connectedKeys() != nil && pair.server.connectedKeys() != nil)
        let largest = pair.carried.map(\.bytes.count).max() ?? 0
        #expect(largest <= mtu)
        #expect(largest > mtu / 2)
        // At 1200 bytes each of the server's two flights fits one datagram; smaller, the first takes more.
        let serverDatagrams = pair.carried.filter { $0.from == .server }.count
        #expect(mtu >= 1200 ? serverDatagrams == 2 : serverDatagrams > 2)
        let data = [UInt8](repeating: 0xab, count: pair.client.maximumApplicationDataLength)
        try pair.client.send(applicationData: data)
        let record = try #require(pair.client.pollTransmit())
        #expect(record.count <= mtu)
        #expect(throws: DTLSError.applicationDataTooLarge(length: data.count + 1, limit: data.count)) {
            try pair.client.send(applicationData: data + [0])
        }
    }

    @Test func mtuBelowOpenSSLsMinimumIsRefused() throws {
        #expect {
            try DTLSAssociation(role: .client, certificate: try DTLSCertificate(), mtu: 100)
        } throws: { error in
            (error as? DTLSError)?.reason == "setup-failed"
        }
        #expect(throws: DTLSError.setupFailed("no SRTP profile offered")) {
            try DTLSAssociation(role: .client, certificate: try DTLSCertificate(), srtpProfiles: [])
        }
    }
}

@Suite struct DTLSConnectionTests {
    @Test func applicationDataBothWays() throws {
        var pair = try AssociationPair()
        pair.handshake()
        _ = (pair.client.events(), pair.server.events())
        try pair.client.send(applicationData: Array("to the server".utf8))
        try pair.server.send(applicationData: Array("to the client".utf8))
        try pair.server.send(applicationData: [0])
        pair.pump(at: .milliseconds(1))
        let atServer = pair.server.events(), atClient = pair.client.events()
        guard case .applicationData(let one) = atServer.first, atServer.count == 1 else {
            Issue.record("server got \(atServer)")
            return
        }
        #expect(String(decoding: one, as: UTF8.self) == "to the server")
        guard atClient.count == 2, case .applicationData(let two) = atClient[0], case .applicationData(let three) = atClient[1] else {
            Issue.record("client got \(atClient)")
            return
        }
        #expect(String(decoding: two, as: UTF8.self) == "to the client")
        #expect(three == [0])
    }

    @Test func sendBeforeConnectedIsRefused() throws {
        let pair = try AssociationPair()
        #expect(throws: DTLSError.notConnected) { try pair.client.send(applicationData: [1]) }
        pair.client.start(at: .zero)
        #expect(throws: DTLSError.notConnected) { try pair.client.send(applicationData: [1]) }
    }

    @Test func closeNotifyReachesThePeer() throws {
        var pair = try AssociationPair()
        pair.handshake()
        _ = (pair.client.events(), pair.server.events())
        pair.client.close()
        #expect(pair.client.state == .closed)
        pair.pump(at: .milliseconds(1))
        let events = pair.server.events()
        guard events.count == 1, case .closed = events[0] else {
            Issue.record("server got \(events)")
            return
        }
        #expect(pair.server.state == .closed)
        #expect(throws: DTLSError.notConnected) { try pair.server.send(applicationData: [1]) }
        #expect(pair.client.events().isEmpty)                        // closing itself is no event
        // Later datagrams are dropped as not running.
        pair.server.handleDatagram([23, 0xfe, 0xfd] + [UInt8](repeating: 0, count: 20), at: .milliseconds(2))
        #expect(pair.server.statistics.dropped[.notRunning] == 1)
    }

    /// RFC 7983 §7: only a first byte in 20...63 is DTLS; the rest is counted and dropped, and records
    /// that look like DTLS but are not are dropped by OpenSSL without harm to the handshake.
    @Test func garbageIsCountedAndDropped() throws {
        var pair = try AssociationPair()
        pair.server.start(at: .zero)
        pair.client.start(at: .zero)
        let garbage: [[UInt8]] = [
            [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 0, 0, 0, 0, 0, 0, 0, 0],  // STUN binding request
            [0x80, 0x6f, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 1, 0xff],                    // RTP
            [22, 0xfe, 0xfd],                                                          // a cut record header
            [22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 9, 0x7f, 0xff, 1, 2, 3],             // handshake, bad length
            [UInt8](repeating: 0x17, count: 64),                                       // application data garbage
        ]
        for datagram in garbage { pair.server.handleDatagram(datagram, at: .zero) }
        #expect(pair.server.statistics.dropped == [.notDTLS: 2, .tooShort: 1])
        #expect(pair.server.statistics.datagramsReceived == 5)
        #expect(pair.server.state == .handshaking)
        pair.pump(at: .zero)
        #expect(pair.client.connectedKeys() != nil && pair.server.connectedKeys() != nil)
    }

    /// A ClientHello in two fragments, each in its own datagram and the second first, as Chromium's large
    /// DTLS 1.3-capable ClientHello may come: OpenSSL reassembles it (RFC 6347 §4.2.3) and the handshake
    /// completes, its transcript intact.
    @Test func reassemblesAClientHelloSplitOverTwoDatagrams() throws {
        var pair = try AssociationPair()
        pair.server.start(at: .zero)
        pair.client.start(at: .zero)
        let hello = try #require(pair.client.pollTransmit())
        #expect(pair.client.pollTransmit() == nil)
        #expect(records(in: hello) == [0..<hello.count])             // one record
        #expect(hello[13] == 1)                                      // ClientHello
        // Record header (13 bytes), then the handshake header (12 bytes): type, length (3), message_seq (2),
        // fragment_offset (3), fragment_length (3).
        let body = Array(hello[25...])
        func fragment(_ range: Range<Int>, recordSequence: UInt8) -> [UInt8] {
            let part = Array(body[range])
            let handshake = Array(hello[13..<19]) + uint24(range.lowerBound) + uint24(part.count) + part
            return Array(hello[0..<3])                                // content type, version
                + [0, 0, 0, 0, 0, 0, 0, recordSequence]              // epoch 0, sequence number
                + [UInt8(handshake.count >> 8), UInt8(truncatingIfNeeded: handshake.count)] + handshake
        }
        let half = body.count / 2
        pair.server.handleDatagram(fragment(half..<body.count, recordSequence: 21), at: .zero)
        #expect(pair.server.pollTransmit() == nil)                  // waits for the rest
        pair.server.handleDatagram(fragment(0..<half, recordSequence: 20), at: .zero)
        pair.pump(at: .zero)
        #expect(pair.client.connectedKeys() != nil && pair.server.connectedKeys() != nil)
    }

    /// The client's first flight is lost: OpenSSL's timer (100 ms here, real time) resends it and the
    /// handshake completes (RFC 6347 §4.2.4). The wait is real but bounded.
    @Test(.onDedicatedThreads) func lostFirstFlightIsRetransmitted() async throws {
        var pair = try AssociationPair(initialRetransmissionTimeout: .milliseconds(100))
        let started = ContinuousClock.now
        pair.server.start(at: .zero)
        pair.client.start(at: .zero)
        var lost = 0
        while pair.client.pollTransmit() != nil { lost += 1 }
        #expect(lost >= 1)
        let first = try #require(pair.client.nextTimeout)
        #expect(first <= .milliseconds(100) && first > .zero)
        let (datagram, now) = try #require(await retransmission(from: pair.client, after: .zero))
        // OpenSSL counts a timer with less than 15 ms left as expired.
        #expect(ContinuousClock.now - started >= .milliseconds(85))
        #expect(pair.client.statistics.retransmissionTimeouts == 1)
        pair.server.handleDatagram(datagram, at: now)
        pair.pump(at: now)
        #expect(pair.client.connectedKeys() != nil && pair.server.connectedKeys() != nil)
    }

    /// The server's last flight (ChangeCipherSpec, Finished) is lost: the server is connected, the
    /// client resends its flight on its timer, and the server, reading it after the handshake, resends
    /// its own (RFC 6347 §4.2.4).
    @Test(.onDedicatedThreads) func lostLastFlightIsRetransmitted() async throws {
        var pair = try AssociationPair(initialRetransmissionTimeout: .milliseconds(100))
        pair.server.start(at: .zero)
        pair.client.start(at: .zero)
        var serverDatagrams = 0
        pair.pump(at: .zero) { role, _ in
            guard role == .server else { return true }
            serverDatagrams += 1
            return serverDatagrams == 1                               // flight 4 passes, flight 6 is lost
        }
        #expect(pair.server.connectedKeys() != nil)
        #expect(pair.client.state == .handshaking)
        let (datagram, now) = try #require(await retransmission(from: pair.client, after: .zero))
        pair.server.handleDatagram(datagram, at: now)
        pair.pump(at: now)
        #expect(pair.client.connectedKeys() != nil)
        #expect(pair.server.events().isEmpty && pair.server.state == .connected)
    }

    /// Waits, in real time but at most 2 s, for `association` to resend on its timer; the given clock
    /// follows `nextTimeout`. The datagram and the time it was sent at.
    func retransmission(from association: DTLSAssociation, after start: ClockTime) async throws -> ([UInt8], ClockTime)? {
        let started = ContinuousClock.now
        var now = start
        while ContinuousClock.now - started < .seconds(2) {
            try await Task.sleep(for: .milliseconds(10))
            now = max(now, association.nextTimeout ?? now)
            association.handleTimeout(at: now)
            if let datagram = association.pollTransmit() { return (datagram, now) }
        }
        return nil
    }

    /// Associations and their OpenSSL handles go away: each is released, and the process does not grow
    /// with the number of handshakes.
    @Test func repeatedHandshakesFreeTheirMemory() throws {
        func handshakes(_ count: Int) throws -> [() -> AnyObject?] {
            var released: [() -> AnyObject?] = []
            for _ in 0..<count {
                var pair = try AssociationPair()
                pair.handshake()
                #expect(pair.client.connectedKeys() != nil && pair.server.connectedKeys() != nil)
                pair.client.close()
                pair.pump(at: .zero)
                weak let client = pair.client, server = pair.server, certificate = pair.clientCertificate
                released += [{ client }, { server }, { certificate }]
            }
            return released
        }
        _ = try handshakes(5)
        // Three rounds of 20: anything else in the process may grow it during one round (tools/test runs
        // this test alone), a leak (about 140 kB a handshake without SSL_free and SSL_CTX_free) grows it
        // in every round.
        var growths: [Int] = []
        for _ in 0..<3 {
            let before = residentBytes()
            let released = try handshakes(20)
            growths.append(residentBytes() - before)
            #expect(released.allSatisfy { $0() == nil })
        }
        if !TestSupport.underAddressSanitizer {
            #expect(growths.min() ?? .max < 1_000_000, "grew by \(growths) bytes in rounds of 20 handshakes")
        }
    }
}

/// The byte ranges of the DTLS records in `datagram`: 13-byte header, length in bytes 11-12 (RFC 6347 §4.1).
func records(in datagram: [UInt8]) -> [Range<Int>] {
    var ranges: [Range<Int>] = []
    var start = 0
    while start + 13 <= datagram.count {
        let end = start + 13 + (Int(datagram[start + 11]) << 8 | Int(datagram[start + 12]))
        guard end <= datagram.count else { break }
        ranges.append(start..<end)
        start = end
    }
    return ranges
}

/// `value` in three bytes, big-endian (handshake lengths and offsets, RFC 6347 §4.2.2).
func uint24(_ value: Int) -> [UInt8] {
    [UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
}

/// The process's resident set (/proc/self/statm), in bytes.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}
