import Foundation
import Sluice
import Synchronization
import Testing
import TestSupport

/// A peer connection's tracks made from what a user names (`LocalTrack.input`, `sluice serve
/// --source`) are read by the same source chain as `sluice send`: every file kind it sends gives
/// a track of the right kind and size, played in real time and looped.
@Suite struct LocalTrackInputTests {
    /// Each kind of input, made by ffmpeg from the bundled sample (video) or a sine (audio).
    static let inputs: [(name: String, make: [String], kind: MediaKind)] = [
        ("clip.y4m", ["-i", TestSupport.sampleIVF, "-frames:v", "10"], .video),
        ("clip.ivf", ["-i", TestSupport.sampleIVF, "-frames:v", "10", "-c:v", "copy"], .video),
        ("clip.h264", ["-i", TestSupport.sampleIVF, "-frames:v", "10", "-c:v", "libx264", "-bf", "0"], .video),
        ("clip.mp4", ["-i", TestSupport.sampleIVF, "-frames:v", "10", "-c:v", "libx264"], .video),
        ("clip.webm", ["-i", TestSupport.sampleIVF, "-frames:v", "10", "-c:v", "copy"], .video),
        ("tone.wav", ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.3"], .audio),
        ("tone.opus", ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.3", "-c:a", "libopus"], .audio),
    ]

    @Test(arguments: inputs.map(\.name))
    func everyInputSluiceSendsIsATrackPlayedInRealTimeAndLooped(name: String) throws {
        let input = try #require(Self.inputs.first { $0.name == name })
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file(name)
            try TestSupport.ffmpeg(input.make + ["-y", path])
            let track = try LocalTrack.input(path)
            #expect(track.kind == input.kind)
            // The id goes into a=msid: 1 to 64 token characters (RFC 8830 §2), whatever the path.
            #expect((1...64).contains(track.id.count) && !track.id.contains("/") && track.id != path)
            // Past the file's end (10 pictures or 0.3 s): the loop goes on, and pacing holds it to real time.
            let wanted = input.kind == .video ? 14 : 20
            let graph = Graph()
            let counted: (count: @Sendable () -> Int, format: @Sendable () -> MediaFormat?)
            switch track.source {
            case .video(let make):
                let sink = CountingSink<VideoFrame>()
                graph.add(sink, input: try make(graph))
                counted = ({ sink.count }, { sink.format })
            case .audio(let make):
                let sink = CountingSink<AudioFrame>()
                graph.add(sink, input: try make(graph))
                counted = ({ sink.count }, { sink.format })
            case .encoded:
                Issue.record("\(name): a named input is raw media")
                return
            }
            let start = ContinuousClock.now
            let ended = OutcomeBox()
            try graph.start { ended.set($0) }
            while counted.count() < wanted, ContinuousClock.now - start < .seconds(10), !ended.isSet {
                Thread.sleep(forTimeInterval: 0.01)
            }
            let elapsed = ContinuousClock.now - start
            graph.cancel()
            while !ended.isSet { Thread.sleep(forTimeInterval: 0.01) }
            #expect(counted.count() >= wanted, "\(name): \(counted.count()) items")
            // 14 pictures at 25 fps or 20 audio frames of 10-20 ms take at least 0.2 s in real time.
            #expect(elapsed > .milliseconds(180), "\(name): \(wanted) items in \(elapsed)")
            if input.kind == .video {
                #expect(counted.format()?.video.map { [$0.width, $0.height] } == [640, 360])
            } else {
                #expect(counted.format()?.audio?.sampleRate == 48_000)
            }
        }
    }

    @Test func aMissingFileOrCameraIsNamedWhenTheTrackIsMade() throws {
        #expect(throws: (any Error).self) { try LocalTrack.input("/nonexistent/clip.ivf") }
        do {
            _ = try LocalTrack.input("/nonexistent/clip.ivf")
        } catch {
            #expect("\(error)".contains("/nonexistent/clip.ivf"))
        }
        do {
            _ = try LocalTrack.input("v4l2:/dev/video99")
            Issue.record("a camera that is not there made a track")
        } catch {
            #expect("\(error)".contains("v4l2:/dev/video99: no such camera"))
        }
    }
}

/// Counts what it receives; the count and format are safe to read while the graph runs.
final class CountingSink<Item: MediaPayload>: MediaSink, @unchecked Sendable {
    let name = "counter"
    var inputCaps: Caps { Item.self == VideoFrame.self ? Caps.anyVideo : Caps.anyAudio }
    private let counter = Atomic<Int>(0)
    private let started = Locked<MediaFormat?>(nil)

    var count: Int { counter.load(ordering: .relaxed) }
    var format: MediaFormat? { started.withLock { $0 } }

    func start(input: MediaFormat, context: NodeContext) throws { started.withLock { $0 = input } }
    func consume(_ item: Item) throws { counter.add(1, ordering: .relaxed) }
    func finish() throws {}
}

/// The outcome of a graph started in a test, once it is there.
final class OutcomeBox: Sendable {
    private let outcome = Locked<Result<GraphReport, any Error>?>(nil)
    var isSet: Bool { outcome.withLock { $0 != nil } }
    func set(_ result: Result<GraphReport, any Error>) { outcome.withLock { $0 = result } }
}
