import MediaCodecs
import MediaCore

/// Decodes compressed audio with any `AudioDecoderProvider`: the graph adapter around an
/// `AudioDecoder`.
///
/// A gap in the packets' timestamps (packets lost on the network) is rebuilt from the next packet's
/// redundancy where the codec has some (Opus in-band FEC), else by the decoder's loss concealment,
/// so the output stays continuous; a packet the decoder rejects is counted and concealed.
public final class AudioDecoderNode: MediaTransform {
    public let name: String
    public let provider: any AudioDecoderProvider
    /// The raw format wanted downstream, if any (else the provider's first choice).
    public let preferredOutput: Caps?
    /// Samples of encoder delay to drop from the start, as the container declares them (Ogg Opus pre-skip).
    public let preSkip: Int
    // Touched by the node's calls alone, one at a time (the graph runs a node on one thread at a
    // time), so the runtime's exclusivity check on each access (about 75 instructions, once or
    // twice a packet) is left out.
    @exclusivity(unchecked) private var decoder: (any AudioDecoder)?
    @exclusivity(unchecked) private var expectedPTS: MediaTime?

    private let counters = CodecCounters(DecoderStatistics())
    @exclusivity(unchecked) private var timer = CodecCallTimer()

    /// What the node has decoded so far (audio frames out as frames); safe from any thread.
    public var statistics: DecoderStatistics { counters.snapshot }
    /// Packets the decoder rejected (each replaced by concealment).
    public var corruptPackets: Int { statistics.corruptFrames }
    /// Audio made up (or rebuilt from redundancy) for missing or rejected packets.
    public var concealedSamples: Int { statistics.concealedSamples }
    public private(set) var firstError: String?

    public init(_ provider: any AudioDecoderProvider, preferredOutput: Caps? = nil, preSkip: Int = 0,
                name: String? = nil) {
        self.provider = provider
        self.preferredOutput = preferredOutput
        self.preSkip = preSkip
        self.name = name ?? "\(provider.codec.rawValue.lowercased())-decoder"
    }

    public var inputCaps: Caps { [.audio(.exactly(.compressed(provider.codec)))] }

    public func outputCaps(for input: MediaFormat) throws -> Caps {
        guard let audio = input.audio else { return Caps([]) }
        let offered = provider.outputCaps(for: audio)
        guard let preferredOutput else { return offered }
        let preferred = preferredOutput.intersection(offered)
        return Caps(preferred.patterns + offered.patterns)
    }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {
        decoder = try provider.makeDecoder(input: input.audio!, output: output.audio!, preSkip: preSkip)
        timer.start(with: context, side: .receiving)
        if let tracer = timer.tracer, preSkip > 0 {
            // Dropping the pre-skip puts each frame that far before its packet (RFC 7845 §4.2).
            tracer.delayDecodedTimestamps(by: MediaTime(Int64(preSkip), timebase: Rational(1, input.audio!.sampleRate)))
        }
    }

    public func process(_ packet: EncodedFrame, into outbox: inout Outbox<AudioFrame>) throws {
        defer { counters.publish() }
        if let expected = expectedPTS, packet.pts > expected {
            try decoder!.recoverLoss(packet.pts - expected, from: packet) { frame in
                counters.working.concealedSamples += frame.sampleCount
                emit(frame, into: &outbox)
            }
        }
        do {
            let spent = try timer.time(nil, pts: packet.pts) { try decoder!.decode(packet) { emit($0, into: &outbox) } }
            counters.working.totalDecodeTime = counters.working.totalDecodeTime + spent
            counters.working.keyFramesDecoded += 1
        } catch let error as CodecError {
            counters.working.corruptFrames += 1
            if firstError == nil { firstError = "\(error)" }
            try conceal(packet.duration ?? MediaTime(20, timebase: Rational(1, 1000)), into: &outbox)
        }
        if let duration = packet.duration { expectedPTS = packet.pts + duration }
    }

    private func conceal(_ gap: MediaTime, into outbox: inout Outbox<AudioFrame>) throws {
        try decoder!.concealLoss(duration: gap) { frame in
            counters.working.concealedSamples += frame.sampleCount
            emit(frame, into: &outbox)
        }
    }

    public func finish(into outbox: inout Outbox<AudioFrame>) throws {
        defer { counters.publish() }
        try decoder!.flush { emit($0, into: &outbox) }
    }

    private func emit(_ frame: consuming AudioFrame, into outbox: inout Outbox<AudioFrame>) {
        let now = timer.record(.decodeEnd, pts: frame.pts)
        counters.working.framesDecoded += 1
        counters.working.rate.count(at: now)
        outbox.emit(frame)
    }

    public func close() { decoder = nil }
}
