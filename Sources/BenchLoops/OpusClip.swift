// Ten seconds of synthetic 48 kHz stereo, as samples, 10 ms frames and Opus packets: the deterministic
// input of the Opus benchmarks.
import Foundation
import Sluice

/// The audio clip the Opus benchmarks encode and decode, made once per process.
public enum OpusClip {
    public static let sampleRate = 48_000
    public static let channels = 2
    public static let seconds = 10
    /// Samples per channel in one 20 ms packet.
    public static let packetSamples = 960
    /// 64 kbit/s, complexity 10.
    public static let settings = AudioEncoderSettings(bitrate: 64_000, complexity: 10)
    /// Interleaved s16 stereo at 48 kHz.
    public static let format = AudioFormat(encoding: .samples(.s16), sampleRate: sampleRate, channels: channels)
    /// The packets' format.
    public static let opusFormat = AudioFormat(encoding: .compressed(.opus), sampleRate: sampleRate, channels: channels)

    /// A chord with vibrato and tremolo over a little noise, as interleaved s16 (synthetic: no tools needed).
    public static let samples: [Int16] = {
        var noise: UInt32 = 12345
        return (0..<(sampleRate * seconds)).flatMap { index -> [Int16] in
            let t = Double(index) / Double(sampleRate)
            noise = noise &* 1_664_525 &+ 1_013_904_223
            let hiss = (Double(noise >> 16) / 65536 - 0.5) * 0.04
            let twoPiT: Double = 2 * Double.pi * t
            let vibrato: Double = 220 + 3 * sin(twoPiT * 5)
            let left: Double = 0.25 * sin(twoPiT * vibrato) * (0.6 + 0.4 * sin(twoPiT * 1.5)) + 0.12 * sin(twoPiT * 330) + hiss
            let right: Double = 0.22 * sin(twoPiT * 277) * (0.6 + 0.4 * cos(twoPiT * 1.3)) + 0.1 * sin(twoPiT * 415) + hiss
            return [Int16(left * 32767), Int16(right * 32767)]
        }
    }()

    /// The samples as 10 ms frames, made once.
    public static let frames: [AudioFrame] = {
        let pool = BufferPool(name: "bench-input")
        let perFrame = sampleRate / 100
        return stride(from: 0, to: sampleRate * seconds, by: perFrame).map { start in
            let frame = AudioFrame(sampleFormat: .s16, sampleRate: sampleRate, channels: channels, sampleCount: perFrame,
                                   pts: MediaTime(Int64(start), timebase: Rational(1, sampleRate)), pool: pool)
            samples.withUnsafeBytes { bytes in
                frame.bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[(start * 4)..<((start + perFrame) * 4)]))
            }
            return frame
        }
    }()

    /// How many times the looped clip plays the clip.
    public static let loops = 8

    /// `samples` `loops` times over: with `loopedFrames` and `loopedPackets`, an input long enough
    /// (80 s) that a benchmark's repetition measures the work per packet, not the graph's set-up.
    public static let loopedSamples: [Int16] = Array([[Int16]](repeating: samples, count: loops).joined())

    /// `frames` `loops` times over, timestamps running on (the buffers are shared).
    public static let loopedFrames: [AudioFrame] = looped(frames)

    /// `packets` `loops` times over, timestamps running on (the buffers are shared).
    public static let loopedPackets: [EncodedFrame] = looped(packets)

    private static func looped<Item: MediaPayload>(_ items: [Item]) -> [Item] {
        (0..<loops).flatMap { pass in
            items.map { item in
                var copy = item
                copy.shift(by: MediaTime(Int64(pass * seconds), timebase: Rational(1, 1)))
                return copy
            }
        }
    }

    /// The clip encoded once by Sluice's OpusEncoder (20 ms packets), for the decoder benchmarks.
    public static let packets: [EncodedFrame] = {
        let encoder = try! OpusEncoder(format: format, settings: settings)
        var packets: [EncodedFrame] = []
        for frame in frames { try! encoder.encode(frame) { packets.append($0) } }
        try! encoder.flush { packets.append($0) }
        return packets
    }()
}
