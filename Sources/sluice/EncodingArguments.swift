import ArgumentParser
import Foundation
import Glibc
import Sluice

/// The options that choose how media is encoded and converted, shared by `transcode` and `send`.
struct EncodingArguments: ParsableArguments {
    @Option(help: "Output codec (vp8, h264, opus). Default: the output's (VP8 for .ivf; for send, the input's).")
    var codec: String?

    @Option(help: "Encoder implementation: libvpx, x264 or openh264 (H.264), libopus. Default: the preferred one.")
    var encoder: String?

    @Option(help: "Video decoder implementation: ffmpeg (libavcodec), openh264 (H.264) or libvpx (VP8). Default: the preferred one (see 'sluice codecs').")
    var decoder: String?

    @Option(parsing: .unconditional, help: "Target bitrate, e.g. 500k, 2M. Default: 800k for video, 64k for audio.", transform: { text in
        guard let bps = TranscodeOptions.parseBitrate(text) else {
            throw ValidationError("bad bitrate '\(text)': use e.g. 800k, 2M or 500000")
        }
        return bps
    })
    var bitrate: Int?

    @Option(parsing: .unconditional, help: "Maximum frames between keyframes. Default: the encoder's; for send, one second's worth.")
    var keyint: Int?

    @Option(parsing: .unconditional, help: "Stop after this many frames (of the input).")
    var frames: Int?

    @Option(parsing: .unconditional, help: "Stop capturing from a device (v4l2:, alsa:) after this many seconds.")
    var duration: Double?

    @Flag(help: "Read the input file again from its start each time it ends, like a camera or microphone that never runs dry; stop with --frames or Ctrl-C.")
    var loop = false

    @Option(help: "Output picture size, e.g. 640x360 (scaled with libyuv).", transform: parseSize)
    var size: [Int]?

    @Option(help: "Output frame rate, e.g. 15 or 30000/1001 (frames dropped or repeated).", transform: parseFrameRate)
    var fps: Rational?

    @Option(name: .customLong("input-fps"), help: "Frame rate of a raw .h264 input. Default: its SPS timing, else 25.",
            transform: parseFrameRate)
    var inputFPS: Rational?

    @Option(parsing: .unconditional, help: "Output sample rate in Hz (audio is resampled). Default: the input's (48000 for Opus if the input's is not an Opus rate).")
    var sampleRate: Int?

    @Option(parsing: .unconditional, help: "Output channels, 1 or 2 (mixed down or up). Default: the input's.")
    var channels: Int?

    @Option(parsing: .unconditional, help: "Codec worker threads. Default: the number of cores, at most 8.")
    var threads: Int = min(8, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    func validate() throws {
        if let keyint, keyint < 1 { throw ValidationError("--keyint must be at least 1") }
        if let frames, frames < 1 { throw ValidationError("--frames must be at least 1") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds") }
        if !(1...64).contains(threads) { throw ValidationError("--threads must be between 1 and 64") }
        if let sampleRate, !(1_000...384_000).contains(sampleRate) {
            throw ValidationError("--sample-rate must be between 1000 and 384000")
        }
        if let channels, !(1...2).contains(channels) { throw ValidationError("--channels must be 1 or 2") }
    }

    var options: TranscodeOptions {
        var options = TranscodeOptions()
        options.codec = codec.map { CodecName(rawValue: $0) }
        options.encoderName = encoder
        options.decoderName = decoder
        options.bitrate = bitrate
        options.keyframeInterval = keyint
        options.maxFrames = frames
        options.loop = loop
        options.maxDuration = duration
        options.threads = threads
        options.size = size.map { ($0[0], $0[1]) }
        options.frameRate = fps
        options.inputFrameRate = inputFPS
        options.sampleRate = sampleRate
        options.channels = channels
        return options
    }
}

/// "WxH" as [width, height].
func parseSize(_ text: String) throws -> [Int] {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else {
        throw ValidationError("bad size '\(text)': use WIDTHxHEIGHT, e.g. 640x360")
    }
    return [w, h]
}

/// Writes `text` to the file at `path` atomically (a temporary file renamed over it, so a reader
/// waiting for the file never sees half of it); the error says why it cannot, in one line.
func writeText(_ text: String, to path: String) throws {
    let temporary = "\(path).\(getpid()).tmp"
    func failure() -> ValidationError {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        return ValidationError("\(path): cannot write: \(reason)")
    }
    guard let file = fopen(temporary, "w") else { throw failure() }
    let written = fputs(text, file) >= 0
    guard fclose(file) == 0 && written, rename(temporary, path) == 0 else { throw failure() }
}
