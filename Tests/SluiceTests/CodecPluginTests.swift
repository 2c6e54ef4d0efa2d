import Foundation
import Sluice
import Testing
import TestSupport

/// A codec defined outside Sluice, as an application would: uncompressed I420 in a packed layout
/// under its own codec name. It shows that the registry and the codec nodes take plug-ins.
struct PackedI420EncoderProvider: VideoEncoderProvider {
    let name = "test-packed"
    let codec: CodecName = "PACKED-I420"
    var inputCaps: Caps { [.video(.exactly(.pixels(.i420)))] }

    final class Encoder: VideoEncoder {
        let pool = BufferPool(name: "packed")
        func encode(_ frame: VideoFrame, forceKeyframe: Bool, emit: (EncodedFrame) throws -> Void) throws {
            let bytes = TestSupport.packed(frame)
            try bytes.withUnsafeBytes {
                try emit(EncodedFrame(codec: "PACKED-I420", isKeyframe: true, pts: frame.pts, copying: $0, pool: pool))
            }
        }
        func flush(emit: (EncodedFrame) throws -> Void) throws {}
        func setBitrate(_ bitsPerSecond: Int) throws {}
    }

    func makeEncoder(format: VideoFormat, settings: VideoEncoderSettings) throws -> any VideoEncoder { Encoder() }
}

struct PackedI420DecoderProvider: VideoDecoderProvider {
    let name = "test-packed"
    let codec: CodecName = "PACKED-I420"

    func outputCaps(for input: VideoFormat) -> Caps {
        Caps(.video(VideoFormat(encoding: .pixels(.i420), width: input.width, height: input.height, frameRate: input.frameRate)))
    }

    final class Decoder: VideoDecoder {
        let format: VideoFormat
        let pool = BufferPool(name: "unpacked")
        init(format: VideoFormat) { self.format = format }
        func decode(_ frame: EncodedFrame, emit: (VideoFrame) throws -> Void) throws {
            let picture = VideoFrame(width: format.width, height: format.height, pts: frame.pts, pool: pool)
            var offset = 0
            for plane in 0..<3 {
                for row in 0..<picture.layout[plane].rows {
                    let line = picture.row(row, ofPlane: plane)
                    guard offset + line.count <= frame.byteCount else {
                        throw CodecError.library(name: "test-packed", operation: "decode", code: -1, message: "short frame")
                    }
                    line.copyMemory(from: UnsafeRawBufferPointer(rebasing: frame.bytes[offset..<(offset + line.count)]))
                    offset += line.count
                }
            }
            try emit(picture)
        }
        func flush(emit: (VideoFrame) throws -> Void) throws {}
    }

    func makeDecoder(format: VideoFormat, threads: Int) throws -> any VideoDecoder { Decoder(format: format) }
}

/// Hands out prepared pictures, all of the first one's pixel format and size.
final class PicturesSource: MediaSource {
    let name = "pictures"
    var pictures: [VideoFrame]
    init(_ pictures: [VideoFrame]) { self.pictures = pictures }
    func outputCaps() throws -> Caps {
        Caps(.video(VideoFormat(encoding: .pixels(pictures[0].pixelFormat), width: pictures[0].width,
                                height: pictures[0].height, frameRate: Rational(25, 1))))
    }
    func start(output: MediaFormat, context: NodeContext) throws {}
    func produce() throws -> Production<VideoFrame> { pictures.isEmpty ? .end : .item(pictures.removeFirst()) }
}

final class PicturesSink: MediaSink {
    let name = "received"
    var pictures: [VideoFrame] = []
    var inputCaps: Caps { [.video(.exactly(.pixels(.i420)))] }
    func start(input: MediaFormat, context: NodeContext) throws {}
    func consume(_ item: VideoFrame) throws { pictures.append(item) }
    func finish() throws {}
}

@Suite struct CodecPluginTests {
    @Test func registryOrderIsPreferenceAndPreferMovesAProviderFirst() throws {
        var registry = CodecRegistry.builtIn
        registry.register(PackedI420EncoderProvider())
        registry.register(PackedI420DecoderProvider())
        #expect(try registry.videoEncoder(for: "packed-i420").name == "test-packed")
        #expect(try registry.videoEncoder(for: .vp8).name == "libvpx")
        #expect(registry.videoEncoders.last?.name == "test-packed")
        registry.prefer("test-packed")
        #expect(registry.videoEncoders.first?.name == "test-packed")
        #expect(registry.videoDecoders.first?.name == "test-packed")
        #expect(throws: CodecError.noProvider("AV1", role: "video encoder")) { try registry.videoEncoder(for: "AV1") }
        #expect(throws: CodecError.self) { try registry.videoEncoder(for: .vp8, named: "test-packed") }
    }

    @Test func aPluginCodecRunsThroughTheGraphLikeABuiltInOne() throws {
        var registry = CodecRegistry.builtIn
        registry.register(PackedI420EncoderProvider())
        registry.register(PackedI420DecoderProvider())
        let pictures = try TestSupport.sampleFrames(count: 10, width: 160, height: 120, pool: BufferPool(name: "in"))
        let graph = Graph()
        let sink = PicturesSink()
        let encoded = graph.add(VideoEncoderNode(try registry.videoEncoder(for: "PACKED-I420"), settings: VideoEncoderSettings()),
                                input: graph.add(PicturesSource(pictures)))
        graph.add(sink, input: graph.add(VideoDecoderNode(try registry.videoDecoder(for: "PACKED-I420")), input: encoded))
        try graph.run()
        #expect(sink.pictures.count == 10)
        for (a, b) in zip(pictures, sink.pictures) { #expect(PictureQuality.psnr(a, b) == .infinity) }
    }
}
