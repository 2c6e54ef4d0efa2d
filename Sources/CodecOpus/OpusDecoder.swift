import COpus
import MediaCodecs
import MediaCore

/// Opus decoding through libopus (RFC 6716), with packet-loss concealment and in-band FEC recovery.
///
/// Each packet decodes into one frame from `outputPool` at the output rate and channel count
/// (libopus resamples and up- or down-mixes). Its pts is the packet's pts, less `preSkip`; the first
/// `preSkip` samples of the stream are dropped (RFC 7845 §4.2), so that with an `OpusEncoder`'s
/// `preSkip` the output lines up with the encoder's input. A packet whose `duration` is shorter
/// than the audio it holds is cut to that duration (end trimming, RFC 7845 §4.4).
public final class OpusDecoder: AudioDecoder {
    public let input: AudioFormat
    public let output: AudioFormat
    /// Samples at 48 kHz dropped from the start of the decoded stream.
    public let preSkip: Int
    /// Storage of the frames this decoder emits.
    public let outputPool = BufferPool(name: "opus-decoder")

    private let decoder: OpaquePointer
    private let sampleFormat: SampleFormat
    private let outputTimebase: Rational
    private let bytesPerFrame: Int
    /// The longest packet (120 ms) at the output rate: what `scratch` holds.
    private let maxSamples: Int
    /// 2.5 ms at the output rate: the granule of concealment (libopus takes multiples of it).
    private let concealChunk: Int
    /// Where libopus writes what does not go out whole (pre-skip, trimmed ends, concealment) before
    /// the kept samples are copied into a pooled frame.
    private let scratch: UnsafeMutableRawBufferPointer
    /// The pre-skip at the output rate, and the output samples still to be dropped for it.
    private let skipAtOutputRate: Int
    private var skipRemaining: Int
    /// Where the next output sample belongs (output-rate ticks, pre-skip already subtracted).
    private var nextTime: Int64 = 0

    /// Makes a decoder of `.compressed(.opus)` `input` (1 or 2 channels) into `output`: s16 or f32
    /// samples at any Opus rate, 1 or 2 channels. `preSkip` (48 kHz samples) is usually the
    /// encoder's or the Ogg header's.
    public init(input: AudioFormat, output: AudioFormat, preSkip: Int = 0) throws {
        func fail(_ text: String) -> CodecError { .invalidSetting("Opus decoder: " + text) }
        guard input.encoding == .compressed(.opus) else { throw fail("input must be Opus, not \(input.encoding)") }
        guard Opus.channelCounts.contains(input.channels) else {
            throw fail("\(input.channels) input channels need a multistream decoder")
        }
        guard let sampleFormat = Opus.sampleFormat(of: output.encoding) else {
            throw fail("output must be s16 or f32 samples, not \(output.encoding)")
        }
        guard Opus.sampleRates.contains(output.sampleRate) else {
            throw fail("output rate \(output.sampleRate) Hz is not one of \(Opus.sampleRates)")
        }
        guard Opus.channelCounts.contains(output.channels) else { throw fail("\(output.channels) output channels") }
        guard preSkip >= 0 else { throw fail("negative pre-skip \(preSkip)") }
        var status: Int32 = OPUS_OK
        guard let decoder = opus_decoder_create(Int32(output.sampleRate), Int32(output.channels), &status),
              status == OPUS_OK
        else { throw Opus.error(status, "decoder_create") }

        self.input = input
        self.output = output
        self.preSkip = preSkip
        self.decoder = decoder
        self.sampleFormat = sampleFormat
        outputTimebase = Rational(1, output.sampleRate)
        bytesPerFrame = output.channels * sampleFormat.bytesPerSample
        maxSamples = Opus.maxPacketSamples * output.sampleRate / 48_000
        concealChunk = output.sampleRate / 400
        scratch = .allocate(byteCount: maxSamples * bytesPerFrame, alignment: 64)
        skipAtOutputRate = Int(MediaTime(Int64(preSkip), timebase: Opus.timebase).rescaled(to: outputTimebase).value)
        skipRemaining = skipAtOutputRate
    }

    deinit {
        opus_decoder_destroy(decoder)
        scratch.deallocate()
    }

    /// Decodes one packet. A malformed packet throws `CodecError.library` (libopus's
    /// `OPUS_INVALID_PACKET` or `OPUS_BAD_ARG`); decoding can go on with the next one.
    public func decode(_ frame: EncodedFrame, emit: (consuming AudioFrame) throws -> Void) throws {
        let time = startTime(of: frame)
        let keptAtMost = frame.duration.map { $0.rescaled(to: outputTimebase).value }.flatMap { $0 >= 0 ? Int($0) : nil }
        let decodedAside: Int? = try withExtendedLifetime(frame) {
            // Past the pre-skip, a packet kept whole decodes straight into the frame it goes out in.
            if skipRemaining == 0, let samples = try? packetSamples(frame.bytes, rate: output.sampleRate),
               samples <= maxSamples, samples <= keptAtMost ?? samples {
                let decoded = AudioFrame(sampleFormat: sampleFormat, sampleRate: output.sampleRate, channels: output.channels,
                                         sampleCount: samples, pts: MediaTime(time, timebase: outputTimebase), pool: outputPool)
                guard try decode(frame.bytes, into: decoded.bytes.baseAddress!, samples: samples, fec: false) == samples else {
                    throw Opus.error(OPUS_INTERNAL_ERROR, "decode (fewer samples than the packet holds)")
                }
                nextTime = time + Int64(samples)
                try emit(decoded)
                return nil
            }
            return try decode(frame.bytes, into: scratch.baseAddress!, samples: maxSamples, fec: false)
        }
        guard let count = decodedAside else { return }
        try emitScratch(count: Swift.min(count, keptAtMost ?? count), at: time, emit)
    }

    /// Decodes `frame`; when `recoveringLostPacketBefore` is true, first rebuilds the packet lost
    /// just before it, of the same duration, from `frame`'s in-band FEC data (RFC 6716 §2.1.7; PLC
    /// when the packet carries none).
    public func decode(_ frame: EncodedFrame, recoveringLostPacketBefore: Bool,
                       emit: (consuming AudioFrame) throws -> Void) throws {
        if recoveringLostPacketBefore {
            let samples = try withExtendedLifetime(frame) { try packetSamples(frame.bytes, rate: 48_000) }
            try recoverLoss(MediaTime(Int64(samples), timebase: Opus.timebase), from: frame, emit: emit)
        }
        try decode(frame, emit: emit)
    }

    /// Rebuilds `duration` of audio lost just before `next` (which is not decoded): its last packet's
    /// worth from `next`'s in-band FEC data (LBRR, which only SILK and hybrid packets carry), anything
    /// before that by concealment. libopus conceals the whole span when `next` has no FEC data.
    public func recoverLoss(_ duration: MediaTime, from next: EncodedFrame, emit: (consuming AudioFrame) throws -> Void) throws {
        let total = concealmentSamples(duration)
        guard total > 0 else { return }
        try withExtendedLifetime(next) {
            _ = try packetSamples(next.bytes, rate: output.sampleRate)  // malformed packets throw here
            // libopus conceals all but the span of `next`'s frame size itself, but takes at most 120 ms.
            let span = Swift.min(total, maxSamples)
            nextTime = startTime(of: next) - Int64(total)
            try conceal(samples: total - span, emit)
            let count = try decode(next.bytes, into: scratch.baseAddress!, samples: span, fec: true)
            try emitScratch(count: count, at: nextTime, emit)
        }
    }

    /// Packet-loss concealment: makes up `duration` of audio (rounded to 2.5 ms) after the last
    /// output, in pieces of at most 120 ms, as libopus requires.
    public func concealLoss(duration: MediaTime, emit: (consuming AudioFrame) throws -> Void) throws {
        try conceal(samples: concealmentSamples(duration), emit)
    }

    /// End of stream. Opus holds no samples back, so nothing is emitted; the decoder is reset
    /// (`OPUS_RESET_STATE`), so that the next packet starts a new stream, as an `OpusEncoder` does
    /// after its own flush: nothing of the old stream's state (CELT's energy prediction and overlap,
    /// SILK's filters) leaks into it, and its first `preSkip` samples are dropped again.
    public func flush(emit: (consuming AudioFrame) throws -> Void) throws {
        try Opus.check(sluice_opus_decoder_reset(decoder), "reset")
        skipRemaining = skipAtOutputRate
        nextTime = 0
    }

    // MARK: - Helpers

    /// The output-rate time of `frame`'s first sample, pre-skip subtracted.
    private func startTime(of frame: EncodedFrame) -> Int64 {
        let ticks = frame.pts.rescaled(to: Opus.timebase).value - Int64(preSkip)
        return MediaTime(ticks, timebase: Opus.timebase).rescaled(to: outputTimebase).value
    }

    /// `duration` at the output rate, rounded to a multiple of 2.5 ms.
    private func concealmentSamples(_ duration: MediaTime) -> Int {
        let samples = Swift.max(0, duration.rescaled(to: outputTimebase).value)
        let chunk = Int64(concealChunk)
        return Int((samples + chunk / 2) / chunk * chunk)
    }

    private func conceal(samples: Int, _ emit: (consuming AudioFrame) throws -> Void) throws {
        var remaining = samples
        while remaining > 0 {
            let count = try decode(nil, into: scratch.baseAddress!, samples: Swift.min(remaining, maxSamples), fec: false)
            guard count > 0 else { break }
            try emitScratch(count: count, at: nextTime, emit)
            remaining -= count
        }
    }

    /// Samples per channel in `packet` at `rate`.
    private func packetSamples(_ packet: UnsafeRawBufferPointer, rate: Int) throws -> Int {
        guard let data = packet.baseAddress, packet.count > 0, packet.count <= Int(Int32.max) else {
            throw Opus.error(OPUS_INVALID_PACKET, "packet_get_nb_samples")
        }
        let samples = opus_packet_get_nb_samples(data.assumingMemoryBound(to: UInt8.self), Int32(packet.count),
                                                 Int32(rate))
        guard samples > 0 else { throw Opus.error(samples < 0 ? samples : OPUS_INVALID_PACKET, "packet_get_nb_samples") }
        return Int(samples)
    }

    /// Runs `opus_decode`/`opus_decode_float` into `target` (`scratch`, or a frame's samples):
    /// `packet` (nil for concealment), at most `samples` per channel. Returns the samples decoded.
    private func decode(_ packet: UnsafeRawBufferPointer?, into target: UnsafeMutableRawPointer, samples: Int,
                        fec: Bool) throws -> Int {
        var data: UnsafePointer<UInt8>? = nil
        var length: Int32 = 0
        if let packet {
            // An empty packet would mean "lost" to libopus; RFC 6716 §3.4 [R1] makes it malformed.
            guard packet.count > 0, packet.count <= Int(Int32.max) else {
                throw Opus.error(OPUS_INVALID_PACKET, "decode")
            }
            data = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
            length = Int32(packet.count)
        }
        let result: Int32
        switch sampleFormat {
        case .s16:
            result = opus_decode(decoder, data, length, target.assumingMemoryBound(to: Int16.self),
                                 Int32(samples), fec ? 1 : 0)
        case .f32:
            result = opus_decode_float(decoder, data, length, target.assumingMemoryBound(to: Float.self),
                                       Int32(samples), fec ? 1 : 0)
        }
        guard result >= 0 else { throw Opus.error(result, packet == nil ? "decode (concealment)" : "decode") }
        return Int(result)
    }

    /// Emits the first `count` samples of `scratch`, starting at output time `time`, less what the
    /// pre-skip still drops.
    private func emitScratch(count: Int, at time: Int64, _ emit: (consuming AudioFrame) throws -> Void) throws {
        let dropped = Swift.min(skipRemaining, count)
        skipRemaining -= dropped
        nextTime = time + Int64(count)
        let kept = count - dropped
        guard kept > 0 else { return }
        let frame = AudioFrame(sampleFormat: sampleFormat, sampleRate: output.sampleRate, channels: output.channels,
                               sampleCount: kept, pts: MediaTime(time + Int64(dropped), timebase: outputTimebase),
                               pool: outputPool)
        frame.bytes.baseAddress!.copyMemory(from: scratch.baseAddress! + dropped * bytesPerFrame,
                                            byteCount: kept * bytesPerFrame)
        try emit(frame)
    }
}
