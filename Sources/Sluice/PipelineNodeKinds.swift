import MediaCore
import MediaRTP

/// What flows on a link, as far as it is known before the graph negotiates: video or audio, raw or
/// in a codec.
public struct StreamKind: Equatable, Sendable, CustomStringConvertible {
    public var isVideo: Bool
    /// nil for raw pictures or samples.
    public var codec: CodecName?

    public static func video(_ codec: CodecName? = nil) -> StreamKind { StreamKind(isVideo: true, codec: codec) }
    public static func audio(_ codec: CodecName? = nil) -> StreamKind { StreamKind(isVideo: false, codec: codec) }

    public var description: String { (isVideo ? "video/" : "audio/") + (codec?.rawValue.lowercased() ?? "raw") }
}

/// A checked property value.
public enum PipelineValue: Equatable, Sendable {
    case integer(Int)
    case size(width: Int, height: Int)
    case rate(Rational)
    case flag(Bool)
    case text(String)
    case impairment(ImpairmentProfile)
    case seconds(Double)
}

/// A node kind `sluice run` can build: its name, what it does, and the options it declares.
public struct PipelineNodeKind: Sendable {
    /// The form an option's value takes.
    public enum Form: Sendable {
        case integer(ClosedRange<Int>)
        /// Bits per second: "800k", "1M", "500000".
        case bitrate
        /// "640x360".
        case size
        /// "30", "29.97", "30000/1001".
        case rate
        case flag
        case choice([String])
        case text
        /// An `ImpairmentProfile`: "loss=5%,reorder=3%".
        case impairment
        /// A positive number of seconds: "2", "0.5".
        case seconds

        var expected: String {
            switch self {
            case .integer(let range): "an integer in \(range.lowerBound)...\(range.upperBound)"
            case .bitrate: "bits per second, e.g. 800k or 1M"
            case .size: "WIDTHxHEIGHT, e.g. 640x360"
            case .rate: "a frame rate, e.g. 30, 29.97 or 30000/1001"
            case .flag: "true or false"
            case .choice(let values): "one of " + values.joined(separator: ", ")
            case .text: "text"
            case .impairment: "an impairment profile, e.g. loss=5%,reorder=3%"
            case .seconds: "seconds, e.g. 2 or 0.5"
            }
        }
    }

    public struct Option: Sendable {
        public var name: String
        public var form: Form
        public var help: String
    }

    public var name: String
    public var summary: String
    public var options: [Option]

    /// Checks every property of `element` against the declared options.
    public func check(_ element: PipelineDescription.Element) throws(PipelineError) -> [String: PipelineValue] {
        var values: [String: PipelineValue] = [:]
        for property in element.properties {
            guard let option = options.first(where: { $0.name == property.key }) else {
                let names = options.map(\.name)
                throw .unknownProperty(element: element.label, property: property.key,
                                       suggestion: nearest(property.key, in: names), known: names)
            }
            guard let value = Self.parse(property.value, as: option.form) else {
                throw .badValue(element: element.label, property: property.key, value: property.value, expected: option.form.expected)
            }
            values[property.key] = value
        }
        return values
    }

    static func parse(_ text: String, as form: Form) -> PipelineValue? {
        switch form {
        case .integer(let range): return Int(text).flatMap { range.contains($0) ? .integer($0) : nil }
        case .bitrate: return TranscodeOptions.parseBitrate(text).map { .integer($0) }
        case .size:
            let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
            guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]),
                  (2...16384).contains(width), (2...16384).contains(height) else { return nil }
            return .size(width: width, height: height)
        case .rate:
            guard let rate = Rational(parsing: text), rate > Rational(0, 1), rate <= Rational(240, 1) else { return nil }
            return .rate(rate)
        case .flag:
            switch text.lowercased() {
            case "true", "yes", "1", "on": return .flag(true)
            case "false", "no", "0", "off": return .flag(false)
            default: return nil
            }
        case .choice(let values): return values.contains(text.lowercased()) ? .text(text.lowercased()) : nil
        case .text: return text.isEmpty ? nil : .text(text)
        case .impairment: return (try? ImpairmentProfile(parsing: text)).map { .impairment($0) }
        case .seconds:
            guard let seconds = Double(text), seconds > 0, seconds <= 86_400 else { return nil }
            return .seconds(seconds)
        }
    }
}

/// The node kinds `sluice run` builds, and the ones it knows of but does not build.
public enum PipelineNodeKinds {
    static let frames = PipelineNodeKind.Option(name: "frames", form: .integer(1...100_000_000),
                                                help: "stop after this many frames (as a source; a container's audio stops with its N-th picture)")
    static let bitrate = PipelineNodeKind.Option(name: "bitrate", form: .bitrate, help: "target bitrate (default 800k)")
    static let keyint = PipelineNodeKind.Option(name: "keyint", form: .integer(1...100_000), help: "a keyframe at least every N frames")
    static let threads = PipelineNodeKind.Option(name: "threads", form: .integer(1...64), help: "codec worker threads (default 1)")

    /// Video encoders by element name: codec and provider.
    static let videoEncoders: [String: (codec: CodecName, provider: String?)] = [
        "vp8enc": (.vp8, "libvpx"), "x264enc": (.h264, "x264"), "openh264enc": (.h264, "openh264"), "h264enc": (.h264, nil),
    ]

    public static let all: [PipelineNodeKind] = [
        PipelineNodeKind(name: "file", summary: "file:PATH reads (first in a chain) or writes (last) a file chosen by extension: "
                         + ".y4m .ivf .h264 .wav .opus/.ogg .mp4/.mov .webm .mkv; a container's streams as NAME.video and NAME.audio",
                         options: [frames,
                                   .init(name: "realtime", form: .flag, help: "read at the pace of the timestamps (default: as fast as possible; true when sending RTP)"),
                                   .init(name: "fps", form: .rate, help: "frame rate of a raw .h264 input (default: its SPS timing, else 25)")]),
        PipelineNodeKind(name: "decode", summary: "decodes video (VP8, H.264) or audio (Opus, AAC) to raw pictures or samples",
                         options: [threads]),
        PipelineNodeKind(name: "vp8enc", summary: "encodes raw video as VP8 (libvpx)", options: [bitrate, keyint, threads]),
        PipelineNodeKind(name: "x264enc", summary: "encodes raw video as H.264 (x264)", options: [bitrate, keyint, threads]),
        PipelineNodeKind(name: "openh264enc", summary: "encodes raw video as H.264 (OpenH264, constrained baseline)",
                         options: [bitrate, keyint, threads]),
        PipelineNodeKind(name: "h264enc", summary: "encodes raw video as H.264 with the preferred provider", options: [bitrate, keyint, threads]),
        PipelineNodeKind(name: "opusenc", summary: "encodes raw audio as Opus (libopus); takes 8-48 kHz, mono or stereo",
                         options: [.init(name: "bitrate", form: .bitrate, help: "target bitrate (default 64k)")]),
        PipelineNodeKind(name: "scale", summary: "scales raw pictures (libyuv)",
                         options: [.init(name: "size", form: .size, help: "output size, required"),
                                   .init(name: "filter", form: .choice(["box", "bilinear", "point"]), help: "scaling filter (default box)")]),
        PipelineNodeKind(name: "framerate", summary: "drops or repeats raw pictures to reach a frame rate",
                         options: [.init(name: "fps", form: .rate, help: "output frame rate, required")]),
        PipelineNodeKind(name: "videoconvert", summary: "converts raw pictures to another pixel format",
                         options: [.init(name: "format", form: .choice(["i420", "nv12"]), help: "pixel format (default i420)")]),
        PipelineNodeKind(name: "audioconvert", summary: "resamples (speexdsp) and mixes raw audio",
                         options: [.init(name: "rate", form: .integer(8_000...192_000), help: "sample rate (default 48000)"),
                                   .init(name: "channels", form: .integer(1...2), help: "channels, 1 or 2 (default 2)"),
                                   .init(name: "format", form: .choice(["s16", "f32"]), help: "sample format (default s16)")]),
        PipelineNodeKind(name: "tee", summary: "passes its input on; refer to it as NAME. to branch (fan-out)", options: []),
        PipelineNodeKind(name: "rtpsend", summary: "sends encoded VP8, H.264 or Opus as RTP over UDP, optionally impaired",
                         options: [.init(name: "to", form: .text, help: "destination HOST:PORT, required"),
                                   .init(name: "pt", form: .integer(0...127), help: "payload type (default 96 video, 111 audio)"),
                                   .init(name: "impair", form: .impairment, help: "network impairment, e.g. loss=5%,reorder=3%")]),
        PipelineNodeKind(name: "rtpreceive", summary: "receives one RTP stream (VP8, H.264 or Opus) that an SDP file describes, as encoded frames",
                         options: [.init(name: "sdp", form: .text, help: "the session description, required"),
                                   .init(name: "media", form: .choice(["video", "audio"]), help: "which section (default: the first)"),
                                   frames,
                                   .init(name: "timeout", form: .integer(1...3600), help: "seconds without a packet that end the stream (default 10)")]),
        PipelineNodeKind(name: "v4l2src", summary: "captures raw video from a V4L2 camera (also written 'v4l2'), in its format nearest "
                         + "to size and fps; starts its chain",
                         options: [.init(name: "device", form: .text, help: "the camera (default /dev/video0)"),
                                   .init(name: "size", form: .size, help: "ideal picture size (default 640x480)"),
                                   .init(name: "fps", form: .rate, help: "ideal frame rate (default 30)"),
                                   .init(name: "frames", form: frames.form, help: "stop after this many pictures")]),
        PipelineNodeKind(name: "alsasrc", summary: "captures raw audio from an ALSA PCM (a microphone) in 10 ms blocks; starts its chain",
                         options: [.init(name: "device", form: .text, help: "the PCM (default 'default')"),
                                   .init(name: "rate", form: .integer(8_000...192_000), help: "sample rate (default 48000)"),
                                   .init(name: "channels", form: .integer(1...2), help: "channels, 1 or 2 (default 2)"),
                                   .init(name: "format", form: .choice(["s16", "f32"]), help: "sample format (default s16)"),
                                   .init(name: "duration", form: .seconds, help: "stop after this many seconds")]),
        PipelineNodeKind(name: "whip", summary: "publishes raw video or audio to a WHIP endpoint (RFC 9725: 'sluice serve' or any "
                         + "other) over WebRTC, encoded in the codec the endpoint answers; ends its chain",
                         options: [.init(name: "url", form: .text, help: "the endpoint, http://HOST[:PORT]/PATH, required"),
                                   .init(name: "bitrate", form: .bitrate, help: "target bitrate (default 800k video, 64k audio)")]),
        PipelineNodeKind(name: "whep", summary: "watches a WHEP endpoint (the WHEP draft: 'sluice serve' or any other) over "
                         + "WebRTC: the video it sends, as encoded frames; connects while the pipeline is built; starts its chain",
                         options: [.init(name: "url", form: .text, help: "the endpoint, http://HOST[:PORT]/PATH, required"),
                                   frames]),
        PipelineNodeKind(name: "alsasink", summary: "plays raw audio on an ALSA PCM (a speaker) at the pace of the device; ends its chain",
                         options: [.init(name: "device", form: .text, help: "the PCM (default 'default')")]),
    ]

    /// Other names of kinds: what gst-launch users or the examples write.
    static let aliases = ["v4l2": "v4l2src"]

    /// Kinds of the library that `sluice run` does not build yet, with what to use instead.
    public static let unsupported: [String: String] = [
        "webrtc": "use 'sluice serve' (WHIP/WHEP)",
        "filesrc": "write file:PATH",
        "filesink": "write file:PATH",
        "mux": "name the output file and feed it twice: ... ! file:out.webm name=out  in.audio ! out.",
        "demux": "name the input file and use NAME.video and NAME.audio",
    ]

    public static func kind(named name: String) -> PipelineNodeKind? {
        let name = aliases[name] ?? name
        return all.first { $0.name == name }
    }

    /// The kind of `element`, or an error naming the nearest kind or what to do instead.
    public static func lookUp(_ element: PipelineDescription.Element) throws(PipelineError) -> PipelineNodeKind {
        if let kind = kind(named: element.kind) { return kind }
        if let reason = unsupported[element.kind] { throw .unsupportedElement(element.kind, reason: reason) }
        throw .unknownElement(element.kind, suggestion: nearest(element.kind, in: all.map(\.name) + Array(unsupported.keys)))
    }

    /// The `sluice run --list` text: each kind with its options.
    public static var listing: String {
        var lines: [String] = []
        for kind in all {
            lines.append((kind.name == "file" ? "file:PATH" : kind.name) + "  " + kind.summary)
            for option in kind.options {
                lines.append("    \(option.name)=\(formHint(option.form))  \(option.help)")
            }
        }
        lines.append("Not built by 'sluice run' (yet):")
        for name in unsupported.keys.sorted() { lines.append("  \(name)  \(unsupported[name]!)") }
        return lines.joined(separator: "\n")
    }

    private static func formHint(_ form: PipelineNodeKind.Form) -> String {
        switch form {
        case .integer: "N"
        case .bitrate: "BITS"
        case .size: "WxH"
        case .rate: "FPS"
        case .flag: "BOOL"
        case .choice(let values): values.joined(separator: "|")
        case .text: "TEXT"
        case .impairment: "PROFILE"
        case .seconds: "SECONDS"
        }
    }
}
