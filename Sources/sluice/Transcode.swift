import ArgumentParser
import Dispatch
import Foundation
import Glibc
import Sluice

struct Transcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a media file into another format or codec; capture from a camera or microphone; play to a speaker.",
        discussion: """
            The file extensions choose the formats:
              .y4m   raw I420 video (YUV4MPEG2)
              .ivf   VP8 (or H.264) video in IVF
              .h264  H.264 video as a raw Annex-B byte stream
              .wav   PCM audio (16-bit or float)
              .opus  Opus audio in Ogg (.ogg too)
              .mp4   H.264 video (+ Opus audio) in MP4; input: MP4/MOV with H.264 or VP8, Opus or AAC
              .webm  VP8 video (+ Opus audio) in WebM
              .mkv   VP8 or H.264 video (+ Opus audio) in Matroska
            From one container to another, the audio stream travels beside the video in the
            same graph: Opus is copied, AAC decoded and encoded as Opus (--no-audio leaves it out).
            A container with audio only (AAC or Opus) reads as audio, to .wav or .opus.
            Devices stand in for files (see 'sluice devices'):
              v4l2:/dev/video0   a V4L2 camera (input; --size/--fps choose its format)
              alsa:NAME          an ALSA PCM: a microphone as input, a speaker as output
            Any video format converts to any other, and any audio format to any other.
            Compressed input is decoded and compressed output encoded as needed; pictures
            are scaled and audio resampled where the formats differ.
            Progress goes to stderr, the summary to stdout. Ctrl-C stops cleanly:
            the output written so far stays a valid file.

            Examples:
              sluice transcode clip.mp4 clip.webm
              sluice transcode clip.mp4 out.ivf --size 640x360
              sluice transcode clip.y4m clip.ivf --bitrate 800k --keyint 60
              sluice transcode clip.ivf clip.h264 --size 640x360 --fps 15
              sluice transcode clip.h264 clip.y4m --frames 100
              sluice transcode clip.y4m clip.h264 --encoder openh264
              sluice transcode clip.h264 clip.ivf --decoder openh264 --bitrate 2M
              sluice transcode speech.wav speech.opus --bitrate 32k --sample-rate 16000
              sluice transcode speech.opus speech.wav
              sluice transcode clip.ivf live.h264 --realtime --loop --frames 1000
              sluice transcode v4l2:/dev/video0 camera.ivf --size 640x480 --fps 30 --duration 10
              sluice transcode alsa:default microphone.opus --duration 10
              sluice transcode speech.opus alsa:default
            """)

    @Argument(help: "The file to read (.y4m, .ivf, .h264, .wav, .opus/.ogg, .mp4, .webm, .mkv), or a device: v4l2:/dev/videoN, alsa:PCM.")
    var input: String

    @Argument(help: "The file to write (.y4m, .ivf, .h264, .wav, .opus, .mp4, .webm, .mkv), or alsa:PCM to play audio.")
    var output: String

    @OptionGroup var encoding: EncodingArguments

    @Flag(help: "Read the input at the pace of its timestamps, like a camera or microphone, instead of as fast as possible.")
    var realtime = false

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    @Flag(help: "From one container file to another (.mp4, .webm, .mkv), leave the audio out.")
    var noAudio = false

    func run() throws {
        var options = encoding.options
        if realtime { options.pacing = .realTime }
        if noAudio { options.includeAudio = false }
        let transcoder = try failingInOneLine { try Transcoder(input: input, output: output, options: options) }

        let interrupt = cancelOnInterrupt(transcoder.graph)
        defer { interrupt.cancel() }
        let progress = quiet ? nil : ProgressDisplay(transcoder: transcoder)
        progress?.start()

        let summary: TranscodeSummary
        do {
            summary = try transcoder.run()
            progress?.stop()
        } catch GraphError.cancelled {
            progress?.stop()
            printError("sluice: stopped after \(transcoder.framesDone) frames; \(output) is complete up to there")
            throw ExitCode(130)
        } catch {
            progress?.stop()
            printError("sluice: \(error) (\(transcoder.framesDone) frames written to \(output), which stays valid)")
            throw ExitCode.failure
        }
        print(report(transcoder, summary))
    }

    private func report(_ transcoder: Transcoder, _ summary: TranscodeSummary) -> String {
        var lines = ["transcoded \(input) -> \(output)"]
        lines.append("  input    \(transcoder.inputFormat.map { "\($0)" } ?? "?")")
        lines.append("  output   \(transcoder.outputFormat.map { "\($0)" } ?? "?")")
        lines.append("  frames   \(summary.frames) (\(formatted(summary.mediaDuration)) s of media) in "
                     + "\(formatted(summary.elapsed)) s, \(formatted(summary.framesPerSecond, digits: 1)) fps")
        if let audio = transcoder.audioBranch {
            lines.append("  audio    \(audio.stream.codecName) -> opus, \(audio.framesWritten) packets (\(formatted(audio.mediaSeconds)) s)")
        }
        if summary.outputPayloadBytes > 0 {
            lines.append("  bitrate  \(formatted(summary.bitrate / 1000, digits: 1)) kbit/s, \(summary.outputPayloadBytes) bytes"
                         + (summary.keyframes.map { ", \($0) keyframes" } ?? ""))
        }
        if summary.corruptFrames > 0 || summary.skippedFrames > 0 {
            lines.append("  errors   \(summary.corruptFrames) corrupt frames dropped, \(summary.skippedFrames) skipped "
                         + "until the next keyframe; first: \(summary.firstDecodeError ?? "")")
        }
        return lines.joined(separator: "\n")
    }
}

/// A positive frame rate such as "15", "29.97" or "30000/1001".
func parseFrameRate(_ text: String) throws -> Rational {
    guard let rate = Rational(parsing: text), rate > Rational(0, 1) else {
        throw ValidationError("bad frame rate '\(text)': use e.g. 15, 29.97 or 30000/1001")
    }
    return rate
}

/// `value` with exactly `digits` decimals.
func formatted(_ value: Double, digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}
