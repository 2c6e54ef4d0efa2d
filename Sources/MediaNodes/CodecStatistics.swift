import MediaCore

/// What an encoder node has done; the names are W3C webrtc-stats `RTCOutboundRtpStreamStats` members
/// where one fits.
public struct EncoderStatistics: Sendable, Hashable {
    /// `framesEncoded` (video frames, or audio packets) and `keyFramesEncoded`.
    public var framesEncoded = 0
    public var keyFramesEncoded = 0
    /// Compressed bytes emitted.
    public var bytesEncoded = 0
    /// `totalEncodeTime`: time spent in the encoder's encode calls.
    public var totalEncodeTime = ClockTime.zero
    /// `frameWidth`, `frameHeight` of the last picture encoded (video).
    public var frameWidth: Int?
    public var frameHeight: Int?
    /// Keyframe requests received from downstream (PLI and FIR once through RTP).
    public var keyframeRequests = 0
    /// Times the encoder started again at a new picture size.
    public var reconfigurations = 0
    /// `framesPerSecond`: frames encoded over the last second or so (nil before a second has passed).
    public var framesPerSecond: Double? { rate.perSecond }
    var rate = FrameRateWindow()

    public init() {}
}

/// What a decoder node has done; the names are W3C webrtc-stats `RTCInboundRtpStreamStats` members
/// where one fits.
public struct DecoderStatistics: Sendable, Hashable {
    /// `framesDecoded` (pictures, or audio frames out) and `keyFramesDecoded` (keyframes in).
    public var framesDecoded = 0
    public var keyFramesDecoded = 0
    /// `totalDecodeTime`: time spent in the decoder's decode calls.
    public var totalDecodeTime = ClockTime.zero
    /// `frameWidth`, `frameHeight` of the last picture decoded (video).
    public var frameWidth: Int?
    public var frameHeight: Int?
    /// Frames (or packets) the decoder rejected.
    public var corruptFrames = 0
    /// Frames dropped while waiting for a keyframe (video).
    public var skippedFrames = 0
    /// Audio made up for missing or rejected packets (`concealedSamples`).
    public var concealedSamples = 0
    /// `framesPerSecond`: frames decoded over the last second or so (nil before a second has passed).
    public var framesPerSecond: Double? { rate.perSecond }
    var rate = FrameRateWindow()

    public init() {}
}

/// Frames counted over windows of at least a second: the rate of the last complete window.
struct FrameRateWindow: Sendable, Hashable {
    private var start: ClockTime?
    private var frames = 0
    private(set) var perSecond: Double?

    mutating func count(at now: ClockTime) {
        guard let start else { self.start = now; return }
        frames += 1
        let span = now - start
        guard span >= .seconds(1) else { return }
        perSecond = Double(frames) / span.seconds
        (self.start, frames) = (now, 0)
    }
}

/// A codec node's counters: kept by the node's calls, which the graph makes one at a time, and
/// published for readers on any thread when a call is done. So a packet costs one lock, however
/// many frames it gives, and none of the counting in between does.
final class CodecCounters<Value: Sendable>: @unchecked Sendable {
    /// The counts as the node's calls keep them; touched by those calls alone (no exclusivity
    /// check: about 75 instructions an access).
    @exclusivity(unchecked) var working: Value
    private let published: Locked<Value>

    init(_ initial: Value) {
        working = initial
        published = Locked(initial)
    }

    /// The counts as of the node's last call.
    var snapshot: Value { published.withLock { $0 } }

    /// Makes the working counts the ones readers see; the node calls it as each call ends.
    func publish() {
        let counts = working
        published.withLock { $0 = counts }
    }
}

/// Times a codec call on the node's clock, and records the trace stages around it.
struct CodecCallTimer {
    private(set) var clock: any MediaClock = SystemClock()
    private(set) var tracer: FrameTracer?

    /// Takes the node's clock, and its tracer when the graph traces `side` (encoders send, decoders
    /// receive).
    mutating func start(with context: NodeContext, side: FrameTracer.Side) {
        clock = context.clock
        tracer = context.tracer(for: side)
    }

    /// Runs `body`, recording `stage` for `pts` before it when tracing; returns the time it took.
    func time(_ stage: FrameStage?, pts: MediaTime, _ body: () throws -> Void) rethrows -> ClockTime {
        let started = clock.now
        if let tracer, let stage { tracer.record(stage, pts: pts, at: started) }
        try body()
        return clock.now - started
    }

    /// Records `stage` for `pts` now, when tracing; returns the node clock's time.
    @discardableResult
    func record(_ stage: FrameStage, pts: MediaTime) -> ClockTime {
        if let tracer { tracer.record(stage, pts: pts) }
        return clock.now
    }
}
