import CFFmpeg
import CFFmpegShims
import MediaCodecs
import MediaCore

/// Makes libavcodec's own H.264 or VP8 decoders ("h264", "vp8"), which output I420 pictures.
public struct FFmpegDecoderProvider: VideoDecoderProvider {
    public let codec: CodecName
    /// How decoders with more than one thread spread the work.
    public let threading: FFmpegThreading

    /// A provider for `codec` (H.264 or VP8); `nil` when the linked libavcodec lacks its decoder.
    public init?(codec: CodecName, threading: FFmpegThreading = .frameAndSlice) {
        guard FFmpegDecoders.isAvailable(codec) else { return nil }
        self.codec = codec
        self.threading = threading
    }

    public var name: String { FFmpegDecoders.name }

    /// I420 at the size and frame rate of the compressed stream.
    public func outputCaps(for input: VideoFormat) -> Caps {
        Caps(.video(VideoFormat(encoding: .pixels(.i420), width: input.width, height: input.height,
                                frameRate: input.frameRate)))
    }

    public func makeDecoder(format: VideoFormat, threads: Int) throws -> any VideoDecoder {
        try FFmpegVideoDecoder(format: format, threads: threads, threading: threading)
    }
}

/// Facts about the linked libavcodec shared by the FFmpeg decoders.
public enum FFmpegDecoders {
    /// The providers' name, as `--decoder` takes it.
    public static let name = "ffmpeg"
    /// The codecs with a libavcodec decoder here, in Sluice's order.
    public static let codecs: [CodecName] = [.vp8, .h264]

    /// libavcodec's version, e.g. "59.37.100".
    public static var version: String {
        let version = avcodec_version()
        return "\(version >> 16).\(version >> 8 & 0xFF).\(version & 0xFF)"
    }

    /// Whether the linked libavcodec has its own decoder for `codec`.
    public static func isAvailable(_ codec: CodecName) -> Bool {
        decoderName(codec).map { avcodec_find_decoder_by_name($0) != nil } ?? false
    }

    /// libavcodec's name of its own decoder (never a wrapper such as "libvpx").
    static func decoderName(_ codec: CodecName) -> String? {
        switch codec {
        case .h264: "h264"
        case .vp8: "vp8"
        default: nil
        }
    }

    static let eof = sluice_averror_eof()
    static let again = sluice_averror_eagain()

    /// FFmpeg prints only fatal errors; the decoders report the others themselves.
    static func setUpLogging() { sluice_ffmpeg_log_install(AV_LOG_FATAL) }

    /// The text of an FFmpeg error code.
    static func message(_ code: Int32) -> String {
        var text = [CChar](repeating: 0, count: 128)
        sluice_av_strerror(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
