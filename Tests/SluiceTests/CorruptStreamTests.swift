import Foundation
import Sluice
import Testing
import TestSupport

/// A damaged frame in the middle of a stream: counted, dropped, and decoding resumes cleanly at the
/// next keyframe; nothing damaged reaches the output and the run does not fail.
@Suite struct CorruptStreamTests {
    /// Byte offset of frame `index`'s 12-byte IVF frame header.
    static func frameOffset(_ index: Int, in bytes: [UInt8]) -> Int {
        var offset = 32
        for _ in 0..<index {
            let size = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            offset += 12 + size
        }
        return offset
    }

    @Test func aCorruptFrameIsCountedAndDecodingResumesAtTheNextKeyframe() throws {
        try TestSupport.withTemporaryDirectory { dir in
            // The sample's keyframes are frames 0, 50 and 100.
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: TestSupport.sampleIVF)))
            let payload = Self.frameOffset(60, in: bytes) + 12
            // An inter-frame tag whose first partition claims far more bytes than the frame holds
            // (RFC 6386 §9.1), which libvpx rejects.
            for i in 0..<16 { bytes[payload + i] = 0xFF }
            let damaged = dir.appendingPathComponent("damaged.ivf").path
            try Data(bytes).write(to: URL(fileURLWithPath: damaged))

            let output = dir.appendingPathComponent("out.y4m").path
            let summary = try Transcoder(input: damaged, output: output).run()
            #expect(summary.corruptFrames == 1)
            #expect(summary.skippedFrames == 39, "frames 61 to 99 depend on the lost one")
            #expect(summary.frames == 60 + 32)
            #expect(summary.firstDecodeError?.contains(try CodecRegistry.builtIn.videoDecoder(for: .vp8).name) == true)
            #expect(try TestSupport.probeVideo(output).frames == 92)
        }
    }
}

/// Packets lost on the network reach `AudioDecoderNode` as a gap in pts: Opus rebuilds it from the
/// next packet's in-band FEC, exactly as its decoder does when told of the loss.
@Suite struct AudioLossRecoveryTests {
    @Test func aGapIsRebuiltFromTheNextPacketsFEC() throws {
        let input = AudioFormat(encoding: .samples(.s16), sampleRate: 48_000, channels: 1)
        let raw = try TestAudio.raw(channels: 1, seconds: 1, speech: true)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(bitrate: 32_000, inbandFEC: true,
                                                                                     expectedLossPercent: 20))
        let packets = try encodeAll(TestAudio.frames(raw, format: input, pool: BufferPool(name: "pcm")), with: encoder)
        let lost: Set<Int> = [10, 20, 30]
        let kept = packets.enumerated().filter { !lost.contains($0.offset) }.map(\.element)
        let opus = AudioFormat(encoding: .compressed(.opus), sampleRate: 48_000, channels: 1)

        let graph = Graph(clock: ManualClock())
        let decoder = AudioDecoderNode(try CodecRegistry.builtIn.audioDecoder(for: .opus), preferredOutput: Caps(.audio(input)),
                                       preSkip: encoder.preSkip)
        let sink = CollectingSink<AudioFrame>(accepting: [.audio(.any)])
        graph.add(sink, input: graph.add(decoder, input: graph.add(ItemsSource(kept, format: .audio(opus)))))
        _ = try graph.runDeterministic()

        // The same packets through the decoder told of each loss (in-band FEC, RFC 6716 §2.1.7).
        let reference = try OpusDecoder(input: opus, output: input, preSkip: encoder.preSkip)
        var expected: [AudioFrame] = []
        for (index, packet) in packets.enumerated() where !lost.contains(index) {
            try reference.decode(packet, recoveringLostPacketBefore: lost.contains(index - 1)) { expected.append($0) }
        }
        #expect(decoder.concealedSamples == 3 * 960)
        #expect(floats(sink.items) == floats(expected), "the node's output is the FEC recovery, sample for sample")
    }
}
