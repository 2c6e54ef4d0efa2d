import DequeModule
import MediaCodecs
import MediaCore
import MediaNegotiation
import MediaNodes

/// One local track encoded once for many peer connections (the viewers of a `sluice serve` WHEP
/// source): the track's pipeline (source ─▶ enabled gate ─▶ encoder) runs once, and each viewer's
/// sender takes the encoded frames from a queue of its own, so only packetizing and SRTP are per
/// viewer. A viewer starts at a keyframe: subscribing, and a viewer's PLI or FIR (RFC 4585
/// §6.3.1, RFC 5104 §4.3.1), ask the one encoder for a keyframe.
///
/// Give it to viewers as a track, `LocalTrack(shared:)`; their factories must offer `codec` only.
public final class SharedEncoding: @unchecked Sendable {
    public let codec: CodecName
    public let kind: MediaKind
    /// The encoder's output format (size, rate; or rate and channels).
    public let format: MediaFormat
    private let graph: Graph
    private let encoder: any MediaNode
    private let subscribers = Locked<[ObjectIdentifier: SharedEncodingQueue]>([:])
    private let encoderStatisticsOf: () -> EncoderStatistics
    private var pipeline: RunningPipeline?
    private let lock = Locked(false)

    /// Builds the pipeline of `track` for `codec` now (a source that cannot be opened throws here),
    /// and starts it.
    public init(track: LocalTrack, codec: CodecName, registry: CodecRegistry, videoBitrate: Int = 1_000_000,
                keyframeInterval: Int? = nil, audioBitrate: Int = 32_000) throws {
        self.codec = codec
        kind = track.kind
        let graph = Graph()
        let encoding = try track.addEncoding(to: graph, codec: codec, registry: registry, timeline: SendTimeline(),
                                             videoBitrate: videoBitrate, keyframeInterval: keyframeInterval, audioBitrate: audioBitrate)
        encoder = encoding.encoder
        encoderStatisticsOf = encoding.statistics
        self.graph = graph
        let sink = SharedEncodingSink()
        graph.add(sink, input: encoding.frames)
        try graph.build()
        guard let format = graph.outputFormat(of: encoder) else { throw PeerConnectionError.media("the \(codec) encoder has no format") }
        self.format = format
        sink.publish = { [weak self] frame in self?.publish(frame) }
        pipeline = RunningPipeline(graph: graph, built: true)
    }

    deinit { stop() }

    /// Viewers now.
    public var subscriberCount: Int { subscribers.withLock { $0.count } }
    public var encoderStatistics: EncoderStatistics { encoderStatisticsOf() }
    /// How the shared pipeline ended, if it has.
    public var pipelineResult: Result<GraphReport, any Error>? { pipeline?.result }

    /// Asks the encoder for a keyframe (a new viewer, a viewer's PLI).
    public func requestKeyframe() { graph.post(.keyframeRequest, to: encoder) }

    /// Stops the pipeline; subscribers' sources end.
    public func stop() {
        let wasStopped = lock.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        pipeline?.stop()
        for queue in subscribers.withLock({ Array($0.values) }) { queue.close() }
    }

    func subscribe() -> SharedEncodingQueue {
        let queue = SharedEncodingQueue()
        subscribers.withLock { $0[ObjectIdentifier(queue)] = queue }
        requestKeyframe()
        return queue
    }

    func unsubscribe(_ queue: SharedEncodingQueue) {
        subscribers.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(queue)) }
        queue.close()
    }

    /// Queues `frame` for every viewer, without copying the list (nothing allocated per frame); a
    /// queue's lock is taken inside the list's, never the other way round.
    private func publish(_ frame: EncodedFrame) {
        let wantKeyframe = subscribers.withLock { queues in
            queues.values.reduce(false) { wanted, queue in !queue.offer(frame) || wanted }
        }
        if wantKeyframe { requestKeyframe() }
    }
}

/// One viewer's encoded frames: bounded; it starts at a keyframe, and after an overflow (a viewer
/// that cannot keep up) it drops everything up to the next keyframe rather than decode garbage.
final class SharedEncodingQueue: @unchecked Sendable {
    static let capacity = 60
    private let condition = ConditionLock()
    private var frames = Deque<EncodedFrame>()
    private var waitingForKeyframe = true
    private var closed = false
    private(set) var dropped = 0

    /// Queues `frame`; false when the viewer waits for a keyframe that should be asked for.
    func offer(_ frame: EncodedFrame) -> Bool {
        condition.withLock {
            guard !closed else { return true }
            if waitingForKeyframe {
                guard frame.isKeyframe else { dropped += 1; return false }
                waitingForKeyframe = false
            }
            guard frames.count < Self.capacity else {
                frames.removeAll()
                waitingForKeyframe = true
                dropped += 1
                return false
            }
            frames.append(frame)
            condition.broadcast()
            return true
        }
    }

    /// The next frame, waiting until `deadline` (monotonic); nil on time out, `.end` once closed.
    func next(until deadline: ClockTime) -> Production<EncodedFrame> {
        condition.withLock {
            while frames.isEmpty && !closed && SystemClock().now < deadline { condition.wait(until: deadline) }
            if let frame = frames.popFirst() { return .item(frame) }
            return closed ? .end : .wait(until: SystemClock().now)
        }
    }

    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }
}

/// The end of the shared pipeline: hands each encoded frame to the viewers' queues.
final class SharedEncodingSink: MediaSink {
    let name = "shared-encoding"
    var publish: (EncodedFrame) -> Void = { _ in }
    var inputCaps: Caps { [.video(.any), .audio(.any)] }
    func start(input: MediaFormat, context: NodeContext) throws {}
    func consume(_ frame: EncodedFrame) throws { publish(frame) }
    func finish() throws {}
}

/// A viewer's source of shared encoded frames; its sender's keyframe requests go to the encoder.
final class SharedEncodingSource: MediaSource {
    let name = "shared-encoding"
    private let shared: SharedEncoding
    private let queue: SharedEncodingQueue

    init(shared: SharedEncoding) {
        self.shared = shared
        queue = shared.subscribe()
    }

    /// `produce()` waits for the shared pipeline's next frame.
    var execution: NodeExecution { .ownThread }

    func outputCaps() throws -> Caps { Caps(shared.format) }
    func start(output: MediaFormat, context: NodeContext) throws {}

    /// Returns now and then without a frame, so that the graph can stop a viewer of a paused source.
    func produce() throws -> Production<EncodedFrame> { queue.next(until: SystemClock().now + .milliseconds(100)) }

    func handle(_ event: UpstreamEvent) throws -> Bool {
        guard case .keyframeRequest = event else { return false }
        shared.requestKeyframe()
        return true
    }

    func close() { shared.unsubscribe(queue) }
}
