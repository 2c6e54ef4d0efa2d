import MediaCore
import MediaFiles

/// Writes raw pictures to a YUV4MPEG2 file.
public final class Y4MFileSink: MediaSink {
    public let name: String
    public let path: String
    private var writer: Y4MWriter?
    public private(set) var framesWritten = 0

    public init(path: String, name: String = "y4m-writer") {
        self.path = path
        self.name = name
    }

    public var inputCaps: Caps { [.video(.exactly(.pixels(.i420)))] }
    public func start(input: MediaFormat, context: NodeContext) throws { writer = try Y4MWriter(path: path, format: input.video!) }

    public func consume(_ frame: VideoFrame) throws {
        try writer!.write(frame)
        framesWritten += 1
    }

    public func finish() throws { try writer?.close() }
    public func close() { try? writer?.close() }
}

/// Writes compressed pictures to an IVF file. The header's frame count is kept right however the
/// run ends (end of stream, an error elsewhere, cancellation), so the file stays playable.
public final class IVFFileSink: MediaSink {
    public let name: String
    public let path: String
    public let codecs: [CodecName]
    private var writer: IVFWriter?
    public private(set) var framesWritten = 0
    public private(set) var bytesWritten = 0

    public init(path: String, codecs: [CodecName] = [.vp8], name: String = "ivf-writer") {
        self.path = path
        self.codecs = codecs
        self.name = name
    }

    public var inputCaps: Caps { [.video(.oneOf(codecs.map { .compressed($0) }))] }

    public func start(input: MediaFormat, context: NodeContext) throws {
        let video = input.video!
        guard case .compressed(let codec) = video.encoding else { return }
        writer = try IVFWriter(path: path, codec: codec, width: video.width, height: video.height,
                               timebase: video.frameRate.reciprocal)
    }

    public func consume(_ frame: EncodedFrame) throws {
        try writer!.write(frame)
        framesWritten += 1
        bytesWritten += frame.byteCount
    }

    public func finish() throws { try writer?.close() }
    public func close() { try? writer?.close() }
}

/// Writes PCM audio to a WAV file; its sizes are patched however the run ends.
public final class WAVFileSink: MediaSink {
    public let name: String
    public let path: String
    private var writer: WAVWriter?
    public private(set) var samplesWritten = 0

    public init(path: String, name: String = "wav-writer") {
        self.path = path
        self.name = name
    }

    public var inputCaps: Caps { [.audio(.oneOf([.samples(.s16), .samples(.f32)]))] }
    public func start(input: MediaFormat, context: NodeContext) throws { writer = try WAVWriter(path: path, format: input.audio!) }

    public func consume(_ frame: AudioFrame) throws {
        try writer!.write(frame)
        samplesWritten += frame.sampleCount
    }

    public func finish() throws { try writer?.close() }
    public func close() { try? writer?.close() }
}
