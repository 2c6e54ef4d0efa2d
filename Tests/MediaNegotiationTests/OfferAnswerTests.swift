/// RFC 3264 answers to browser offers (the MediaSDP fixtures), and Sluice's own offers.
import Foundation
import MediaCore
import MediaNegotiation
import MediaSDP
import TestSupport
import Testing

/// Sluice's built-in capabilities as `CodecRegistry.capabilities` makes them (this target does not
/// link the codecs; SluiceTests checks the two agree).
let sluiceCapabilities: [CodecCapability] = {
    let constrained = H264ProfileLevelID(profile: .constrainedBaseline, level: .level3_1)
    let baseline = H264ProfileLevelID(profile: .baseline, level: .level3_1)
    return [.vp8()] + [1, 0].flatMap { mode in [constrained, baseline].map { CodecCapability.h264($0, packetizationMode: mode) } }
        + [.opus()]
}()

func fixture(_ name: String) throws -> SessionDescription {
    let url = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures/\(name)")
    return try SessionDescription(parsing: String(decoding: try Data(contentsOf: url), as: UTF8.self))
}

/// The answer to fixture `name`, written and parsed back (so every test also checks that it parses).
func answer(_ name: String, capabilities: [CodecCapability] = sluiceCapabilities,
            options: NegotiationOptions = NegotiationOptions()) throws -> (SessionDescription, [MediaNegotiationResult]) {
    let (answer, results) = makeAnswer(to: try fixture(name), capabilities: capabilities, options: options)
    let reparsed = try SessionDescription(parsing: answer.serialized())
    #expect(reparsed == answer)
    return (reparsed, results)
}

/// `a=rtcp-fb` lines of `payloadType` as text, e.g. ["ccm fir", "nack", "nack pli"].
func feedbackLines(_ media: MediaDescription, _ payloadType: UInt8) throws -> [String] {
    try media.feedback(for: payloadType).map { RTCPFeedbackType($0).description }
}

let videoSource = SendingSource(ssrc: 1111, retransmissionSSRC: 2222, cname: "sluice")

struct AnswerTests {
    @Test func chromeOffer() throws {
        let (sdp, results) = try answer("chrome-offer.sdp")
        #expect(sdp.media.map(\.type) == ["audio", "video", "application"])  // RFC 3264 §6: one per offered
        #expect(try sdp.groups() == [SDPGroup(semantics: "BUNDLE", mids: ["0", "1"])])

        let audio = sdp.media[0]
        #expect(audio.mid == "0" && audio.port == 9 && audio.proto == "UDP/TLS/RTP/SAVPF")
        #expect(audio.formats == ["111"])
        #expect(try audio.rtpMap(for: 111) == SDPRTPMap(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2))
        #expect(try audio.formatParameters(for: 111) == ["minptime": "10", "stereo": "1", "useinbandfec": "1"])
        #expect(try audio.feedback(for: 111).isEmpty)  // Chrome offers transport-cc; Opus here takes none
        #expect(audio.explicitDirection == .sendrecv && audio.rtcpMux)

        // Offer order kept (RFC 3264 §6.1): VP8, H.264 42001f pm1, pm0, 42e01f pm1, pm0, each with its RTX.
        let video = sdp.media[1]
        #expect(video.formats == ["96", "97", "102", "103", "104", "105", "106", "107", "108", "109"])
        #expect(try video.rtpMap(for: 102)?.encodingName == "H264")
        #expect(try video.formatParameters(for: 102) == ["level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": "42001f"])
        #expect(try video.formatParameters(for: 108) == ["level-asymmetry-allowed": "1", "packetization-mode": "0", "profile-level-id": "42e01f"])
        for (codec, rtx) in [(96, 97), (102, 103), (104, 105), (106, 107), (108, 109)] as [(UInt8, UInt8)] {
            #expect(try video.retransmissionPayloadType(for: codec) == rtx)
            #expect(try video.rtpMap(for: rtx) == SDPRTPMap(payloadType: rtx, encodingName: "rtx", clockRate: 90_000))
            // Chrome offers goog-remb and transport-cc too; only what both support is answered, in the offer's order.
            #expect(try feedbackLines(video, codec) == ["ccm fir", "nack", "nack pli"])
        }
        #expect(results[1].codecs.map(\.payloadType) == [96, 102, 104, 106, 108])
        #expect(results[1].outcome == .accepted(codecs: results[1].codecs, direction: .sendrecv))

        #expect(sdp.media[2].port == 0 && sdp.media[2].mid == "2" && sdp.media[2].formats == ["webrtc-datachannel"])
        #expect(results[2].rejectionReason == "application media is not supported")
    }

    @Test func firefoxOfferRecvonlyVideoIsAnsweredSendonlyWithSources() throws {
        let options = NegotiationOptions(sources: [.video: videoSource])
        let (sdp, results) = try answer("firefox-offer.sdp", options: options)
        let audio = sdp.media[0], video = sdp.media[1]
        #expect(audio.formats == ["109"] && audio.explicitDirection == .sendrecv)
        #expect(try audio.sourceAttributes().isEmpty)  // no audio source given
        #expect(video.explicitDirection == .sendonly)
        // VP9 (121) is not ours; 97 has no packetization-mode, which is mode 0 (RFC 6184 §8.1).
        #expect(video.formats == ["120", "124", "126", "127", "97", "98"])
        #expect(try video.formatParameters(for: 97)["packetization-mode"] == "0")
        #expect(try video.formatParameters(for: 126)["profile-level-id"] == "42e01f")
        #expect(try video.sourceGroups() == [SDPSourceGroup(semantics: "FID", ssrcs: [1111, 2222])])
        #expect(try video.sourceAttributes().map(\.ssrc) == [1111, 2222])
        // What we send must respect what Firefox receives: VP8 max-fs 12288, max-fr 60.
        let vp8 = try #require(results[1].codecs.first)
        #expect(vp8.remoteParameters == ["max-fs": "12288", "max-fr": "60"])
        #expect(vp8.retransmissionPayloadType == 124)
        #expect(vp8.remoteVideoLimits == RemoteVideoLimits(maxFrameSize: 12288, maxFrameRate: 60))
        let h264 = try #require(results[1].codecs.last)
        #expect(h264.remoteVideoLimits == RemoteVideoLimits(h264Level: .level3_1))  // 42e01f
        let hd = VideoConstraints(width: .init(ideal: 1920), height: .init(ideal: 1080))
        #expect(try chooseVideoFormat(constraints: hd, remote: h264.remoteVideoLimits!) == NegotiatedVideoFormat(width: 1280, height: 720, frameRate: 30))
        #expect(results[0].codecs.first?.remoteVideoLimits == nil)
        #expect(try sdp.groups() == [SDPGroup(semantics: "BUNDLE", mids: ["0", "1"])])
    }

    @Test func safariOfferSendonlyIsAnsweredRecvonlyWithoutSources() throws {
        let options = NegotiationOptions(sources: [.video: videoSource])
        let (sdp, results) = try answer("safari-offer.sdp", options: options)
        let video = sdp.media[0]
        #expect(video.explicitDirection == .recvonly)
        #expect(try video.sourceAttributes().isEmpty)
        // 96 is Constrained High (640c1f) and 100 H.265: not ours; 98 and VP8 127 are, with their RTX.
        #expect(video.formats == ["98", "99", "127", "125"])
        #expect(try video.formatParameters(for: 98)["profile-level-id"] == "42e01f")
        #expect(results[0].codecs.map(\.capability.codec) == [.h264, .vp8])
        #expect(sdp.media[1].formats == ["111"] && sdp.media[1].mid == "1")
    }

    @Test func preferenceOrderIsTheOffersNotOurs() throws {
        // RFC 3264 §6.1: H.264 first in Safari's offer stays first although VP8 is first here.
        let (_, results) = try answer("safari-offer.sdp", capabilities: sluiceCapabilities)
        #expect(results[0].codecs.first?.capability.codec == .h264)
    }

    @Test func sectionWithNoCommonCodecIsRejectedWithPortZeroAndReason() throws {
        let offer = try session("""
            a=group:BUNDLE v a\r
            m=video 5004 RTP/AVPF 100 101 102\r
            a=mid:v\r
            a=rtpmap:100 H264/90000\r
            a=fmtp:100 profile-level-id=64001f;packetization-mode=1\r
            a=rtpmap:101 rtx/90000\r
            a=fmtp:101 apt=100\r
            a=rtpmap:102 VP9/90000\r
            m=audio 5006 RTP/AVP 0\r
            a=mid:a\r

            """)
        let (sdp, results) = makeAnswer(to: offer, capabilities: sluiceCapabilities)
        #expect(sdp.media[0].port == 0 && sdp.media[0].formats == ["100", "101", "102"] && sdp.media[0].mid == "v")
        #expect(results[0].rejectionReason
            == "no common codec: offered H264 profile 64001f (High 3.1) packetization-mode 1 (no High profile here); VP9/90000 (not supported)")
        #expect(sdp.media[1].port == 0)
        #expect(results[1].rejectionReason == "no common codec: offered PCMU/8000/1 (not supported)")
        #expect(try sdp.groups().isEmpty)  // nothing accepted, nothing bundled
        // Each offered format not taken, with why: RTX by the format it repairs, a static type by its name.
        #expect(results[0].refusedFormats.map { "\($0.payloadType) \($0.format): \($0.reason)" } == [
            "100 H264 profile 64001f (High 3.1) packetization-mode 1: no High profile here",
            "102 VP9/90000: not supported",
            "101 rtx/90000: RTX of payload type 100, which is not taken",
        ])
        #expect(results[1].refusedFormats.map { "\($0.payloadType) \($0.format): \($0.reason)" } == ["0 PCMU/8000/1: not supported"])
    }

    /// An accepted section names the formats it leaves out too (Chrome's H.264 Main and High, RED, FEC).
    @Test func acceptedSectionsNameWhatTheyLeaveOut() throws {
        let (_, results) = try answer("chrome-offer.sdp")
        let refused = Dictionary(uniqueKeysWithValues: results[1].refusedFormats.map { ($0.payloadType, $0.reason) })
        #expect(refused[127] == "no Main profile here" && refused[112] == "no High profile here")
        #expect(refused[125] == "RTX of payload type 127, which is not taken")
        #expect(refused[116] == "not supported" && refused[118] == "not supported")
        #expect(Set(refused.keys).isDisjoint(with: results[1].codecs.flatMap { [$0.payloadType, $0.retransmissionPayloadType ?? 0] }))
        #expect(results[0].refusedFormats.map(\.payloadType) == [63, 9, 0, 8, 13, 110, 126])
    }

    @Test func packetizationModeMustMatch() throws {
        // RFC 6184 §8.2.2: another mode is another format. Baseline is first, so its profile mismatch
        // is seen first, but the closer reason (the profile is there, in the other mode) is given.
        let onlyMode1 = [CodecCapability.h264(H264ProfileLevelID(profile: .baseline, level: .level3_1)),
                         CodecCapability.h264(H264ProfileLevelID(profile: .constrainedBaseline, level: .level3_1))]
        let offer = h264Offer("profile-level-id=42e01f;packetization-mode=0")
        let (_, results) = makeAnswer(to: offer, capabilities: onlyMode1)
        #expect(results[0].rejectionReason == "no common codec: offered H264 profile 42e01f (Constrained Baseline 3.1) "
            + "packetization-mode 0 (Constrained Baseline only in packetization-mode 1)")
    }

    @Test("level answer: asymmetry on both sides keeps ours, else the lower level", arguments: [
        ("profile-level-id=42e034;level-asymmetry-allowed=1;packetization-mode=1", "42e01f"),  // 5.2 offered
        ("profile-level-id=42e00a;level-asymmetry-allowed=1;packetization-mode=1", "42e01f"),  // 1 offered
        ("profile-level-id=42e00a;packetization-mode=1", "42e00a"),                            // no asymmetry
        ("profile-level-id=42e034;packetization-mode=1", "42e01f"),
        ("profile-level-id=42f00b;packetization-mode=1", "42f00b"),                            // 1b
    ])
    func levelAnswer(fmtp: String, answered: String) throws {
        let (sdp, _) = makeAnswer(to: h264Offer(fmtp), capabilities: sluiceCapabilities)
        #expect(try sdp.media[0].formatParameters(for: 100)["profile-level-id"] == answered)
    }

    @Test func offerWithoutProfileLevelIDIsBaselineLevel1() throws {
        // RFC 6184 §8.1: absent, Baseline level 1 is meant; without asymmetry the answer says 42000a.
        let (sdp, _) = makeAnswer(to: h264Offer("packetization-mode=1"), capabilities: sluiceCapabilities)
        #expect(try sdp.media[0].formatParameters(for: 100)["profile-level-id"] == "42000a")
    }

    @Test func malformedSectionIsRejectedNamingTheLine() throws {
        let offer = try session("m=video 5004 RTP/AVPF 96\r\na=rtpmap:96 VP8\r\nm=audio 5006 RTP/AVP 0\r\n")
        let (sdp, results) = makeAnswer(to: offer, capabilities: sluiceCapabilities + [
            CodecCapability(codec: "PCMU", kind: .audio, clockRate: 8000, channels: 1),
        ])
        #expect(sdp.media.map(\.port) == [0, 9])
        #expect(results[0].rejectionReason?.hasPrefix("malformed offer: SDP line 6 attribute \"a=rtpmap:96 VP8\"") == true,
                "\(results[0].rejectionReason ?? "")")
        #expect(results[1].codecs.map(\.payloadType) == [0])  // a static payload type (RFC 3551 §6)
        #expect(try sdp.media[1].rtpMap(for: 0)?.encodingName == "PCMU")
    }

    @Test("RFC 3264 §6.1: the answer's direction is the offer's reversed, narrowed to ours", arguments: [
        (SDPDirection.sendrecv, SDPDirection.sendrecv, SDPDirection.sendrecv),
        (.sendonly, .sendrecv, .recvonly), (.recvonly, .sendrecv, .sendonly), (.inactive, .sendrecv, .inactive),
        (.sendrecv, .recvonly, .recvonly), (.sendrecv, .sendonly, .sendonly), (.sendonly, .sendonly, .inactive),
        (.recvonly, .recvonly, .inactive),
    ])
    func direction(offered: SDPDirection, local: SDPDirection, answered: SDPDirection) throws {
        var offer = h264Offer("packetization-mode=1")
        offer.media[0].setDirection(offered)
        let (sdp, results) = makeAnswer(to: offer, capabilities: sluiceCapabilities, options: NegotiationOptions(direction: local))
        #expect(sdp.media[0].explicitDirection == answered)
        #expect(results[0].outcome == .accepted(codecs: results[0].codecs, direction: answered))
    }

    @Test func sectionTheOfferDisabledStaysDisabled() throws {
        var offer = h264Offer("packetization-mode=1")
        offer.media[0].port = 0
        let (sdp, results) = makeAnswer(to: offer, capabilities: sluiceCapabilities)
        #expect(sdp.media[0].port == 0 && results[0].rejectionReason == "the offer disabled it (port 0)")
    }

    @Test func rtcpMuxOnlyWhenOffered() throws {
        let (sdp, _) = makeAnswer(to: h264Offer("packetization-mode=1"), capabilities: sluiceCapabilities)
        #expect(!sdp.media[0].rtcpMux)
        let (chrome, _) = try answer("chrome-offer.sdp", options: NegotiationOptions(rtcpMux: false))
        #expect(!chrome.media[1].rtcpMux)
    }
}

/// A description of `lines` (session attributes and media sections) after `v=`, `o=`, `s=`, `t=`.
func session(_ lines: String) throws -> SessionDescription {
    try SessionDescription(parsing: "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nt=0 0\r\n" + lines)
}

/// A one-section video offer of H.264 at payload type 100 with `fmtp`.
func h264Offer(_ fmtp: String) -> SessionDescription {
    var media = MediaDescription(type: "video", port: 5004, proto: "RTP/AVPF", formats: ["100"])
    media.append(SDPRTPMap(payloadType: 100, encodingName: "H264", clockRate: 90_000))
    media.append(SDPFormatParameters(format: "100", parameterText: fmtp))
    media.append(SDPRTCPFeedback(payloadType: 100, type: "nack", parameter: "pli"))
    return SessionDescription(origin: SDPOrigin(sessionID: 7, sessionVersion: 1), media: [media])
}

struct OfferTests {
    let options = NegotiationOptions(origin: SDPOrigin(sessionID: 42, sessionVersion: 1),
                                     sources: [.video: videoSource, .audio: SendingSource(ssrc: 3333, cname: "sluice")])

    @Test func offerHasDynamicPayloadTypesRTXFeedbackAndRoundTrips() throws {
        let offer = makeOffer(capabilities: sluiceCapabilities, options: options)
        let parsed = try SessionDescription(parsing: offer.serialized())
        #expect(parsed == offer)
        #expect(try parsed.groups() == [SDPGroup(semantics: "BUNDLE", mids: ["0", "1"])])
        let audio = parsed.media[0], video = parsed.media[1]
        #expect(audio.type == "audio" && audio.formats == ["96"] && audio.mid == "0" && audio.rtcpMux)
        #expect(try audio.rtpMap(for: 96)?.encodingName == "opus")
        #expect(try audio.sourceGroups().isEmpty && audio.sourceAttributes().map(\.ssrc) == [3333])
        // VP8 97 + RTX 98, then the four H.264 formats, each followed by its RTX.
        #expect(video.formats == (97...106).map(String.init))
        #expect(try video.retransmissionPayloadType(for: 97) == 98)
        #expect(try video.formatParameters(for: 99) == ["level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": "42e01f"])
        #expect(try video.formatParameters(for: 105)["packetization-mode"] == "0")
        #expect(try feedbackLines(video, 99) == ["nack", "nack pli", "ccm fir"])
        #expect(video.explicitDirection == .sendrecv)
        #expect(try video.sourceGroups() == [SDPSourceGroup(semantics: "FID", ssrcs: [1111, 2222])])
    }

    @Test func preferringPutsH264First() throws {
        var preferring = options
        preferring.preferring = .h264
        let video = makeOffer(capabilities: sluiceCapabilities, options: preferring).media[1]
        #expect(try video.rtpMap(for: UInt8(video.formats[0])!)?.encodingName == "H264")
        #expect(try video.rtpMap(for: 105)?.encodingName == "VP8")
        #expect(sluiceCapabilities.preferring(.h264).map(\.codec) == [.h264, .h264, .h264, .h264, .vp8, .opus])
    }

    @Test func answeringOurOwnOfferTakesEveryFormat() throws {
        let offer = try SessionDescription(parsing: makeOffer(capabilities: sluiceCapabilities, options: options).serialized())
        let (answer, results) = makeAnswer(to: offer, capabilities: sluiceCapabilities)
        #expect(answer.media.map(\.formats) == offer.media.map(\.formats))
        #expect(results.map(\.codecs.count) == [1, 5])
    }

    @Test func recvonlyOfferHasNoSources() throws {
        var receiving = options
        receiving.direction = .recvonly
        receiving.media = [.video]
        receiving.bundle = false
        let offer = makeOffer(capabilities: sluiceCapabilities, options: receiving)
        #expect(offer.media.count == 1 && offer.media[0].explicitDirection == .recvonly)
        #expect(try offer.media[0].sourceAttributes().isEmpty && offer.groups().isEmpty)
    }
}

struct AnswerReadingTests {
    @Test func offererReadsWhatTheAnswerSettled() throws {
        let ours = makeOffer(capabilities: sluiceCapabilities, options: NegotiationOptions(sources: [.video: videoSource]))
        // The peer takes only Constrained Baseline in mode 1 at level 4 with asymmetry, NACK only, and
        // wants to receive video only.
        let peer = [CodecCapability.h264(H264ProfileLevelID(profile: .constrainedBaseline, level: .level4), feedback: [.nack]),
                    CodecCapability.opus(stereo: false)]
        let (answer, _) = makeAnswer(to: ours, capabilities: peer, options: NegotiationOptions(direction: .recvonly))
        let results = readAnswer(try SessionDescription(parsing: answer.serialized()), to: ours, capabilities: sluiceCapabilities)

        #expect(results.map(\.mid) == ["0", "1"])
        let audio = try #require(results[0].codecs.first)
        #expect(audio.payloadType == 96 && audio.remoteParameters["stereo"] == "0")
        #expect(results[0].outcome == .accepted(codecs: results[0].codecs, direction: .sendonly))

        let video = try #require(results[1].codecs.first)
        #expect(results[1].codecs.count == 1)
        #expect(video.payloadType == 99 && video.retransmissionPayloadType == 100)
        #expect(video.localParameters["profile-level-id"] == "42e01f")   // what we offered
        #expect(video.remoteParameters["profile-level-id"] == "42e028")  // the peer receives up to level 4
        #expect(video.feedback == [.nack])
        #expect(video.remoteVideoLimits == RemoteVideoLimits(h264Level: .level4))
        #expect(results[1].outcome == .accepted(codecs: results[1].codecs, direction: .sendonly))
    }

    @Test func rejectedAndMissingSectionsOfTheAnswer() throws {
        let ours = makeOffer(capabilities: sluiceCapabilities)
        var (answer, _) = makeAnswer(to: ours, capabilities: [.opus()])
        #expect(readAnswer(answer, to: ours, capabilities: sluiceCapabilities).map(\.rejectionReason)
            == [nil, "the answer rejected it (port 0)"])
        answer.media.removeLast()
        #expect(readAnswer(answer, to: ours, capabilities: sluiceCapabilities)[1].rejectionReason?.hasPrefix("the answer has no section") == true)
    }
}
