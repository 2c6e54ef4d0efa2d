// Setup shared by the benchmarks: the bundled clip decoded once, a source that hands out preloaded
// frames, a sink that counts compressed bytes, and a source -> encoder -> sink graph around them.
import Benchmark
import Sluice

/// The repository's bundled clip (`samples/`), decoded once per process.
public enum Sample {
    /// This file is Benchmarks/Support/BenchmarkSupport.swift, three levels below the repository.
    public static let path = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        + "/samples/big-buck-bunny-640x360.ivf"

    public static let frameRate = Rational(25, 1)

    /// The clip's 132 pictures (640x360 I420), decoded by libvpx.
    public static let pictures: [VideoFrame] = {
        let reader = try! IVFReader(path: path)
        let format = VideoFormat(encoding: .compressed(.vp8), width: reader.header.width, height: reader.header.height,
                                 frameRate: frameRate)
        let decoder = try! VP8Decoder(format: format, threads: 1)
        var frames: [VideoFrame] = []
        while let encoded = try! reader.next(pool: nil) { try! decoder.decode(encoded) { frames.append($0) } }
        return frames
    }()

    /// The pictures' format.
    public static var format: VideoFormat {
        VideoFormat(encoding: .pixels(.i420), width: pictures[0].width, height: pictures[0].height, frameRate: frameRate)
    }
}

/// Hands out preloaded frames, as a capture source would hand out fresh ones.
public final class PreloadedSource<Item: MediaPayload>: MediaSource {
    public let name = "preloaded"
    private let items: ArraySlice<Item>
    private let format: MediaFormat
    private var next: Int

    public init(_ items: ArraySlice<Item>, format: MediaFormat) {
        self.items = items
        self.format = format
        next = items.startIndex
    }

    public func outputCaps() throws -> Caps { Caps(format) }
    public func start(output: MediaFormat, context: NodeContext) throws {}
    public func produce() throws -> Production<Item> {
        guard next < items.endIndex else { return .end }
        defer { next += 1 }
        return .item(items[next])
    }
}

/// Counts compressed bytes, so that the work cannot be optimised away.
public final class ByteCounter: MediaSink {
    public let name = "counter"
    public private(set) var bytes = 0
    public var inputCaps: Caps { [.video(.any), .audio(.any)] }
    public init() {}
    public func start(input: MediaFormat, context: NodeContext) throws {}
    public func consume(_ frame: EncodedFrame) throws { bytes += frame.byteCount }
    public func finish() throws {}
}

/// Runs `items` of `format` through a graph, source -> `encoder` (one thread per node) -> byte
/// counter, and returns the compressed bytes.
public func encodeThroughGraph<Encoder: MediaTransform>(_ items: ArraySlice<Encoder.Input>, format: MediaFormat,
                                                        with encoder: Encoder) throws -> Int
where Encoder.Output == EncodedFrame {
    let graph = Graph()
    let counter = ByteCounter()
    graph.add(counter, input: graph.add(encoder, input: graph.add(PreloadedSource(items, format: format))))
    try graph.run()
    return counter.bytes
}

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
