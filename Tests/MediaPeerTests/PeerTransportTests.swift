/// Whole transports in memory: ICE finds the path, DTLS agrees on SRTP keys over it, SRTP carries RTP
/// and RTCP both ways; and the failure paths end in named states in bounded (manual) time.
import MediaCore
import MediaDTLS
import MediaICE
import MediaPeer
import MediaSRTP
import MediaSTUN
import Testing

@Suite struct PeerTransportTests {
    @Test func aCallConnectsAndCarriesSRTPBothWays() throws {
        let call = try TransportCall()
        let connected = call.run(for: .seconds(10)) {
            call.offerer.state == .connected && call.answerer.state == .connected
        }
        #expect(connected, "offerer \(call.offerer.state), answerer \(call.answerer.state)")
        #expect(call.now < .seconds(2), "connected after \(call.now)")
        // AES-GCM is both sides' first choice (DTLSAssociation.defaultSRTPProfiles).
        #expect(call.offerer.srtpProfile == .aeadAes128Gcm && call.answerer.srtpProfile == .aeadAes128Gcm)
        #expect(call.states[.offerer] == [.connecting, .connected])
        #expect(call.states[.answerer] == [.connecting, .connected])

        var sent: [TransportCall.Side: [[UInt8]]] = [:]
        for sequence in 0..<100 as Range<UInt16> {
            for side in [TransportCall.Side.offerer, .answerer] {
                let packet = rtpPacket(sequence: sequence, ssrc: side == .offerer ? 1 : 2, size: 20 + Int(sequence) * 10)
                #expect(try call.send(packet, from: side))
                sent[side, default: []].append(packet)
            }
            call.run(for: .milliseconds(20))
        }
        let report = rtcpReceiverReport()
        #expect(try call.send(report, from: .answerer, rtcp: true))
        call.run(for: .milliseconds(20))

        #expect(call.receivedBytes[.answerer] == sent[.offerer])
        #expect(call.receivedBytes[.offerer] == sent[.answerer]! + [report])
        #expect(call.received[.offerer]?.last == .rtcp(length: report.count))
        #expect(call.offerer.statistics.rtpPacketsSent == 100 && call.offerer.statistics.rtpPacketsReceived == 100)
        #expect(call.offerer.statistics.rtcpPacketsReceived == 1 && call.answerer.statistics.rtcpPacketsSent == 1)
        #expect(call.offerer.statistics.drops.isEmpty && call.answerer.statistics.drops.isEmpty)
    }

    /// Chromium may answer with no candidates at all: the offerer learns the answerer's address from its
    /// checks (a peer-reflexive candidate, RFC 8445 §7.3.1.3).
    @Test func anAnswerWithoutCandidatesConnectsThroughPeerReflexive() throws {
        let call = try TransportCall()
        call.trickle = { $0 == .offerer }
        let connected = call.run(for: .seconds(10)) {
            call.offerer.state == .connected && call.answerer.state == .connected
        }
        #expect(connected, "offerer \(call.offerer.state), answerer \(call.answerer.state)")
        #expect(call.offerer.ice.selectedPair?.remote.type == .prflx)
        #expect(try call.send(rtpPacket(sequence: 7), from: .offerer))
        call.run(for: .milliseconds(20))
        #expect(call.receivedBytes[.answerer] == [rtpPacket(sequence: 7)])
    }

    /// The answerer was told another certificate's fingerprint: its handshake fails by name and nothing is
    /// keyed on either side.
    @Test func aWrongFingerprintFailsTheConnectionByName() throws {
        let impostor = try DTLSCertificate()
        let call = try TransportCall(offererFingerprint: impostor.fingerprint)
        let failed = call.run(for: .seconds(40)) { call.answerer.state == .failed && call.offerer.state == .failed }
        #expect(failed, "offerer \(call.offerer.state), answerer \(call.answerer.state)")
        let failure = call.events[.answerer]?.compactMap { event -> PeerTransportError? in
            if case .failed(let error) = event { return error }
            return nil
        }.first
        guard case .dtls(.fingerprintMismatch(let expected, let actual))? = failure else {
            Issue.record("answerer failed with \(String(describing: failure))")
            return
        }
        #expect(expected == impostor.fingerprint && actual == call.offerer.certificate.fingerprint)
        #expect(call.offerer.srtpProfile == nil && call.answerer.srtpProfile == nil)
        #expect(try !call.send(rtpPacket(sequence: 1), from: .offerer))
    }

    /// The answerer vanishes after the call is up: consent expires on the offerer 30 s later (RFC 7675
    /// §5.1), the transport fails by name, and media stops.
    @Test func aVanishedPeerEndsInFailedWhenConsentExpires() throws {
        let call = try TransportCall()
        #expect(call.run(for: .seconds(10)) { call.offerer.state == .connected && call.answerer.state == .connected })
        let vanished = call.now
        call.deliver = { side, _ in side == .offerer }
        #expect(call.run(for: .seconds(60)) { call.offerer.state == .failed })
        let failedAfter = call.now - vanished
        #expect(failedAfter >= .seconds(25) && failedAfter <= .seconds(36), "failed after \(failedAfter)")
        #expect(call.states[.offerer]?.contains(.disconnected) == true)
        let failures = call.events[.offerer]?.compactMap { event -> PeerTransportError? in
            if case .failed(let error) = event { return error }
            return nil
        }
        #expect(failures == [.consentLost] || failures == [.iceFailed], "\(String(describing: failures))")
        let refusedBefore = call.offerer.statistics.sendsRefused
        #expect(try !call.send(rtpPacket(sequence: 1), from: .offerer))
        #expect(call.offerer.statistics.sendsRefused == refusedBefore + 1)
    }

    /// Garbage, a tampered packet and a replay on the path are dropped and counted by reason; the stream
    /// goes on.
    @Test func hostileDatagramsAreCountedByReasonAndTheStreamGoesOn() throws {
        let call = try TransportCall()
        #expect(call.run(for: .seconds(10)) { call.offerer.state == .connected && call.answerer.state == .connected })
        #expect(try call.send(rtpPacket(sequence: 1), from: .offerer))
        call.run(for: .milliseconds(20))
        let genuine = try #require(call.receivedBytes[.answerer]?.first)
        #expect(genuine == rtpPacket(sequence: 1))

        #expect(call.inject([0xff, 1, 2, 3], to: .answerer) == .consumed)            // no protocol starts 0xff
        #expect(call.inject([], to: .answerer) == .consumed)
        var forged = rtpPacket(sequence: 2) + [UInt8](repeating: 0xab, count: 16)  // a made-up tag
        #expect(call.inject(forged, to: .answerer) == .consumed)
        forged[0] = 0x00                                                            // STUN first byte, not STUN
        #expect(call.inject(forged, to: .answerer) == .consumed)

        #expect(try call.send(rtpPacket(sequence: 3), from: .offerer))
        call.run(for: .milliseconds(20))
        #expect(call.receivedBytes[.answerer] == [rtpPacket(sequence: 1), rtpPacket(sequence: 3)])
        let drops = call.answerer.statistics.drops
        #expect(drops["unknown-first-byte"] == 2)
        #expect(drops["srtp-authentication-failed"] == 1)
        #expect(drops.keys.contains { $0.hasPrefix("ice-") }, "\(drops)")
    }

    @Test func closingSendsCloseNotifyAndStopsMedia() throws {
        let call = try TransportCall()
        #expect(call.run(for: .seconds(10)) { call.offerer.state == .connected && call.answerer.state == .connected })
        call.offerer.close(now: call.now)
        #expect(call.offerer.state == .closed)
        call.run(for: .milliseconds(50))
        #expect(call.answerer.state == .closed)
        #expect(try !call.send(rtpPacket(sequence: 1), from: .offerer))
    }
}
