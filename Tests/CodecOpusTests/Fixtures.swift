import CodecOpus
import Foundation
import MediaCodecs
import MediaCore
import TestSupport

func pcmFormat(_ format: SampleFormat = .s16, rate: Int = 48_000, channels: Int = 2) -> AudioFormat {
    AudioFormat(encoding: .samples(format), sampleRate: rate, channels: channels)
}

func opusFormat(channels: Int = 2) -> AudioFormat {
    AudioFormat(encoding: .compressed(.opus), sampleRate: 48_000, channels: channels)
}

func milliseconds(_ value: Double) -> MediaTime {
    MediaTime(Int64((value * 48).rounded()), timebase: Rational(1, 48_000))
}
