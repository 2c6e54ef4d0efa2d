import MediaCodecs
import MediaCore

/// Makes OpenH264 encoders (Constrained Baseline H.264) for I420 pictures.
public struct OpenH264EncoderProvider: VideoEncoderProvider {
    public init() {}

    public var name: String { "openh264" }
    public var codec: CodecName { .h264 }
    public var inputCaps: Caps {
        [.video(.exactly(.pixels(.i420)), width: .range(OpenH264Encoder.sizes), height: .range(OpenH264Encoder.sizes),
                frameRate: .range(OpenH264Encoder.frameRates))]
    }

    public func makeEncoder(format: VideoFormat, settings: VideoEncoderSettings) throws -> any VideoEncoder {
        try OpenH264Encoder(format: format, settings: settings)
    }
}

/// Makes OpenH264 H.264 decoders, which output I420 pictures.
public struct OpenH264DecoderProvider: VideoDecoderProvider {
    public init() {}

    public var name: String { "openh264" }
    public var codec: CodecName { .h264 }

    /// I420 at the size and frame rate of the compressed stream.
    public func outputCaps(for input: VideoFormat) -> Caps {
        Caps(.video(VideoFormat(encoding: .pixels(.i420), width: input.width, height: input.height,
                                frameRate: input.frameRate)))
    }

    public func makeDecoder(format: VideoFormat, threads: Int) throws -> any VideoDecoder {
        try OpenH264Decoder(format: format, threads: threads)
    }
}
