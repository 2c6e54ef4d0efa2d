// The graph runtime alone: 10,000 small pictures through source -> pass-through -> sink, on
// threads and deterministically. Malloc counts per run show what the runtime allocates per item
// (the target is none once warm: pictures come from a pool, edges are fixed rings).
import Benchmark
import MediaCore

let itemCount = 10_000

final class CountingSource: MediaSource {
    let name = "source"
    let pool = BufferPool(name: "bench")
    let format = VideoFormat(encoding: .pixels(.i420), width: 16, height: 16, frameRate: Rational(30, 1))
    private var produced = 0
    func outputCaps() throws -> Caps { Caps(.video(format)) }
    func start(output: MediaFormat, context: NodeContext) throws {}
    func produce() throws -> Production<VideoFrame> {
        guard produced < itemCount else { return .end }
        defer { produced += 1 }
        return .item(VideoFrame(width: 16, height: 16, pts: MediaTime(Int64(produced), timebase: Rational(1, 30)), pool: pool))
    }
}

final class PassThrough: MediaTransform {
    let name = "pass"
    var inputCaps: Caps { .anyVideo }
    func outputCaps(for input: MediaFormat) throws -> Caps { Caps(input) }
    func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {}
    func process(_ item: VideoFrame, into outbox: inout Outbox<VideoFrame>) throws { outbox.emit(item) }
    func finish(into outbox: inout Outbox<VideoFrame>) throws {}
}

final class Counter: MediaSink {
    let name = "sink"
    var count = 0
    var inputCaps: Caps { .anyVideo }
    func start(input: MediaFormat, context: NodeContext) throws {}
    func consume(_ item: VideoFrame) throws { count += 1 }
    func finish() throws {}
}

func runGraph(deterministic: Bool) throws -> Int {
    let graph = deterministic ? Graph(clock: ManualClock()) : Graph()
    let sink = Counter()
    graph.add(sink, input: graph.add(PassThrough(), input: graph.add(CountingSource())))
    _ = deterministic ? try graph.runDeterministic() : try graph.run()
    return sink.count
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .contextSwitches],
        warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(10), maxIterations: 20,
        // The allocation budget (Thresholds/). The slack absorbs buffers that scheduling leaves in
        // flight (a few per pool); one allocation per frame would exceed it many times over.
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 32])])

    Benchmark("Threaded10k") { _ in blackHole(try runGraph(deterministic: false)) }
    Benchmark("Deterministic10k") { _ in blackHole(try runGraph(deterministic: true)) }

    // FrameTracer: every stage of 100,000 frames recorded on a warm tracer; the budget is no malloc at all.
    Benchmark("FrameTracer100k",
              configuration: .init(thresholds: [.mallocCountTotal: .init(absolute: [.p90: 0])])) { benchmark in
        let tracer = FrameTracer(capacity: 512)
        tracer.mapTimestamps(.sending, clockRate: 90_000, offset: 0)
        tracer.mapTimestamps(.receiving, clockRate: 90_000, offset: 0)
        let stages = FrameStage.allCases  // (a synthesized allCases makes a new array at each call)
        func record(_ frames: Range<Int>) {
            for frame in frames {
                let timestamp = UInt32(truncatingIfNeeded: frame &* 3000)
                for stage in stages { tracer.record(stage, rtpTimestamp: timestamp) }
            }
        }
        record(0..<1000)
        benchmark.startMeasurement()
        record(1000..<101_000)
        benchmark.stopMeasurement()
        blackHole(tracer)
    }
}
