import Foundation
import Sluice
import Testing
import TestSupport

/// The behaviour every audio codec provider must have, run over every built-in encoder with every
/// decoder of its codec, through the provider protocols only.
///
/// Timing, as `AudioEncoder.preSkip` documents it: the decoded stream starts with `preSkip` samples
/// of encoder delay, and the encoder's packets, flush included, cover exactly `preSkip` plus every
/// input sample (a shorter last packet carries the end trim). A decoder made by a provider keeps the
/// delay, so the suite drops it itself and then compares sample by sample.
@Suite struct AudioCodecConformanceTests {
    /// Natural-ish test signals (ffmpeg lavfi, see `TestAudio`).
    enum Signal: String, CaseIterable, Sendable {
        /// A vibrato chord with tremolo and gated overtones over pink noise.
        case music
        /// A formant-shaped buzz in syllables, over faint noise.
        case speech

        /// The least SNR a codec must reach at 64 kbit/s, 48 kHz stereo. Measured with libopus 1.3.1:
        /// 19.8 dB (music) and 23.4 dB (speech); a pre-skip off by one sample, or a lost packet,
        /// costs far more than the margin.
        var minimumSNR: Double { self == .music ? 16 : 19 }
    }

    static let rate = 48_000
    /// Where the first stream starts: packet timestamps must follow the input's, not start at zero.
    static let start: Int64 = 48_000

    /// 48 kHz stereo, in the first sample format the encoder takes of s16 and f32.
    func inputFormat(_ pair: AudioCodecPair) throws -> AudioFormat {
        let wanted: Caps = [.audio(.oneOf([.samples(.s16), .samples(.f32)]), sampleRate: .exactly(Self.rate), channels: .exactly(2))]
        let format = try #require(wanted.intersection(pair.encoder.inputCaps).fixated?.audio,
                                  "\(pair.encoder.name) takes no 48 kHz stereo s16 or f32 audio")
        return format
    }

    func compressedFormat(_ pair: AudioCodecPair, _ input: AudioFormat) -> AudioFormat {
        AudioFormat(encoding: .compressed(pair.encoder.codec), sampleRate: input.sampleRate, channels: input.channels)
    }

    /// A decoder that outputs the input's format, so that samples compare one to one.
    func makeDecoder(_ pair: AudioCodecPair, _ input: AudioFormat) throws -> any AudioDecoder {
        let compressed = compressedFormat(pair, input)
        #expect(pair.decoder.outputCaps(for: compressed).matches(.audio(input)))
        return try pair.decoder.makeDecoder(input: compressed, output: input)
    }

    /// `seconds` of `signal` in `format`, as frames of varying lengths from `start`, and as floats.
    func audio(_ signal: Signal, _ format: AudioFormat, seconds: Double, start: Int64 = start) throws
        -> (frames: [AudioFrame], samples: [Float])
    {
        guard case .samples(let sampleFormat) = format.encoding else { throw FixtureError(description: "\(format) is not raw") }
        let raw = try TestAudio.raw(sampleRate: format.sampleRate, channels: format.channels, format: sampleFormat,
                                    seconds: seconds, speech: signal == .speech)
        return (TestAudio.frames(raw, format: format, start: start, pool: BufferPool(name: "conformance-audio")),
                floats(raw, format: sampleFormat))
    }

    /// Samples per channel that `packets` cover, by their durations, at `rate`.
    func covered(_ packets: [EncodedFrame], rate: Int) -> Int64 {
        packets.map { $0.duration?.rescaled(to: Rational(1, rate)).value ?? 0 }.reduce(0, +)
    }

    @Test(arguments: AudioCodecPair.builtIn, Signal.allCases)
    func roundTripKeepsEverySampleInPlace(pair: AudioCodecPair, signal: Signal) throws {
        let format = try inputFormat(pair)
        let (frames, original) = try audio(signal, format, seconds: 3)
        let encoder = try pair.encoder.makeEncoder(format: format, settings: AudioEncoderSettings(bitrate: 64_000))
        let packets = try encodeAll(frames, with: encoder)
        #expect(packets.allSatisfy { $0.codec == pair.encoder.codec })
        #expect(packets.first?.pts.rescaled(to: Rational(1, Self.rate)).value == Self.start)
        #expect(zip(packets, packets.dropFirst()).allSatisfy { $0.pts + $0.duration! == $1.pts }, "contiguous packets")
        #expect(covered(packets, rate: Self.rate) == Int64(original.count / 2 + encoder.preSkip))

        let decoded = floats(try decodeAll(packets, with: try makeDecoder(pair, format)))
        #expect(decoded.count == original.count + encoder.preSkip * 2)
        let aligned = decoded[(encoder.preSkip * 2)...]
        let ratio = snr(original[...], aligned)
        let kbits = Double(packets.map(\.byteCount).reduce(0, +) * 8) / 3 / 1000
        print("\(pair) \(signal) 48 kHz stereo at 64 kbit/s: SNR \(String(format: "%.2f", ratio)) dB, "
              + "\(String(format: "%.1f", kbits)) kbit/s, pre-skip \(encoder.preSkip)")
        #expect(ratio >= signal.minimumSNR)
        // One sample of misalignment either way costs SNR: the pre-skip is exact.
        for shift in [-1, 1] {
            let shifted = shift < 0 ? snr(original[2...], aligned) : snr(original[...], aligned.dropFirst(2))
            #expect(shifted < ratio - 0.5, "SNR \(shifted) dB shifted by \(shift), \(ratio) dB aligned")
        }
    }

    @Test(arguments: AudioCodecPair.builtIn, Signal.allCases)
    func bitrateChangeWhileRunningMovesTheOutputBitrate(pair: AudioCodecPair, signal: Signal) throws {
        let format = try inputFormat(pair)
        let (frames, _) = try audio(signal, format, seconds: 4)
        let (high, low) = (128_000, 24_000)
        let encoder = try pair.encoder.makeEncoder(format: format, settings: AudioEncoderSettings(bitrate: high))
        var packets: [EncodedFrame] = []
        var changed = false
        for frame in frames {
            if !changed && frame.pts.value >= Self.start + 2 * Int64(Self.rate) {
                try encoder.setBitrate(low)
                changed = true
            }
            try encoder.encode(frame) { packets.append($0) }
        }
        try encoder.flush { packets.append($0) }
        /// Bits per second of the packets that start from `from` to `to` seconds into the stream.
        func bitrate(_ from: Double, _ to: Double) -> Double {
            let span = packets.filter {
                let t = $0.pts.seconds - Double(Self.start) / Double(Self.rate)
                return t >= from && t < to
            }
            let seconds = span.map { $0.duration!.seconds }.reduce(0, +)
            return Double(span.map(\.byteCount).reduce(0, +) * 8) / seconds
        }
        let before = bitrate(0.5, 2), after = bitrate(2.5, 4)
        print("\(pair) \(signal): \(Int(before)) bit/s asked \(high), then \(Int(after)) bit/s asked \(low)")
        // Measured with libopus 1.3.1: within 2 % of both targets, on either signal.
        #expect(abs(before / Double(high) - 1) < 0.15 && abs(after / Double(low) - 1) < 0.15)
    }

    @Test(arguments: AudioCodecPair.builtIn)
    func flushEncodesTheTailAndNothingMore(pair: AudioCodecPair) throws {
        let format = try inputFormat(pair)
        // 1 s and 7 samples: the stream ends inside a packet.
        let (frames, original) = try audio(.music, format, seconds: 1 + 7.0 / Double(Self.rate))
        let encoder = try pair.encoder.makeEncoder(format: format, settings: AudioEncoderSettings(bitrate: 64_000))
        var nothing = 0
        try encoder.flush { _ in nothing += 1 }
        #expect(nothing == 0, "flush before any input")
        var packets: [EncodedFrame] = []
        for frame in frames { try encoder.encode(frame) { packets.append($0) } }
        let beforeFlush = covered(packets, rate: Self.rate)
        #expect(beforeFlush < Int64(original.count / 2))
        try encoder.flush { packets.append($0) }
        #expect(covered(packets, rate: Self.rate) == Int64(original.count / 2 + encoder.preSkip))
        try encoder.flush { _ in nothing += 1 }
        #expect(nothing == 0, "a second flush")

        // The tail that only flush brought out is the input's, not silence or noise.
        let decoded = floats(try decodeAll(packets, with: try makeDecoder(pair, format)))
        #expect(decoded.count == original.count + encoder.preSkip * 2)
        let tail = 2 * 480  // the last 10 ms
        let tailSNR = snr(original.suffix(tail), decoded.suffix(tail))
        print("\(pair): last 10 ms after flush, SNR \(String(format: "%.2f", tailSNR)) dB")
        #expect(tailSNR >= 20)  // measured 26.1 dB with libopus 1.3.1
    }

    @Test(arguments: AudioCodecPair.builtIn)
    func encoderAndDecoderAreReusableAfterFlush(pair: AudioCodecPair) throws {
        let format = try inputFormat(pair)
        let encoder = try pair.encoder.makeEncoder(format: format, settings: AudioEncoderSettings(bitrate: 64_000))
        let decoder = try makeDecoder(pair, format)
        // Two streams, the second from 10 s, through the same encoder and decoder: each must come out
        // as a fresh encoder and decoder would make it (nothing of the first stream left in their state).
        for (round, start) in [Self.start, 10 * Int64(Self.rate)].enumerated() {
            let (frames, original) = try audio(round == 0 ? .music : .speech, format, seconds: 1, start: start)
            let packets = try encodeAll(frames, with: encoder)
            #expect(packets.first?.pts.rescaled(to: Rational(1, Self.rate)).value == start, "round \(round)")
            #expect(covered(packets, rate: Self.rate) == Int64(original.count / 2 + encoder.preSkip), "round \(round)")
            let reused = floats(try decodeAll(packets, with: decoder)).dropFirst(encoder.preSkip * 2)
            let freshEncoder = try pair.encoder.makeEncoder(format: format, settings: AudioEncoderSettings(bitrate: 64_000))
            let fresh = floats(try decodeAll(try encodeAll(frames, with: freshEncoder), with: try makeDecoder(pair, format)))
                .dropFirst(freshEncoder.preSkip * 2)
            #expect(reused.count == original.count && fresh.count == original.count, "round \(round)")
            // Over the whole stream and over its first 100 ms, where leftover state would show.
            let first100ms = 2 * Self.rate / 10
            let (whole, opening) = (snr(original[...], reused), snr(original.prefix(first100ms), reused.prefix(first100ms)))
            let (freshWhole, freshStart) = (snr(original[...], fresh), snr(original.prefix(first100ms), fresh.prefix(first100ms)))
            print("\(pair) stream \(round): SNR \(String(format: "%.2f", whole)) dB (first 100 ms \(String(format: "%.2f", opening))), "
                  + "fresh codecs \(String(format: "%.2f", freshWhole)) dB (\(String(format: "%.2f", freshStart)))")
            #expect(whole >= freshWhole - 0.5 && opening >= freshStart - 0.5, "round \(round)")
        }
    }

    @Test(arguments: AudioCodecPair.builtIn)
    func badParametersAreInvalidSettings(pair: AudioCodecPair) throws {
        let format = try inputFormat(pair)
        let accepted = pair.encoder.inputCaps
        func with(rate: Int? = nil, channels: Int? = nil, encoding: Encoding? = nil) -> AudioFormat {
            AudioFormat(encoding: encoding ?? format.encoding, sampleRate: rate ?? format.sampleRate,
                        channels: channels ?? format.channels)
        }
        let oddRate: Int = try #require([44_100, 22_050, 11_025, 96_000, 7_350].first { !accepted.matches(.audio(with(rate: $0))) })
        let tooManyChannels = try #require((3...64).first { !accepted.matches(.audio(with(channels: $0))) })
        let ms = Rational(1, 1000)
        let cases: [(String, AudioFormat, AudioEncoderSettings)] = [
            ("rate \(oddRate)", with(rate: oddRate), AudioEncoderSettings()),
            ("rate 0", with(rate: 0), AudioEncoderSettings()),
            ("0 channels", with(channels: 0), AudioEncoderSettings()),
            ("\(tooManyChannels) channels", with(channels: tooManyChannels), AudioEncoderSettings()),
            ("compressed input", with(encoding: .compressed(pair.encoder.codec)), AudioEncoderSettings()),
            ("bitrate 0", format, AudioEncoderSettings(bitrate: 0)),
            ("bitrate 1 Gbit/s", format, AudioEncoderSettings(bitrate: 1_000_000_000)),
            ("0 ms packets", format, AudioEncoderSettings(frameDuration: MediaTime(0, timebase: ms))),
            ("-20 ms packets", format, AudioEncoderSettings(frameDuration: MediaTime(-20, timebase: ms))),
        ]
        for (label, format, settings) in cases {
            expectInvalidSetting(label) { _ = try pair.encoder.makeEncoder(format: format, settings: settings) }
        }
        let encoder = try pair.encoder.makeEncoder(format: format, settings: AudioEncoderSettings())
        expectInvalidSetting("setBitrate(0)") { try encoder.setBitrate(0) }
        expectInvalidSetting("setBitrate(1 Gbit/s)") { try encoder.setBitrate(1_000_000_000) }

        let compressed = compressedFormat(pair, format)
        expectInvalidSetting("decoder of raw input") { _ = try pair.decoder.makeDecoder(input: format, output: format) }
        for output in [with(rate: oddRate), with(channels: tooManyChannels), compressed] {
            #expect(!pair.decoder.outputCaps(for: compressed).matches(.audio(output)))
            expectInvalidSetting("decoder to \(output)") { _ = try pair.decoder.makeDecoder(input: compressed, output: output) }
        }
    }

    /// Expects `body` to throw `CodecError.invalidSetting`, and not any other error.
    func expectInvalidSetting(_ label: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("\(label) was accepted", sourceLocation: sourceLocation)
        } catch CodecError.invalidSetting {
        } catch {
            Issue.record("\(label): \(error) is not CodecError.invalidSetting", sourceLocation: sourceLocation)
        }
    }
}
