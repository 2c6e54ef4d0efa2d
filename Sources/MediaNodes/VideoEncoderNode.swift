import MediaCodecs
import MediaCore

/// Encodes pictures with any `VideoEncoderProvider`: the graph adapter around a `VideoEncoder`.
///
/// Handles the upstream events an encoder can act on: a keyframe request makes the next picture a
/// keyframe; a bitrate change retargets the encoder while it runs.
public final class VideoEncoderNode: MediaTransform {
    public let name: String
    public let provider: any VideoEncoderProvider
    public private(set) var settings: VideoEncoderSettings
    private var encoder: (any VideoEncoder)?
    private var keyframePending = false

    /// Counters, readable after the run.
    public private(set) var keyframes = 0
    public private(set) var bytesOut = 0
    public private(set) var keyframeRequests = 0

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
        encoder = try provider.makeEncoder(format: input.video!, settings: settings)
    }

    public func process(_ frame: VideoFrame, into outbox: inout Outbox<EncodedFrame>) throws {
        let force = keyframePending
        keyframePending = false
        try encoder!.encode(frame, forceKeyframe: force) { emit($0, into: &outbox) }
    }

    public func finish(into outbox: inout Outbox<EncodedFrame>) throws {
        try encoder!.flush { emit($0, into: &outbox) }
    }

    private func emit(_ frame: EncodedFrame, into outbox: inout Outbox<EncodedFrame>) {
        if frame.isKeyframe { keyframes += 1 }
        bytesOut += frame.byteCount
        outbox.emit(frame)
    }

    public func handle(_ event: UpstreamEvent) throws -> Bool {
        switch event {
        case .keyframeRequest:
            keyframeRequests += 1
            keyframePending = true
        case .bitrateChange(let bitsPerSecond):
            try encoder?.setBitrate(bitsPerSecond)
            settings.bitrate = bitsPerSecond
        }
        return true
    }

    public func close() { encoder = nil }
}
