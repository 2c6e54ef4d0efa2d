/// WebRTC offers and answers (JSEP, RFC 8829): Sluice's offer, its answers to browser, aiortc and
/// GStreamer offers (the MediaSDP fixtures), and the remote description reader.
import Foundation
import MediaCore
import MediaNegotiation
import MediaSDP
import TestSupport
import Testing

/// Sluice's transport in these tests: made-up credentials, the fingerprint 00:01:...:1F, one host candidate.
let sluiceTransport = TransportDescription(
    iceUfrag: "sLu1", icePwd: "sluice+ice/password0123", fingerprints: [SDPFingerprint(algorithm: "sha-256", bytes: Array(0...31))],
    candidates: ["1 1 udp 2130706431 127.0.0.1 50000 typ host"], endOfCandidates: true)

let audioSender = WebRTCSender(streamID: "sluice", trackID: "sluice-audio", source: SendingSource(ssrc: 1111, cname: "sluice"))
let videoSender = WebRTCSender(streamID: "sluice", trackID: "sluice-video",
                               source: SendingSource(ssrc: 2222, retransmissionSSRC: 3333, cname: "sluice"))

/// The offer in Fixtures/sluice-offer.sdp: audio and video sent and received, and a data channel.
func sluiceOffer() -> SessionDescription {
    makeWebRTCOffer(capabilities: sluiceCapabilities, transport: sluiceTransport,
                    options: WebRTCOptions(origin: SDPOrigin(sessionID: 4_242_424_242, sessionVersion: 1),
                                           senders: [.audio: audioSender, .video: videoSender], dataChannel: true))
}

/// The answer in Fixtures/sluice-answer.sdp: to aiortc's offer, audio and video sent, data channels accepted.
func sluiceAnswerToAiortc() throws -> WebRTCAnswer {
    try makeWebRTCAnswer(to: fixture("aiortc-offer.sdp"), capabilities: sluiceCapabilities, transport: sluiceTransport,
                         options: WebRTCOptions(origin: SDPOrigin(sessionID: 4_242_424_243, sessionVersion: 1),
                                                senders: [.audio: audioSender, .video: videoSender], dataChannel: true))
}

/// The WebRTC answer to fixture `name`, written and parsed back.
func webRTCAnswer(_ name: String, options: WebRTCOptions = WebRTCOptions(senders: [.audio: audioSender, .video: videoSender]))
    throws -> WebRTCAnswer
{
    var answer = try makeWebRTCAnswer(to: try fixture(name), capabilities: sluiceCapabilities, transport: sluiceTransport,
                                      options: options)
    let reparsed = try SessionDescription(parsing: answer.description.serialized())
    #expect(reparsed == answer.description)
    answer.description = reparsed
    return answer
}

@Suite struct WebRTCOfferTests {
    @Test func offerIsTheFixtureByteForByte() throws {
        // Fixtures/sluice-offer.sdp is what aiortc answered (aiortc-answer.sdp): it must stay what Sluice writes.
        let url = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures/sluice-offer.sdp")
        #expect(sluiceOffer().serialized() == String(decoding: try Data(contentsOf: url), as: UTF8.self))
    }

    @Test func offerHasBundleTransportAndWebRTCLines() throws {
        let offer = try SessionDescription(parsing: sluiceOffer().serialized())
        #expect(try offer.groups() == [SDPGroup(semantics: "BUNDLE", mids: ["0", "1", "2"])])
        #expect(offer.media.map(\.type) == ["audio", "video", "application"])
        #expect(offer.media.map(\.mid) == ["0", "1", "2"])
        #expect(offer.connection == nil)
        for section in offer.media {
            // RFC 9143 §7.1: the same transport in every section of the offer.
            #expect(section.connections == [SDPConnection(address: "0.0.0.0")] && section.port == 9)
            #expect(try section.iceUsernameFragment() == "sLu1" && section.icePassword() == "sluice+ice/password0123")
            #expect(try section.iceOptions() == ["trickle"])
            #expect(try section.setupRole() == .actpass)
            #expect(try section.fingerprints() == sluiceTransport.fingerprints)
            #expect(try section.candidates() == sluiceTransport.candidates && section.endOfCandidates)
        }
        let (audio, video) = (offer.media[0], offer.media[1])
        for section in [audio, video] {
            #expect(section.proto == "UDP/TLS/RTP/SAVPF" && section.rtcpMux && section.rtcpReducedSize)
            #expect(section.explicitDirection == .sendrecv)
            #expect(try section.extensionMaps() == [
                SDPExtensionMap(id: 1, uri: RTPHeaderExtensionURI.mid), SDPExtensionMap(id: 2, uri: RTPHeaderExtensionURI.absSendTime),
                SDPExtensionMap(id: 3, uri: RTPHeaderExtensionURI.transportWideCC),
            ])
        }
        #expect(try audio.mediaStreamIDs() == [SDPMediaStreamID(streamID: "sluice", trackID: "sluice-audio")])
        #expect(try audio.sourceAttributes() == [SDPSourceAttribute(ssrc: 1111, name: "cname", value: "sluice"),
                                                  SDPSourceAttribute(ssrc: 1111, name: "msid", value: "sluice sluice-audio")])
        #expect(try video.sourceGroups() == [SDPSourceGroup(semantics: "FID", ssrcs: [2222, 3333])])
        #expect(try video.sourceAttributes().map(\.ssrc) == [2222, 3333, 2222, 3333])
        // Payload types unique across the bundle (RFC 9143 §7.5): Opus 96, then VP8 and H.264 with RTX,
        // each video codec with the five feedback messages browsers offer.
        #expect(try audio.rtpMap(for: 96) == SDPRTPMap(payloadType: 96, encodingName: "opus", clockRate: 48_000, channels: 2))
        #expect(try video.rtpMap(for: 97)?.encodingName == "VP8" && video.retransmissionPayloadType(for: 97) == 98)
        #expect(try feedbackLines(video, 97) == ["nack", "nack pli", "ccm fir", "goog-remb", "transport-cc"])
        #expect(try video.rtpMap(for: 99)?.encodingName == "H264" && video.retransmissionPayloadType(for: 99) == 100)
        #expect(video.payloadTypes == Array(97...106))
        let data = offer.media[2]
        #expect(data.proto == "UDP/DTLS/SCTP" && data.formats == ["webrtc-datachannel"])
        #expect(try data.sctpPort() == 5000 && data.maxMessageSize() == 262_144)
    }

    @Test func withoutSendersTheOfferIsRecvonlyAndWithoutDataChannel() throws {
        let offer = makeWebRTCOffer(capabilities: sluiceCapabilities, transport: sluiceTransport)
        #expect(offer.media.map(\.type) == ["audio", "video"])
        #expect(offer.media.map(\.explicitDirection) == [.recvonly, .recvonly])
        #expect(try offer.media.allSatisfy { try $0.sourceAttributes().isEmpty && $0.mediaStreamIDs().isEmpty })
        let sendOnly = makeWebRTCOffer(capabilities: sluiceCapabilities, transport: sluiceTransport,
                                       options: WebRTCOptions(senders: [.video: videoSender], receives: []))
        #expect(sendOnly.media.map(\.explicitDirection) == [.inactive, .sendonly])
    }

    @Test func defaultCandidateSetsPortAndAddress() {
        let offer = makeWebRTCOffer(capabilities: sluiceCapabilities, transport: sluiceTransport,
                                    options: WebRTCOptions(address: "192.0.2.5", port: 50000))
        #expect(offer.media.allSatisfy { $0.port == 50000 && $0.connections == [SDPConnection(address: "192.0.2.5")] })
    }

    @Test func ownOfferReadBackGivesTheSameTransport() throws {
        let remote = try readRemoteDescription(sluiceOffer(), type: .offer, capabilities: sluiceCapabilities)
        var expected = sluiceTransport
        expected.setup = .actpass
        #expect(remote.transport == expected)
        #expect(remote.transportMid == "0" && remote.bundleMids == ["0", "1", "2"] && remote.localSetup == .active)
        #expect(remote.media.map(\.mid) == ["0", "1", "2"])
        #expect(remote.media[1].codecs.map(\.payloadType) == [97, 99, 101, 103, 105])
        #expect(remote.media[1].codecs.map(\.retransmissionPayloadType) == [98, 100, 102, 104, 106])
        #expect(remote.media[0].senders == [RemoteSender(ssrc: 1111, cname: "sluice", streamID: "sluice", trackID: "sluice-audio")])
        #expect(remote.media[1].senders == [RemoteSender(ssrc: 2222, retransmissionSSRC: 3333, cname: "sluice",
                                                         streamID: "sluice", trackID: "sluice-video")])
        #expect(remote.media[1].headerExtensions == RTPHeaderExtensionIDs(mid: 1, absSendTime: 2, transportWideCC: 3))
        #expect(remote.media[2].sctpPort == 5000 && remote.media[2].maxMessageSize == 262_144)
    }
}

@Suite struct WebRTCAnswerTests {
    /// Checks every browser-style answer shares: Sluice's transport answering actpass with active in each
    /// accepted section, rejected ones with port 0 and no transport, mids mirrored, BUNDLE of the accepted.
    func expectWebRTCAnswer(_ answer: WebRTCAnswer, to name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let offer = try fixture(name), sdp = answer.description
        #expect(sdp.media.map(\.mid) == offer.media.map(\.mid), sourceLocation: sourceLocation)
        #expect(answer.setup == .active, sourceLocation: sourceLocation)
        let accepted = sdp.media.filter { $0.port != 0 }
        for section in accepted {
            #expect(try section.iceUsernameFragment() == "sLu1" && section.icePassword() == "sluice+ice/password0123",
                    sourceLocation: sourceLocation)
            #expect(try section.fingerprints() == sluiceTransport.fingerprints && section.setupRole() == .active,
                    sourceLocation: sourceLocation)
            #expect(section.connections == [SDPConnection(address: "0.0.0.0")], sourceLocation: sourceLocation)
        }
        for section in sdp.media where section.port == 0 {
            #expect(try section.iceUsernameFragment() == nil && section.setupRole() == nil, sourceLocation: sourceLocation)
        }
        let offeredBundle = try offer.groups().first { $0.semantics == "BUNDLE" }?.mids ?? []
        let bundle = offeredBundle.filter { mid in accepted.contains { $0.mid == mid } }
        #expect(try sdp.groups() == [SDPGroup(semantics: "BUNDLE", mids: bundle)], sourceLocation: sourceLocation)
        // The answer reads back as a remote answer to the offer, with Sluice's transport.
        let remote = try readRemoteDescription(sdp, type: .answer, capabilities: sluiceCapabilities)
        #expect(remote.transport.iceUfrag == "sLu1" && remote.transport.setup == .active && remote.localSetup == .passive,
                sourceLocation: sourceLocation)
    }

    @Test func chromeOffer() throws {
        let answer = try webRTCAnswer("chrome-offer.sdp")
        try expectWebRTCAnswer(answer, to: "chrome-offer.sdp")
        let sdp = answer.description
        #expect(try sdp.groups() == [SDPGroup(semantics: "BUNDLE", mids: ["0", "1"])])
        #expect(sdp.media[2].port == 0 && answer.results[2].rejectionReason == "application media is not supported")
        let (audio, video) = (sdp.media[0], sdp.media[1])
        // Extension ids as offered (RFC 8285 §6): Chrome maps abs-send-time 2, transport-cc 3, mid 4.
        #expect(try audio.extensionMaps() == [SDPExtensionMap(id: 2, uri: RTPHeaderExtensionURI.absSendTime),
                                               SDPExtensionMap(id: 3, uri: RTPHeaderExtensionURI.transportWideCC),
                                               SDPExtensionMap(id: 4, uri: RTPHeaderExtensionURI.mid)])
        #expect(try video.extensionMaps().map(\.id) == [2, 3, 4])
        // Codecs chosen as by makeAnswer, plus goog-remb and transport-cc now that WebRTC feedback is on.
        #expect(audio.formats == ["111"] && audio.rtcpMux && audio.rtcpReducedSize)
        #expect(video.formats == ["96", "97", "102", "103", "104", "105", "106", "107", "108", "109"])
        #expect(try feedbackLines(video, 96) == ["goog-remb", "transport-cc", "ccm fir", "nack", "nack pli"])
        #expect(audio.explicitDirection == .sendrecv && video.explicitDirection == .sendrecv)
        #expect(try audio.mediaStreamIDs() == [SDPMediaStreamID(streamID: "sluice", trackID: "sluice-audio")])
        #expect(try video.sourceGroups() == [SDPSourceGroup(semantics: "FID", ssrcs: [2222, 3333])])
        #expect(answer.notes.isEmpty)
    }

    @Test func chromeOfferWithDataChannelsAccepted() throws {
        var options = WebRTCOptions(senders: [.video: videoSender])
        options.dataChannel = true
        let answer = try webRTCAnswer("chrome-offer.sdp", options: options)
        try expectWebRTCAnswer(answer, to: "chrome-offer.sdp")
        let data = answer.description.media[2]
        #expect(data.port == 9 && data.proto == "UDP/DTLS/SCTP" && data.formats == ["webrtc-datachannel"])
        #expect(try data.sctpPort() == 5000 && data.maxMessageSize() == 262_144)
        #expect(try answer.description.groups()[0].mids == ["0", "1", "2"])
        #expect(answer.results[2].rejectionReason == nil)
        // No audio sender: audio is answered recvonly without msid or ssrc.
        #expect(answer.description.media[0].explicitDirection == .recvonly)
        #expect(try answer.description.media[0].sourceAttributes().isEmpty)
    }

    @Test func firefoxOffer() throws {
        let answer = try webRTCAnswer("firefox-offer.sdp")
        try expectWebRTCAnswer(answer, to: "firefox-offer.sdp")
        let (audio, video) = (answer.description.media[0], answer.description.media[1])
        // Firefox's transport is at session level: the reader falls back to it.
        let remote = try readRemoteDescription(try fixture("firefox-offer.sdp"), type: .offer, capabilities: sluiceCapabilities)
        #expect(remote.transport.fingerprints.first?.algorithm == "sha-256" && remote.transport.setup == .actpass)
        // Firefox offers audio-level (1) and csrc-audio-level (2, recvonly) and mid (3) on audio.
        let audioOffer = try fixture("firefox-offer.sdp").media[0]
        let offeredMid = try #require(try audioOffer.extensionMaps().first { $0.uri == RTPHeaderExtensionURI.mid })
        #expect(try audio.extensionMaps().first { $0.uri == RTPHeaderExtensionURI.mid }?.id == offeredMid.id)
        #expect(video.explicitDirection == .sendonly)  // Firefox's video is recvonly
        #expect(video.formats == ["120", "124", "126", "127", "97", "98"])  // as makeAnswer chose them
    }

    @Test func safariOffer() throws {
        let answer = try webRTCAnswer("safari-offer.sdp")
        try expectWebRTCAnswer(answer, to: "safari-offer.sdp")
        let video = answer.description.media[0]
        #expect(video.explicitDirection == .recvonly)  // Safari's video is sendonly
        #expect(try video.sourceAttributes().isEmpty && video.mediaStreamIDs().isEmpty)
        #expect(video.formats == ["98", "99", "127", "125"])
        let remote = try readRemoteDescription(try fixture("safari-offer.sdp"), type: .offer, capabilities: sluiceCapabilities)
        #expect(remote.transport.candidates.count == 2 && remote.transport.endOfCandidates)
        #expect(remote.media[0].senders == [RemoteSender(ssrc: 3_044_316_233, retransmissionSSRC: 1_785_229_340, cname: "Xq7vN2bLk9HsT4wR",
                                                         streamID: "7F3A2C1E-5B4D-4E6F-8A9B-0C1D2E3F4A5B",
                                                         trackID: "2B9C8D7E-6F5A-4B3C-9D2E-1F0A9B8C7D6E")])
    }

    @Test func gstreamerOfferWithBundleOnlySections() throws {
        let answer = try webRTCAnswer("gstreamer-webrtcbin.sdp")
        try expectWebRTCAnswer(answer, to: "gstreamer-webrtcbin.sdp")
        // The bundle-only sections (port 0 in the offer, RFC 9143 §6) are accepted on the bundle transport.
        #expect(answer.description.media.map(\.port) == [9, 9, 9])
        #expect(try answer.description.groups()[0].mids == ["video0", "video1", "audio2"])
        #expect(answer.results.map(\.codecs.first?.capability.codec) == [.vp8, .h264, .opus])
    }

    @Test func aiortcOffer() throws {
        let answer = try webRTCAnswer("aiortc-offer.sdp")
        try expectWebRTCAnswer(answer, to: "aiortc-offer.sdp")
        let offer = try fixture("aiortc-offer.sdp")
        for (offered, answered) in zip(offer.media, answer.description.media) where answered.port != 0 {
            let supported = try offered.extensionMaps().filter { [RTPHeaderExtensionURI.mid, RTPHeaderExtensionURI.absSendTime,
                                                                  RTPHeaderExtensionURI.transportWideCC].contains($0.uri) }
            #expect(try answered.extensionMaps().map(\.id) == supported.map(\.id))
        }
        #expect(answer.results.filter { $0.type != "application" }.allSatisfy { $0.rejectionReason == nil })
    }

    @Test func answerToAiortcIsTheFixtureByteForByte() throws {
        // Fixtures/sluice-answer.sdp is what aiortc accepted (aiortc-sdp.py --accept-answer): it must stay what Sluice writes.
        let url = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures/sluice-answer.sdp")
        let answer = try sluiceAnswerToAiortc()
        #expect(answer.description.serialized() == String(decoding: try Data(contentsOf: url), as: UTF8.self))
        try expectWebRTCAnswer(answer, to: "aiortc-offer.sdp")
        #expect(answer.description.media.map(\.type) == ["video", "audio", "application"])
        #expect(answer.results.allSatisfy { $0.rejectionReason == nil } && answer.notes.isEmpty)
    }

    @Test func offerWithoutRTCPMuxIsAnsweredWithANote() throws {
        var offer = try fixture("chrome-offer.sdp")
        offer.media[0].attributes.removeAll { $0.name == "rtcp-mux" }
        let answer = try makeWebRTCAnswer(to: offer, capabilities: sluiceCapabilities, transport: sluiceTransport)
        #expect(!answer.description.media[0].rtcpMux && answer.description.media[1].rtcpMux)
        #expect(answer.notes == ["section 0 offers no rtcp-mux: answered without it, RTCP on its own port"])
    }

    @Test(arguments: [(SDPSetup.actpass, SDPSetup.active), (.active, .passive), (.passive, .active)])
    func setupIsAnswered(offered: SDPSetup, answered: SDPSetup) throws {
        let offer = try replacingSetup(in: fixture("chrome-offer.sdp"), with: offered)
        let answer = try makeWebRTCAnswer(to: offer, capabilities: sluiceCapabilities, transport: sluiceTransport)
        #expect(answer.setup == answered)
        #expect(try answer.description.media[0].setupRole() == answered)
    }
}

/// `description` with every `a=setup` replaced by `setup`.
func replacingSetup(in description: SessionDescription, with setup: SDPSetup) -> SessionDescription {
    var copy = description
    for index in copy.media.indices {
        copy.media[index].attributes = copy.media[index].attributes.map { $0.name == "setup" ? setup.attribute : $0 }
    }
    return copy
}

@Suite struct RemoteDescriptionErrorTests {
    /// The offer of fixture `name` with the attributes called `names` removed everywhere.
    func without(_ names: Set<String>, in name: String = "chrome-offer.sdp") throws -> SessionDescription {
        var offer = try fixture(name)
        offer.attributes.removeAll { names.contains($0.name) }
        for index in offer.media.indices { offer.media[index].attributes.removeAll { names.contains($0.name) } }
        return offer
    }

    @Test func missingTransportAttributesAreNamed() throws {
        #expect(throws: JSEPError.missingFingerprint(mid: "0")) {
            try makeWebRTCAnswer(to: without(["fingerprint"]), capabilities: sluiceCapabilities, transport: sluiceTransport)
        }
        #expect(throws: JSEPError.missingICEUfrag(mid: "0")) {
            try readRemoteDescription(without(["ice-ufrag"]), type: .offer, capabilities: [])
        }
        #expect(throws: JSEPError.missingICEPwd(mid: "0")) {
            try readRemoteDescription(without(["ice-pwd"]), type: .offer, capabilities: [])
        }
        #expect(JSEPError.missingFingerprint(mid: "0").reason == "no-fingerprint")
    }

    @Test func answerSayingActpassIsNamed() throws {
        let answer = try makeWebRTCAnswer(to: fixture("chrome-offer.sdp"), capabilities: sluiceCapabilities, transport: sluiceTransport)
        let bad = replacingSetup(in: answer.description, with: .actpass)
        #expect(throws: JSEPError.actpassInAnswer(mid: "0")) {
            try readRemoteDescription(bad, type: .answer, capabilities: sluiceCapabilities)
        }
        #expect(JSEPError.actpassInAnswer(mid: "0").reason == "answer-setup-actpass")
    }

    @Test func holdconnIsNamed() throws {
        let offer = try replacingSetup(in: fixture("chrome-offer.sdp"), with: .holdconn)
        #expect(throws: JSEPError.holdconn(mid: "0")) {
            try makeWebRTCAnswer(to: offer, capabilities: sluiceCapabilities, transport: sluiceTransport)
        }
    }

    @Test func setupDefaultsFollowRFC4145() throws {
        // Absent a=setup: an offer is active (answered passive), an answer passive (the offerer is active).
        let offer = try without(["setup"])
        #expect(try readRemoteDescription(offer, type: .offer, capabilities: []).localSetup == .passive)
        #expect(try readRemoteDescription(offer, type: .answer, capabilities: []).localSetup == .active)
    }

    @Test func unknownBundleMidAndNoTransportAreNamed() throws {
        var offer = try fixture("chrome-offer.sdp")
        offer.attributes = offer.attributes.map { $0.name == "group" ? SDPGroup(semantics: "BUNDLE", mids: ["0", "9"]).attribute : $0 }
        #expect(throws: JSEPError.unknownBundleMid("9")) { try readRemoteDescription(offer, type: .offer, capabilities: []) }
        var rejected = try fixture("chrome-offer.sdp")
        for index in rejected.media.indices { rejected.media[index].port = 0 }
        #expect(throws: JSEPError.noTransport) { try readRemoteDescription(rejected, type: .offer, capabilities: []) }
    }

    @Test func malformedTransportAttributeIsNamed() throws {
        var offer = try fixture("chrome-offer.sdp")
        offer.media[0].attributes = offer.media[0].attributes.map { $0.name == "ice-ufrag" ? SDPAttribute(name: "ice-ufrag", value: "a b") : $0 }
        #expect(throws: JSEPError.malformed(.malformedAttribute(line: nil, text: "a=ice-ufrag:a b",
                                                                reason: "not ice-chars (letters, digits, + and /)"))) {
            try readRemoteDescription(offer, type: .offer, capabilities: [])
        }
    }
}

@Suite struct AiortcAnswerTests {
    /// Fixtures/aiortc-answer.sdp: aiortc 1.16.0's answer to Fixtures/sluice-offer.sdp.
    @Test func aiortcAnswerToSluiceOfferReads() throws {
        let remote = try readRemoteDescription(fixture("aiortc-answer.sdp"), type: .answer, capabilities: sluiceCapabilities)
        #expect(remote.bundleMids == ["0", "1", "2"])
        #expect(remote.media.map(\.mid) == ["0", "1", "2"])
        #expect(remote.transport.setup == .active && remote.localSetup == .passive)
        #expect(remote.transport.fingerprints.contains { $0.algorithm == "sha-256" && $0.bytes.count == 32 })
        #expect(remote.media[0].codecs.map(\.capability.codec) == [.opus])
        #expect(remote.media[1].codecs.first?.capability.codec == .vp8)
        #expect(remote.media[1].codecs.first?.retransmissionPayloadType == 98)
        #expect(remote.media[2].sctpPort == 5000)
        #expect(remote.media[0].senders.count == 1 && remote.media[1].senders.count == 1)
        // aiortc's answer, read against Sluice's offer, settles the same codecs.
        let results = readAnswer(try fixture("aiortc-answer.sdp"), to: sluiceOffer(), capabilities: sluiceCapabilities)
        #expect(results[0].codecs.map(\.payloadType) == [96] && results[1].codecs.map(\.payloadType) == [97, 99, 101])
    }
}

/// Seeded line-level mutations of the WebRTC offers (lines dropped, duplicated, swapped or changed to
/// another attribute's value): answering and reading never crash, fail only with a JSEPError, and an
/// answer made writes back to text that parses the same.
@Suite struct JSEPFuzzTests {
    static let offers = ["chrome-offer.sdp", "firefox-offer.sdp", "safari-offer.sdp", "gstreamer-webrtcbin.sdp", "aiortc-offer.sdp"]

    @Test func mutatedOffers() throws {
        var random = SplitMix64(seed: 12)
        let texts = try Self.offers.map { try fixture($0).serialized() }
        let values = ["", "x", "0", "actpass", "holdconn", "active", "sha-256 AB", "BUNDLE 0 9", "1 x", "9999", "a b c"]
        var (answered, refused) = (0, 0)
        for _ in 0..<300 {
            var lines = texts.randomElement(using: &random)!.components(separatedBy: "\r\n").dropLast().map { $0 }
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 4..<lines.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: lines.remove(at: index)
                case 1: lines.insert(lines[index], at: Int.random(in: 4...lines.count, using: &random))
                case 2: lines.swapAt(index, Int.random(in: 4..<lines.count, using: &random))
                default:
                    if lines[index].hasPrefix("a="), let colon = lines[index].firstIndex(of: ":") {
                        lines[index] = String(lines[index][...colon]) + values.randomElement(using: &random)!
                    }
                }
            }
            guard let offer = try? SessionDescription(parsing: lines.joined(separator: "\r\n") + "\r\n") else { continue }
            _ = try? readRemoteDescription(offer, type: .answer, capabilities: sluiceCapabilities)
            do {
                let answer = try makeWebRTCAnswer(to: offer, capabilities: sluiceCapabilities, transport: sluiceTransport)
                #expect(try SessionDescription(parsing: answer.description.serialized()) == answer.description)
                #expect(answer.description.media.count == offer.media.count)
                answered += 1
            } catch {
                refused += 1
            }
        }
        // Both paths are taken.
        #expect(answered > 25 && refused > 25, "answered \(answered), refused \(refused)")
    }
}

/// Data channel sections alone (RFC 8841): a Sluice offer with no media, answered by Sluice, each read back.
@Suite struct DataChannelOnlyJSEPTests {
    @Test func dataOnlyOfferAndAnswerCarrySCTPPortAndMaxMessageSizeBothWays() throws {
        let offerOptions = WebRTCOptions(media: [], dataChannel: true, sctpPort: 5000, maxMessageSize: 262_144)
        let offer = makeWebRTCOffer(capabilities: sluiceCapabilities, transport: sluiceTransport, options: offerOptions)
        #expect(offer.media.count == 1)
        #expect(offer.serialized().contains("m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"))
        #expect(try offer.groups()[0].mids == ["0"])
        let remoteOffer = try readRemoteDescription(SessionDescription(parsing: offer.serialized()), type: .offer, capabilities: [])
        #expect(remoteOffer.media[0].sctpPort == 5000 && remoteOffer.media[0].maxMessageSize == 262_144)
        #expect(remoteOffer.transport.setup == .actpass)

        // The answerer takes a smaller maximum (as aiortc's 65536) and another port.
        let answerOptions = WebRTCOptions(media: [], dataChannel: true, sctpPort: 5001, maxMessageSize: 65_536)
        let answer = try makeWebRTCAnswer(to: offer, capabilities: sluiceCapabilities, transport: sluiceTransport,
                                          options: answerOptions)
        #expect(answer.results.map(\.rejectionReason) == [nil])
        let section = answer.description.media[0]
        #expect(section.type == "application" && section.proto == "UDP/DTLS/SCTP" && section.mid == "0")
        let remoteAnswer = try readRemoteDescription(SessionDescription(parsing: answer.description.serialized()),
                                                     type: .answer, capabilities: [])
        #expect(remoteAnswer.media[0].sctpPort == 5001 && remoteAnswer.media[0].maxMessageSize == 65_536)
        #expect(remoteAnswer.transport.setup == .active)

        // Without data channels on this side the section is refused with port 0 (RFC 3264 §6).
        let refused = try makeWebRTCAnswer(to: offer, capabilities: sluiceCapabilities, transport: sluiceTransport,
                                           options: WebRTCOptions(media: []))
        #expect(refused.description.media[0].port == 0 && refused.results[0].rejectionReason != nil)
    }
}
