/// The built-in registry as RTP capabilities for offer/answer.
import Sluice
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
}
