import Foundation
import Sluice
import Testing
import TestSupport

/// Camera-style raw pictures (NV12, YUY2, UYVY) through `PixelFormatConverterNode` in a graph.
@Suite struct PixelFormatGraphTests {
    static let (width, height, count) = (160, 120, 12)

    /// The sample clip as `format` pictures made by ffmpeg (`pixFmt` is ffmpeg's name for it), and the
    /// same pictures as ffmpeg converts them back to I420.
    func pictures(_ format: PixelFormat, pixFmt: String) throws -> (source: [VideoFrame], reference: [VideoFrame]) {
        let pool = BufferPool(name: "camera")
        let (w, h, n) = (Self.width, Self.height, Self.count)
        return try TestSupport.withTemporaryDirectory { folder in
            let raw = folder.file("camera.raw")
            try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=\(w):\(h)", "-frames:v", "\(n)",
                                    "-pix_fmt", pixFmt, "-f", "rawvideo", raw])
            let back = try TestSupport.ffmpeg(["-f", "rawvideo", "-pix_fmt", pixFmt, "-s", "\(w)x\(h)", "-i", raw,
                                               "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]).stdout
            let bytes = try Data(contentsOf: URL(fileURLWithPath: raw))
            return (try Samples.unpackAll(bytes, pixelFormat: format, count: n, width: w, height: h, pool: pool),
                    try Samples.unpackAll(back, count: n, width: w, height: h, pool: pool))
        }
    }

    @Test func nv12SourceReachesAnI420SinkThroughTheConverter() throws {
        let (source, reference) = try pictures(.nv12, pixFmt: "nv12")
        let graph = Graph()
        let sink = picturesSink()
        graph.add(sink, input: graph.add(try PixelFormatConverterNode(), input: graph.add(picturesSource(source))))
        try graph.run()
        #expect(sink.items.count == Self.count)
        #expect(sink.items.allSatisfy { $0.pixelFormat == .i420 })
        #expect(sink.items.map(\.pts) == source.map(\.pts))
        for (got, expected) in zip(sink.items, reference) { #expect(TestSupport.packed(got) == TestSupport.packed(expected)) }
    }

    @Test(arguments: [(PixelFormat.yuy2, "yuyv422"), (.uyvy, "uyvy422"), (.nv12, "nv12")])
    func cameraFormatsFeedAnI420OnlyEncoderThroughTheConverter(format: PixelFormat, pixFmt: String) throws {
        let (source, reference) = try pictures(format, pixFmt: pixFmt)
        let registry = CodecRegistry.builtIn
        let graph = Graph()
        let sink = picturesSink()
        let converted = graph.add(try PixelFormatConverterNode(), input: graph.add(picturesSource(source)))
        let encoded = graph.add(VideoEncoderNode(try registry.videoEncoder(for: .vp8), settings: VideoEncoderSettings()),
                                input: converted)
        graph.add(sink, input: graph.add(VideoDecoderNode(try registry.videoDecoder(for: .vp8)), input: encoded))
        try graph.run()
        #expect(sink.items.count == Self.count)
        let psnr = zip(reference, sink.items).map { PictureQuality.psnr($0, $1) }.min() ?? 0
        print("\(format) -> I420 -> VP8 at 800 kbit/s, 160x120: lowest PSNR \(psnr) dB")
        #expect(psnr > 30)
    }

    @Test func withoutTheConverterAnNV12SourceCannotFeedAnI420Encoder() throws {
        let (source, _) = try pictures(.nv12, pixFmt: "nv12")
        let graph = Graph()
        let encoder = VideoEncoderNode(try CodecRegistry.builtIn.videoEncoder(for: .vp8), settings: VideoEncoderSettings())
        graph.add(picturesSink(), input: graph.add(VideoDecoderNode(try CodecRegistry.builtIn.videoDecoder(for: .vp8)),
                                                   input: graph.add(encoder, input: graph.add(picturesSource(source)))))
        #expect {
            try graph.build()
        } throws: { error in
            guard case GraphError.incompatibleFormats(let up, _, let down, _) = error else { return false }
            return up == "pictures" && down == encoder.name
        }
    }

    @Test func aPictureOtherThanTheNegotiatedOneStopsTheGraphWithANamedError() throws {
        var (source, _) = try pictures(.nv12, pixFmt: "nv12")
        // A YUY2 picture in the middle of an NV12 stream.
        source.insert(VideoFrame(pixelFormat: .yuy2, width: Self.width, height: Self.height, pts: source[3].pts,
                                 pool: BufferPool(name: "stray")), at: 3)
        let graph = Graph()
        graph.add(picturesSink(), input: graph.add(try PixelFormatConverterNode(name: "to-i420"),
                                                   input: graph.add(picturesSource(source))))
        #expect {
            try graph.run()
        } throws: { error in
            guard case GraphError.nodeFailed("to-i420", let cause) = error,
                  case ConversionError.unexpectedPicture(let expected, let actual) = cause else { return false }
            return expected == "NV12 160x120" && actual == "YUY2 160x120"
        }
    }
}

/// Hands out compressed frames of one format.
final class EncodedFramesSource: MediaSource {
    let name = "camera"
    let format: VideoFormat
    var frames: [EncodedFrame]
    init(_ frames: [EncodedFrame], format: VideoFormat) {
        self.frames = frames
        self.format = format
    }
    func outputCaps() throws -> Caps { Caps(.video(format)) }
    func start(output: MediaFormat, context: NodeContext) throws {}
    func produce() throws -> Production<EncodedFrame> { frames.isEmpty ? .end : .item(frames.removeFirst()) }
}

/// A camera's MJPEG stream through the built-in registry's decoder in a graph.
@Suite struct MJPEGGraphTests {
    /// Camera-style 4:2:2 JPEGs (GStreamer's libjpeg writes the sampling factors cameras use), one
    /// damaged in the middle: the decoder node drops and counts it and carries on, since every
    /// MJPEG frame is a keyframe.
    @Test func cameraMJPEGDecodesThroughTheRegistrysDecoderNode() throws {
        let (width, height, count) = (160, 120, 10)
        let (jpegs, theirs) = try Samples.jpegs(count: count, width: width, height: height, pixelFormat: "Y42B",
                                                encoder: .gstreamer, decodedAs: "yuv420p")
        let references = try Samples.unpackAll(theirs, count: count, width: width, height: height, pool: BufferPool(name: "ref"))
        var frames = jpegs.enumerated().map { index, jpeg in
            jpeg.withUnsafeBytes {
                EncodedFrame(codec: .mjpeg, isKeyframe: true, pts: MediaTime(Int64(index), timebase: Samples.timebase),
                             copying: $0, pool: nil)
            }
        }
        frames[4] = jpegs[4].prefix(jpegs[4].count / 2).withUnsafeBytes {  // cut short: no EOI
            EncodedFrame(codec: .mjpeg, isKeyframe: true, pts: frames[4].pts, copying: $0, pool: nil)
        }
        let format = VideoFormat(encoding: .compressed(.mjpeg), width: width, height: height, frameRate: Samples.frameRate)
        let decoder = VideoDecoderNode(try CodecRegistry.builtIn.videoDecoder(for: .mjpeg))
        let sink = picturesSink()
        let graph = Graph()
        graph.add(sink, input: graph.add(decoder, input: graph.add(EncodedFramesSource(frames, format: format))))
        try graph.run()
        #expect(sink.items.count == count - 1)
        #expect(decoder.corruptFrames == 1 && decoder.skippedFrames == 0)
        #expect(decoder.firstError == "\(MJPEGError.missingEndOfImage(byteCount: jpegs[4].count / 2))")
        let expected = references.enumerated().filter { $0.offset != 4 }.map(\.element)
        #expect(sink.items.map(\.pts) == expected.map(\.pts))
        let psnr = zip(expected, sink.items).map { PictureQuality.psnr($0, $1) }.min() ?? 0
        print("camera MJPEG 4:2:2 160x120 through the graph: lowest PSNR \(psnr) dB against ffmpeg")
        #expect(psnr >= 45)  // the 4:2:2 threshold of MJPEGDecoderTests
    }
}

/// A source of prepared pictures, in the first one's pixel format and size.
func picturesSource(_ pictures: [VideoFrame]) -> ItemsSource<VideoFrame> {
    ItemsSource(pictures, format: .video(VideoFormat(encoding: .pixels(pictures[0].pixelFormat), width: pictures[0].width,
                                                     height: pictures[0].height, frameRate: Rational(25, 1))),
                name: "pictures")
}

/// A sink keeping the I420 pictures it receives.
func picturesSink() -> CollectingSink<VideoFrame> { CollectingSink(accepting: [.video(.exactly(.pixels(.i420)))], name: "received") }
