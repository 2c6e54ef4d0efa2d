import MediaCodecs
import MediaCore

/// Encodes pictures with any `VideoEncoderProvider`: the graph adapter around a `VideoEncoder`.
///
/// Handles the upstream events an encoder can act on: a keyframe request makes the next picture a
/// keyframe; a bitrate change retargets the encoder while it runs. A picture of another size than
/// the encoder's (after an `.outputFormatChange` upstream) starts a new encoder at that size, with
/// a keyframe; the frames already out stay valid.
public final class VideoEncoderNode: MediaTransform {
    public let name: String
    public let provider: any VideoEncoderProvider
    public private(set) var settings: VideoEncoderSettings
    /// A thread of its own when the encoder runs on more than one (see `NodeExecution.ownThread`).
    public var execution: NodeExecution { settings.threads > 1 ? .ownThread : .shared }
    private var encoder: (any VideoEncoder)?
    private var format: VideoFormat?
    private var keyframePending = false

    private let counters = CodecCounters(EncoderStatistics())
    private var timer = CodecCallTimer()

    /// What the node has encoded so far; safe from any thread while running.
    public var statistics: EncoderStatistics { counters.snapshot }
    public var keyframes: Int { statistics.keyFramesEncoded }
    public var bytesOut: Int { statistics.bytesEncoded }
    public var keyframeRequests: Int { statistics.keyframeRequests }
    /// Times the encoder started again at a new picture size.
    public var reconfigurations: Int { statistics.reconfigurations }

    public init(_ provider: any VideoEncoderProvider, settings: VideoEncoderSettings, name: String? = nil) {
        self.provider = provider
        self.settings = settings
        self.name = name ?? "\(provider.codec.rawValue.lowercased())-encoder"
    }

    public var inputCaps: Caps { provider.inputCaps }

    public func outputCaps(for input: MediaFormat) throws -> Caps {
        guard let video = input.video else { return Caps([]) }
        return Caps(.video(VideoFormat(encoding: .compressed(provider.codec), width: video.width,
                                       height: video.height, frameRate: video.frameRate)))
    }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {
        format = input.video!
        encoder = try provider.makeEncoder(format: format!, settings: settings)
        timer.start(with: context, side: .sending)
    }

    public func process(_ frame: VideoFrame, into outbox: inout Outbox<EncodedFrame>) throws {
        defer { counters.publish() }
        if var format, (frame.width, frame.height) != (format.width, format.height) {
            // Drain the old encoder, then start anew at the picture's size with a keyframe.
            try encoder!.flush { emit($0, into: &outbox) }
            (format.width, format.height) = (frame.width, frame.height)
            encoder = try provider.makeEncoder(format: format, settings: settings)
            self.format = format
            counters.working.reconfigurations += 1
            keyframePending = true
        }
        let force = keyframePending
        keyframePending = false
        let spent = try timer.time(.encodeStart, pts: frame.pts) {
            try encoder!.encode(frame, forceKeyframe: force) { emit($0, into: &outbox) }
        }
        counters.working.totalEncodeTime = counters.working.totalEncodeTime + spent
        (counters.working.frameWidth, counters.working.frameHeight) = (frame.width, frame.height)
    }

    public func finish(into outbox: inout Outbox<EncodedFrame>) throws {
        defer { counters.publish() }
        try encoder!.flush { emit($0, into: &outbox) }
    }

    private func emit(_ frame: consuming EncodedFrame, into outbox: inout Outbox<EncodedFrame>) {
        let now = timer.record(.encodeEnd, pts: frame.pts)
        counters.working.framesEncoded += 1
        counters.working.rate.count(at: now)
        if frame.isKeyframe { counters.working.keyFramesEncoded += 1 }
        counters.working.bytesEncoded += frame.byteCount
        outbox.emit(frame)
    }

    public func handle(_ event: UpstreamEvent) throws -> Bool {
        switch event {
        case .keyframeRequest:
            counters.working.keyframeRequests += 1
            counters.publish()
            keyframePending = true
        case .bitrateChange(let bitsPerSecond):
            try encoder?.setBitrate(bitsPerSecond)
            settings.bitrate = bitsPerSecond
        case .outputFormatChange(_, _, let rate):
            if let rate { format?.frameRate = rate }
            return false  // the scaler and frame-rate node upstream act on it
        }
        return true
    }

    public func close() { encoder = nil }
}
