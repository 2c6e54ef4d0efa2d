import Glibc

/// File formats Sluice reads and writes, chosen by file extension.
public enum Container: String, Sendable, CaseIterable {
    case y4m, ivf, h264, wav, opus
    /// Containers read and written through libavformat (`MediaContainers`): their video stream, and
    /// their audio stream beside it when both files are containers.
    case mp4, webm, mkv

    /// The kind a path's extension names; `.ogg` reads and writes as Ogg Opus, like `.opus`.
    public init(path: String) throws {
        let ext = path.split(separator: "/").last?.split(separator: ".").last.map { $0.lowercased() } ?? ""
        guard path.contains("."), let container = Container(rawValue: ext == "ogg" ? "opus" : ext) else {
            throw TranscodeError.unknownContainer(path: path)
        }
        self = container
    }

    /// The codecs a file of this kind can hold, the default first; empty for raw media.
    public var codecs: [CodecName] {
        switch self {
        case .y4m, .wav: return []
        case .ivf: return [.vp8, .h264]
        case .h264: return [.h264]
        case .opus: return [.opus]
        case .mp4, .webm, .mkv: return containerFormat!.codecs.filter { $0 != .opus }
        }
    }

    public var isVideo: Bool { self != .wav && self != .opus }

    /// The libavformat container format, for the kinds `MediaContainers` reads and writes.
    public var containerFormat: ContainerFormat? {
        switch self {
        case .mp4: .mp4
        case .webm: .webm
        case .mkv: .matroska
        default: nil
        }
    }
}

/// What a transcode should do beyond the choice of files.
public struct TranscodeOptions: Sendable {
    /// Output codec; defaults to the container's (VP8 for IVF).
    public var codec: CodecName?
    /// Encoder provider to use, e.g. "libvpx"; defaults to the registry's preferred one.
    public var encoderName: String?
    /// Video decoder provider to use, e.g. "openh264"; defaults to the registry's preferred one.
    public var decoderName: String?
    /// Target bitrate in bits per second; `nil` means 800 kbit/s for video, 64 kbit/s for audio.
    public var bitrate: Int?
    public var keyframeInterval: Int?
    /// Video: a keyframe at least this often, in seconds of the output's frame rate, when
    /// `keyframeInterval` is not given (`sluice send` sets it, so that receivers who join late decode).
    public var keyframePeriod: Double?
    /// Stop after this many frames (video) or blocks/packets (audio) of the input.
    public var maxFrames: Int?
    /// Codec worker threads.
    public var threads = 1
    /// Output picture size; pictures are scaled (libyuv) when it differs from the input's.
    public var size: (width: Int, height: Int)?
    /// Output frame rate; pictures are dropped or repeated by their timestamps to reach it.
    public var frameRate: Rational?
    /// The frame rate of a raw `.h264` input, which has no timestamps; default: its SPS timing, else 25.
    public var inputFrameRate: Rational?
    /// Output sample rate; audio is resampled (speexdsp) when it differs. Opus output takes 8, 12,
    /// 16, 24 or 48 kHz; other input rates are resampled to 48 kHz for it.
    public var sampleRate: Int?
    /// Output channel count (1 or 2 for Opus); mono and stereo are mixed into each other.
    public var channels: Int?
    /// How the input is read: as fast as the pipeline goes (transcoding), or at the pace of its
    /// timestamps, like a camera or microphone (sending).
    public var pacing: Pacing = .asFastAsPossible
    /// Stop a capture device after this many seconds (a microphone also stops after `maxFrames`
    /// blocks of 10 ms, a camera after `maxFrames` pictures).
    public var maxDuration: Double?
    /// Read the input file again from its start each time it ends (a camera or microphone stand-in);
    /// the run ends at `maxFrames`, or when stopped.
    public var loop = false
    /// Video: always put a scaler and a frame-rate node before the encoder, so that
    /// `adaptOutputFormat` can change the size and rate while running.
    public var adaptable = false
    /// Per-frame latency tracing of the sending stages (capture to last packet sent); share it with
    /// the receiving pipeline of a loopback call (`ReceiveOptions.tracer`) to trace end to end.
    public var tracer: FrameTracer?
    /// Container to container (`.mp4`, `.webm`, `.mkv`): also carry the input's audio stream, as Opus.
    public var includeAudio = true

    public init() {}

    static let defaultVideoBitrate = 800_000
    static let defaultAudioBitrate = 64_000
}

public enum TranscodeError: Error, CustomStringConvertible, Equatable {
    case unknownContainer(path: String)
    case incompatible(String)

    public var description: String {
        switch self {
        case .unknownContainer(let path):
            let known = Container.allCases.map { "." + $0.rawValue + ($0 == .opus ? " (.ogg)" : "") }.joined(separator: ", ")
            return "\(path): unknown file type (known: \(known); devices: v4l2:/dev/videoN, alsa:PCM)"
        case .incompatible(let text): return text
        }
    }
}

/// A file-to-file pipeline: source, decoder if the input is compressed, conversion nodes where the
/// formats differ (frame rate, picture size, sample rate and channels), encoder if the output is
/// compressed, sink. Formats are negotiated when it is made, so a bad combination fails before any
/// work.
public final class Transcoder: @unchecked Sendable {
    public let input: String
    public let output: String
    public let options: TranscodeOptions
    public let graph = Graph()
    /// Frames the input holds, when that can be known up front (for progress).
    public var expectedFrames: Int? { source.expectedFrames }
    /// The pool raw input pictures come from (Y4M input only).
    public var sourcePool: BufferPool? { source.sourcePool }
    /// The input's side of the pipeline: its source, demuxer and decoder.
    private let source: SourceChain
    private var encoderKeyframes: () -> Int? = { nil }
    private var encoderStatistics: () -> EncoderStatistics? = { nil }
    private var sinkName = ""
    /// The last node that changes the format: the output format is read from it.
    private var lastNode: (any MediaNode)?
    private var outputBytes: () -> Int = { 0 }
    private var mediaSeconds: (() -> Double)?
    /// The video encoder, when there is one.
    private var videoEncoder: VideoEncoderNode?
    /// The RTP sender, when the output is an RTP destination.
    public private(set) var rtpSender: RTPSenderHandle?
    /// A container output's writer, shared by the video and audio branches.
    private var containerWriter: ContainerWriter?
    /// The audio branch of a container-to-container transcode, when the input has audio.
    public private(set) var audioBranch: ContainerAudioBranch?

    /// A pipeline from `input` to `output`, each a file or a device (`MediaEndpoint`): a camera or
    /// microphone to a file, a file to a speaker (`alsa:PCM`), a file to a file.
    public convenience init(input: String, output: String, options: TranscodeOptions = TranscodeOptions(),
                            registry: CodecRegistry = .builtIn) throws {
        let target: OutputTarget
        switch try MediaEndpoint(naming: output) {
        case .file(let path, let container):
            if let inputPath = Self.canonicalPath(input), inputPath == Self.canonicalPath(path) {
                throw TranscodeError.incompatible("\(output): output would overwrite the input")
            }
            target = .file(path, container)
        case .sound(let pcm):
            target = .playback(pcm: pcm)
        case .camera:
            throw TranscodeError.incompatible("\(output): a camera is an input; write to a file, alsa:PCM or an RTP destination")
        }
        try self.init(input: input, target: target, options: options, registry: registry)
    }

    /// A pipeline that sends `input` as one RTP stream to `destination`, paced in real time unless
    /// `options.pacing` says otherwise. A compressed input already in the wanted codec (default: its
    /// own; VP8 for `.y4m`, Opus for `.wav`) is sent as it is, without decoding, unless a size or
    /// frame rate asks for new pictures. `audioTo`: a container's audio (Opus as it is, AAC encoded
    /// to Opus) goes there as a second stream, beside the video (`audioRTPSender`).
    public convenience init(input: String, sendingTo destination: RTPDestination, audioTo audioDestination: RTPDestination? = nil,
                            options: TranscodeOptions = TranscodeOptions(), registry: CodecRegistry = .builtIn) throws {
        var options = options
        if options.pacing == .asFastAsPossible { options.pacing = .realTime }
        try self.init(input: input, target: .rtp(destination), audioDestination: audioDestination, options: options, registry: registry)
    }

    /// The sender of the audio stream, when a container's audio goes beside its video (`audioTo`).
    public var audioRTPSender: RTPSenderHandle? { audioBranch?.rtpSender }

    private init(input: String, target: OutputTarget, audioDestination: RTPDestination? = nil, options: TranscodeOptions,
                 registry: CodecRegistry) throws {
        self.input = input
        self.output = target.description
        self.options = options
        source = try SourceChain(input, options: options, registry: registry)
        let from = source.endpoint
        if case .file = from, options.maxDuration != nil {
            throw TranscodeError.incompatible("\(input): a duration limit applies to capture devices; limit a file by frames")
        }
        let codec: CodecName?
        switch target {
        case .file(let path, let to):
            guard from.isVideo == to.isVideo else {
                throw TranscodeError.incompatible("cannot transcode \(from.isVideo ? "video" : "audio") (\(input)) to \(to.isVideo ? "video" : "audio") (\(path))")
            }
            codec = try Self.outputCodec(options.codec, for: to, path: path)
        case .playback:
            guard !from.isVideo else { throw TranscodeError.incompatible("cannot play video (\(input)) on \(output)") }
            if let asked = options.codec {
                throw TranscodeError.incompatible("\(output) plays raw samples, not \(asked)")
            }
            codec = nil
        case .rtp:
            codec = options.codec ?? from.codecs.first ?? (from.isVideo ? .vp8 : .opus)
            guard RTPDestination.codecs.contains(codec!), from.isVideo == (codec != .opus) else {
                throw TranscodeError.incompatible("cannot send \(input) as \(codec!) over RTP (Sluice sends VP8, H264 and OPUS)")
            }
        }
        let fromContainer: Bool = if case .file(_, let container) = from { container.containerFormat != nil } else { false }
        if audioDestination != nil, !fromContainer || !from.isVideo || options.loop {
            throw TranscodeError.incompatible("\(input): a second stream of audio is sent from a container file's audio "
                                              + "(.mp4, .webm, .mkv) beside its video, not looped")
        }
        if from.isVideo {
            if case .file(let path, let to) = target, let format = to.containerFormat {
                let audio = try ContainerAudioBranch.audioStream(input: from, options: options)
                containerWriter = try ContainerWriter(path: path, format: format, trackCount: audio == nil ? 1 : 2)
                if let audio { audioBranch = ContainerAudioBranch(stream: audio) }
            }
            if audioDestination != nil {
                guard let audio = try ContainerAudioBranch.audioStream(input: from, options: options) else {
                    throw TranscodeError.incompatible("\(input): no Opus or AAC audio to send beside the video")
                }
                audioBranch = ContainerAudioBranch(stream: audio)
            }
            if case .rtp = target, let codec, try passThroughVideo(codec: codec, target: target) {
            } else {
                let pictures = try source.pictures(into: graph)
                lastNode = source.lastNode
                try attachVideoOutput(target, codec: codec, from: pictures, registry: registry)
            }
        } else if case .rtp = target, case .file(_, .opus) = from, options.sampleRate == nil, options.channels == nil {
            let (reader, port) = try source.opusPackets(into: graph)
            lastNode = source.lastNode
            try attachEncoded(port, codec: .opus, target: target, preSkip: { reader.preSkip })
        } else {
            let wantsWAV: Bool = if case .file(_, .wav) = target { true } else { false }
            // A WAV file made from compressed audio gets 16-bit samples, as ffmpeg writes them.
            let (samples, format) = try source.samples(into: graph, preferring: wantsWAV ? .s16 : nil)
            lastNode = source.lastNode
            try attachAudioOutput(codec, target: target, from: samples, format: format, registry: registry)
        }
        let pictureFormat = source.pictureFormat
        if let audioBranch, let demuxer = source.demuxer, let output = containerWriter.map({ ContainerAudioBranch.Output.container($0) })
            ?? audioDestination.map({ .rtp($0, tracer: options.tracer) }) {
            try audioBranch.attach(to: graph, demuxer: demuxer, output: output, options: options,
                                   videoEnd: pictureFormat.flatMap { format in options.maxFrames.map { Double($0) / format.frameRate.doubleValue } },
                                   registry: registry)
        }
        if let tracer = options.tracer { graph.tracing = .sending(tracer) }
        try graph.build()
        inputFormat = source.firstNode.flatMap { graph.outputFormat(of: $0) }
        outputFormat = lastNode.flatMap { graph.outputFormat(of: $0) }
    }

    /// Where a pipeline's output goes.
    enum OutputTarget: CustomStringConvertible {
        case file(String, Container)
        case rtp(RTPDestination)
        /// An ALSA PCM that plays raw samples.
        case playback(pcm: String)

        var description: String {
            switch self {
            case .file(let path, _): path
            case .rtp(let destination): "rtp://\(destination.address)"
            case .playback(let pcm): MediaEndpoint.sound(pcm: pcm).description
            }
        }
    }

    /// The codec to write: the one asked for if the container holds it, else the container's default.
    static func outputCodec(_ asked: CodecName?, for container: Container, path: String) throws -> CodecName? {
        guard let asked else { return container.codecs.first }
        guard container.codecs.contains(asked) else {
            let held = container.codecs.isEmpty ? "raw media only" : container.codecs.map(\.rawValue).joined(separator: " or ")
            throw TranscodeError.incompatible("\(path): a .\(container.rawValue) file holds \(held), not \(asked)")
        }
        return asked
    }

    /// The absolute path without links, or nil when the file does not exist.
    static func canonicalPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Adds a conversion node after `port`; its output is then the one reported as the output format.
    private func convert<Node: MediaTransform>(_ port: Port<Node.Input>, through node: Node) -> Port<Node.Output> {
        lastNode = node
        return graph.add(node, input: port)
    }

    // MARK: Video

    /// Sends a compressed input as it is, when it holds `codec` and no new pictures are asked for.
    private func passThroughVideo(codec: CodecName, target: OutputTarget) throws -> Bool {
        guard options.size == nil, options.frameRate == nil, options.bitrate == nil, options.encoderName == nil,
              try source.videoCodec() == codec else { return false }
        let compressed = try source.encodedVideo(into: graph)
        lastNode = source.lastNode
        try attachEncoded(compressed.port, codec: codec, target: target, preSkip: { 0 })
        return true
    }

    private func attachVideoOutput(_ target: OutputTarget, codec: CodecName?, from input: Port<VideoFrame>,
                                   registry: CodecRegistry) throws {
        var pictures = input
        let adapt = options.adaptable && codec != nil ? source.pictureFormat : nil
        if let rate = options.frameRate ?? adapt?.frameRate {
            pictures = convert(pictures, through: try FrameRateNode(rate: rate))
        }
        if let size = options.size ?? adapt.map({ ($0.width, $0.height) }) {
            pictures = convert(pictures, through: try VideoScalerNode(width: size.width, height: size.height))
        }
        guard let codec else {
            let sink = Y4MFileSink(path: output)
            graph.add(sink, input: pictures)
            sinkName = sink.name
            return
        }
        let settings = VideoEncoderSettings(bitrate: options.bitrate ?? TranscodeOptions.defaultVideoBitrate,
                                            keyframeInterval: options.keyframeInterval ?? periodicKeyframeInterval(),
                                            threads: options.threads)
        let (frames, encoder) = try EncodingStage.video(pictures, in: graph, codec: codec, named: options.encoderName,
                                                        registry: registry, settings: settings)
        try attachEncoded(frames, codec: codec, target: target, preSkip: { 0 })
        videoEncoder = encoder
        encoderKeyframes = { encoder.keyframes }
        encoderStatistics = { encoder.statistics }
        lastNode = encoder
    }

    /// `options.keyframePeriod` in frames of the encoder's input (at least 1).
    private func periodicKeyframeInterval() -> Int? {
        guard let period = options.keyframePeriod, let rate = options.frameRate ?? source.pictureFormat?.frameRate else { return nil }
        return max(1, Int((period * rate.doubleValue).rounded(.down)))
    }

    /// The sink of compressed frames: a file of the target's kind, or an RTP sender.
    private func attachEncoded(_ frames: Port<EncodedFrame>, codec: CodecName, target: OutputTarget,
                               preSkip: @escaping () -> Int) throws {
        switch target {
        case .file(let path, .h264):
            let sink = AnnexBFileSink(path: path)
            graph.add(sink, input: frames)
            (sinkName, outputBytes) = (sink.name, { sink.bytesWritten })
        case .file(let path, .opus):
            let sink = OggOpusFileSink(path: path, preSkip: preSkip)
            graph.add(sink, input: frames)
            (sinkName, outputBytes) = (sink.name, { sink.bytesWritten })
            mediaSeconds = { Double(sink.writer?.samplesWritten ?? 0) / 48_000 }
        case .file(_, .mp4), .file(_, .webm), .file(_, .mkv):
            let sink = ContainerFileSink(writer: containerWriter!, kind: .video)
            graph.add(sink, input: frames)
            (sinkName, outputBytes) = (sink.name, { sink.bytesWritten })
        case .file(let path, _):
            let sink = IVFFileSink(path: path, codecs: [codec])
            graph.add(sink, input: frames)
            (sinkName, outputBytes) = (sink.name, { sink.bytesWritten })
        case .playback:
            preconditionFailure("\(target) plays raw samples: nothing is encoded for it")
        case .rtp(let destination):
            let sender = try destination.makeSender(codec: codec, tracer: options.tracer)
            sender.add(to: graph, input: frames)
            rtpSender = sender
            (sinkName, outputBytes) = (sender.name, { sender.statistics().payloadBytesSent })
        }
    }

    // MARK: Audio

    private func attachAudioOutput(_ codec: CodecName?, target outputTarget: OutputTarget, from input: Port<AudioFrame>, format: AudioFormat,
                                   registry: CodecRegistry) throws {
        var target = format
        target.sampleRate = options.sampleRate ?? format.sampleRate
        target.channels = options.channels ?? format.channels
        if let codec {
            let settings = AudioEncoderSettings(bitrate: options.bitrate ?? TranscodeOptions.defaultAudioBitrate)
            let (packets, encoder) = try EncodingStage.audio(input, format: target == format ? format : nil, in: graph, codec: codec,
                                                             named: options.encoderName, registry: registry, settings: settings,
                                                             fixedRate: options.sampleRate != nil, fixedChannels: options.channels != nil,
                                                             unknownTo: target)
            encoderStatistics = { encoder.statistics }
            try attachEncoded(packets, codec: codec, target: outputTarget, preSkip: { encoder.preSkip })
            lastNode = encoder
            return
        }
        let speaker: ALSAPlaybackNode? = if case .playback(let pcm) = outputTarget { try ALSAPlaybackNode(device: pcm) } else { nil }
        if let speaker {
            target = try EncodingStage.nearestFormat(to: target, in: speaker.inputCaps, rateIsFixed: options.sampleRate != nil,
                                                     channelsAreFixed: options.channels != nil)
                ?? { throw TranscodeError.incompatible(
                    "\(speaker.name) cannot take \(target.sampleRate) Hz, \(target.channels) channels (it takes \(speaker.inputCaps))") }()
        }
        let samples = target == format ? input : convert(input, through: AudioConvertNode(to: target))
        if let speaker {
            graph.add(speaker, input: samples)
            sinkName = speaker.name
            mediaSeconds = { Double(speaker.samplesWritten) / Double(target.sampleRate) }
            return
        }
        let sink = WAVFileSink(path: output)
        graph.add(sink, input: samples)
        sinkName = sink.name
        mediaSeconds = { Double(sink.samplesWritten) / Double(target.sampleRate) }
    }

    /// Changes the size and rate of the pictures encoded, while running (WebRTC's
    /// `adaptOutputFormat`): the encoder starts again at the new size with a keyframe. Needs
    /// `options.adaptable` (or `size` and `frameRate`), so that the scaler and frame-rate nodes are
    /// there; false when they are not. Safe from any thread.
    @discardableResult
    public func adaptOutputFormat(width: Int? = nil, height: Int? = nil, frameRate: Rational? = nil) -> Bool {
        guard let videoEncoder, options.adaptable || (options.size != nil && options.frameRate != nil) else { return false }
        graph.post(.outputFormatChange(width: width, height: height, frameRate: frameRate), to: videoEncoder)
        return true
    }

    /// The RTP stream sent, in W3C webrtc-stats terms (outbound-rtp), with the per-stage latencies
    /// when tracing; nil when the output is a file. Safe from any thread, while running and after.
    public func stats() -> OutboundRTPStreamStatistics? {
        guard let rtpSender else { return nil }
        return OutboundRTPStreamStatistics(ssrc: rtpSender.ssrc, session: rtpSender.statistics(), encoder: encoderStatistics(),
                                           latencies: options.tracer?.latencies())
    }

    /// Frames written so far; safe to read from another thread while running.
    public var framesDone: Int { graph.progress.first { $0.name == sinkName }?.itemsIn ?? 0 }

    /// The negotiated format read from the input, and the one written to the output.
    public private(set) var inputFormat: MediaFormat?
    public private(set) var outputFormat: MediaFormat?

    /// Runs to the end. Throws `GraphError` naming the failing node; the output written until then
    /// stays valid.
    public func run() throws -> TranscodeSummary {
        let report = try graph.run()
        return summary(report)
    }

    func summary(_ report: GraphReport) -> TranscodeSummary {
        let frames = report[sinkName]?.itemsIn ?? 0
        let duration = mediaSeconds?() ?? outputFormat?.video.map { Double(frames) / $0.frameRate.doubleValue } ?? 0
        let decoding = source.decoderStatistics()
        return TranscodeSummary(frames: frames, mediaDuration: duration, elapsed: report.elapsed.seconds,
                         outputPayloadBytes: outputBytes(), keyframes: encoderKeyframes(),
                         corruptFrames: decoding.corrupt, skippedFrames: decoding.skipped,
                         firstDecodeError: decoding.firstError)
    }
}

/// What a transcode did.
public struct TranscodeSummary: Sendable {
    /// Frames (video) or blocks (audio) written.
    public var frames: Int
    /// Seconds of media written.
    public var mediaDuration: Double
    /// Wall-clock seconds the run took.
    public var elapsed: Double
    /// Compressed bytes written, excluding container overhead (0 for raw outputs).
    public var outputPayloadBytes: Int
    public var keyframes: Int?
    public var corruptFrames: Int
    public var skippedFrames: Int
    public var firstDecodeError: String?

    public var framesPerSecond: Double { elapsed > 0 ? Double(frames) / elapsed : 0 }
    /// Compressed bits per second of media; 0 for raw outputs.
    public var bitrate: Double { mediaDuration > 0 ? Double(outputPayloadBytes) * 8 / mediaDuration : 0 }
}

extension TranscodeOptions {
    /// Parses a bitrate such as "800k", "2M", "1.5m" or "500000" into bits per second.
    public static func parseBitrate(_ text: String) -> Int? {
        let lower = text.lowercased()
        let multiplier: Double = lower.hasSuffix("k") ? 1e3 : lower.hasSuffix("m") ? 1e6 : 1
        let digits = multiplier == 1 ? lower : String(lower.dropLast())
        guard let value = Double(digits), value.isFinite, value > 0 else { return nil }
        let bits = (value * multiplier).rounded()
        return bits >= 1 && bits <= 1e10 ? Int(bits) : nil
    }
}
