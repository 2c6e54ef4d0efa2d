import MediaCodecs
import MediaCore

/// Makes libx264 H.264 encoders for I420 pictures. Their output follows the H.264 convention
/// described at `X264Encoder`: one Annex-B access unit per `EncodedFrame`.
///
/// Width and height must also be even (4:2:0), which caps cannot say: an odd size passes negotiation
/// and `makeEncoder` throws `CodecError.invalidSetting`.
public struct X264EncoderProvider: VideoEncoderProvider {
    public init() {}

    public var name: String { "x264" }
    public var codec: CodecName { .h264 }
    public var inputCaps: Caps {
        [.video(.exactly(.pixels(.i420)), width: .range(2...16384), height: .range(2...16384))]
    }

    public func makeEncoder(format: VideoFormat, settings: VideoEncoderSettings) throws -> any VideoEncoder {
        try X264Encoder(format: format, settings: settings)
    }
}
