import Sluice
import Testing
import TestSupport

/// A file source read again and again, as a camera stand-in: timestamps run on across the seams.
@Suite struct LoopingSourceTests {
    @Test func aLoopedFileContinuesItsTimestampsPassAfterPass() throws {
        let count = TestSupport.sampleFrameCount
        let source = try LoopingSource(maxFrames: 2 * count + 10) { try IVFFileSource(path: TestSupport.sampleIVF) }
        let sink = CollectingSink<EncodedFrame>(accepting: Caps(.video(source.first.format)))
        let graph = Graph()
        graph.add(sink, input: graph.add(source))
        try graph.build()
        _ = try graph.run()

        #expect(sink.items.count == 2 * count + 10)
        #expect(source.passes == 3)
        let ticks = sink.items.map { $0.pts.rescaled(to: Rational(1, 90_000)).value }
        let step = ticks[1] - ticks[0]
        #expect(step > 0 && zip(ticks, ticks.dropFirst()).allSatisfy { $1 - $0 == step },
                "one frame step everywhere, across the seams too")
        #expect(sink.items[count].isKeyframe && sink.items[2 * count].isKeyframe, "each pass starts at the file's keyframe")
        #expect(sink.items[count].byteCount == sink.items[0].byteCount && sink.items[count].dts == sink.items[count].pts)
    }

    @Test func anEmptyFileEndsTheRunInsteadOfLoopingForever() throws {
        let format = MediaFormat.video(VideoFormat(encoding: .pixels(.i420), width: 16, height: 16, frameRate: Rational(25, 1)))
        let source = try LoopingSource { ItemsSource<VideoFrame>([], format: format) }
        let sink = CollectingSink<VideoFrame>(accepting: Caps(format))
        let graph = Graph()
        graph.add(sink, input: graph.add(source))
        try graph.build()
        _ = try graph.run()
        #expect(sink.items.isEmpty && sink.finished && source.passes == 1)
    }

    @Test func aLoopedTranscodeWritesEveryFrameOnOneTimeline() throws {
        try TestSupport.withTemporaryDirectory { dir in
            var options = TranscodeOptions()
            options.loop = true
            options.maxFrames = TestSupport.sampleFrameCount + 20
            options.size = (160, 90)
            let output = dir.file("looped.ivf")
            let summary = try Transcoder(input: TestSupport.sampleIVF, output: output, options: options).run()
            #expect(summary.frames == TestSupport.sampleFrameCount + 20)
            let frames = try RTPStreamingTests.ivfFrames(output)
            #expect(frames.count == TestSupport.sampleFrameCount + 20)
            #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.pts < $1.pts }, "timestamps rise across the seam")
        }
    }
}
