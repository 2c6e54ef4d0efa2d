/// Two transports that learn about each other only through JSEP session descriptions (RFC 8829):
/// credentials, fingerprints, setup roles and candidates travel as SDP text and connect the call.
import MediaCore
import MediaDTLS
import MediaICE
import MediaNegotiation
import MediaPeer
import MediaSDP
import Testing

@Suite struct PeerTransportJSEPTests {
    static let capabilities = [CodecCapability.vp8()]

    /// Offer (actpass, with the offerer's candidate) → answer (active: the answerer is the DTLS client)
    /// → both connected, the answerer's candidates learned by trickle.
    @Test func anOfferAndAnswerAsTextConnectTheTransports() throws {
        var offerText = "", answerText = ""
        var answererSetup: SDPSetup?
        let call = try TransportCall { offerer, answerer, now in
            var localCandidates: [ICECandidate] = []
            while let event = offerer.pollEvent() {
                if case .localCandidate(let candidate) = event { localCandidates.append(candidate) }
            }
            let offer = makeWebRTCOffer(capabilities: Self.capabilities,
                                        transport: offerer.localTransportDescription(setup: .actpass, candidates: localCandidates),
                                        options: WebRTCOptions(media: [.video]))
            offerText = offer.serialized()

            let receivedOffer = try SessionDescription(parsing: offerText)
            let remoteOffer = try readRemoteDescription(receivedOffer, type: .offer, capabilities: Self.capabilities)
            try answerer.setRemote(remoteOffer, now: now)
            let answer = try makeWebRTCAnswer(to: receivedOffer, capabilities: Self.capabilities,
                                              transport: answerer.localTransportDescription(setup: remoteOffer.localSetup),
                                              options: WebRTCOptions(media: [.video]))
            answerText = answer.description.serialized()
            answererSetup = remoteOffer.localSetup

            let remoteAnswer = try readRemoteDescription(try SessionDescription(parsing: answerText), type: .answer,
                                                         capabilities: Self.capabilities)
            try offerer.setRemote(remoteAnswer, now: now)
        }
        #expect(answererSetup == .active)
        #expect(call.answerer.dtlsRole == .client && call.offerer.dtlsRole == .server)
        #expect(offerText.contains("a=setup:actpass") && offerText.contains("a=candidate:"))
        #expect(answerText.contains("a=setup:active"))
        #expect(call.run(for: .seconds(10)) { call.offerer.state == .connected && call.answerer.state == .connected },
                "offerer \(call.offerer.state), answerer \(call.answerer.state)")
        #expect(try call.send(rtpPacket(sequence: 9), from: .answerer))
        call.run(for: .milliseconds(20))
        #expect(call.receivedBytes[.offerer] == [rtpPacket(sequence: 9)])
    }

    @Test func aBadCandidateLineIsCountedAndSkipped() throws {
        let call = try TransportCall()
        #expect(!call.answerer.addRemoteCandidate(line: "candidate:1 1 udp x 10.0.0.1 5000 typ host", now: call.now))
        #expect(call.answerer.addRemoteCandidate(line: "a=candidate:2 1 udp 2130706431 10.0.0.1 5000 typ host", now: call.now))
        #expect(call.answerer.statistics.drops.keys.contains { $0.hasPrefix("candidate-") })
    }

    @Test func fingerprintsWithNoKnownHashAreRefusedByName() throws {
        let offerer = PeerTransport(iceRole: .controlling, certificate: try DTLSCertificate())
        let offer = makeWebRTCOffer(capabilities: Self.capabilities,
                                    transport: offerer.localTransportDescription(setup: .actpass),
                                    options: WebRTCOptions(media: [.video]))
        var remote = try readRemoteDescription(offer, type: .offer, capabilities: Self.capabilities)
        remote.transport.fingerprints = [SDPFingerprint(algorithm: "md5", bytes: [UInt8](repeating: 1, count: 16))]
        let answerer = PeerTransport(iceRole: .controlled, certificate: try DTLSCertificate())
        do {
            try answerer.setRemote(remote, now: .zero)
            Issue.record("an md5 fingerprint was taken")
        } catch {
            #expect(error == .unsupportedFingerprint(["md5"]))
        }
    }
}
