import Foundation
import Sluice
import Testing
import TestSupport

/// Keeps every compressed frame's keyframe flag and size, and sends events upstream at given frames.
final class EncodedCollector: MediaSink {
    let name = "collector"
    var requests: [Int: UpstreamEvent] = [:]
    private(set) var frames: [(isKeyframe: Bool, size: Int)] = []
    private var context: NodeContext!

    var inputCaps: Caps { [.video(.exactly(.compressed(.vp8)))] }
    func start(input: MediaFormat, context: NodeContext) throws { self.context = context }
    func consume(_ frame: EncodedFrame) throws {
        if let event = requests[frames.count] { context.sendUpstream(event) }
        frames.append((frame.isKeyframe, frame.byteCount))
    }
    func finish() throws {}
}

@Suite struct EncoderControlTests {
    @Test func keyframeRequestsAndBitrateChangesTravelFromTheSinkToTheEncoder() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir)
            let graph = Graph(clock: ManualClock())
            let encoder = VideoEncoderNode(VP8EncoderProvider(),
                                           settings: VideoEncoderSettings(bitrate: 1_500_000, keyframeInterval: 1000))
            let collector = EncodedCollector()
            collector.requests = [60: .keyframeRequest, 70: .bitrateChange(150_000)]
            graph.add(collector, input: graph.add(encoder, input: graph.add(try Y4MFileSource(path: reference))))
            try graph.runDeterministic()

            let frames = collector.frames
            #expect(frames.count == TestSupport.sampleFrameCount)
            let keyframes = frames.indices.filter { frames[$0].isKeyframe }
            #expect(keyframes.count == 2 && keyframes.first == 0, "keyframes at \(keyframes)")
            // The request crosses one edge (up to its capacity in flight) before the encoder sees it.
            #expect((61...(61 + graph.edgeCapacity + 1)).contains(keyframes.last ?? 0), "keyframes at \(keyframes)")
            #expect(encoder.keyframeRequests == 1 && encoder.settings.bitrate == 150_000)

            func meanSize(_ range: Range<Int>) -> Double { Double(range.map { frames[$0].size }.reduce(0, +)) / Double(range.count) }
            let before = meanSize(30..<60), after = meanSize(100..<132)
            #expect(after < before * 0.4, "mean frame size \(before) bytes at 1.5 Mbit/s, \(after) at 150 kbit/s")
        }
    }
}
