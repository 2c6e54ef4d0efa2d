import Foundation
import Sluice

/// An audio codec defined outside Sluice, as an application would: L16 (RFC 3551 §4.5.11), 16-bit
/// signed samples in network byte order, interleaved, uncompressed. It shows that the registry and
/// the audio codec nodes take plug-ins.
///
/// Packets hold `settings.frameDuration` of audio (RFC 3551 §4.2 suggests 20 ms); their pts and
/// duration count samples at the stream's rate. The bitrate is fixed by the format
/// (rate × channels × 16), so it is the only one `setBitrate` accepts.
struct L16EncoderProvider: AudioEncoderProvider {
    static let codec: CodecName = "L16"
    let name = "test-l16"
    var codec: CodecName { Self.codec }
    var inputCaps: Caps { [.audio(.exactly(.samples(.s16)), sampleRate: .range(1...192_000), channels: .range(1...8))] }

    func makeEncoder(format: AudioFormat, settings: AudioEncoderSettings) throws -> any AudioEncoder {
        func fail(_ text: String) -> CodecError { .invalidSetting("L16 encoder: " + text) }
        guard inputCaps.matches(.audio(format)) else { throw fail("\(format) is not s16 at 1-192000 Hz, 1-8 channels") }
        let timebase = Rational(1, format.sampleRate)
        let samples = settings.frameDuration.rescaled(to: timebase)
        guard samples == settings.frameDuration, samples.value > 0 else {
            throw fail("frame duration \(settings.frameDuration) is not a positive whole number of samples")
        }
        let encoder = Encoder(format: format, samplesPerPacket: Int(samples.value))
        guard settings.bitrate == encoder.bitrate else {
            throw fail("bitrate \(settings.bitrate) bit/s; \(format) is \(encoder.bitrate) bit/s")
        }
        return encoder
    }

    final class Encoder: AudioEncoder {
        let format: AudioFormat
        let samplesPerPacket: Int
        let bitrate: Int
        let preSkip = 0
        let pool = BufferPool(name: "l16-encoder")
        /// The packet being filled, in network byte order.
        private var pending: [UInt8] = []
        /// The pts of `pending`'s first sample.
        private var pendingStart: Int64?

        init(format: AudioFormat, samplesPerPacket: Int) {
            self.format = format
            self.samplesPerPacket = samplesPerPacket
            bitrate = format.sampleRate * format.channels * 16
            pending.reserveCapacity(samplesPerPacket * format.channels * 2)
        }

        func encode(_ frame: AudioFrame, emit: (consuming EncodedFrame) throws -> Void) throws {
            guard frame.sampleFormat == .s16, frame.sampleRate == format.sampleRate, frame.channels == format.channels else {
                throw CodecError.invalidSetting("L16 encoder set up for \(format) got other samples")
            }
            let first = frame.pts.rescaled(to: Rational(1, format.sampleRate)).value
            for (index, sample) in UnsafeRawBufferPointer(frame.bytes).bindMemory(to: Int16.self).enumerated() {
                if pending.isEmpty { pendingStart = first + Int64(index / format.channels) }
                withUnsafeBytes(of: sample.bigEndian) { pending += $0 }
                if pending.count == samplesPerPacket * format.channels * 2 { try emitPending(emit) }
            }
        }

        /// Sends what is buffered as a shorter last packet.
        func flush(emit: (consuming EncodedFrame) throws -> Void) throws {
            if !pending.isEmpty { try emitPending(emit) }
        }

        func setBitrate(_ bitsPerSecond: Int) throws {
            guard bitsPerSecond == bitrate else {
                throw CodecError.invalidSetting("L16 encoder: bitrate is fixed at \(bitrate) bit/s")
            }
        }

        private func emitPending(_ emit: (consuming EncodedFrame) throws -> Void) throws {
            let timebase = Rational(1, format.sampleRate)
            let samples = pending.count / (format.channels * 2)
            let packet = pending.withUnsafeBytes {
                EncodedFrame(codec: L16EncoderProvider.codec, isKeyframe: true, pts: MediaTime(pendingStart!, timebase: timebase),
                             duration: MediaTime(Int64(samples), timebase: timebase), copying: $0, pool: pool)
            }
            pending.removeAll(keepingCapacity: true)
            try emit(packet)
        }
    }
}

struct L16DecoderProvider: AudioDecoderProvider {
    let name = "test-l16"
    var codec: CodecName { L16EncoderProvider.codec }

    /// The stream's own rate and channels, as 16-bit samples.
    func outputCaps(for input: AudioFormat) -> Caps {
        Caps(.audio(AudioFormat(encoding: .samples(.s16), sampleRate: input.sampleRate, channels: input.channels)))
    }

    func makeDecoder(input: AudioFormat, output: AudioFormat) throws -> any AudioDecoder {
        guard input.encoding == .compressed(codec), outputCaps(for: input).matches(.audio(output)) else {
            throw CodecError.invalidSetting("L16 decoder: \(input) cannot be decoded to \(output)")
        }
        return Decoder(format: output)
    }

    final class Decoder: AudioDecoder {
        let format: AudioFormat
        let pool = BufferPool(name: "l16-decoder")
        /// Where the next sample belongs, for concealment.
        private var next: MediaTime

        init(format: AudioFormat) {
            self.format = format
            next = .zero(Rational(1, format.sampleRate))
        }

        func decode(_ packet: EncodedFrame, emit: (consuming AudioFrame) throws -> Void) throws {
            let bytesPerFrame = format.channels * 2
            guard packet.byteCount % bytesPerFrame == 0 else {
                throw CodecError.library(name: "test-l16", operation: "decode", code: -1,
                                         message: "\(packet.byteCount) bytes is not a whole number of \(format.channels)-channel samples")
            }
            let frame = AudioFrame(sampleFormat: .s16, sampleRate: format.sampleRate, channels: format.channels,
                                   sampleCount: packet.byteCount / bytesPerFrame,
                                   pts: packet.pts.rescaled(to: Rational(1, format.sampleRate)), pool: pool)
            let samples = frame.bytes.bindMemory(to: Int16.self)
            for index in samples.indices {
                samples[index] = Int16(bigEndian: packet.bytes.loadUnaligned(fromByteOffset: index * 2, as: Int16.self))
            }
            next = frame.pts + frame.duration
            try emit(frame)
        }

        /// Silence for the missing packets.
        func concealLoss(duration: MediaTime, emit: (consuming AudioFrame) throws -> Void) throws {
            let count = Int(duration.rescaled(to: Rational(1, format.sampleRate)).value)
            guard count > 0 else { return }
            let frame = AudioFrame(sampleFormat: .s16, sampleRate: format.sampleRate, channels: format.channels,
                                   sampleCount: count, pts: next, pool: pool)
            frame.bytes.initializeMemory(as: UInt8.self, repeating: 0)
            next = frame.pts + frame.duration
            try emit(frame)
        }

        func flush(emit: (consuming AudioFrame) throws -> Void) throws {}
    }
}
