import COpus
import MediaCodecs
import MediaCore

/// Opus encoding through libopus (RFC 6716).
///
/// Input frames of any length are gathered into packets of `settings.frameDuration`; a frame that
/// starts on a packet boundary is encoded straight from its buffer, the rest are copied into one
/// preallocated packet buffer, so a warm encoder allocates nothing but pooled output.
///
/// Packets come out with pts and duration in 48 kHz ticks (`Opus.timebase`; RFC 7587 §4.1, RFC 7845
/// §4), packet `i` at `t0 + i × duration`, where `t0` is the first input frame's pts: the timeline of
/// the decoded stream, which starts with `preSkip` samples of encoder delay (a decoder that drops
/// them, as `OpusDecoder(preSkip:)` does, puts input sample `k` back at `t0 + k`). Gaps between input
/// frames are not kept: the samples are taken as one continuous stream. Every packet is a keyframe
/// (Opus packets decode on their own). With DTX, libopus's 1-2 byte packets during silence are still
/// emitted, since they carry time.
public final class OpusEncoder: AudioEncoder {
    /// The encoder's tuning (`OPUS_APPLICATION_*`).
    public enum Application: Sendable {
        /// Speech over a network: SILK preferred, with its in-band FEC and DTX.
        case voip
        /// General audio: CELT preferred, best fidelity for music.
        case audio

        var value: Int32 { self == .voip ? OPUS_APPLICATION_VOIP : OPUS_APPLICATION_AUDIO }
    }

    /// Packet durations Opus codes (RFC 6716 §2.1.4, 2.5 to 60 ms), in 48 kHz samples.
    public static let packetDurations = [120, 240, 480, 960, 1920, 2880]
    public static let bitrates = 6_000...510_000
    public static let complexities = 0...10
    public static let lossPercentages = 0...100

    public let format: AudioFormat
    public private(set) var settings: AudioEncoderSettings
    /// VOIP when in-band FEC or DTX is on, AUDIO otherwise.
    ///
    /// Both features live in SILK, Opus's speech layer (RFC 6716 §4.2.4.5 LBRR frames, §4.2.3 VAD
    /// flags); CELT has neither FEC nor SILK's DTX. libopus picks its mode from the bitrate and a
    /// voice estimate, and VOIP leans towards SILK: a higher bitrate threshold before CELT, and a
    /// voice estimate of 115 rather than 48 (of 127) when its own analysis has not classified the
    /// signal, so that with FEC on any expected loss moves it to SILK or hybrid (libopus switches
    /// when the loss exceeds (128 - estimate) / 16 %). Under AUDIO, music or a high bitrate keeps
    /// it in CELT, where FEC and DTX would silently do nothing. Without either feature, AUDIO gives
    /// the best fidelity for general content.
    public let application: Application
    /// Input samples per channel in one packet, at the input rate.
    public let samplesPerPacket: Int
    /// One packet's duration in 48 kHz samples.
    public let packetDuration: Int
    /// The encoder's delay (`OPUS_GET_LOOKAHEAD`) in 48 kHz samples: what a decoder drops from the
    /// start of the decoded stream (the Ogg Opus pre-skip, RFC 7845 §4.2).
    public let preSkip: Int
    /// Storage of the packets this encoder emits.
    public let outputPool = BufferPool(name: "opus-encoder")

    private let encoder: OpaquePointer
    private let sampleFormat: SampleFormat
    /// Bytes of one input sample for all channels.
    private let bytesPerFrame: Int
    /// 48 kHz samples per input sample (48000 is a multiple of every Opus rate).
    private let rateFactor: Int
    /// The encoder's lookahead at the input rate.
    private let lookahead: Int
    /// Samples of a packet not yet complete, `pendingCount` of them filled.
    private let pending: UnsafeMutableRawBufferPointer
    private var pendingCount = 0
    /// Where libopus writes a packet before it is copied into a pooled buffer.
    private let packet: UnsafeMutableRawBufferPointer
    /// The first input sample's time in 48 kHz ticks; `nil` before the first frame of a stream.
    private var startTime: Int64?
    /// Input samples per channel received, and packets emitted, since the stream began.
    private var samplesIn: Int64 = 0
    private var packetsOut: Int64 = 0

    /// Makes an encoder for `.samples(.s16)` or `.samples(.f32)` audio at an Opus rate with 1 or 2
    /// channels. Unsupported formats and settings throw `CodecError.invalidSetting`.
    public init(format: AudioFormat, settings: AudioEncoderSettings) throws {
        let (sampleFormat, packetDuration) = try Self.validate(format: format, settings: settings)
        let application: Application = settings.inbandFEC || settings.dtx ? .voip : .audio
        var status: Int32 = OPUS_OK
        guard let encoder = opus_encoder_create(Int32(format.sampleRate), Int32(format.channels),
                                                application.value, &status), status == OPUS_OK
        else { throw Opus.error(status, "encoder_create") }
        let rateFactor = 48_000 / format.sampleRate
        var lookahead: Int32 = 0
        do {
            try Opus.check(sluice_opus_set_bitrate(encoder, Int32(settings.bitrate)), "set bitrate")
            if let complexity = settings.complexity {
                try Opus.check(sluice_opus_set_complexity(encoder, Int32(complexity)), "set complexity")
            }
            try Opus.check(sluice_opus_set_inband_fec(encoder, settings.inbandFEC ? 1 : 0), "set inband FEC")
            try Opus.check(sluice_opus_set_packet_loss_perc(encoder, Int32(settings.expectedLossPercent)),
                           "set packet loss percentage")
            try Opus.check(sluice_opus_set_dtx(encoder, settings.dtx ? 1 : 0), "set DTX")
            try Opus.check(sluice_opus_get_lookahead(encoder, &lookahead), "get lookahead")
        } catch {
            opus_encoder_destroy(encoder)
            throw error
        }

        self.format = format
        self.settings = settings
        self.application = application
        self.encoder = encoder
        self.sampleFormat = sampleFormat
        self.rateFactor = rateFactor
        self.packetDuration = packetDuration
        self.samplesPerPacket = packetDuration / rateFactor
        self.lookahead = Int(lookahead)
        self.preSkip = Int(lookahead) * rateFactor
        bytesPerFrame = format.channels * sampleFormat.bytesPerSample
        pending = .allocate(byteCount: samplesPerPacket * bytesPerFrame, alignment: 64)
        packet = .allocate(byteCount: Opus.maxPacketBytes, alignment: 64)
    }

    deinit {
        opus_encoder_destroy(encoder)
        pending.deallocate()
        packet.deallocate()
    }

    /// Buffers `frame`'s samples and encodes every packet they complete.
    public func encode(_ frame: AudioFrame, emit: (consuming EncodedFrame) throws -> Void) throws {
        guard frame.sampleFormat == sampleFormat, frame.sampleRate == format.sampleRate,
              frame.channels == format.channels
        else {
            throw CodecError.invalidSetting(
                "Opus encoder set up for \(format) got \(frame.sampleFormat.rawValue) \(frame.sampleRate)Hz "
                    + "\(frame.channels)ch")
        }
        if startTime == nil { startTime = frame.pts.rescaled(to: Opus.timebase).value }
        try withExtendedLifetime(frame) {
            let source = UnsafeRawBufferPointer(frame.bytes)
            var offset = 0
            while offset < frame.sampleCount {
                let available = frame.sampleCount - offset
                if pendingCount == 0 && available >= samplesPerPacket {
                    // A whole packet in the frame: no copy.
                    samplesIn += Int64(samplesPerPacket)
                    try encodePacket(source.baseAddress! + offset * bytesPerFrame, duration: packetDuration, emit)
                    offset += samplesPerPacket
                    continue
                }
                let count = Swift.min(samplesPerPacket - pendingCount, available)
                (pending.baseAddress! + pendingCount * bytesPerFrame)
                    .copyMemory(from: source.baseAddress! + offset * bytesPerFrame, byteCount: count * bytesPerFrame)
                pendingCount += count
                offset += count
                samplesIn += Int64(count)
                if pendingCount == samplesPerPacket {
                    pendingCount = 0
                    try encodePacket(UnsafeRawPointer(pending.baseAddress!), duration: packetDuration, emit)
                }
            }
        }
    }

    /// End of stream: pads with silence and encodes until the decoded stream, after `preSkip`,
    /// covers every input sample (the encoder's lookahead may need one more packet). The last
    /// packet's duration stops at the real end, so that a muxer can trim it (RFC 7845 §4.4); the
    /// encoder is then reset for a new stream.
    public func flush(emit: (consuming EncodedFrame) throws -> Void) throws {
        guard startTime != nil else { return }
        let end = samplesIn + Int64(lookahead)  // at the input rate, on the decoded stream's timeline
        while packetsOut * Int64(samplesPerPacket) < end {
            let remaining = Int(end - packetsOut * Int64(samplesPerPacket))
            (pending.baseAddress! + pendingCount * bytesPerFrame)
                .initializeMemory(as: UInt8.self, repeating: 0, count: (samplesPerPacket - pendingCount) * bytesPerFrame)
            pendingCount = 0
            try encodePacket(UnsafeRawPointer(pending.baseAddress!),
                             duration: Swift.min(remaining, samplesPerPacket) * rateFactor, emit)
        }
        try Opus.check(sluice_opus_encoder_reset(encoder), "reset")
        startTime = nil
        samplesIn = 0
        packetsOut = 0
        pendingCount = 0
    }

    /// Changes the target bitrate from the next packet on.
    public func setBitrate(_ bitsPerSecond: Int) throws {
        guard Self.bitrates.contains(bitsPerSecond) else {
            throw CodecError.invalidSetting("Opus encoder: bitrate \(bitsPerSecond) bit/s is outside \(Self.bitrates)")
        }
        try Opus.check(sluice_opus_set_bitrate(encoder, Int32(bitsPerSecond)), "set bitrate")
        settings.bitrate = bitsPerSecond
    }

    /// Whether the last packet was a DTX packet (`OPUS_GET_IN_DTX`).
    public var inDTX: Bool {
        var value: Int32 = 0
        return sluice_opus_get_in_dtx(encoder, &value) == OPUS_OK && value != 0
    }

    // MARK: - Helpers

    /// Encodes one packet's samples at `pcm` and emits it with `duration` (48 kHz samples).
    private func encodePacket(_ pcm: UnsafeRawPointer, duration: Int, _ emit: (consuming EncodedFrame) throws -> Void) throws {
        let output = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let size: Int32
        switch sampleFormat {
        case .s16:
            size = opus_encode(encoder, pcm.assumingMemoryBound(to: Int16.self), Int32(samplesPerPacket),
                               output, Int32(packet.count))
        case .f32:
            size = opus_encode_float(encoder, pcm.assumingMemoryBound(to: Float.self), Int32(samplesPerPacket),
                                     output, Int32(packet.count))
        }
        guard size > 0 else { throw Opus.error(size, "encode") }
        let pts = startTime! + packetsOut * Int64(packetDuration)
        packetsOut += 1
        try emit(EncodedFrame(codec: .opus, isKeyframe: true, pts: MediaTime(pts, timebase: Opus.timebase),
                              duration: MediaTime(Int64(duration), timebase: Opus.timebase),
                              copying: UnsafeRawBufferPointer(start: packet.baseAddress, count: Int(size)),
                              pool: outputPool))
    }

    private static func validate(format: AudioFormat, settings: AudioEncoderSettings) throws
        -> (SampleFormat, packetDuration: Int)
    {
        func fail(_ text: String) -> CodecError { .invalidSetting("Opus encoder: " + text) }
        guard let sampleFormat = Opus.sampleFormat(of: format.encoding) else {
            throw fail("input must be s16 or f32 samples, not \(format.encoding)")
        }
        guard Opus.sampleRates.contains(format.sampleRate) else {
            throw fail("sample rate \(format.sampleRate) Hz is not one of \(Opus.sampleRates)")
        }
        guard Opus.channelCounts.contains(format.channels) else {
            throw fail("\(format.channels) channels (1 or 2 without a multistream mapping)")
        }
        let ticks = settings.frameDuration.rescaled(to: Opus.timebase)
        guard ticks == settings.frameDuration, packetDurations.contains(Int(ticks.value)) else {
            throw fail("frame duration \(settings.frameDuration.seconds * 1000) ms is not one of 2.5, 5, 10, 20, 40, 60 ms")
        }
        guard bitrates.contains(settings.bitrate) else {
            throw fail("bitrate \(settings.bitrate) bit/s is outside \(bitrates)")
        }
        if let complexity = settings.complexity, !complexities.contains(complexity) {
            throw fail("complexity \(complexity) is outside \(complexities)")
        }
        guard lossPercentages.contains(settings.expectedLossPercent) else {
            throw fail("expected loss \(settings.expectedLossPercent)% is outside \(lossPercentages)")
        }
        return (sampleFormat, Int(ticks.value))
    }
}
