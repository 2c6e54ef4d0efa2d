/// The built-in registry as RTP capabilities for offer/answer.
import Foundation
import Sluice
import TestSupport
import Testing

struct CodecCapabilityTests {
    @Test func builtInCapabilitiesFollowTheRegistryOrder() {
        let capabilities = CodecRegistry.builtIn.capabilities
        #expect(capabilities.map(\.description) == [
            "VP8/90000",
            "H264/90000 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
            "H264/90000 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f",
            "H264/90000 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f",
            "H264/90000 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f",
            "opus/48000/2 minptime=10;stereo=1;useinbandfec=1",
        ])
        #expect(capabilities.filter { $0.kind == .video }.allSatisfy { $0.retransmission && $0.feedback == [.nack, .pli, .fir] })
    }

    @Test func preferringH264InTheRegistryPutsItFirstInTheOffer() {
        var registry = CodecRegistry.builtIn
        registry.prefer("x264")
        let offer = makeOffer(capabilities: registry.capabilities, options: NegotiationOptions(media: [.video]))
        #expect(offer.media[0].attributes.first { $0.name == "rtpmap" }?.value == "96 H264/90000")
    }

    /// The README's negotiation example, on the Chrome offer fixture.
    @Test func answerChromeWithTheBuiltInCodecs() throws {
        let url = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures/chrome-offer.sdp")
        let offer = try SessionDescription(parsing: String(decoding: try Data(contentsOf: url), as: UTF8.self))
        let options = NegotiationOptions(sources: [.video: SendingSource(ssrc: 0x1234, retransmissionSSRC: 0x5678, cname: "me")])
        let (answer, results) = makeAnswer(to: offer, capabilities: CodecRegistry.builtIn.capabilities, options: options)
        #expect(answer.media.map(\.port) == [9, 9, 0])
        #expect(results.compactMap(\.rejectionReason) == ["application media is not supported"])
        let h264 = try #require(results.flatMap(\.codecs).first { $0.capability.codec == .h264 })
        let camera = VideoConstraints(width: .init(min: 320, ideal: 1280), height: .init(min: 180, ideal: 720))
        let format = try chooseVideoFormat(constraints: camera, remote: try #require(h264.remoteVideoLimits))
        #expect(format == NegotiatedVideoFormat(width: 1280, height: 720, frameRate: 30))  // 42001f: level 3.1
    }
}
