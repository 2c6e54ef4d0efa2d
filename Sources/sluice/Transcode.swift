import ArgumentParser
import Dispatch
import Foundation
import Glibc
import Sluice

struct Transcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a media file into another format or codec.",
        discussion: """
            The file extensions choose the formats:
              .y4m   raw I420 video (YUV4MPEG2)
              .ivf   VP8 (or H.264) video in IVF
              .h264  H.264 video as a raw Annex-B byte stream
              .wav   PCM audio (16-bit or float)
              .opus  Opus audio in Ogg
            Any video format converts to any other, and any audio format to any other.
            Compressed input is decoded and compressed output encoded as needed; pictures
            are scaled and audio resampled where the formats differ.
            Progress goes to stderr, the summary to stdout. Ctrl-C stops cleanly:
            the output written so far stays a valid file.

            Examples:
              sluice transcode clip.y4m clip.ivf --bitrate 800k --keyint 60
              sluice transcode clip.ivf clip.h264 --size 640x360 --fps 15
              sluice transcode clip.h264 clip.y4m --frames 100
              sluice transcode clip.y4m clip.h264 --encoder openh264
              sluice transcode speech.wav speech.opus --bitrate 32k --sample-rate 16000
              sluice transcode speech.opus speech.wav
            """)

    @Argument(help: "The file to read (.y4m, .ivf, .h264, .wav, .opus).")
    var input: String

    @Argument(help: "The file to write (.y4m, .ivf, .h264, .wav, .opus).")
    var output: String

    @Option(help: "Output codec (vp8, h264, opus). Default: the output container's (VP8 for .ivf).")
    var codec: String?

    @Option(help: "Encoder implementation: libvpx, x264 or openh264 (H.264), libopus. Default: the preferred one.")
    var encoder: String?

    @Option(help: "Target bitrate, e.g. 500k, 2M. Default: 800k for video, 64k for audio.", transform: { text in
        guard let bps = TranscodeOptions.parseBitrate(text) else {
            throw ValidationError("bad bitrate '\(text)': use e.g. 800k, 2M or 500000")
        }
        return bps
    })
    var bitrate: Int?

    @Option(help: "Maximum frames between keyframes. Default: the encoder's.")
    var keyint: Int?

    @Option(help: "Stop after this many frames (of the input).")
    var frames: Int?

    @Option(help: "Output picture size, e.g. 640x360 (scaled with libyuv).", transform: { text in
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else {
            throw ValidationError("bad size '\(text)': use WIDTHxHEIGHT, e.g. 640x360")
        }
        return [w, h]
    })
    var size: [Int]?

    @Option(help: "Output frame rate, e.g. 15 or 30000/1001 (frames dropped or repeated).", transform: parseFrameRate)
    var fps: Rational?

    @Option(name: .customLong("input-fps"), help: "Frame rate of a raw .h264 input. Default: its SPS timing, else 25.",
            transform: parseFrameRate)
    var inputFPS: Rational?

    @Option(help: "Output sample rate in Hz (audio is resampled). Default: the input's (48000 for Opus if the input's is not an Opus rate).")
    var sampleRate: Int?

    @Option(help: "Output channels, 1 or 2 (mixed down or up). Default: the input's.")
    var channels: Int?

    @Option(help: "Codec worker threads. Default: the number of cores, at most 8.")
    var threads: Int = min(8, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        if let keyint, keyint < 1 { throw ValidationError("--keyint must be at least 1") }
        if let frames, frames < 1 { throw ValidationError("--frames must be at least 1") }
        if !(1...64).contains(threads) { throw ValidationError("--threads must be between 1 and 64") }
        if let sampleRate, !(1_000...384_000).contains(sampleRate) {
            throw ValidationError("--sample-rate must be between 1000 and 384000")
        }
        if let channels, !(1...2).contains(channels) { throw ValidationError("--channels must be 1 or 2") }
    }

    func run() throws {
        var options = TranscodeOptions()
        options.codec = codec.map { CodecName(rawValue: $0) }
        options.encoderName = encoder
        options.bitrate = bitrate
        options.keyframeInterval = keyint
        options.maxFrames = frames
        options.threads = threads
        options.size = size.map { ($0[0], $0[1]) }
        options.frameRate = fps
        options.inputFrameRate = inputFPS
        options.sampleRate = sampleRate
        options.channels = channels

        let transcoder: Transcoder
        do {
            transcoder = try Transcoder(input: input, output: output, options: options)
        } catch {
            printError("sluice: \(error)")
            throw ExitCode.failure
        }

        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        signal(SIGINT, SIG_IGN)
        interrupt.setEventHandler { transcoder.graph.cancel() }
        interrupt.resume()
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
