import MediaCodecs
import MediaCore

/// Encodes audio with any `AudioEncoderProvider`: the graph adapter around an `AudioEncoder`.
/// A bitrate change from downstream retargets the encoder while it runs.
public final class AudioEncoderNode: MediaTransform {
    public let name: String
    public let provider: any AudioEncoderProvider
    public private(set) var settings: AudioEncoderSettings
    // Touched by the node's calls alone, one at a time: no exclusivity check (see `AudioDecoderNode`).
    @exclusivity(unchecked) private var encoder: (any AudioEncoder)?

    private let counters = CodecCounters(EncoderStatistics())
    @exclusivity(unchecked) private var timer = CodecCallTimer()

    /// What the node has encoded so far (packets as frames); safe from any thread while running.
    public var statistics: EncoderStatistics { counters.snapshot }
    /// Compressed bytes emitted so far.
    public var bytesOut: Int { statistics.bytesEncoded }

    public init(_ provider: any AudioEncoderProvider, settings: AudioEncoderSettings, name: String? = nil) {
        self.provider = provider
        self.settings = settings
        self.name = name ?? "\(provider.codec.rawValue.lowercased())-encoder"
    }

    /// Samples the decoder must drop at the start (known once started).
    public var preSkip: Int { encoder?.preSkip ?? 0 }

    public var inputCaps: Caps { provider.inputCaps }

    public func outputCaps(for input: MediaFormat) throws -> Caps {
        guard let audio = input.audio else { return Caps([]) }
        return Caps(.audio(AudioFormat(encoding: .compressed(provider.codec), sampleRate: audio.sampleRate,
                                       channels: audio.channels)))
    }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {
        encoder = try provider.makeEncoder(format: input.audio!, settings: settings)
        timer.start(with: context, side: .sending)
    }

    public func process(_ frame: AudioFrame, into outbox: inout Outbox<EncodedFrame>) throws {
        defer { counters.publish() }
        let spent = try timer.time(.encodeStart, pts: frame.pts) { try encoder!.encode(frame) { emit($0, into: &outbox) } }
        counters.working.totalEncodeTime = counters.working.totalEncodeTime + spent
    }

    public func finish(into outbox: inout Outbox<EncodedFrame>) throws {
        defer { counters.publish() }
        try encoder!.flush { emit($0, into: &outbox) }
    }

    private func emit(_ packet: consuming EncodedFrame, into outbox: inout Outbox<EncodedFrame>) {
        let now = timer.record(.encodeEnd, pts: packet.pts)
        counters.working.framesEncoded += 1
        counters.working.rate.count(at: now)
        counters.working.keyFramesEncoded += 1  // every Opus packet decodes on its own
        counters.working.bytesEncoded += packet.byteCount
        outbox.emit(packet)
    }

    public func handle(_ event: UpstreamEvent) throws -> Bool {
        guard case .bitrateChange(let bitsPerSecond) = event else { return false }
        try encoder?.setBitrate(bitsPerSecond)
        settings.bitrate = bitsPerSecond
        return true
    }

    public func close() { encoder = nil }
}
