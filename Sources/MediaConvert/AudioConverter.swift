import CSpeexDSP
import MediaCore

/// Converts interleaved audio between sample formats (s16, f32), channel counts (mono and stereo)
/// and sample rates.
///
/// Resampling uses speexdsp's resampler rather than libsamplerate: it is built for real-time
/// streams (small, fixed latency; quality levels 0-10 trading CPU for stop-band attenuation), which
/// is what a media engine feeding VoIP codecs needs; libsamplerate's best converters are of higher
/// fidelity but several times slower. Mono to stereo copies the channel; stereo to mono averages.
/// Timestamps count output samples from the first input's pts, so they stay exact across rates.
public final class AudioConverter {
    public let input: AudioFormat
    public let output: AudioFormat
    public let pool = BufferPool(name: "audio-converter")
    private let resampler: OpaquePointer?
    private var scratch: [Float] = []
    private var resampled: [Float] = []
    private var start: MediaTime?
    private var samplesIn = 0
    private var samplesOut = 0

    /// `quality` is speexdsp's, 0 (fastest) to 10 (best); 5 is its VoIP default.
    public init(from input: AudioFormat, to output: AudioFormat, quality: Int = 5) throws {
        for format in [input, output] {
            guard case .samples = format.encoding, (1...2).contains(format.channels),
                  (1000...384_000).contains(format.sampleRate) else {
                throw AudioConversionError.unsupported(format)
            }
        }
        self.input = input
        self.output = output
        if input.sampleRate != output.sampleRate {
            var error: Int32 = 0
            resampler = speex_resampler_init(UInt32(output.channels), UInt32(input.sampleRate),
                                             UInt32(output.sampleRate), Int32(quality), &error)
            guard resampler != nil, error == 0 else {
                throw AudioConversionError.library(message: String(cString: speex_resampler_strerror(error)))
            }
            speex_resampler_skip_zeros(resampler)
        } else {
            resampler = nil
        }
    }

    deinit { if let resampler { speex_resampler_destroy(resampler) } }

    /// Converts `frame`, emitting what is ready (resampling holds back a few samples until `flush`).
    public func convert(_ frame: AudioFrame, emit: (consuming AudioFrame) throws -> Void) throws {
        if start == nil { start = frame.pts }
        samplesIn += frame.sampleCount
        loadMixed(frame)
        if let resampler {
            try resample(resampler, count: frame.sampleCount)
            try emitFrame(from: resampled, count: resampledCount, emit: emit)
        } else {
            try emitFrame(from: scratch, count: frame.sampleCount, emit: emit)
        }
    }

    /// End of stream: emits the samples the resampler still holds, so that the output lasts exactly
    /// as long as the input.
    public func flush(emit: (consuming AudioFrame) throws -> Void) throws {
        guard let resampler else { return }
        let expected = Int((Int128(samplesIn) * Int128(output.sampleRate) + Int128(input.sampleRate / 2)) / Int128(input.sampleRate))
        let latency = Int(speex_resampler_get_input_latency(resampler))
        scratch = [Float](repeating: 0, count: (latency + 1) * output.channels)
        try resample(resampler, count: latency + 1)
        try emitFrame(from: resampled, count: Swift.max(0, Swift.min(resampledCount, expected - samplesOut)), emit: emit)
    }

    private var resampledCount = 0

    /// Puts `frame`'s samples, as floats in the output channel layout, into `scratch`.
    private func loadMixed(_ frame: AudioFrame) {
        let count = frame.sampleCount, inChannels = frame.channels, outChannels = output.channels
        if scratch.count < count * outChannels { scratch = [Float](repeating: 0, count: count * outChannels) }
        func sample(_ index: Int) -> Float {
            switch frame.sampleFormat {
            case .s16: return Float(frame.bytes.load(fromByteOffset: index * 2, as: Int16.self)) / 32768
            case .f32: return frame.bytes.load(fromByteOffset: index * 4, as: Float.self)
            }
        }
        for i in 0..<count {
            switch (inChannels, outChannels) {
            case (1, 2):
                let value = sample(i)
                scratch[2 * i] = value
                scratch[2 * i + 1] = value
            case (2, 1):
                scratch[i] = (sample(2 * i) + sample(2 * i + 1)) / 2
            default:
                for c in 0..<outChannels { scratch[i * outChannels + c] = sample(i * inChannels + c) }
            }
        }
    }

    private func resample(_ resampler: OpaquePointer, count: Int) throws {
        let capacity = (count * output.sampleRate / input.sampleRate + 16) * output.channels
        if resampled.count < capacity { resampled = [Float](repeating: 0, count: capacity) }
        var inLength = UInt32(count), outLength = UInt32(capacity / output.channels)
        let status = scratch.withUnsafeBufferPointer { source in
            resampled.withUnsafeMutableBufferPointer { target in
                speex_resampler_process_interleaved_float(resampler, source.baseAddress, &inLength, target.baseAddress, &outLength)
            }
        }
        guard status == 0 else { throw AudioConversionError.library(message: String(cString: speex_resampler_strerror(status))) }
        resampledCount = Int(outLength)
    }

    private func emitFrame(from samples: [Float], count: Int, emit: (consuming AudioFrame) throws -> Void) throws {
        guard count > 0, case .samples(let format) = output.encoding else { return }
        let pts = start!.rescaled(to: Rational(1, output.sampleRate)) + MediaTime(Int64(samplesOut), timebase: Rational(1, output.sampleRate))
        let frame = AudioFrame(sampleFormat: format, sampleRate: output.sampleRate, channels: output.channels,
                               sampleCount: count, pts: pts, pool: pool)
        for i in 0..<(count * output.channels) {
            switch format {
            case .s16:
                let value = Swift.max(-32768, Swift.min(32767, (samples[i] * 32768).rounded()))
                frame.bytes.storeBytes(of: Int16(value), toByteOffset: i * 2, as: Int16.self)
            case .f32:
                frame.bytes.storeBytes(of: samples[i], toByteOffset: i * 4, as: Float.self)
            }
        }
        samplesOut += count
        try emit(frame)
    }
}

public enum AudioConversionError: Error, Equatable, CustomStringConvertible {
    case unsupported(AudioFormat)
    case library(message: String)

    public var description: String {
        switch self {
        case .unsupported(let format): return "cannot convert \(format): raw s16/f32, 1 or 2 channels, 1-384 kHz only"
        case .library(let message): return "speexdsp: \(message)"
        }
    }
}
