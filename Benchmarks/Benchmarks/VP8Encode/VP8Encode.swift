// VP8 encoding of the bundled sample (640x360, 132 frames, 800 kbit/s, realtime, one thread),
// once through a Sluice graph (source -> VideoEncoderNode -> sink, one thread per node) and once
// as libvpx called in a bare loop with the same configuration (BenchLoops' BareVP8, shared with
// pipebench). Compare the two rows: their ratio is the graph's overhead. Malloc counts are per run; the graph over the first half of the clip
// allocates as much as over all of it: nothing per frame.
import Benchmark
import BenchmarkSupport
import Sluice

let settings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)
let pictures = Sample.pictures

let benchmarks: @Sendable () -> Void = {
    _ = pictures.count
    // The allocation budget (Thresholds/). The slack absorbs buffers that scheduling leaves in
    // flight (a few per pool); one allocation per frame would exceed it many times over.
    Benchmark.defaultConfiguration = .codec(mallocSlack: 32)

    graphBenchmarks(pictures, format: .video(Sample.format)) {
        VideoEncoderNode(VP8EncoderProvider(), settings: settings)
    }
    Benchmark("BareLibvpx") { benchmark in
        blackHole(BareVP8.encode(pictures[...], settings: settings))
    }
}
