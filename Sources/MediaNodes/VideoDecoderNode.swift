import MediaCodecs
import MediaCore

/// Decodes compressed pictures with any `VideoDecoderProvider`: the graph adapter around a
/// `VideoDecoder`.
///
/// A frame the decoder rejects is counted and dropped, never passed on; the node then drops
/// everything up to the next keyframe (whose references are intact) and asks upstream for one.
/// With `failOnCorruptFrame` the first bad frame stops the graph instead.
public final class VideoDecoderNode: MediaTransform {
    public let name: String
    public let provider: any VideoDecoderProvider
    public let threads: Int
    /// A thread of its own when the decoder runs on more than one (see `NodeExecution.ownThread`).
    public var execution: NodeExecution { threads > 1 ? .ownThread : .shared }
    public var failOnCorruptFrame = false
    /// Starts the decoder's own threads (with `threads` above 1) at the lowest priority, nice 19,
    /// so that they take the cores a multi-threaded encoder downstream leaves idle and never one it
    /// waits for: for file-to-file work, where the encoder sets the pace. A 720p H.264 to VP8
    /// transcode on 2 cores went from ffmpeg's speed to about 1.1x it, at less CPU (BENCHMARKS.md).
    /// Not for live pipelines, where any other process on the machine would come first.
    public var lowPriorityThreads = false
    private var decoder: (any VideoDecoder)?
    private var context: NodeContext?
    private var awaitingKeyframe = true
    private let counters = CodecCounters(DecoderStatistics())
    private var timer = CodecCallTimer()

    /// What the node has decoded so far; safe from any thread while running.
    public var statistics: DecoderStatistics { counters.snapshot }
    /// Frames the decoder rejected.
    public var corruptFrames: Int { statistics.corruptFrames }
    /// Frames dropped while waiting for a keyframe after an error (or at the start).
    public var skippedFrames: Int { statistics.skippedFrames }
    /// The message of the first rejection, for reports.
    public private(set) var firstError: String?

    public init(_ provider: any VideoDecoderProvider, threads: Int = 1, name: String? = nil) {
        self.provider = provider
        self.threads = threads
        self.name = name ?? "\(provider.codec.rawValue.lowercased())-decoder"
    }

    public var inputCaps: Caps { [.video(.exactly(.compressed(provider.codec)))] }

    public func outputCaps(for input: MediaFormat) throws -> Caps {
        guard let video = input.video else { return Caps([]) }
        return provider.outputCaps(for: video)
    }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {
        let (provider, format, threads) = (self.provider, input.video!, self.threads)
        decoder = lowPriorityThreads && threads > 1
            ? try WorkerThread.atLowerPriority(by: 19) { try provider.makeDecoder(format: format, threads: threads) }
            : try provider.makeDecoder(format: format, threads: threads)
        self.context = context
        timer.start(with: context, side: .receiving)
    }

    public func process(_ frame: EncodedFrame, into outbox: inout Outbox<VideoFrame>) throws {
        defer { counters.publish() }
        if awaitingKeyframe {
            guard frame.isKeyframe else { counters.working.skippedFrames += 1; return }
            awaitingKeyframe = false
        }
        do {
            let spent = try timer.time(nil, pts: frame.pts) { try decoder!.decode(frame) { emit($0, into: &outbox) } }
            counters.working.totalDecodeTime = counters.working.totalDecodeTime + spent
            if frame.isKeyframe { counters.working.keyFramesDecoded += 1 }
        } catch {
            if failOnCorruptFrame { throw error }
            counters.working.corruptFrames += 1
            if firstError == nil { firstError = "\(error)" }
            awaitingKeyframe = true
            context?.sendUpstream(.keyframeRequest)
        }
    }

    public func finish(into outbox: inout Outbox<VideoFrame>) throws {
        defer { counters.publish() }
        try decoder!.flush { emit($0, into: &outbox) }
    }

    private func emit(_ picture: consuming VideoFrame, into outbox: inout Outbox<VideoFrame>) {
        let now = timer.record(.decodeEnd, pts: picture.pts)
        counters.working.framesDecoded += 1
        counters.working.rate.count(at: now)
        (counters.working.frameWidth, counters.working.frameHeight) = (picture.width, picture.height)
        outbox.emit(picture)
    }

    public func close() { decoder = nil }
}
