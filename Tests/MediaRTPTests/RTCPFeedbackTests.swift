/// Feedback arithmetic: Generic NACK (RFC 4585 §6.2.1) expanded to lost sequence numbers and built from
/// them, across wrap-around; REMB's exponent and mantissa (draft-alvestrand-rmcat-remb §2.2).
import MediaRTP
import TestSupport
import Testing

@Suite struct GenericNACKTests {
    /// Each pair covers its PID and, for bit i of BLP, PID + i + 1.
    @Test(arguments: [
        ([], []),
        ([7], [GenericNACK.Pair(packetID: 7, lostBitmask: 0)]),
        ([100, 116], [.init(packetID: 100, lostBitmask: 0x8000)]),                 // 16 after: the last bit
        ([100, 117], [.init(packetID: 100), .init(packetID: 117)]),                // 17 after: a new pair
        ([5, 3, 3, 20, 4], [.init(packetID: 3, lostBitmask: 0b11), .init(packetID: 20)]),  // unsorted, duplicate
        ([65534, 65535, 0, 1], [.init(packetID: 65534, lostBitmask: 0b111)]),     // across the wrap
        ([2, 65530], [.init(packetID: 65530, lostBitmask: 1 << 7)]),               // 65530 comes first
    ] as [([UInt16], [GenericNACK.Pair])])
    func compaction(lost: [UInt16], pairs: [GenericNACK.Pair]) {
        #expect(GenericNACK.pairs(lost: lost) == pairs)
    }

    @Test func expansionWrapsAround() {
        #expect(GenericNACK.Pair(packetID: 65535, lostBitmask: 0b101).lostSequenceNumbers == [65535, 0, 2])
        #expect(GenericNACK.Pair(packetID: 0, lostBitmask: 0xFFFF).lostSequenceNumbers == Array(0...16))
    }

    /// The lost list of aiortc's NACK gives back exactly that packet's pairs.
    @Test func aiortcListCompactsToTheSamePacket() throws {
        let bytes = try TestSupport.vector("aiortc/rtcp_rtpfb.bin")
        let nack = GenericNACK(senderSSRC: 2_336_520_123, mediaSSRC: 4_145_934_052,
                               lostSequenceNumbers: [12, 32, 39, 54, 76, 110, 123, 142, 183, 187, 223, 236, 271, 292])
        #expect(try PacketBytes.serialized(nack) == bytes)
    }

    /// Random loss patterns (seeded): compaction then expansion gives the same set, in RTP order.
    @Test func randomLossRoundTrips() {
        var random = SplitMix64(seed: 4585)
        for _ in 0..<300 {
            let start = UInt16.random(in: 0...UInt16.max, using: &random)
            let window = Int.random(in: 1...2000, using: &random)
            let lossRate = Double.random(in: 0.01...0.9, using: &random)
            let lost = (0..<window).filter { _ in Double.random(in: 0..<1, using: &random) < lossRate }
                .map { start &+ UInt16($0) }
            let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: lost.shuffled(using: &random))
            #expect(nack.lostSequenceNumbers == lost)
            // No pair could have been merged into the one before it.
            for (before, after) in zip(nack.pairs, nack.pairs.dropFirst()) {
                #expect(SerialNumber.distance(from: before.packetID, to: after.packetID) > 16)
            }
        }
    }
}

@Suite struct REMBTests {
    @Test(arguments: [
        (0, 0, 0),
        (262_143, 0, 262_143),                          // largest 18-bit mantissa, exponent 0
        (262_144, 1, 131_072),
        (8_927_168, 6, 139_487),                        // Chrome's
        (UInt64.max, 46, 0x3_FFFF),
    ] as [(UInt64, UInt8, UInt32)])
    func exponentAndMantissa(bitrate: UInt64, exponent: UInt8, mantissa: UInt32) {
        let remb = REMB(senderSSRC: 1, bitrate: bitrate, ssrcs: [])
        #expect(remb.exponentAndMantissa == (exponent, mantissa))
    }

    /// Writing keeps 18 significant bits; reading gives back what was written.
    @Test(arguments: [(1_000_001, 1_000_000), (5_000_000_000, 4_999_970_816), (100, 100)] as [(UInt64, UInt64)])
    func writingRoundsDown(bitrate: UInt64, parsed: UInt64) throws {
        let bytes = try PacketBytes.serialized(REMB(senderSSRC: 1, bitrate: bitrate, ssrcs: [9]))
        #expect(try RTCPCompoundPacket(parsing: bytes, reducedSize: true).packets
            == [.remb(REMB(senderSSRC: 1, bitrate: parsed, ssrcs: [9]))])
    }

    @Test func exponentBeyondSixtyFourBitsSaturatesToTheLargestWritable() throws {
        let bytes: [UInt8] = [
            0x8F, 0xCE, 0x00, 0x04,         // FMT 15, PSFB, 5 words
            0x00, 0x00, 0x00, 0x01,         // sender
            0x00, 0x00, 0x00, 0x00,         // media source
            0x52, 0x45, 0x4D, 0x42,         // "REMB"
            0x00, 0xFF, 0xFF, 0xFF,         // no SSRC; exponent 63, mantissa 0x3FFFF
        ]
        #expect(try RTCPCompoundPacket(parsing: bytes, reducedSize: true).packets
            == [.remb(REMB(senderSSRC: 1, bitrate: REMB.maximumBitrate, ssrcs: []))])
        #expect(REMB(senderSSRC: 1, bitrate: REMB.maximumBitrate, ssrcs: []).exponentAndMantissa == (46, 0x3_FFFF))
    }
}
