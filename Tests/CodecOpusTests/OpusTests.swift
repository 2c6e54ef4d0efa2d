import CodecOpus
import Foundation
import MediaCodecs
import MediaCore
import TestSupport
import Testing

@Suite("Opus through libopus")
struct OpusTests {
    let inputPool = BufferPool(name: "test-input")

    @Test("libopus reports its version")
    func version() {
        print(Opus.version)
        #expect(Opus.version.contains("libopus 1."))
    }

    /// Encodes 2 s of the test mix, decodes with the encoder's pre-skip, and compares sample by sample.
    @Test("round trip keeps every sample and a fair SNR", arguments: [
        (2, SampleFormat.s16, 20.0), (2, .f32, 20), (1, .s16, 20), (1, .f32, 20),
        (2, .s16, 10), (2, .f32, 40), (1, .s16, 60), (2, .s16, 60),
    ])
    func roundTrip(channels: Int, format: SampleFormat, frameMilliseconds: Double) throws {
        let raw = try TestAudio.raw(channels: channels, format: format)
        let input = pcmFormat(format, channels: channels)
        let start: Int64 = 48_000 * 3  // the stream starts at 3 s
        let frames = TestAudio.frames(raw, format: input, start: start, pool: inputPool)
        let inputSamples = frames.map(\.sampleCount).reduce(0, +)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(
            bitrate: 64_000, frameDuration: milliseconds(frameMilliseconds)))
        #expect(encoder.application == .audio)
        #expect(encoder.preSkip > 0)
        let packets = try encodeAll(frames, with: encoder)

        // Packets: contiguous, 48 kHz timestamps from the first input sample's time, keyframes.
        let packetTicks = Int64(frameMilliseconds * 48)
        #expect(packets.allSatisfy { $0.codec == .opus && $0.isKeyframe })
        #expect(packets.enumerated().allSatisfy { index, packet in
            packet.pts == MediaTime(start + Int64(index) * packetTicks, timebase: Opus.timebase)
        })
        #expect(packets.dropLast().allSatisfy { $0.duration == MediaTime(packetTicks, timebase: Opus.timebase) })
        // The packets cover input and encoder delay; the last one is trimmed to the real end.
        let covered = packets.map { $0.duration!.value }.reduce(0, +)
        #expect(covered == Int64(inputSamples + encoder.preSkip))
        #expect(packets.count == (inputSamples + encoder.preSkip + Int(packetTicks) - 1) / Int(packetTicks))

        let decoder = try OpusDecoder(input: opusFormat(channels: channels), output: input, preSkip: encoder.preSkip)
        let decoded = try decodeAll(packets, with: decoder)
        #expect(decoded.map(\.sampleCount).reduce(0, +) == inputSamples)
        #expect(decoded.first?.pts == MediaTime(start, timebase: Rational(1, 48_000)))
        let original = floats(raw, format: format), output = floats(decoded)
        #expect(output.count == original.count)
        let ratio = snr(original, output)
        let kbits = Double(packets.map(\.byteCount).reduce(0, +) * 8) / 2 / 1000
        print("Opus \(channels)ch \(format) \(frameMilliseconds) ms @ 64 kbit/s: SNR \(String(format: "%.2f", ratio)) dB, "
              + "\(String(format: "%.1f", kbits)) kbit/s, \(packets.count) packets, pre-skip \(encoder.preSkip)")
        // Measured: about 20 dB stereo, 25 dB mono; a pre-skip error of even one sample costs more.
        #expect(ratio >= (channels == 2 ? 16 : 20))
        let shifted = [-2, -1, 1, 2].map { shift in
            shift < 0 ? snr(original[(-shift * channels)...], output[...]) : snr(original[...], output[(shift * channels)...])
        }
        #expect(shifted.allSatisfy { $0 < ratio - 0.5 }, "SNR at shifts ±1, ±2: \(shifted) vs \(ratio) aligned")
    }

    @Test("every Opus rate round-trips", arguments: Opus.sampleRates)
    func everyRate(rate: Int) throws {
        let raw = try TestAudio.raw(sampleRate: rate, channels: 1, seconds: 1)
        let input = pcmFormat(rate: rate, channels: 1)
        let frames = TestAudio.frames(raw, format: input, lengths: [rate / 100, rate / 37], pool: inputPool)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(bitrate: 32_000))
        #expect(encoder.samplesPerPacket == rate / 50)
        let packets = try encodeAll(frames, with: encoder)
        // Timestamps and durations count 48 kHz samples whatever the rate.
        #expect(packets.dropLast().allSatisfy { $0.duration == MediaTime(960, timebase: Opus.timebase) })
        #expect(packets.map { $0.duration!.value }.reduce(0, +) == Int64(48_000 + encoder.preSkip))
        let decoded = try decodeAll(packets, with: OpusDecoder(input: opusFormat(channels: 1), output: input,
                                                              preSkip: encoder.preSkip))
        let original = floats(raw, format: .s16), output = floats(decoded)
        #expect(output.count == original.count)
        let ratio = snr(original, output)
        print("Opus \(rate) Hz mono @ 32 kbit/s: SNR \(String(format: "%.2f", ratio)) dB, pre-skip \(encoder.preSkip)")
        #expect(ratio >= 12)  // measured 16.6 (48 kHz) to 27 dB (8 kHz)
    }

    @Test("a 48 kHz stream decodes at 16 kHz mono and 24 kHz stereo")
    func decodeAtOtherRates() throws {
        let raw = try TestAudio.raw(seconds: 1)
        let input = pcmFormat()
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings())
        let packets = try encodeAll(TestAudio.frames(raw, format: input, pool: inputPool), with: encoder)
        for (rate, channels) in [(16_000, 1), (24_000, 2)] {
            let output = pcmFormat(.f32, rate: rate, channels: channels)
            let decoder = try OpusDecoder(input: opusFormat(), output: output, preSkip: encoder.preSkip)
            let frames = try decodeAll(packets, with: decoder)
            #expect(frames.allSatisfy { $0.sampleRate == rate && $0.channels == channels && $0.sampleFormat == .f32 })
            #expect(frames.map(\.sampleCount).reduce(0, +) == rate)
            #expect(frames.first?.pts == .zero(Rational(1, rate)))
        }
    }

    @Test("setBitrate while running lowers packet sizes")
    func lowerBitrate() throws {
        let raw = try TestAudio.raw(seconds: 2)
        let input = pcmFormat()
        let frames = TestAudio.frames(raw, format: input, pool: inputPool)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(bitrate: 128_000))
        var sizes: [Int] = []
        for (index, frame) in frames.enumerated() {
            if index == frames.count / 2 { try encoder.setBitrate(16_000) }
            try encoder.encode(frame) { sizes.append($0.byteCount) }
        }
        #expect(encoder.settings.bitrate == 16_000)
        let before = Double(sizes[5..<40].reduce(0, +)) / 35, after = Double(sizes[60..<95].reduce(0, +)) / 35
        print("Opus packet size at 128 kbit/s: \(before) bytes, after setBitrate(16000): \(after) bytes")
        #expect(after < before / 4)
        #expect(throws: CodecError.self) { try encoder.setBitrate(1000) }
    }

    @Test("DTX sends packets of 1-2 bytes during silence, and still one per frame")
    func dtx() throws {
        // 1 s of the mix, 1 s of digital silence, 1 s of the mix.
        var raw = try TestAudio.raw(channels: 1, seconds: 3)
        raw.replaceSubrange(96_000..<192_000, with: Data(count: 96_000))
        let input = pcmFormat(channels: 1)
        let frames = TestAudio.frames(raw, format: input, pool: inputPool)
        func encode(dtx: Bool) throws -> ([EncodedFrame], preSkip: Int) {
            let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(bitrate: 24_000, dtx: dtx))
            #expect(encoder.application == (dtx ? .voip : .audio))
            return (try encodeAll(frames, with: encoder), encoder.preSkip)
        }
        let (withDTX, preSkip) = try encode(dtx: true), without = try encode(dtx: false).0
        #expect(withDTX.count == without.count)
        #expect(withDTX.count >= 150)
        // Time goes on through the silence: contiguous timestamps.
        #expect(withDTX.enumerated().allSatisfy { $0.element.pts == MediaTime(Int64($0.offset) * 960, timebase: Opus.timebase) })
        let silent = withDTX[55..<100]  // from 1.1 s, after libopus's 200 ms of hangover
        let tiny = silent.filter { $0.byteCount <= 2 }.count
        print("Opus DTX: \(tiny) of \(silent.count) packets in the silence are 1-2 bytes; sizes there: "
              + "\(silent.map(\.byteCount)); without DTX: \(without[55..<100].map(\.byteCount).max() ?? 0) bytes max")
        #expect(tiny >= silent.count * 3 / 4)
        #expect(withDTX[0..<45].allSatisfy { $0.byteCount > 2 })
        #expect(without.allSatisfy { $0.byteCount > 2 })
        // The DTX stream still decodes to the full duration.
        let decoded = try decodeAll(withDTX, with: OpusDecoder(input: opusFormat(channels: 1), output: input,
                                                              preSkip: preSkip))
        #expect(decoded.map(\.sampleCount).reduce(0, +) == 144_000)
    }

    @Test("settings Opus cannot take throw invalidSetting")
    func invalidSettings() {
        func expectInvalid(_ format: AudioFormat, _ settings: AudioEncoderSettings = AudioEncoderSettings(),
                           sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                _ = try OpusEncoder(format: format, settings: settings)
                Issue.record("\(format) \(settings) was accepted", sourceLocation: sourceLocation)
            } catch CodecError.invalidSetting(let text) {
                #expect(text.hasPrefix("Opus encoder"), sourceLocation: sourceLocation)
            } catch {
                Issue.record("\(error) is not invalidSetting", sourceLocation: sourceLocation)
            }
        }
        expectInvalid(pcmFormat(rate: 44_100))
        expectInvalid(pcmFormat(channels: 3))
        expectInvalid(pcmFormat(channels: 0))
        expectInvalid(opusFormat())
        expectInvalid(pcmFormat(), AudioEncoderSettings(frameDuration: milliseconds(30)))
        expectInvalid(pcmFormat(), AudioEncoderSettings(frameDuration: milliseconds(80)))
        expectInvalid(pcmFormat(), AudioEncoderSettings(frameDuration: MediaTime(1, timebase: Rational(1, 3))))
        expectInvalid(pcmFormat(), AudioEncoderSettings(bitrate: 1000))
        expectInvalid(pcmFormat(), AudioEncoderSettings(bitrate: 600_000))
        expectInvalid(pcmFormat(), AudioEncoderSettings(complexity: 11))
        expectInvalid(pcmFormat(), AudioEncoderSettings(expectedLossPercent: 101))
        // Every listed duration is fine, whatever timebase expresses it.
        for duration in [MediaTime(5, timebase: Rational(1, 2000)), MediaTime(1, timebase: Rational(1, 200)),
                         MediaTime(60, timebase: Rational(1, 1000))] {
            #expect(throws: Never.self) { try OpusEncoder(format: pcmFormat(), settings: AudioEncoderSettings(frameDuration: duration)) }
        }

        for output in [pcmFormat(rate: 44_100), pcmFormat(channels: 3), opusFormat()] {
            #expect(throws: CodecError.self) { try OpusDecoder(input: opusFormat(), output: output) }
        }
        #expect(throws: CodecError.self) { try OpusDecoder(input: pcmFormat(), output: pcmFormat()) }
        #expect(throws: CodecError.self) { try OpusDecoder(input: opusFormat(channels: 6), output: pcmFormat()) }
    }

    @Test("frames of the wrong format are refused")
    func wrongFrameFormat() throws {
        let encoder = try OpusEncoder(format: pcmFormat(), settings: AudioEncoderSettings())
        let frame = AudioFrame(sampleFormat: .f32, sampleRate: 48_000, channels: 2, sampleCount: 960,
                               pts: .zero(Rational(1, 48_000)), pool: inputPool)
        #expect(throws: CodecError.self) { try encoder.encode(frame) { _ in } }
    }

    @Test("warm encoder and decoder pools stop allocating")
    func poolsStopAllocating() throws {
        let raw = try TestAudio.raw(seconds: 2)
        let input = pcmFormat()
        let frames = TestAudio.frames(raw, format: input, pool: inputPool)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(bitrate: 96_000))
        let decoder = try OpusDecoder(input: opusFormat(), output: input, preSkip: encoder.preSkip)
        var warm: (encoder: Int, decoder: Int)?
        var decoded = 0
        for (index, frame) in frames.enumerated() {
            // Packets and decoded frames are dropped as soon as they are used, as a pipeline would.
            try encoder.encode(frame) { packet in try decoder.decode(packet) { decoded += $0.sampleCount } }
            if index == frames.count / 4 { warm = (encoder.outputPool.allocations, decoder.outputPool.allocations) }
        }
        #expect(decoded > 90_000)
        #expect(encoder.outputPool.allocations == warm?.encoder)
        #expect(decoder.outputPool.allocations == warm?.decoder)
        #expect(encoder.outputPool.allocations <= 2 && decoder.outputPool.allocations <= 2)
        #expect(encoder.outputPool.outstanding == 0 && decoder.outputPool.outstanding == 0)
    }

    @Test("after flush, encoder and decoder start a new stream exactly as fresh ones would")
    func newStreamAfterFlush() throws {
        let input = pcmFormat()
        let first = TestAudio.frames(try TestAudio.raw(seconds: 1), format: input, pool: inputPool)
        let second = TestAudio.frames(try TestAudio.raw(seconds: 1, speech: true), format: input, start: 480_000,
                                      pool: inputPool)
        let settings = AudioEncoderSettings(bitrate: 64_000)
        let encoder = try OpusEncoder(format: input, settings: settings)
        let decoder = try OpusDecoder(input: opusFormat(), output: input, preSkip: encoder.preSkip)
        _ = try decodeAll(try encodeAll(first, with: encoder), with: decoder)
        let reused = try decodeAll(try encodeAll(second, with: encoder), with: decoder)

        let freshEncoder = try OpusEncoder(format: input, settings: settings)
        let fresh = try decodeAll(try encodeAll(second, with: freshEncoder),
                                  with: OpusDecoder(input: opusFormat(), output: input, preSkip: freshEncoder.preSkip))
        // The pre-skip is dropped again, and no state of the first stream is left in either codec.
        #expect(reused.map(\.sampleCount).reduce(0, +) == 48_000)
        #expect(reused.first?.pts == MediaTime(480_000, timebase: Rational(1, 48_000)))
        let (a, b) = (floats(reused), floats(fresh))
        #expect(a.count == b.count && zip(a, b).allSatisfy { $0 == $1 }, "the reused codecs' output differs from fresh ones'")
    }

    @Test("providers make working codecs and describe them")
    func providers() throws {
        var registry = CodecRegistry()
        registry.register(OpusEncoderProvider())
        registry.register(OpusDecoderProvider())
        let encoderProvider = try registry.audioEncoder(for: .opus)
        let decoderProvider = try registry.audioDecoder(for: .opus)
        #expect(encoderProvider.name == "libopus" && decoderProvider.name == "libopus")
        for rate in Opus.sampleRates {
            #expect(encoderProvider.inputCaps.matches(.audio(pcmFormat(rate: rate, channels: 1))))
        }
        #expect(!encoderProvider.inputCaps.matches(.audio(pcmFormat(rate: 44_100))))
        #expect(!encoderProvider.inputCaps.matches(.audio(pcmFormat(channels: 3))))
        let output = decoderProvider.outputCaps(for: opusFormat(channels: 1))
        #expect(output.fixated == .audio(pcmFormat(.f32, rate: 48_000, channels: 1)))
        #expect(output.matches(.audio(pcmFormat(.s16, rate: 8_000, channels: 2))))

        let encoder = try encoderProvider.makeEncoder(format: pcmFormat(), settings: AudioEncoderSettings())
        let decoder = try decoderProvider.makeDecoder(input: opusFormat(), output: pcmFormat(.f32))
        var packets: [EncodedFrame] = []
        for frame in TestAudio.frames(try TestAudio.raw(seconds: 0.5), format: pcmFormat(), pool: inputPool) {
            try encoder.encode(frame) { packets.append($0) }
        }
        try encoder.flush { packets.append($0) }
        var samples = 0
        for packet in packets { try decoder.decode(packet) { samples += $0.sampleCount } }
        // Without a pre-skip the decoder keeps the encoder's delay: input plus pre-skip.
        #expect(samples == 24_000 + encoder.preSkip)
    }

    @Test("an encoder starts a new stream after flush")
    func reuseAfterFlush() throws {
        let raw = try TestAudio.raw(seconds: 0.5)
        let encoder = try OpusEncoder(format: pcmFormat(), settings: AudioEncoderSettings())
        let first = try encodeAll(TestAudio.frames(raw, format: pcmFormat(), pool: inputPool), with: encoder)
        let second = try encodeAll(TestAudio.frames(raw, format: pcmFormat(), start: 96_000, pool: inputPool), with: encoder)
        #expect(first.count == second.count)
        #expect(second.first?.pts == MediaTime(96_000, timebase: Opus.timebase))
        // A reset encoder encodes the same input to the same packets.
        #expect(first.map { Data($0.bytes) } == second.map { Data($0.bytes) })
    }
}
