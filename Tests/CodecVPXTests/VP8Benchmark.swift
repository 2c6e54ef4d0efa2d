import CodecVPX
import Foundation
import MediaCodecs
import MediaCore
import Testing

/// Encode speed, off by default: `SLUICE_VPX_BENCH=1 swift test -c release --filter VP8Benchmark`.
@Suite("VP8 encode speed", .serialized, .enabled(if: ProcessInfo.processInfo.environment["SLUICE_VPX_BENCH"] != nil))
struct VP8Benchmark {
    @Test("encode speed", arguments: [
        (320, 240, 500_000, true), (640, 360, 1_200_000, true), (320, 240, 500_000, false), (640, 360, 1_200_000, false),
    ])
    func encodeSpeed(width: Int, height: Int, bitrate: Int, realtime: Bool) throws {
        let pool = BufferPool(name: "bench-input")
        let frames = try Samples.bunny(count: 60, width: width, height: height, pool: pool)
        var best = Double.infinity
        var encoded: [EncodedFrame] = []
        for _ in 0..<5 {
            let encoder = try VP8Encoder(format: rawFormat(width: width, height: height),
                                         settings: VideoEncoderSettings(bitrate: bitrate, realtime: realtime))
            let clock = ContinuousClock()
            var output: [EncodedFrame] = []
            let elapsed = try clock.measure { output = try encodeAll(frames, with: encoder) }
            best = Swift.min(best, Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
            encoded = output
        }
        let decoded = try decodeAll(encoded, with: VP8Decoder(format: vp8Format(width: width, height: height)))
        let kbits = Double(encoded.map(\.byteCount).reduce(0, +) * 8) / 1000 / (60 / Samples.frameRate.doubleValue)
        let mode = realtime ? "realtime (cpu-used \(VP8Encoder.realtimeCPUUsed))" : "good quality"
        print("VP8 \(mode) \(width)x\(height) @ \(bitrate / 1000) kbit/s: "
              + "\(Int(Double(frames.count) / best)) fps, PSNR \(String(format: "%.2f", meanPSNR(frames, decoded))) dB, "
              + "actual \(Int(kbits)) kbit/s")
        #expect(encoded.count == frames.count)
    }
}
