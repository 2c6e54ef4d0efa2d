import MediaCodecs
import MediaCore

/// Makes libopus encoders for 16-bit or float samples at the Opus rates, mono or stereo.
public struct OpusEncoderProvider: AudioEncoderProvider {
    public init() {}

    public var name: String { "libopus" }
    public var codec: CodecName { .opus }
    public var inputCaps: Caps {
        [.audio(.oneOf([.samples(.f32), .samples(.s16)]), sampleRate: .oneOf(Opus.sampleRates),
                channels: .oneOf(Opus.channelCounts))]
    }

    public func makeEncoder(format: AudioFormat, settings: AudioEncoderSettings) throws -> any AudioEncoder {
        try OpusEncoder(format: format, settings: settings)
    }
}

/// Makes libopus decoders, which output 16-bit or float samples at any Opus rate, mono or stereo.
public struct OpusDecoderProvider: AudioDecoderProvider {
    public init() {}

    public var name: String { "libopus" }
    public var codec: CodecName { .opus }

    /// Floats (libopus's own precision) before 16-bit; 48 kHz (Opus's timestamp rate) first; the
    /// stream's channel count before the other.
    public func outputCaps(for input: AudioFormat) -> Caps {
        let channels = input.channels == 1 ? [1, 2] : [2, 1]
        return [.audio(.oneOf([.samples(.f32), .samples(.s16)]), sampleRate: .oneOf(Opus.sampleRates),
                       channels: .oneOf(channels))]
    }

    public func makeDecoder(input: AudioFormat, output: AudioFormat) throws -> any AudioDecoder {
        try OpusDecoder(input: input, output: output)
    }

    public func makeDecoder(input: AudioFormat, output: AudioFormat, preSkip: Int) throws -> any AudioDecoder {
        try OpusDecoder(input: input, output: output, preSkip: preSkip)
    }
}
