import Foundation
import MediaConvert
import MediaCore
import Testing

@Suite struct AudioConverterTests {
    let pool = BufferPool(name: "audio-test")

    /// `seconds` of a sine at `frequency` Hz, amplitude 0.5, in blocks of 480 samples.
    func sine(rate: Int, channels: Int, format: SampleFormat, frequency: Double, seconds: Double) -> [AudioFrame] {
        let total = Int(Double(rate) * seconds)
        return stride(from: 0, to: total, by: 480).map { first in
            let count = min(480, total - first)
            let frame = AudioFrame(sampleFormat: format, sampleRate: rate, channels: channels, sampleCount: count,
                                   pts: MediaTime(Int64(first), timebase: Rational(1, rate)), pool: pool)
            for i in 0..<count {
                let value = 0.5 * sin(2 * Double.pi * frequency * Double(first + i) / Double(rate))
                for c in 0..<channels {
                    let index = i * channels + c
                    switch format {
                    case .s16: frame.bytes.storeBytes(of: Int16((value * 32767).rounded()), toByteOffset: index * 2, as: Int16.self)
                    case .f32: frame.bytes.storeBytes(of: Float(value), toByteOffset: index * 4, as: Float.self)
                    }
                }
            }
            return frame
        }
    }

    func samples(_ frames: [AudioFrame]) -> [Float] {
        frames.flatMap { frame in
            (0..<(frame.sampleCount * frame.channels)).map { i -> Float in
                frame.sampleFormat == .s16 ? Float(frame.bytes.load(fromByteOffset: i * 2, as: Int16.self)) / 32768
                    : frame.bytes.load(fromByteOffset: i * 4, as: Float.self)
            }
        }
    }

    func run(_ frames: [AudioFrame], to output: AudioFormat) throws -> [AudioFrame] {
        let converter = try AudioConverter(from: AudioFormat(encoding: .samples(frames[0].sampleFormat),
                                                             sampleRate: frames[0].sampleRate, channels: frames[0].channels),
                                           to: output)
        var out: [AudioFrame] = []
        for frame in frames { try converter.convert(frame) { out.append($0) } }
        try converter.flush { out.append($0) }
        return out
    }

    @Test func resamplingKeepsDurationPitchAndTiming() throws {
        let input = sine(rate: 48000, channels: 2, format: .s16, frequency: 1000, seconds: 1)
        let out = try run(input, to: AudioFormat(encoding: .samples(.f32), sampleRate: 16000, channels: 1))
        #expect(out.reduce(0) { $0 + $1.sampleCount } == 16000)
        #expect(out.allSatisfy { $0.sampleRate == 16000 && $0.channels == 1 })
        // Timestamps are consecutive in output samples.
        var next: Int64 = 0
        for frame in out {
            #expect(frame.pts == MediaTime(next, timebase: Rational(1, 16000)))
            next += Int64(frame.sampleCount)
        }
        // Against the ideal 1 kHz sine at 16 kHz, away from the edges.
        let got = samples(out)
        var signal = 0.0, noise = 0.0
        for n in 200..<15800 {
            let ideal = 0.5 * sin(2 * Double.pi * 1000 * Double(n) / 16000)
            signal += ideal * ideal
            noise += (Double(got[n]) - ideal) * (Double(got[n]) - ideal)
        }
        let snr = 10 * log10(signal / noise)
        print("speexdsp 48 kHz -> 16 kHz, 1 kHz sine: SNR \(snr) dB")
        #expect(snr > 30)
    }

    @Test func upsamplingKeepsTheSampleCount() throws {
        let input = sine(rate: 8000, channels: 1, format: .f32, frequency: 440, seconds: 0.75)
        let out = try run(input, to: AudioFormat(encoding: .samples(.s16), sampleRate: 48000, channels: 2))
        #expect(out.reduce(0) { $0 + $1.sampleCount } == 36000)
    }

    @Test func channelMixingAndFormatConversionAreExactAtTheSameRate() throws {
        let mono = sine(rate: 48000, channels: 1, format: .s16, frequency: 300, seconds: 0.1)
        let stereo = try run(mono, to: AudioFormat(encoding: .samples(.s16), sampleRate: 48000, channels: 2))
        let m = samples(mono), s = samples(stereo)
        #expect(s.count == 2 * m.count)
        let duplicated = m.flatMap { [$0, $0] }
        #expect(s == duplicated)
        let back = try run(stereo, to: AudioFormat(encoding: .samples(.f32), sampleRate: 48000, channels: 1))
        #expect(samples(back) == m)
    }

    @Test func unsupportedFormatsAreRejected() {
        let stereo = AudioFormat(encoding: .samples(.s16), sampleRate: 48000, channels: 2)
        #expect(throws: AudioConversionError.self) {
            try AudioConverter(from: AudioFormat(encoding: .samples(.s16), sampleRate: 48000, channels: 6), to: stereo)
        }
        #expect(throws: AudioConversionError.self) {
            try AudioConverter(from: AudioFormat(encoding: .compressed(.opus), sampleRate: 48000, channels: 2), to: stereo)
        }
    }
}
