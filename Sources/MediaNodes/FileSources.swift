import MediaCore
import MediaFiles

/// Reads raw pictures from a YUV4MPEG2 file.
public final class Y4MFileSource: MediaSource {
    public let name: String
    public let reader: Y4MReader
    /// Where the pictures' storage comes from (and returns to).
    public let pool: BufferPool
    private var pacer: SourcePacer<VideoFrame>

    /// Opens `path` and reads its header; fails with a `MediaFileError` naming the file.
    public init(path: String, maxFrames: Int? = nil, pacing: Pacing = .asFastAsPossible, name: String = "y4m-reader") throws {
        self.name = name
        pool = BufferPool(name: path)
        reader = try Y4MReader(path: path, pool: pool)
        pacer = SourcePacer(pacing: pacing, limit: maxFrames)
    }

    public func outputCaps() throws -> Caps { Caps(.video(reader.format)) }
    public func start(output: MediaFormat, context: NodeContext) throws { pacer.start(context: context) }
    public func produce() throws -> Production<VideoFrame> { try pacer.next { try reader.next() } }
}

/// Reads compressed pictures from an IVF file.
///
/// IVF headers carry a timebase but no frame rate; the rate is taken from the first two frames'
/// timestamps (or the timebase itself for a single-frame file).
public final class IVFFileSource: MediaSource {
    public let name: String
    public let reader: IVFReader
    public let format: VideoFormat
    private let pool = BufferPool(name: "ivf")
    private var lookahead: [EncodedFrame] = []
    private var lookaheadError: (any Error)?
    private var pacer: SourcePacer<EncodedFrame>

    public init(path: String, maxFrames: Int? = nil, pacing: Pacing = .asFastAsPossible, name: String = "ivf-reader") throws {
        self.name = name
        reader = try IVFReader(path: path)
        pacer = SourcePacer(pacing: pacing, limit: maxFrames)
        // Read ahead two frames to learn the frame rate; an error surfaces when its frame is due.
        do {
            while lookahead.count < 2, let frame = try reader.next(pool: pool) { lookahead.append(frame) }
        } catch {
            lookaheadError = error
        }
        let header = reader.header
        var rate = header.timebase.reciprocal
        if lookahead.count == 2 {
            let step = lookahead[1].pts - lookahead[0].pts
            if step.value > 0 { rate = Rational(step.timebase.denominator, Int(step.value) * step.timebase.numerator) }
        }
        if rate > Rational(240, 1) || rate <= Rational(0, 1) { rate = Rational(30, 1) }
        format = VideoFormat(encoding: .compressed(header.codec), width: header.width, height: header.height, frameRate: rate)
    }

    public func outputCaps() throws -> Caps { Caps(.video(format)) }
    public func start(output: MediaFormat, context: NodeContext) throws { pacer.start(context: context) }

    public func produce() throws -> Production<EncodedFrame> {
        try pacer.next {
            if !lookahead.isEmpty { return lookahead.removeFirst() }
            if let error = lookaheadError {
                lookaheadError = nil
                throw error
            }
            return try reader.next(pool: pool)
        }
    }
}

/// Reads PCM audio from a WAV file in blocks of `samplesPerFrame`.
public final class WAVFileSource: MediaSource {
    public let name: String
    public let reader: WAVReader
    public let samplesPerFrame: Int
    private var pacer: SourcePacer<AudioFrame>

    public init(path: String, samplesPerFrame: Int = 960, maxFrames: Int? = nil, pacing: Pacing = .asFastAsPossible,
                name: String = "wav-reader") throws {
        self.name = name
        self.samplesPerFrame = samplesPerFrame
        reader = try WAVReader(path: path, pool: BufferPool(name: path))
        pacer = SourcePacer(pacing: pacing, limit: maxFrames)
    }

    public func outputCaps() throws -> Caps { Caps(.audio(reader.format)) }
    public func start(output: MediaFormat, context: NodeContext) throws { pacer.start(context: context) }

    public func produce() throws -> Production<AudioFrame> {
        try pacer.next { try reader.next(maxSamples: samplesPerFrame) }
    }
}

/// Reads H.264 access units from a raw Annex-B `.h264` file. Such a file has no timestamps: access
/// units are timed at `frameRate` (given, else the stream's VUI timing, else 25 fps; see `AnnexBReader`).
public final class AnnexBFileSource: MediaSource {
    public let name: String
    public let reader: AnnexBReader
    public let format: VideoFormat
    private let pool = BufferPool(name: "h264")
    private var pacer: SourcePacer<EncodedFrame>

    public init(path: String, frameRate: Rational? = nil, maxFrames: Int? = nil, pacing: Pacing = .asFastAsPossible,
                name: String = "h264-reader") throws {
        self.name = name
        reader = try AnnexBReader(path: path, frameRate: frameRate)
        format = VideoFormat(encoding: .compressed(.h264), width: reader.width, height: reader.height,
                             frameRate: reader.frameRate)
        pacer = SourcePacer(pacing: pacing, limit: maxFrames)
    }

    public func outputCaps() throws -> Caps { Caps(.video(format)) }
    public func start(output: MediaFormat, context: NodeContext) throws { pacer.start(context: context) }
    public func produce() throws -> Production<EncodedFrame> { try pacer.next { try reader.next(pool: pool) } }
}

/// Reads the Opus packets of an Ogg Opus `.opus` file, timed in 48 kHz ticks with the pre-skip
/// included; a decoder drops `preSkip` samples from the start (`AudioDecoderNode(preSkip:)`).
public final class OggOpusFileSource: MediaSource {
    public let name: String
    public let reader: OggOpusReader
    public let format: AudioFormat
    private let pool = BufferPool(name: "opus")
    private var pacer: SourcePacer<EncodedFrame>

    public init(path: String, maxFrames: Int? = nil, pacing: Pacing = .asFastAsPossible,
                name: String = "opus-reader") throws {
        self.name = name
        reader = try OggOpusReader(path: path)
        format = AudioFormat(encoding: .compressed(.opus), sampleRate: 48_000, channels: reader.header.channels)
        pacer = SourcePacer(pacing: pacing, limit: maxFrames)
    }

    /// Samples (at 48 kHz) of encoder delay at the start of the stream.
    public var preSkip: Int { reader.header.preSkip }

    public func outputCaps() throws -> Caps { Caps(.audio(format)) }
    public func start(output: MediaFormat, context: NodeContext) throws { pacer.start(context: context) }
    public func produce() throws -> Production<EncodedFrame> { try pacer.next { try reader.next(pool: pool) } }
}
