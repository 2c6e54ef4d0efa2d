import Glibc

/// File formats Sluice reads and writes, chosen by file extension.
public enum Container: String, Sendable, CaseIterable {
    case y4m, ivf, wav

    public init(path: String) throws {
        let ext = path.split(separator: "/").last?.split(separator: ".").last.map { $0.lowercased() } ?? ""
        guard path.contains("."), let container = Container(rawValue: ext) else {
            throw TranscodeError.unknownContainer(path: path)
        }
        self = container
    }

    /// The codec a container holds when written by Sluice, or nil for raw containers.
    public var defaultCodec: CodecName? { self == .ivf ? .vp8 : nil }
    public var isVideo: Bool { self != .wav }
}

/// What a transcode should do beyond the choice of files.
public struct TranscodeOptions: Sendable {
    /// Output codec; defaults to the container's (VP8 for IVF).
    public var codec: CodecName?
    /// Encoder provider to use, e.g. "libvpx"; defaults to the registry's preferred one.
    public var encoderName: String?
    public var bitrate = 800_000
    public var keyframeInterval: Int?
    /// Stop after this many frames.
    public var maxFrames: Int?
    /// Codec worker threads.
    public var threads = 1
    /// Output picture size; pictures are scaled (libyuv) when it differs from the input's.
    public var size: (width: Int, height: Int)?
    /// Output frame rate; pictures are dropped or repeated by their timestamps to reach it.
    public var frameRate: Rational?

    public init() {}
}

public enum TranscodeError: Error, CustomStringConvertible, Equatable {
    case unknownContainer(path: String)
    case incompatible(String)

    public var description: String {
        switch self {
        case .unknownContainer(let path):
            let known = Container.allCases.map { "." + $0.rawValue }.joined(separator: ", ")
            return "\(path): unknown file type (known: \(known))"
        case .incompatible(let text): return text
        }
    }
}

/// A file-to-file pipeline: source, decoder if the input is compressed, encoder if the output is,
/// sink. Formats are negotiated when it is made, so a bad combination fails before any work.
public final class Transcoder: @unchecked Sendable {
    public let input: String
    public let output: String
    public let options: TranscodeOptions
    public let graph = Graph()
    /// Frames the input holds, when that can be known up front (for progress).
    public private(set) var expectedFrames: Int?
    /// The pool raw input pictures come from (Y4M input only).
    public private(set) var sourcePool: BufferPool?
    private(set) var decoder: VideoDecoderNode?
    private(set) var encoder: VideoEncoderNode?
    private var sinkName = ""
    private var firstNode: (any MediaNode)?
    private var lastNode: (any MediaNode)?
    private var outputBytes: () -> Int = { 0 }
    private var mediaSeconds: (() -> Double)?

    public init(input: String, output: String, options: TranscodeOptions = TranscodeOptions(),
                registry: CodecRegistry = .builtIn) throws {
        self.input = input
        self.output = output
        self.options = options
        let from = try Container(path: input), to = try Container(path: output)
        if let inputPath = Self.canonicalPath(input), inputPath == Self.canonicalPath(output) {
            throw TranscodeError.incompatible("\(output): output would overwrite the input")
        }
        guard from.isVideo == to.isVideo else {
            throw TranscodeError.incompatible("cannot transcode \(from.isVideo ? "video" : "audio") (\(input)) to \(to.isVideo ? "video" : "audio") (\(output))")
        }
        if from.isVideo {
            try attachVideoOutput(to, from: try videoInput(from, registry: registry), registry: registry)
        } else {
            let source = try WAVFileSource(path: input, maxFrames: options.maxFrames)
            let sink = WAVFileSink(path: output)
            graph.add(sink, input: graph.add(source))
            (firstNode, lastNode) = (source, source)
            sinkName = sink.name
            mediaSeconds = { Double(sink.samplesWritten) / Double(source.reader.format.sampleRate) }
        }
        try graph.build()
        inputFormat = firstNode.flatMap { graph.outputFormat(of: $0) }
        outputFormat = lastNode.flatMap { graph.outputFormat(of: $0) }
    }

    /// The absolute path without links, or nil when the file does not exist.
    static func canonicalPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private func videoInput(_ container: Container, registry: CodecRegistry) throws -> Port<VideoFrame> {
        if container == .y4m {
            let source = try Y4MFileSource(path: input, maxFrames: options.maxFrames)
            sourcePool = source.pool
            let format = source.reader.format
            let frameBytes = format.width * format.height + 2 * ((format.width + 1) / 2) * ((format.height + 1) / 2) + 6
            var info = stat()
            if stat(input, &info) == 0 { expectedFrames = Int(info.st_size) / frameBytes }
            expectedFrames = min(expectedFrames ?? .max, options.maxFrames ?? .max)
            (firstNode, lastNode) = (source, source)
            return graph.add(source)
        }
        let source = try IVFFileSource(path: input, maxFrames: options.maxFrames)
        if source.reader.header.frameCount > 0 {
            expectedFrames = min(source.reader.header.frameCount, options.maxFrames ?? .max)
        }
        let decoder = VideoDecoderNode(try registry.videoDecoder(for: source.reader.header.codec), threads: options.threads)
        self.decoder = decoder
        (firstNode, lastNode) = (source, decoder)
        return graph.add(decoder, input: graph.add(source))
    }

    private func attachVideoOutput(_ container: Container, from input: Port<VideoFrame>, registry: CodecRegistry) throws {
        var pictures = input
        if let rate = options.frameRate {
            let node = try FrameRateNode(rate: rate)
            pictures = graph.add(node, input: pictures)
            lastNode = node
        }
        if let size = options.size {
            let node = try VideoScalerNode(width: size.width, height: size.height)
            pictures = graph.add(node, input: pictures)
            lastNode = node
        }
        if container == .y4m {
            let sink = Y4MFileSink(path: output)
            graph.add(sink, input: pictures)
            sinkName = sink.name
            return
        }
        let codec = options.codec ?? container.defaultCodec!
        let settings = VideoEncoderSettings(bitrate: options.bitrate, keyframeInterval: options.keyframeInterval,
                                            threads: options.threads)
        let encoder = VideoEncoderNode(try registry.videoEncoder(for: codec, named: options.encoderName), settings: settings)
        let sink = IVFFileSink(path: output, codecs: [codec])
        graph.add(sink, input: graph.add(encoder, input: pictures))
        self.encoder = encoder
        lastNode = encoder
        sinkName = sink.name
        outputBytes = { sink.bytesWritten }
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
        return TranscodeSummary(frames: frames, mediaDuration: duration, elapsed: report.elapsed.seconds,
                         outputPayloadBytes: outputBytes(), keyframes: encoder?.keyframes,
                         corruptFrames: decoder?.corruptFrames ?? 0, skippedFrames: decoder?.skippedFrames ?? 0,
                         firstDecodeError: decoder?.firstError)
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
