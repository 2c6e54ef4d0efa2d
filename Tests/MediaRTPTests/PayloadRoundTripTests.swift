import Foundation
import MediaCore
import MediaFiles
import TestSupport
import Testing

@testable import MediaRTP

/// Real streams through packetizer and depacketizer: what comes out is what went in.
@Suite struct PayloadRoundTripTests {
    /// Sends `frames` through `packetizer` (sequence numbers running on across frames) and assembles
    /// each frame's packets with `depacketizer`, checking on the way what a jitter buffer relies on.
    func roundTrip<P: RTPPacketizer, D: RTPDepacketizer>(
        _ frames: [EncodedFrame], _ packetizer: inout P, _ depacketizer: inout D
    ) throws -> [(bytes: [UInt8], info: RTPFrameInfo, packets: [TestPacket])] {
        var sequence: UInt16 = 65_000  // wraps during the stream
        var results: [(bytes: [UInt8], info: RTPFrameInfo, packets: [TestPacket])] = []
        for frame in frames {
            let sent = try packetize(frame, with: &packetizer, firstSequence: sequence)
            sequence &+= UInt16(sent.count)
            #expect(sent.filter(\.marker).count == 1 && sent.last?.marker == true, "marker on the last packet only")
            let first = try sent[0].payload.withUnsafeBytes { try depacketizer.inspect($0) }
            #expect(first.startsFrame)
            let (bytes, info) = try depacketize(sent, with: &depacketizer)
            #expect(info.packetCount == sent.count)
            results.append((bytes, info, sent))
        }
        return results
    }

    // MARK: H.264

    /// Access units of the sample clip encoded by ffmpeg's libx264 to a raw `.h264` file (three slices
    /// per picture, an IDR every 10 pictures), as MediaFiles' AnnexBReader splits it.
    static func x264AccessUnits() throws -> [EncodedFrame] {
        try TestSupport.withTemporaryDirectory { folder in
            let path = folder.file("clip.h264")
            try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-frames:v", "30", "-c:v", "libx264",
                                    "-preset", "ultrafast", "-g", "10", "-slices", "3", "-f", "h264", path])
            let reader = try AnnexBReader(path: path)
            var frames: [EncodedFrame] = []
            while let frame = try reader.next(pool: nil) { frames.append(frame) }
            return frames
        }
    }

    /// The NAL units of an Annex-B access unit.
    static func nalUnits(_ accessUnit: [UInt8]) -> [[UInt8]] {
        accessUnit.withUnsafeBytes { bytes in AnnexB.nalUnits(in: bytes).map { Array(bytes[$0]) } }
    }

    /// The access unit rewritten without its SPS and PPS.
    static func withoutParameterSets(_ frame: EncodedFrame) -> EncodedFrame {
        let kept = nalUnits(Array(frame.bytes)).filter { ![7, 8].contains($0[0] & 0x1F) }
        return MediaRTPTests.frame(.h264, annexB(kept), pts: frame.pts)
    }

    @Test(arguments: [
        (H264Packetizer.PacketizationMode.nonInterleaved, 1200, H264Packetizer.Aggregation.all),
        (.nonInterleaved, 300, .nonVCL),
        (.nonInterleaved, 17, .none),
        (.singleNALUnit, 65_535, .all),
    ])
    func x264StreamComesBackIdentical(mode: H264Packetizer.PacketizationMode, maxPayloadSize: Int,
                                      aggregation: H264Packetizer.Aggregation) throws {
        let accessUnits = try Self.x264AccessUnits()
        #expect(accessUnits.count == 30)
        var packetizer = try H264Packetizer(mode: mode, maxPayloadSize: maxPayloadSize, aggregation: aggregation)
        var depacketizer = H264Depacketizer()
        let results = try roundTrip(accessUnits, &packetizer, &depacketizer)
        for (index, (unit, result)) in zip(accessUnits, results).enumerated() {
            // Identical NAL units, each after a 4-byte start code (x264 writes some 3-byte ones).
            #expect(result.bytes == annexB(Self.nalUnits(Array(unit.bytes))), "access unit \(index)")
            #expect(result.info.isKeyframe == unit.isKeyframe, "access unit \(index)")
            let types = result.packets.map { $0.payload[0] & 0x1F }
            if mode == .singleNALUnit { #expect(types.allSatisfy { (1...23).contains($0) }) }
            if maxPayloadSize == 17 { #expect(types.contains(28), "fragmented") }
        }
        #expect(results.filter(\.info.isKeyframe).count == 3)
    }

    @Test func parameterSetsRemovedFromLaterIDRsAreSentAgain() throws {
        let accessUnits = try Self.x264AccessUnits()
        // Keep SPS and PPS in the first access unit only, as an encoder that sends them once would.
        let stripped = [accessUnits[0]] + accessUnits.dropFirst().map(Self.withoutParameterSets)
        #expect(stripped.filter { Self.nalUnits(Array($0.bytes)).contains { $0[0] & 0x1F == 7 } }.count == 1)
        var packetizer = try H264Packetizer(maxPayloadSize: 1000)
        var depacketizer = H264Depacketizer()
        let results = try roundTrip(stripped, &packetizer, &depacketizer)
        for (index, (original, result)) in zip(accessUnits, results).enumerated() {
            // IDR access units get their SPS and PPS back; the others come back as they were sent.
            let expected = original.isKeyframe ? original : stripped[index]
            #expect(result.bytes == annexB(Self.nalUnits(Array(expected.bytes))), "access unit \(index)")
        }
    }

    @Test func lostPacketsAreDetectedInRealFragmentedStream() throws {
        let accessUnits = try Self.x264AccessUnits()
        var packetizer = try H264Packetizer(maxPayloadSize: 200)
        let sent = try packetize(accessUnits[0], with: &packetizer)
        #expect(sent.count > 10)
        var rng = SplitMix64(seed: 6184)
        var depacketizer = H264Depacketizer()
        for _ in 0..<50 {
            var damaged = sent
            damaged.remove(at: Int.random(in: 1..<(sent.count - 1), using: &rng))
            #expect(throws: RTPPayloadError.self) { try depacketize(damaged, with: &depacketizer) }
        }
    }

    // MARK: VP8

    static func vp8Frames() throws -> [EncodedFrame] {
        let reader = try IVFReader(path: TestSupport.sampleIVF)
        var frames: [EncodedFrame] = []
        while let frame = try reader.next(pool: nil) { frames.append(frame) }
        return frames
    }

    @Test(arguments: [
        (1200, VP8Packetizer.PictureIDMode.fifteenBit), (300, .sevenBit), (31, .none), (7, .fifteenBit),
    ])
    func ivfFramesComeBackIdentical(maxPayloadSize: Int, pictureIDMode: VP8Packetizer.PictureIDMode) throws {
        let frames = try Self.vp8Frames()
        #expect(frames.count == TestSupport.sampleFrameCount)
        var packetizer = try VP8Packetizer(maxPayloadSize: maxPayloadSize, pictureIDMode: pictureIDMode, firstPictureID: 120)
        var depacketizer = VP8Depacketizer()
        let results = try roundTrip(frames, &packetizer, &depacketizer)
        for (index, (frame, result)) in zip(frames, results).enumerated() {
            #expect(result.bytes == Array(frame.bytes), "frame \(index)")
            #expect(result.info.isKeyframe == frame.isKeyframe, "frame \(index)")
            switch pictureIDMode {
            case .none: #expect(result.info.pictureID == nil)
            case .sevenBit: #expect(result.info.pictureID == (120 + index) % 128)
            case .fifteenBit: #expect(result.info.pictureID == 120 + index)
            }
        }
        #expect(results[0].info.isKeyframe)
        #expect(results.contains { !$0.info.isKeyframe })
    }
}
