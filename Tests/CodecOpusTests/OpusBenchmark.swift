import CodecOpus
import Foundation
import MediaCodecs
import MediaCore
import TestSupport
import Testing

/// Encode and decode speed, off by default: `SLUICE_OPUS_BENCH=1 swift test -c release --filter OpusBenchmark`.
@Suite("Opus speed", .serialized, .enabled(if: ProcessInfo.processInfo.environment["SLUICE_OPUS_BENCH"] != nil))
struct OpusBenchmark {
    @Test("encode and decode speed", arguments: [
        (2, 64_000, 20.0, 10), (2, 64_000, 20.0, 5), (1, 32_000, 20.0, 10), (2, 128_000, 10.0, 10),
    ])
    func speed(channels: Int, bitrate: Int, frameMilliseconds: Double, complexity: Int) throws {
        let pool = BufferPool(name: "bench-input")
        let seconds = 10.0
        let raw = try TestAudio.raw(channels: channels, seconds: seconds)
        let input = pcmFormat(channels: channels)
        let frames = TestAudio.frames(raw, format: input, lengths: [960], pool: pool)
        let clock = ContinuousClock()
        func secondsOf(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        var bestEncode = Double.infinity, bestDecode = Double.infinity
        var packets: [EncodedFrame] = []
        for _ in 0..<3 {
            let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(
                bitrate: bitrate, frameDuration: milliseconds(frameMilliseconds), complexity: complexity))
            var output: [EncodedFrame] = []
            bestEncode = Swift.min(bestEncode, secondsOf(try clock.measure { output = try encodeAll(frames, with: encoder) }))
            packets = output
            let decoder = try OpusDecoder(input: opusFormat(channels: channels), output: input, preSkip: encoder.preSkip)
            var samples = 0
            bestDecode = Swift.min(bestDecode, secondsOf(try clock.measure {
                for packet in packets { try decoder.decode(packet) { samples += $0.sampleCount } }
            }))
            #expect(samples == Int(seconds * 48_000))
        }
        print("Opus \(channels)ch \(bitrate / 1000) kbit/s \(frameMilliseconds) ms complexity \(complexity): "
              + "encode \(String(format: "%.0f", seconds / bestEncode))x realtime, "
              + "decode \(String(format: "%.0f", seconds / bestDecode))x realtime")
        #expect(seconds / bestEncode > 1)
    }
}
