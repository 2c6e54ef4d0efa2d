import MediaCodecs
import MediaCore

/// Makes libvpx VP8 encoders for I420 pictures.
public struct VP8EncoderProvider: VideoEncoderProvider {
    public init() {}

    public var name: String { "libvpx" }
    public var codec: CodecName { .vp8 }
    public var inputCaps: Caps {
        [.video(.exactly(.pixels(.i420)), width: .range(2...16383), height: .range(2...16383))]
    }

    public func makeEncoder(format: VideoFormat, settings: VideoEncoderSettings) throws -> any VideoEncoder {
        try VP8Encoder(format: format, settings: settings)
    }
}

/// Makes libvpx VP8 decoders, which output I420 pictures.
public struct VP8DecoderProvider: VideoDecoderProvider {
    public init() {}

    public var name: String { "libvpx" }
    public var codec: CodecName { .vp8 }

    /// I420 at the size and frame rate of the compressed stream.
    public func outputCaps(for input: VideoFormat) -> Caps {
        Caps(.video(VideoFormat(encoding: .pixels(.i420), width: input.width, height: input.height,
                                frameRate: input.frameRate)))
    }

    public func makeDecoder(format: VideoFormat, threads: Int) throws -> any VideoDecoder {
        try VP8Decoder(format: format, threads: threads)
    }
}
