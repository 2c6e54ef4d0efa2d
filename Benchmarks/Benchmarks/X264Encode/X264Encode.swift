// H.264 encoding of the bundled sample (640x360, 132 frames, 800 kbit/s, realtime, one thread)
// with libx264, once through a Sluice graph (source -> VideoEncoderNode with the x264 provider ->
// sink, one thread per node) and once as libx264 called in a bare loop with the parameters
// X264Encoder sets: preset "veryfast", tune "zerolatency", ABR with a one-second VBV at the same
// rate, Constrained Baseline, SPS/PPS before every IDR, Annex-B. Compare the two rows: their ratio is
// the graph's overhead. x264 is deterministic with one thread, so both make the same stream,
// which is checked once before measuring. Malloc counts are per run; the graph over the first half
// of the clip allocates as much as over all of it: nothing per frame.
import Benchmark
import BenchmarkSupport
import Sluice

let settings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)
let pictures = Sample.pictures

/// libx264 alone (BenchLoops' BareX264, shared with pipebench).
func encodeBare() -> Int { BareX264.encode(pictures[...], format: Sample.format, settings: settings) }

let benchmarks: @Sendable () -> Void = {
    // Same settings, same stream: the graph's X264Encoder and the bare loop agree to the byte.
    let graphBytes = try! encodeThroughGraph(pictures[...], format: .video(Sample.format),
                                             with: VideoEncoderNode(X264EncoderProvider(), settings: settings))
    let bareBytes = encodeBare()
    precondition(graphBytes == bareBytes, "graph made \(graphBytes) bytes, bare libx264 \(bareBytes): settings differ")

    // The allocation budget (Thresholds/). The slack absorbs buffers that scheduling leaves in
    // flight (a few per pool); one allocation per frame would exceed it many times over.
    Benchmark.defaultConfiguration = .codec(mallocSlack: 32)

    graphBenchmarks(pictures, format: .video(Sample.format)) {
        VideoEncoderNode(X264EncoderProvider(), settings: settings)
    }
    Benchmark("BareLibx264") { benchmark in
        blackHole(encodeBare())
    }
}
