// A source of preloaded items, counting sinks, and source -> node -> sink graphs around them: the graph
// side of a graph-versus-bare-library comparison.
import Sluice

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
    // Specialised as the runtime's steps are: unspecialised, each item was copied through its
    // type's value witnesses (some 500 instructions an item, which no real source pays).
    @_specialize(where Item == EncodedFrame)
    @_specialize(where Item == AudioFrame)
    @_specialize(where Item == VideoFrame)
    public func produce() throws -> Production<Item> {
        guard next < items.endIndex else { return .end }
        defer { next += 1 }
        return .item(items[next])
    }
}

/// Counts compressed bytes, so that the work cannot be optimised away.
public final class ByteCounter: MediaSink {
    public let name = "counter"
    @exclusivity(unchecked) public private(set) var bytes = 0  // the sink's own thread alone
    public var inputCaps: Caps { [.video(.any), .audio(.any)] }
    public init() {}
    public func start(input: MediaFormat, context: NodeContext) throws {}
    public func consume(_ frame: EncodedFrame) throws { bytes += frame.byteCount }
    public func finish() throws {}
}

/// Counts decoded pictures.
public final class PictureCounter: MediaSink {
    public let name = "picture-counter"
    @exclusivity(unchecked) public private(set) var pictures = 0  // the sink's own thread alone
    public var inputCaps: Caps { [.video(.any)] }
    public init() {}
    public func start(input: MediaFormat, context: NodeContext) throws {}
    public func consume(_ frame: VideoFrame) throws { pictures += 1 }
    public func finish() throws {}
}

/// Counts decoded audio samples (per channel).
public final class SampleCounter: MediaSink {
    public let name = "sample-counter"
    @exclusivity(unchecked) public private(set) var samples = 0  // the sink's own thread alone
    public var inputCaps: Caps { [.audio(.any)] }
    public init() {}
    public func start(input: MediaFormat, context: NodeContext) throws {}
    public func consume(_ frame: AudioFrame) throws { samples += frame.sampleCount }
    public func finish() throws {}
}

/// Runs `items` of `format` through source -> `node` -> `sink` and returns the sink.
public func runThroughGraph<Node: MediaTransform, Sink: MediaSink>(_ items: ArraySlice<Node.Input>, format: MediaFormat,
                                                                   through node: Node, into sink: Sink) throws -> Sink
where Sink.Input == Node.Output {
    let graph = Graph()
    graph.add(sink, input: graph.add(node, input: graph.add(PreloadedSource(items, format: format))))
    try graph.run()
    return sink
}

/// Runs `items` of `format` through a graph, source -> `encoder` -> byte
/// counter, and returns the compressed bytes.
public func encodeThroughGraph<Encoder: MediaTransform>(_ items: ArraySlice<Encoder.Input>, format: MediaFormat,
                                                        with encoder: Encoder) throws -> Int
where Encoder.Output == EncodedFrame {
    try runThroughGraph(items, format: format, through: encoder, into: ByteCounter()).bytes
}
