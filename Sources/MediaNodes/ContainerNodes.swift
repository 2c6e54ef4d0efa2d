import MediaContainers
import MediaCore
import MediaFiles

/// Reads the encoded frames of one stream of a container file (MP4/MOV, WebM, Matroska, Ogg) with
/// the file's timestamps. Sources of several streams of one file share its `ContainerDemuxer`.
public final class ContainerFileSource: MediaSource {
    public let name: String
    public let demuxer: ContainerDemuxer
    public let stream: ContainerStream
    public let format: MediaFormat
    private var pacer: SourcePacer<EncodedFrame>
    private let endTime: Double?

    /// The first stream of `kind` in `path` (a file of its own; share a demuxer for several streams).
    public convenience init(path: String, kind: ContainerStream.Kind, maxFrames: Int? = nil,
                            pacing: Pacing = .asFastAsPossible, name: String? = nil) throws {
        let demuxer = try ContainerDemuxer(path: path)
        try self.init(demuxer: demuxer, stream: try demuxer.reader.firstStream(kind), maxFrames: maxFrames,
                      pacing: pacing, name: name)
    }

    /// The stream `stream` of `demuxer`'s file, which must be in a codec Sluice reads. `endTime`:
    /// seconds at which the stream is cut (the frames starting before it are read), e.g. to end audio
    /// with video limited to a number of frames.
    public init(demuxer: ContainerDemuxer, stream: ContainerStream, maxFrames: Int? = nil, endTime: Double? = nil,
                pacing: Pacing = .asFastAsPossible, name: String? = nil) throws {
        self.endTime = endTime
        guard let codec = stream.codec else {
            throw MediaFileError.unsupported(path: demuxer.path, detail: "stream \(stream.index) is \(stream.codecName), which Sluice does not read")
        }
        self.name = name ?? "container-\(stream.kind)-reader"
        self.demuxer = demuxer
        self.stream = stream
        switch stream.kind {
        case .video:
            var rate = stream.frameRate ?? Rational(30, 1)
            if rate > Rational(240, 1) { rate = Rational(30, 1) }
            format = .video(VideoFormat(encoding: .compressed(codec), width: stream.width, height: stream.height, frameRate: rate))
        case .audio:
            format = .audio(AudioFormat(encoding: .compressed(codec), sampleRate: codec == .opus ? 48_000 : stream.sampleRate,
                                        channels: stream.channels))
        case .other:
            preconditionFailure("a stream with a Sluice codec is video or audio")
        }
        pacer = SourcePacer(pacing: pacing, limit: maxFrames)
        demuxer.claim(stream.index)
    }

    public func outputCaps() throws -> Caps { Caps(format) }
    public func start(output: MediaFormat, context: NodeContext) throws { pacer.start(context: context) }
    /// How long a source whose stream runs ahead of the others' (`ContainerDemuxer.mustWait`) waits.
    static let catchUpWait = ClockTime.milliseconds(5)

    public func produce() throws -> Production<EncodedFrame> {
        if demuxer.mustWait(for: stream.index) { return .wait(until: pacer.clock.now + Self.catchUpWait) }
        return try pacer.next {
            guard let frame = try demuxer.next(stream: stream.index) else { return nil }
            if let endTime, frame.pts.seconds >= endTime { return nil }
            return frame
        }
    }
}

/// Writes encoded frames as one track of a container file (MP4, WebM, Matroska). Sinks of several
/// tracks of one file share its `ContainerWriter`, which interleaves them by timestamp; the file is
/// finished when every track has ended, and closed (trailer written) however the run ends.
public final class ContainerFileSink: MediaSink {
    public let name: String
    public let writer: ContainerWriter
    public let inputCaps: Caps
    private let preSkip: () -> Int
    private var track: Int?
    public private(set) var framesWritten = 0
    /// Compressed bytes written, without container overhead.
    public private(set) var bytesWritten = 0
    /// Duration of what was written (last end minus first start).
    public private(set) var first: MediaTime?
    public private(set) var last: MediaTime?

    /// A track of `writer` for video or audio in the codecs its format takes. `preSkip` is asked for
    /// when the graph starts: the Opus encoder's (`AudioEncoderNode.preSkip`) or the copied stream's.
    public init(writer: ContainerWriter, kind: ContainerStream.Kind, preSkip: @escaping () -> Int = { 0 }, name: String? = nil) {
        self.writer = writer
        self.name = name ?? "container-\(kind)-writer"
        self.preSkip = preSkip
        let codecs = writer.format.codecs.filter { ($0 == .opus) == (kind == .audio) }
        inputCaps = kind == .audio ? [.audio(.oneOf(codecs.map { .compressed($0) }), channels: .range(1...2))]
            : [.video(.oneOf(codecs.map { .compressed($0) }))]
    }

    public func start(input: MediaFormat, context: NodeContext) throws {
        if let video = input.video, case .compressed(let codec) = video.encoding {
            track = try writer.addTrack(.video(codec: codec, width: video.width, height: video.height))
        } else if let audio = input.audio, case .compressed(let codec) = audio.encoding {
            track = try writer.addTrack(.audio(codec: codec, sampleRate: audio.sampleRate, channels: audio.channels,
                                               preSkip: preSkip()))
        }
    }

    public func consume(_ frame: EncodedFrame) throws {
        try writer.write(frame, track: track!)
        framesWritten += 1
        bytesWritten += frame.byteCount
        if first == nil { first = frame.pts }
        last = frame.pts + (frame.duration ?? .zero(frame.pts.timebase))
    }

    /// Seconds from the first frame's start to the last one's end.
    public var mediaSeconds: Double { first.flatMap { first in last.map { ($0 - first).seconds } } ?? 0 }

    public func finish() throws { if let track { try writer.endTrack(track) } }
    public func close() { try? writer.close() }
}

/// The tracks of a call received over RTP recorded into one container file: one `ContainerWriter`,
/// which interleaves them by time, and a `ContainerFileSink` per track in the graph that receives it.
/// What `sluice receive` and `sluice serve --record-format webm|mkv|mp4` write.
public final class ContainerRecording: Sendable {
    /// RTP does not carry Opus's encoder delay (RFC 7587): libopus's usual 312 samples are assumed.
    public static let opusPreSkip = 312

    public let writer: ContainerWriter

    /// Creates `path` (its extension gives the format unless `format` does) for `trackCount` tracks.
    public init(path: String, format: ContainerFormat? = nil, trackCount: Int) throws {
        writer = try ContainerWriter(path: path, format: format, trackCount: trackCount)
    }

    /// Adds to `graph` the sink writing `frames` as a track of `kind`; returns its name in the graph.
    @discardableResult
    public func record(_ frames: Port<EncodedFrame>, kind: ContainerStream.Kind, in graph: Graph) -> String {
        let sink = ContainerFileSink(writer: writer, kind: kind, preSkip: { Self.opusPreSkip })
        graph.add(sink, input: frames)
        return sink.name
    }
}
