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
              .ivf   VP8 video in IVF
              .wav   PCM audio (16-bit or float)
            Compressed input is decoded and compressed output encoded as needed.
            Progress goes to stderr, the summary to stdout. Ctrl-C stops cleanly:
            the output written so far stays a valid file.

            Examples:
              sluice transcode clip.y4m clip.ivf --bitrate 800k --keyint 60
              sluice transcode clip.ivf clip.y4m --frames 100
              sluice transcode clip.ivf small.ivf --size 320x180 --fps 15
            """)

    @Argument(help: "The file to read (.y4m, .ivf, .wav).")
    var input: String

    @Argument(help: "The file to write (.y4m, .ivf, .wav).")
    var output: String

    @Option(help: "Output video codec (vp8). Default: the output container's.")
    var codec: String?

    @Option(help: "Encoder implementation to use (libvpx). Default: the preferred one.")
    var encoder: String?

    @Option(help: "Target bitrate, e.g. 500k, 2M.", transform: { text in
        guard let bps = TranscodeOptions.parseBitrate(text) else {
            throw ValidationError("bad bitrate '\(text)': use e.g. 800k, 2M or 500000")
        }
        return bps
    })
    var bitrate: Int = 800_000

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

    @Option(help: "Output frame rate, e.g. 15 or 30000/1001 (frames dropped or repeated).", transform: { text in
        guard let rate = Rational(parsing: text), rate > Rational(0, 1) else {
            throw ValidationError("bad frame rate '\(text)': use e.g. 15, 29.97 or 30000/1001")
        }
        return rate
    })
    var fps: Rational?

    @Option(help: "Codec worker threads. Default: the number of cores, at most 8.")
    var threads: Int = min(8, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        if let keyint, keyint < 1 { throw ValidationError("--keyint must be at least 1") }
        if let frames, frames < 1 { throw ValidationError("--frames must be at least 1") }
        if !(1...64).contains(threads) { throw ValidationError("--threads must be between 1 and 64") }
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
            lines.append("  bitrate  \(formatted(summary.bitrate / 1000, digits: 1)) kbit/s, "
                         + "\(summary.outputPayloadBytes) bytes, \(summary.keyframes ?? 0) keyframes")
        }
        if summary.corruptFrames > 0 || summary.skippedFrames > 0 {
            lines.append("  errors   \(summary.corruptFrames) corrupt frames dropped, \(summary.skippedFrames) skipped "
                         + "until the next keyframe; first: \(summary.firstDecodeError ?? "")")
        }
        return lines.joined(separator: "\n")
    }
}

/// `value` with exactly `digits` decimals.
func formatted(_ value: Double, digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}
