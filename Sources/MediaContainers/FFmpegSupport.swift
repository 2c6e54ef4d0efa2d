import CFFmpeg
import CFFmpegShims
import MediaCore

/// Codecs Sluice reads from containers beyond those MediaCore names.
extension CodecName {
    /// AAC (ISO/IEC 14496-3) raw access units as MP4 stores them; decoded to PCM by `AACDecoder`.
    public static let aac: CodecName = "AAC"
}

/// Conversions between FFmpeg's values and Sluice's, shared by the reader, the writer and the decoder.
enum FFmpeg {
    static let eof = sluice_averror_eof()
    static let again = sluice_averror_eagain()
    static let noTimestamp = sluice_av_nopts_value()

    /// Once per process: FFmpeg prints only fatal errors (Sluice reports every failure itself, naming
    /// file and offset), and the errors it logs can be recorded (`recordingErrors`).
    static func setUp() { sluice_ffmpeg_log_install(AV_LOG_FATAL) }

    /// Runs `body` and returns with its result the first error FFmpeg logged meanwhile on this thread.
    static func recordingErrors<T>(_ body: () throws -> T) rethrows -> (T, String?) {
        sluice_ffmpeg_log_begin()
        let result: T
        do {
            result = try body()
        } catch {
            _ = sluice_ffmpeg_log_end()
            throw error
        }
        return (result, sluice_ffmpeg_log_end().map { String(cString: $0) })
    }

    /// The text of an FFmpeg error code.
    static func message(_ code: Int32) -> String {
        var text = [CChar](repeating: 0, count: 128)
        sluice_av_strerror(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func rational(_ value: AVRational) -> Rational? {
        value.num > 0 && value.den > 0 ? Rational(Int(value.num), Int(value.den)) : nil
    }

    static func avRational(_ value: Rational) -> AVRational {
        AVRational(num: Int32(value.numerator), den: Int32(value.denominator))
    }

    /// The FFmpeg codec id of a codec Sluice carries in containers.
    static func codecID(_ codec: CodecName) -> AVCodecID? {
        switch codec {
        case .h264: AV_CODEC_ID_H264
        case .vp8: AV_CODEC_ID_VP8
        case .opus: AV_CODEC_ID_OPUS
        case .aac: AV_CODEC_ID_AAC
        default: nil
        }
    }

    /// The Sluice codec of an FFmpeg codec id, nil for codecs Sluice does not carry.
    static func codec(_ id: AVCodecID) -> CodecName? {
        switch id {
        case AV_CODEC_ID_H264: .h264
        case AV_CODEC_ID_VP8: .vp8
        case AV_CODEC_ID_OPUS: .opus
        case AV_CODEC_ID_AAC: .aac
        default: nil
        }
    }

    /// FFmpeg's name of a codec id ("hevc", "mp3").
    static func name(_ id: AVCodecID) -> String { String(cString: avcodec_get_name(id)) }
}
