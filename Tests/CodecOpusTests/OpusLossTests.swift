import CodecOpus
import Foundation
import MediaCodecs
import MediaCore
import TestSupport
import Testing

/// Packet loss: concealment (PLC) and recovery from in-band FEC.
@Suite("Opus packet loss")
struct OpusLossTests {
    let inputPool = BufferPool(name: "test-input")

    @Test("PLC makes up exactly the lost duration, in pieces of at most 120 ms")
    func concealment() throws {
        let raw = try TestAudio.raw(channels: 1, seconds: 1)
        let input = pcmFormat(channels: 1)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(bitrate: 32_000))
        let packets = try encodeAll(TestAudio.frames(raw, format: input, pool: inputPool), with: encoder)
        let decoder = try OpusDecoder(input: opusFormat(channels: 1), output: input, preSkip: encoder.preSkip)
        var output: [AudioFrame] = []
        var concealed: [AudioFrame] = []
        for (index, packet) in packets.enumerated() {
            if index == 10 {
                try decoder.concealLoss(duration: packet.duration!) { concealed.append($0); output.append($0) }
            } else {
                try decoder.decode(packet) { output.append($0) }
            }
        }
        // One 20 ms packet made up: 960 samples, at the lost packet's place (pre-skip subtracted).
        #expect(concealed.map(\.sampleCount) == [960])
        #expect(concealed.first?.pts == MediaTime(10 * 960 - Int64(encoder.preSkip), timebase: Rational(1, 48_000)))
        #expect(output.map(\.sampleCount).reduce(0, +) == 48_000)
        #expect(zip(output, output.dropFirst()).allSatisfy { $0.pts + $0.duration == $1.pts })
        // Concealment continues the signal rather than going silent.
        let energy = floats(concealed).map { Double($0 * $0) }.reduce(0, +)
        #expect(energy > 0)

        // 130 ms (a burst of lost packets) comes as 120 + 10 ms, at 16 kHz stereo too.
        let wide = try OpusDecoder(input: opusFormat(channels: 1), output: pcmFormat(.f32, rate: 16_000, channels: 2))
        try wide.decode(packets[0]) { _ in }
        var pieces: [Int] = []
        try wide.concealLoss(duration: MediaTime(130, timebase: Rational(1, 1000))) { pieces.append($0.sampleCount) }
        #expect(pieces == [1920, 160])
    }

    /// On the voice-like signal: libopus codes FEC (SILK LBRR) only for frames its voice detector
    /// finds active.
    @Test("in-band FEC rebuilds a lost packet better than PLC")
    func fecBeatsConcealment() throws {
        let raw = try TestAudio.raw(channels: 1, seconds: 2, speech: true)
        let input = pcmFormat(channels: 1)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(
            bitrate: 32_000, inbandFEC: true, expectedLossPercent: 20))
        #expect(encoder.application == .voip)
        let packets = try encodeAll(TestAudio.frames(raw, format: input, pool: inputPool), with: encoder)
        let lost = Set(stride(from: 10, to: packets.count - 2, by: 7))

        func decode(recovering: Bool) throws -> [Float] {
            let decoder = try OpusDecoder(input: opusFormat(channels: 1), output: input, preSkip: encoder.preSkip)
            var frames: [AudioFrame] = []
            for (index, packet) in packets.enumerated() where !lost.contains(index) {
                if lost.contains(index - 1) {
                    if recovering {
                        try decoder.decode(packet, recoveringLostPacketBefore: true) { frames.append($0) }
                        continue
                    }
                    try decoder.concealLoss(duration: packets[index - 1].duration!) { frames.append($0) }
                }
                try decoder.decode(packet) { frames.append($0) }
            }
            #expect(frames.map(\.sampleCount).reduce(0, +) == 96_000)
            return floats(frames)
        }
        let original = floats(raw, format: .s16)
        let concealed = try decode(recovering: false), recovered = try decode(recovering: true)
        let clean = floats(try decodeAll(packets, with: OpusDecoder(input: opusFormat(channels: 1), output: input,
                                                                    preSkip: encoder.preSkip)))
        // SNR over the lost packets' spans only (after pre-skip, packet i covers [960 i - 312, 960 (i + 1) - 312)),
        // against the input and against the decode without loss (what recovery should come close to).
        func lossSNR(_ output: [Float], _ reference: [Float]) -> Double {
            var signal = 0.0, noise = 0.0
            for index in lost {
                for i in Swift.max(0, index * 960 - encoder.preSkip)..<((index + 1) * 960 - encoder.preSkip) {
                    signal += Double(reference[i] * reference[i])
                    noise += Double((reference[i] - output[i]) * (reference[i] - output[i]))
                }
            }
            return 10 * log10(signal / noise)
        }
        let plc = lossSNR(concealed, original), fec = lossSNR(recovered, original)
        let plcClean = lossSNR(concealed, clean), fecClean = lossSNR(recovered, clean)
        func dB(_ value: Double) -> String { String(format: "%.2f dB", value) }
        print("Opus loss of \(lost.count) packets (32 kbit/s mono voice, FEC, 20% expected): SNR over the lost spans "
              + "against the input: PLC \(dB(plc)), FEC \(dB(fec)); against the loss-free decode: PLC \(dB(plcClean)), "
              + "FEC \(dB(fecClean)); loss-free decode \(dB(snr(original, clean))) overall")
        // Measured: +2.5 dB against the input, +6.4 dB against the loss-free decode.
        #expect(fec > plc + 1)
        #expect(fecClean > plcClean + 3)
    }

    @Test("malformed packets throw libopus errors and decoding goes on")
    func corruptPackets() throws {
        let raw = try TestAudio.raw(seconds: 0.2)
        let encoder = try OpusEncoder(format: pcmFormat(), settings: AudioEncoderSettings())
        let packets = try encodeAll(TestAudio.frames(raw, format: pcmFormat(), pool: inputPool), with: encoder)
        let decoder = try OpusDecoder(input: opusFormat(), output: pcmFormat())
        let malformed: [[UInt8]] = [
            [],  // RFC 6716 [R1]: at least one byte
            [0x03],  // code 3 without the frame count byte
            [0x03, 0x00],  // code 3, zero frames
            [0x01, 0x11],  // code 1 with an odd payload
            [0x02, 0xFF],  // code 2 whose first frame length runs past the end
            [0x1B, 0x3F] + [UInt8](repeating: 0, count: 40),  // 63 frames of 20 ms: over 120 ms
        ]
        for bytes in malformed {
            let packet = bytes.withUnsafeBytes {
                EncodedFrame(codec: .opus, isKeyframe: true, pts: .zero(Opus.timebase), copying: $0, pool: nil)
            }
            #expect(throws: CodecError.self) { try decoder.decode(packet) { _ in } }
            do {
                try decoder.decode(packet) { _ in }
            } catch CodecError.library(let name, let operation, let code, let message) {
                #expect(name == "libopus" && operation == "decode" && code < 0 && !message.isEmpty)
            }
        }
        var decoded = 0
        for packet in packets { try decoder.decode(packet) { decoded += $0.sampleCount } }
        #expect(Int64(decoded) == packets.map { $0.duration!.value }.reduce(0, +))

        // Random damage to real packets: decoded audio or a libopus error, never a crash.
        var rng = SplitMix64(seed: 0x0905)
        var errors = 0
        for iteration in 0..<2000 {
            var bytes = [UInt8](packets[iteration % packets.count].bytes)
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
                case 1: bytes[at] = UInt8.random(in: 0...255, using: &rng)
                default: bytes.removeSubrange(Swift.max(1, at)...)
                }
            }
            let packet = bytes.withUnsafeBytes {
                EncodedFrame(codec: .opus, isKeyframe: true, pts: .zero(Opus.timebase), copying: $0, pool: nil)
            }
            do {
                try decoder.decode(packet) { #expect($0.sampleCount > 0 && $0.sampleCount <= 5760) }
            } catch CodecError.library(let name, _, _, _) {
                #expect(name == "libopus")
                errors += 1
            }
        }
        #expect(errors > 0)
    }
}
