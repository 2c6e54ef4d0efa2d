// Opus encoding of 10 s of 48 kHz stereo (64 kbit/s, 20 ms packets, complexity 10), through
// Sluice's OpusEncoder (input frames of 10 ms, so every packet straddles two frames and goes
// through the encoder's buffer), through a Sluice graph (source -> AudioEncoderNode -> sink, one
// thread per node; also over the first 5 s) and as libopus called in a bare loop; and Sluice's
// decoder. Malloc counts are per run of 500 packets: once warm, the wrappers and the graph
// allocate nothing per packet.
import Benchmark
import BenchmarkSupport
import COpus
import Foundation
import Sluice

let sampleRate = 48_000
let channels = 2
let seconds = 10

/// A chord with vibrato and tremolo over a little noise, as s16 (synthetic: no tools needed).
let samples: [Int16] = {
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
let frames: [AudioFrame] = {
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

let settings = AudioEncoderSettings(bitrate: 64_000, complexity: 10)
let format = AudioFormat(encoding: .samples(.s16), sampleRate: sampleRate, channels: channels)

/// The packets, encoded once, for the decoder benchmark.
let packets: [EncodedFrame] = {
    let encoder = try! OpusEncoder(format: format, settings: settings)
    var packets: [EncodedFrame] = []
    for frame in frames { try! encoder.encode(frame) { packets.append($0) } }
    try! encoder.flush { packets.append($0) }
    return packets
}()

func encodeWithSluice() throws -> Int {
    let encoder = try OpusEncoder(format: format, settings: settings)
    var bytes = 0
    for frame in frames { try encoder.encode(frame) { bytes += $0.byteCount } }
    try encoder.flush { bytes += $0.byteCount }
    return bytes
}

/// libopus alone, with the same settings OpusEncoder applies, on whole 20 ms packets.
func encodeBare() -> Int {
    var error: Int32 = 0
    let encoder = opus_encoder_create(Int32(sampleRate), Int32(channels), OPUS_APPLICATION_AUDIO, &error)!
    defer { opus_encoder_destroy(encoder) }
    _ = sluice_opus_set_bitrate(encoder, Int32(settings.bitrate))
    _ = sluice_opus_set_complexity(encoder, 10)
    var output = [UInt8](repeating: 0, count: 4000)
    var bytes = 0
    samples.withUnsafeBufferPointer { pcm in
        output.withUnsafeMutableBufferPointer { out in
            for start in stride(from: 0, to: pcm.count, by: 960 * channels) {
                bytes += Int(opus_encode(encoder, pcm.baseAddress! + start, 960, out.baseAddress!, Int32(out.count)))
            }
        }
    }
    return bytes
}

func decodeWithSluice() throws -> Int {
    let decoder = try OpusDecoder(input: AudioFormat(encoding: .compressed(.opus), sampleRate: 48_000, channels: channels),
                                  output: format, preSkip: 312)
    var count = 0
    for packet in packets { try decoder.decode(packet) { count += $0.sampleCount } }
    return count
}

let benchmarks: @Sendable () -> Void = {
    _ = frames.count
    _ = packets.count
    // The allocation budget (Thresholds/, recorded: about 20 a run, for creating the codec and
    // warming its pool). The slack is small next to what one allocation per packet would add: 500.
    Benchmark.defaultConfiguration = .codec(mallocSlack: 16)

    Benchmark("SluiceEncoder") { benchmark in
        blackHole(try encodeWithSluice())
    }
    graphBenchmarks(frames, format: .audio(format)) { AudioEncoderNode(OpusEncoderProvider(), settings: settings) }
    Benchmark("BareLibopus") { benchmark in
        blackHole(encodeBare())
    }
    Benchmark("SluiceDecoder") { benchmark in
        blackHole(try decodeWithSluice())
    }
}
