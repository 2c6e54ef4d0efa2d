/// RFC 7983 §7's first-byte ranges and RFC 5761 §4's RTCP payload types, byte by byte at the edges.
import MediaPeer
import Testing

@Suite struct BundledPacketKindTests {
    @Test(arguments: [
        // (first byte, second byte, kind)
        (0x00, 0x01, BundledPacketKind.stun),          // Binding request, 0x0001
        (0x01, 0x01, .stun),                           // Binding success response, 0x0101
        (0x03, 0x00, .stun),                           // top of the STUN range
        (0x04, 0x00, .unknown),
        (0x10, 0x00, .unknown),                        // ZRTP is not WebRTC's
        (0x13, 0x00, .unknown),
        (0x14, 0xfe, .dtls),                           // change_cipher_spec, DTLS 1.2 (0xfefd)
        (0x16, 0xfe, .dtls),                           // handshake record
        (0x17, 0xfe, .dtls),                           // application data (SCTP)
        (0x3f, 0x00, .dtls),                           // top of the DTLS range
        (0x40, 0x00, .turnChannelData),                // channel 0x4000
        (0x4f, 0xff, .turnChannelData),                // channel 0x4fff
        (0x50, 0x00, .unknown),
        (0x7f, 0x00, .unknown),
        (0x80, 0x60, .rtp),                            // V=2, PT 96
        (0x80, 0xe0, .rtp),                            // V=2, marker, PT 96
        (0x90, 0x6f, .rtp),                            // V=2, X=1, PT 111
        (0x80, 0xc8, .rtcp),                           // sender report, 200
        (0x81, 0xc9, .rtcp),                           // receiver report, 201
        (0x81, 0xcd, .rtcp),                           // RTPFB (NACK), 205
        (0x81, 0xce, .rtcp),                           // PSFB (PLI), 206
        (0x80, 0xc0, .rtcp),                           // 192, the bottom of RFC 5761's RTCP range
        (0x80, 0xdf, .rtcp),                           // 223, its top
        (0x80, 0xbf, .rtp),                            // marker + PT 63
        (0xbf, 0x00, .rtp),                            // top of the RTP range
        (0xc0, 0x00, .unknown),
        (0xff, 0xff, .unknown),
    ] as [(Int, Int, BundledPacketKind)])
    func classifies(first: Int, second: Int, kind: BundledPacketKind) {
        #expect(BundledPacketKind(classifying: [UInt8(first), UInt8(second), 0, 0]) == kind)
    }

    @Test func emptyAndOneByteRTPAreUnknown() {
        #expect(BundledPacketKind(classifying: []) == .unknown)
        #expect(BundledPacketKind(classifying: [0x80]) == .unknown)
        #expect(BundledPacketKind(classifying: [0x00]) == .stun)
    }
}
