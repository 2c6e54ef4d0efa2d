import Foundation
import Sluice
import Testing
import TestSupport

/// A codec defined outside Sluice, as an application would: uncompressed I420 in a packed layout
/// under its own codec name. It shows that the registry and the codec nodes take plug-ins.
struct PackedI420EncoderProvider: VideoEncoderProvider {
    let name = "test-packed"
    let codec: CodecName = "PACKED-I420"
    var inputCaps: Caps { [.video(.exactly(.pixels(.i420)))] }

    final class Encoder: VideoEncoder {
        let pool = BufferPool(name: "packed")
        func encode(_ frame: VideoFrame, forceKeyframe: Bool, emit: (consuming EncodedFrame) throws -> Void) throws {
            let bytes = TestSupport.packed(frame)
            try bytes.withUnsafeBytes {
                try emit(EncodedFrame(codec: "PACKED-I420", isKeyframe: true, pts: frame.pts, copying: $0, pool: pool))
            }
        }
        func flush(emit: (consuming EncodedFrame) throws -> Void) throws {}
        func setBitrate(_ bitsPerSecond: Int) throws {}
    }

    func makeEncoder(format: VideoFormat, settings: VideoEncoderSettings) throws -> any VideoEncoder { Encoder() }
}

struct PackedI420DecoderProvider: VideoDecoderProvider {
    let name = "test-packed"
    let codec: CodecName = "PACKED-I420"

    func outputCaps(for input: VideoFormat) -> Caps {
        Caps(.video(VideoFormat(encoding: .pixels(.i420), width: input.width, height: input.height, frameRate: input.frameRate)))
    }

    final class Decoder: VideoDecoder {
        let format: VideoFormat
        let pool = BufferPool(name: "unpacked")
        init(format: VideoFormat) { self.format = format }
        func decode(_ frame: EncodedFrame, emit: (consuming VideoFrame) throws -> Void) throws {
            let picture = VideoFrame(width: format.width, height: format.height, pts: frame.pts, pool: pool)
            var offset = 0
            for plane in 0..<3 {
                for row in 0..<picture.layout[plane].rows {
                    let line = picture.row(row, ofPlane: plane)
                    guard offset + line.count <= frame.byteCount else {
                        throw CodecError.library(name: "test-packed", operation: "decode", code: -1, message: "short frame")
                    }
                    line.copyMemory(from: UnsafeRawBufferPointer(rebasing: frame.bytes[offset..<(offset + line.count)]))
                    offset += line.count
                }
            }
            try emit(picture)
        }
        func flush(emit: (consuming VideoFrame) throws -> Void) throws {}
    }

    func makeDecoder(format: VideoFormat, threads: Int) throws -> any VideoDecoder { Decoder(format: format) }
}

@Suite struct CodecPluginTests {
    @Test func registryOrderIsPreferenceAndPreferMovesAProviderFirst() throws {
        var registry = CodecRegistry.builtIn
        registry.register(PackedI420EncoderProvider())
        registry.register(PackedI420DecoderProvider())
        #expect(try registry.videoEncoder(for: "packed-i420").name == "test-packed")
        #expect(try registry.videoEncoder(for: .vp8).name == "libvpx")
        #expect(registry.videoEncoders.last?.name == "test-packed")
        registry.prefer("test-packed")
        #expect(registry.videoEncoders.first?.name == "test-packed")
        #expect(registry.videoDecoders.first?.name == "test-packed")
        #expect(throws: CodecError.noProvider("AV1", role: "video encoder")) { try registry.videoEncoder(for: "AV1") }
        #expect(throws: CodecError.self) { try registry.videoEncoder(for: .vp8, named: "test-packed") }
    }

    @Test func aPluginCodecRunsThroughTheGraphLikeABuiltInOne() throws {
        var registry = CodecRegistry.builtIn
        registry.register(PackedI420EncoderProvider())
        registry.register(PackedI420DecoderProvider())
        let pictures = try TestSupport.sampleFrames(count: 10, width: 160, height: 120, pool: BufferPool(name: "in"))
        let graph = Graph()
        let sink = CollectingSink<VideoFrame>(accepting: [.video(.exactly(.pixels(.i420)))])
        let format = VideoFormat(encoding: .pixels(.i420), width: 160, height: 120, frameRate: Rational(25, 1))
        let encoded = graph.add(VideoEncoderNode(try registry.videoEncoder(for: "PACKED-I420"), settings: VideoEncoderSettings()),
                                input: graph.add(ItemsSource(pictures, format: .video(format))))
        graph.add(sink, input: graph.add(VideoDecoderNode(try registry.videoDecoder(for: "PACKED-I420")), input: encoded))
        try graph.run()
        #expect(sink.items.count == 10)
        for (a, b) in zip(pictures, sink.items) { #expect(PictureQuality.psnr(a, b) == .infinity) }
    }
}

@Suite struct AudioCodecPluginTests {
    static let format = AudioFormat(encoding: .samples(.s16), sampleRate: 48_000, channels: 2)
    /// L16's only bitrate at 48 kHz stereo.
    static let settings = AudioEncoderSettings(bitrate: 48_000 * 2 * 16)

    var registry: CodecRegistry {
        var registry = CodecRegistry.builtIn
        registry.register(L16EncoderProvider())
        registry.register(L16DecoderProvider())
        return registry
    }

    @Test func anAudioPluginIsFoundByCodecAndCanBePreferred() throws {
        var registry = self.registry
        #expect(try registry.audioEncoder(for: "l16").name == "test-l16")
        #expect(try registry.audioDecoder(for: "L16").name == "test-l16")
        #expect(try registry.audioEncoder(for: .opus).name == "libopus")
        #expect(registry.audioEncoders.last?.name == "test-l16")
        registry.prefer("test-l16")
        #expect(registry.audioEncoders.first?.name == "test-l16")
        #expect(registry.audioDecoders.first?.name == "test-l16")
        #expect(registry.audioEncoders.count == CodecRegistry.builtIn.audioEncoders.count + 1)
        #expect(throws: CodecError.noProvider("AAC", role: "audio encoder")) { try registry.audioEncoder(for: "AAC") }
        #expect(throws: CodecError.noProvider("AAC", role: "audio decoder")) { try registry.audioDecoder(for: "AAC") }
        #expect(throws: CodecError.self) { try registry.audioEncoder(for: .opus, named: "test-l16") }
    }

    @Test func theEncoderWritesNetworkByteOrderInPacketsOfTheFrameDuration() throws {
        let encoder = try L16EncoderProvider().makeEncoder(format: Self.format, settings: Self.settings)
        let frame = AudioFrame(sampleFormat: .s16, sampleRate: 48_000, channels: 2, sampleCount: 1500,
                               pts: MediaTime(480, timebase: Rational(1, 48_000)), pool: BufferPool(name: "l16-in"))
        let samples = frame.bytes.bindMemory(to: Int16.self)
        for index in samples.indices { samples[index] = Int16(truncatingIfNeeded: index &* 0x0102 &- 3) }
        let packets = try encodeAll([frame], with: encoder)
        // 1500 samples: a 20 ms packet (960), then the flushed rest (540).
        #expect(packets.map(\.byteCount) == [960 * 4, 540 * 4])
        #expect(packets.map(\.pts.value) == [480, 1440])
        #expect(packets.map { $0.duration?.value } == [960, 540])
        // Sample 0 is -3 (FF FD), sample 1 is 0x0102 - 3 = 0x00FF (00 FF): big-endian on the wire.
        #expect(Array(packets[0].bytes.prefix(4)) == [0xFF, 0xFD, 0x00, 0xFF])
    }

    @Test func anAudioPluginRunsThroughTheGraphLikeABuiltInOne() throws {
        let raw = try TestAudio.raw(seconds: 0.5)
        let frames = TestAudio.frames(raw, format: Self.format, start: 4800, pool: BufferPool(name: "in"))
        let registry = self.registry
        let graph = Graph()
        let packets = graph.add(AudioEncoderNode(try registry.audioEncoder(for: "L16"), settings: Self.settings),
                                input: graph.add(ItemsSource(frames, format: .audio(Self.format))))
        let sink = CollectingSink<AudioFrame>(accepting: .anyAudio)
        graph.add(sink, input: graph.add(AudioDecoderNode(try registry.audioDecoder(for: "L16")), input: packets))
        try graph.run()
        #expect(sink.format == .audio(Self.format))
        #expect(sink.finished)
        // Lossless: every sample back, bit for bit, on the same timeline; 24000 samples make 25 packets.
        #expect(sink.items.count == 25)
        #expect(sink.items.first?.pts == MediaTime(4800, timebase: Rational(1, 48_000)))
        #expect(sink.items.map { Data($0.bytes) }.reduce(Data(), +) == raw)
    }

    @Test func l16RefusesWhatItCannotCarry() {
        let provider = L16EncoderProvider()
        for (format, settings) in [
            (AudioFormat(encoding: .samples(.f32), sampleRate: 48_000, channels: 2), Self.settings),
            (AudioFormat(encoding: .samples(.s16), sampleRate: 48_000, channels: 9), Self.settings),
            (Self.format, AudioEncoderSettings(bitrate: 64_000)),
            (Self.format, AudioEncoderSettings(bitrate: Self.settings.bitrate, frameDuration: MediaTime(1, timebase: Rational(1, 96_000)))),
        ] {
            #expect(throws: CodecError.self) { _ = try provider.makeEncoder(format: format, settings: settings) }
        }
    }
}
