// Setup shared by the benchmarks: the graph benchmarks of an encoder and the codec configuration. The
// clip, the preloaded source, the counting sinks and the bare-library loops are BenchLoops' (in the root
// package, shared with pipebench), re-exported here.
import Benchmark
@_exported import BenchLoops
import Sluice

/// Two benchmarks of encoding `items` through a graph with the encoder `makeEncoder` makes:
/// "SluiceGraph" over all of them and "SluiceGraphHalfClip" over the first half. Their malloc counts
/// are the same when the graph allocates nothing per frame once warm.
public func graphBenchmarks<Encoder: MediaTransform>(_ items: [Encoder.Input], format: MediaFormat,
                                                     makeEncoder: @escaping () throws -> Encoder)
where Encoder.Output == EncodedFrame {
    for (name, count) in [("SluiceGraph", items.count), ("SluiceGraphHalfClip", items.count / 2)] {
        Benchmark(name) { benchmark in
            blackHole(try encodeThroughGraph(items.prefix(count), format: format, with: makeEncoder()))
        }
    }
}

extension Benchmark.Configuration {
    /// What the codec benchmarks measure: time, CPU, throughput and mallocs per run, after one warm-up
    /// run, for at most 15 runs or 15 s. A run may allocate `mallocSlack` more than its recorded
    /// budget (Thresholds/) before `thresholds check` fails.
    public static func codec(mallocSlack: Int) -> Benchmark.Configuration {
        .init(metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal],
              warmupIterations: 1, scalingFactor: .one, maxDuration: .seconds(15), maxIterations: 15,
              thresholds: [.mallocCountTotal: .init(absolute: [.p90: mallocSlack])])
    }
}
