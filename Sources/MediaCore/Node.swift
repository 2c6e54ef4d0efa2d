/// Control messages that travel against the flow of data, from a consumer toward the producer
/// that can act on them (an encoder, a capture device).
public enum UpstreamEvent: Sendable, Hashable, CustomStringConvertible {
    /// Send a picture that does not depend on earlier ones as soon as possible.
    case keyframeRequest
    /// Change the target bitrate, in bits per second.
    case bitrateChange(Int)
    /// Change the pictures produced upstream while running (WebRTC's `adaptOutputFormat`): the
    /// scaler takes the new size, the frame-rate node the new rate; nil leaves one as it is. The
    /// encoder starts again at the new size with a keyframe. Formats negotiated at build time stay
    /// the initial ones.
    case outputFormatChange(width: Int?, height: Int?, frameRate: Rational?)

    public var description: String {
        switch self {
        case .keyframeRequest: return "keyframe request"
        case .bitrateChange(let bps): return "bitrate change to \(bps) bit/s"
        case .outputFormatChange(let width, let height, let rate):
            let size = width.flatMap { w in height.map { "\(w)x\($0)" } } ?? "same size"
            return "output format change to \(size) at \(rate.map { "\($0) fps" } ?? "the same rate")"
        }
    }
}

/// What a node may use while running: the graph's clock and the way upstream.
public struct NodeContext: Sendable {
    public let nodeName: String
    public let clock: any MediaClock
    /// How the graph traces frames, when it does.
    public let tracing: FrameTracing?
    let sendUpstreamEvent: @Sendable (UpstreamEvent) -> Void
    /// Makes the graph step the node again soon, from any thread: what a `.shared` node that waits
    /// on the outside world (a socket watched by `SocketReactor`) calls when it is ready, instead of
    /// blocking a worker. A wake-up never gets lost, even one that comes while the node runs (it is
    /// then stepped once more); a needless one costs a step that returns `.wait` again.
    public let wake: @Sendable () -> Void

    init(nodeName: String, clock: any MediaClock, tracing: FrameTracing? = nil,
         wake: @escaping @Sendable () -> Void = {}, sendUpstreamEvent: @escaping @Sendable (UpstreamEvent) -> Void) {
        self.nodeName = nodeName
        self.clock = clock
        self.tracing = tracing
        self.wake = wake
        self.sendUpstreamEvent = sendUpstreamEvent
    }

    /// Where a node records the `FrameStage`s of `side` it passes frames through: nil unless the
    /// graph traces that side of the call.
    public func tracer(for side: FrameTracer.Side) -> FrameTracer? {
        tracing.flatMap { $0.side == side ? $0.tracer : nil }
    }

    /// Sends `event` to the node feeding this one; it travels on until a node handles it.
    public func sendUpstream(_ event: UpstreamEvent) { sendUpstreamEvent(event) }

    /// A context for driving a node by hand (tests, tools), outside any graph.
    public static func standalone(name: String, clock: any MediaClock = SystemClock(), tracing: FrameTracing? = nil,
                                  wake: @escaping @Sendable () -> Void = {},
                                  upstream: @escaping @Sendable (UpstreamEvent) -> Void = { _ in }) -> NodeContext {
        NodeContext(nodeName: name, clock: clock, tracing: tracing, wake: wake, sendUpstreamEvent: upstream)
    }
}

/// Where a running graph calls a node (see `NodeScheduler`).
public enum NodeExecution: Sendable, Hashable {
    /// On the process's shared workers, between other nodes' steps: for nodes whose calls compute
    /// and return (codecs, converters, packetizers, file readers and writers). Most nodes.
    case shared
    /// On a thread of the node's own: for nodes whose calls wait on the outside world (a capture
    /// device, a sound card's clock, another graph's queue), which would hold a shared
    /// worker idle while other graphs' work waits; and for codecs that spread each call over
    /// threads of their own (libvpx on 2 threads), whose threads wait for the calling thread by
    /// spinning. Called from whichever worker was free, such a codec kept landing on the core of
    /// its own helper thread: a 720p VP8 encode on 2 threads took 25% longer than ffmpeg's with
    /// the same libvpx call, and the same time once the calls stayed on one thread.
    case ownThread
}

/// What every node of a graph has. A node is used by one thread at a time (a shared worker, or
/// its own thread), so it needs no locking of its own.
public protocol MediaNode: AnyObject {
    /// Names the node in errors and reports; unique within a graph.
    var name: String { get }
    /// Where a running graph calls this node; `.shared` unless the node waits inside its calls.
    var execution: NodeExecution { get }
    /// Reacts to an event sent by a downstream node. Returns false to pass it further upstream.
    func handle(_ event: UpstreamEvent) throws -> Bool
    /// Releases resources and makes output durable. Called once after every run, whether it ended
    /// at end of stream, by an error or by cancellation.
    func close()
}

extension MediaNode {
    public var execution: NodeExecution { .shared }
    public func handle(_ event: UpstreamEvent) throws -> Bool { false }
    public func close() {}
}

/// A source's answer when asked for its next item.
public enum Production<Output> {
    case item(Output)
    /// Nothing yet: ask again when the clock reads this time (a paced source).
    case wait(until: ClockTime)
    case end
}

/// Collects a transform's outputs. The graph reuses its storage, so emitting allocates nothing
/// once warm, and moves the items out of it onto the edges: an item emitted is moved, not copied
/// (a copy is a reference count up and one down, each an atomic operation).
public struct Outbox<Item>: ~Copyable {
    var items = PacketRing<Item>(minimumCapacity: 4)
    public init() {}
    @_specialize(where Item == VideoFrame)
    @_specialize(where Item == AudioFrame)
    @_specialize(where Item == EncodedFrame)
    public mutating func emit(_ item: consuming Item) { items.append(item) }
    public var count: Int { items.count }
}

/// A node that produces items (a file reader, a capture device).
public protocol MediaSource: MediaNode {
    associatedtype Output: MediaPayload
    /// The formats this source can produce, best first.
    func outputCaps() throws -> Caps
    /// Called once with the negotiated format, before the first `produce()`.
    func start(output: MediaFormat, context: NodeContext) throws
    func produce() throws -> Production<Output>
}

/// A node that turns each input into zero or more outputs (a codec, a converter).
public protocol MediaTransform: MediaNode {
    associatedtype Input: MediaPayload
    associatedtype Output: MediaPayload
    /// The formats this node accepts, best first.
    var inputCaps: Caps { get }
    /// The formats it can produce from the negotiated input format, best first.
    func outputCaps(for input: MediaFormat) throws -> Caps
    func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws
    func process(_ item: Input, into outbox: inout Outbox<Output>) throws
    /// End of stream: emit whatever is still held.
    func finish(into outbox: inout Outbox<Output>) throws
}

/// A node that consumes items (a file writer, a network sender, a counter).
public protocol MediaSink: MediaNode {
    associatedtype Input: MediaPayload
    var inputCaps: Caps { get }
    func start(input: MediaFormat, context: NodeContext) throws
    func consume(_ item: Input) throws
    /// End of stream: complete the output.
    func finish() throws
    /// End of stream, for a sink whose end takes time without work (a network sender that keeps
    /// answering repair requests before its goodbye): called at the end and then, while it returns
    /// `.wait(until:)`, again when the graph's clock reads that time; the node ends at `.done`.
    /// It holds no thread while it waits. The default calls `finish()`.
    func finishing() throws -> Finishing
}

/// How far a sink's end of stream has come (`MediaSink.finishing()`).
public enum Finishing: Sendable {
    case done
    /// Not yet: ask again when the clock reads this time.
    case wait(until: ClockTime)
}

extension MediaSink {
    public func finishing() throws -> Finishing {
        try finish()
        return .done
    }
}
