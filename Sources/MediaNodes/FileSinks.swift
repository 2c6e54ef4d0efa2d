import MediaCore
import MediaFiles

/// A file writer a `FileSink` can drive: it takes one kind of frame and completes the file on `close()`.
public protocol MediaFileWriting: AnyObject {
    associatedtype Frame: MediaPayload
    func write(_ frame: Frame) throws
    /// Makes the file complete and valid; later calls do nothing.
    func close() throws
}

extension Y4MWriter: MediaFileWriting {}
extension IVFWriter: MediaFileWriting {}
extension WAVWriter: MediaFileWriting {}
extension AnnexBWriter: MediaFileWriting {}
extension OggOpusWriter: MediaFileWriting {}

/// Writes every item that reaches it to a file. The file is created when the graph starts, from
/// the negotiated format, and closed however the run ends (end of stream, an error elsewhere,
/// cancellation); every writer keeps its file valid up to the last frame written.
public final class FileSink<Writer: MediaFileWriting>: MediaSink {
    public let name: String
    public let path: String
    public let inputCaps: Caps
    private let open: (MediaFormat) throws -> Writer
    private let payloadBytes: (Writer.Frame) -> Int
    /// The writer, once the graph has started.
    public private(set) var writer: Writer?
    public private(set) var framesWritten = 0
    /// Compressed bytes written, without container overhead (0 for raw media).
    public private(set) var bytesWritten = 0

    /// A sink accepting `inputCaps`, whose writer `open` creates from the negotiated format.
    /// `payloadBytes` measures a frame for `bytesWritten`.
    public init(path: String, name: String, inputCaps: Caps, payloadBytes: @escaping (Writer.Frame) -> Int = { _ in 0 },
                open: @escaping (MediaFormat) throws -> Writer) {
        self.path = path
        self.name = name
        self.inputCaps = inputCaps
        self.payloadBytes = payloadBytes
        self.open = open
    }

    public func start(input: MediaFormat, context: NodeContext) throws { writer = try open(input) }

    public func consume(_ frame: Writer.Frame) throws {
        try writer!.write(frame)
        framesWritten += 1
        bytesWritten += payloadBytes(frame)
    }

    public func finish() throws { try writer?.close() }
    public func close() { try? writer?.close() }
}

/// Raw pictures to a YUV4MPEG2 file.
public typealias Y4MFileSink = FileSink<Y4MWriter>
/// Compressed pictures to an IVF file, whose header's frame count stays right however the run ends.
public typealias IVFFileSink = FileSink<IVFWriter>
/// PCM audio to a WAV file, whose sizes are patched however the run ends.
public typealias WAVFileSink = FileSink<WAVWriter>
/// H.264 access units to a raw Annex-B `.h264` file.
public typealias AnnexBFileSink = FileSink<AnnexBWriter>
/// Opus packets to an Ogg Opus `.opus` file.
public typealias OggOpusFileSink = FileSink<OggOpusWriter>

extension FileSink where Writer == Y4MWriter {
    public convenience init(path: String, name: String = "y4m-writer") {
        self.init(path: path, name: name, inputCaps: [.video(.exactly(.pixels(.i420)))]) {
            try Y4MWriter(path: path, format: $0.video!)
        }
    }
}

extension FileSink where Writer == IVFWriter {
    public convenience init(path: String, codecs: [CodecName] = [.vp8], name: String = "ivf-writer") {
        self.init(path: path, name: name, inputCaps: [.video(.oneOf(codecs.map { .compressed($0) }))],
                  payloadBytes: { $0.byteCount }) { format in
            let video = format.video!
            guard case .compressed(let codec) = video.encoding else { preconditionFailure("caps admit compressed video only") }
            return try IVFWriter(path: path, codec: codec, width: video.width, height: video.height,
                                 timebase: video.frameRate.reciprocal)
        }
    }
}

extension FileSink where Writer == WAVWriter {
    public convenience init(path: String, name: String = "wav-writer") {
        self.init(path: path, name: name, inputCaps: [.audio(.oneOf([.samples(.s16), .samples(.f32)]))]) {
            try WAVWriter(path: path, format: $0.audio!)
        }
    }

    /// Samples per channel written so far.
    public var samplesWritten: Int { writer?.samplesWritten ?? 0 }
}

extension FileSink where Writer == AnnexBWriter {
    public convenience init(path: String, name: String = "h264-writer") {
        self.init(path: path, name: name, inputCaps: [.video(.exactly(.compressed(.h264)))],
                  payloadBytes: { $0.byteCount }) { _ in try AnnexBWriter(path: path) }
    }
}

extension FileSink where Writer == OggOpusWriter {
    /// `preSkip` is asked for when the graph starts, after the nodes upstream have started: pass
    /// the encoder's (`AudioEncoderNode.preSkip`), or the pre-skip of the Opus stream being copied.
    public convenience init(path: String, preSkip: @escaping () -> Int, name: String = "opus-writer") {
        self.init(path: path, name: name, inputCaps: [.audio(.exactly(.compressed(.opus)), channels: .range(1...2))],
                  payloadBytes: { $0.byteCount }) { format in
            let audio = format.audio!
            return try OggOpusWriter(path: path, channels: audio.channels, inputSampleRate: audio.sampleRate,
                                     preSkip: preSkip())
        }
    }
}
