import CodecVPX
import Foundation
import MediaCodecs
import MediaCore
import TestSupport
import Testing

@Suite("VP8 through libvpx")
struct VP8Tests {
    let inputPool = BufferPool(name: "test-input")

    @Test("libvpx reports its version")
    func version() {
        print("libvpx \(VPX.version)")
        #expect(VPX.version.contains("1."))
    }

    @Test("30 pictures at 500 kbit/s round-trip with mean PSNR of at least 30 dB", arguments: [true, false])
    func roundTrip(realtime: Bool) throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, realtime: realtime))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(encoded.count == 30)
        #expect(encoded.first?.isKeyframe == true)
        #expect(encoded.map(\.pts) == frames.map(\.pts))
        #expect(encoded.allSatisfy { $0.codec == .vp8 && $0.duration == MediaTime(1, timebase: Samples.timebase) })

        let decoded = try decodeAll(encoded, with: VP8Decoder(format: vp8Format()))
        #expect(decoded.count == 30)
        #expect(decoded.map(\.pts) == frames.map(\.pts))
        #expect(decoded.allSatisfy { $0.width == 320 && $0.height == 240 && $0.pixelFormat == .i420 })
        let psnr = meanPSNR(frames, decoded)
        let kbits = Double(encoded.map(\.byteCount).reduce(0, +) * 8) / 1000 / (30 / Samples.frameRate.doubleValue)
        print("VP8 \(realtime ? "realtime CBR" : "good-quality VBR") 320x240 @ 500 kbit/s: mean PSNR "
              + "\(String(format: "%.2f", psnr)) dB, actual \(Int(kbits)) kbit/s")
        #expect(psnr >= 30)
    }

    @Test("realtime output depends only on the input (fixed cpu-used)")
    func deterministic() throws {
        let frames = try Samples.bunny(count: 20, pool: inputPool)
        func encode() throws -> [Data] {
            let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000))
            return try encodeAll(frames, with: encoder).map { Data($0.bytes) }
        }
        #expect(try encode() == encode())
    }

    @Test("odd picture sizes round-trip")
    func oddSize() throws {
        let frames = Samples.synthetic(count: 10, width: 161, height: 121, pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(width: 161, height: 121), settings: VideoEncoderSettings(bitrate: 400_000))
        let decoded = try decodeAll(encodeAll(frames, with: encoder), with: VP8Decoder(format: vp8Format(width: 161, height: 121)))
        #expect(decoded.count == 10)
        #expect(decoded.allSatisfy { $0.width == 161 && $0.height == 121 })
        #expect(meanPSNR(frames, decoded) >= 30)
    }

    @Test("forceKeyframe makes exactly that picture a keyframe")
    func forcedKeyframe() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 1000))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [12])
        let keyframes = encoded.indices.filter { encoded[$0].isKeyframe }
        #expect(keyframes == [0, 12])
    }

    @Test("keyframeInterval 10 puts keyframes at 0, 10 and 20")
    func keyframeInterval() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(encoded.indices.filter { encoded[$0].isKeyframe } == [0, 10, 20])
    }

    @Test("setBitrate while running lowers the size of later frames")
    func lowerBitrate() throws {
        let frames = try Samples.bunny(count: 60, pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 2_000_000))
        var sizes: [Int] = []
        for (index, frame) in frames.enumerated() {
            if index == 30 { try encoder.setBitrate(150_000) }
            try encoder.encode(frame, forceKeyframe: false) { sizes.append($0.byteCount) }
        }
        try encoder.flush { sizes.append($0.byteCount) }
        #expect(sizes.count == 60)
        #expect(encoder.settings.bitrate == 150_000)
        // Skip the first keyframe and give the rate control a few frames to settle after the change.
        func mean(_ range: Range<Int>) -> Double { Double(sizes[range].reduce(0, +)) / Double(range.count) }
        let before = mean(5..<30), after = mean(40..<60)
        print("VP8 mean frame size at 2 Mbit/s: \(Int(before)) bytes; after setBitrate(150 kbit/s): \(Int(after)) bytes")
        #expect(after < before / 4)
    }

    @Test("flush returns every frame", arguments: [true, false])
    func flushKeepsCount(realtime: Bool) throws {
        let frames = Samples.synthetic(count: 25, width: 320, height: 240, pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 300_000, threads: 2, realtime: realtime))
        var duringEncode = 0, duringFlush = 0
        for frame in frames { try encoder.encode(frame, forceKeyframe: false) { _ in duringEncode += 1 } }
        try encoder.flush { _ in duringFlush += 1 }
        #expect(duringEncode + duringFlush == frames.count)
    }

    @Test("invalid settings throw CodecError.invalidSetting", arguments: [
        (rawFormat(width: 0), VideoEncoderSettings()),
        (rawFormat(width: 16384), VideoEncoderSettings()),
        (rawFormat(height: 0), VideoEncoderSettings()),
        (vp8Format(), VideoEncoderSettings()),
        (VideoFormat(encoding: .pixels(.i420), width: 320, height: 240, frameRate: Rational(0, 1)), VideoEncoderSettings()),
        (rawFormat(), VideoEncoderSettings(bitrate: 0)),
        (rawFormat(), VideoEncoderSettings(bitrate: -5)),
        (rawFormat(), VideoEncoderSettings(threads: 0)),
        (rawFormat(), VideoEncoderSettings(threads: 65)),
        (rawFormat(), VideoEncoderSettings(keyframeInterval: 0)),
    ])
    func invalidSettings(format: VideoFormat, settings: VideoEncoderSettings) {
        #expect(throws: CodecError.self) { try VP8Encoder(format: format, settings: settings) }
        do {
            _ = try VP8Encoder(format: format, settings: settings)
        } catch let error as CodecError {
            guard case .invalidSetting(let text) = error else { Issue.record("unexpected \(error)"); return }
            #expect(!text.isEmpty)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("bad bitrate changes, picture sizes and decoder settings throw CodecError.invalidSetting")
    func invalidUse() throws {
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings())
        #expect(throws: CodecError.self) { try encoder.setBitrate(0) }
        let wrongSize = Samples.synthetic(count: 1, width: 160, height: 120, pool: inputPool)[0]
        #expect(throws: CodecError.self) { try encoder.encode(wrongSize, forceKeyframe: false) { _ in } }
        #expect(throws: CodecError.self) { try VP8Decoder(format: rawFormat()) }
        #expect(throws: CodecError.self) { try VP8Decoder(format: vp8Format(), threads: 0) }
        #expect(encoder.settings.bitrate == VideoEncoderSettings().bitrate)
    }

    @Test("garbage throws CodecError.library and the next keyframe still decodes")
    func garbage() throws {
        let frames = try Samples.bunny(count: 12, pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [8])
        let decoder = try VP8Decoder(format: vp8Format())

        var generator = SplitMix64(seed: 42)
        let noise = (0..<2000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        func expectDecodeError(_ bytes: [UInt8]) {
            let frame = bytes.withUnsafeBytes {
                EncodedFrame(codec: .vp8, isKeyframe: false, pts: .zero(Samples.timebase), copying: $0, pool: nil)
            }
            do {
                try decoder.decode(frame) { _ in Issue.record("garbage produced a picture") }
                Issue.record("garbage decoded without error")
            } catch let CodecError.library(name, operation, code, message) {
                print("VP8 garbage: \(name) \(operation) failed (\(code)): \(message)")
                #expect(name == "libvpx" && operation == "decode" && code != 0)
            } catch {
                Issue.record("unexpected \(error)")
            }
        }

        expectDecodeError(noise)  // before any keyframe
        _ = try decodeAll(Array(encoded[0..<4]), with: decoder)
        var fakeKeyframe = noise
        fakeKeyframe[0] &= 0xFE  // the keyframe bit, with a broken start code after it
        expectDecodeError(fakeKeyframe)
        expectDecodeError(Array(encoded[0].bytes.prefix(40)))  // a truncated keyframe

        let resumed = try decodeAll(Array(encoded[8...]), with: decoder)
        #expect(resumed.count == 4)
        #expect(meanPSNR(Array(frames[8...]), resumed) >= 30)
    }

    @Test("a keyframe of another size changes the size of decoded pictures")
    func resolutionChange() throws {
        let large = Samples.synthetic(count: 5, width: 320, height: 240, pool: inputPool)
        let small = Samples.synthetic(count: 5, width: 176, height: 144, firstIndex: 5, pool: inputPool)
        let settings = VideoEncoderSettings(bitrate: 400_000)
        let first = try encodeAll(large, with: VP8Encoder(format: rawFormat(), settings: settings))
        let second = try encodeAll(small, with: VP8Encoder(format: rawFormat(width: 176, height: 144), settings: settings))
        let decoded = try decodeAll(first + second + first, with: VP8Decoder(format: vp8Format()))
        #expect(decoded.map(\.width) == Array(repeating: 320, count: 5) + Array(repeating: 176, count: 5) + Array(repeating: 320, count: 5))
        #expect(decoded.map(\.height) == Array(repeating: 240, count: 5) + Array(repeating: 144, count: 5) + Array(repeating: 240, count: 5))
        #expect(meanPSNR(small, Array(decoded[5..<10])) >= 30)
    }

    @Test("warm encoder and decoder pools stop allocating")
    func poolsStayFlat() throws {
        let frames = try Samples.bunny(count: 60, pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 800_000))
        let decoder = try VP8Decoder(format: vp8Format())
        var encoderAllocations: [Int] = [], decoderAllocations: [Int] = []
        for frame in frames {
            try encoder.encode(frame, forceKeyframe: false) { encoded in
                try decoder.decode(encoded) { _ in }
            }
            encoderAllocations.append(encoder.outputPool.allocations)
            decoderAllocations.append(decoder.outputPool.allocations)
        }
        print("VP8 pool allocations after 60 frames: encoder \(encoderAllocations.last!), decoder \(decoderAllocations.last!)")
        #expect(Set(encoderAllocations.suffix(20)).count == 1)
        #expect(Set(decoderAllocations.suffix(20)).count == 1)
        #expect(encoder.outputPool.outstanding == 0 && decoder.outputPool.outstanding == 0)
    }

    @Test("ffmpeg's libvpx decoder turns our stream into the same bytes as our decoder")
    func ffmpegDecodesIdentically() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try VP8Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [15])
        let ours = try decodeAll(encoded, with: VP8Decoder(format: vp8Format())).reduce(into: Data()) { $0 += TestSupport.packed($1) }

        let theirs = try TestSupport.withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("sluice-vp8.ivf")
            try ivf(encoded, width: 320, height: 240, frameRate: Samples.frameRate).write(to: file)
            return try TestSupport.ffmpeg(["-c:v", "libvpx", "-i", file.path,
                                           "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
        }
        #expect(theirs.count == 30 * Samples.packedSize(width: 320, height: 240))
        #expect(theirs == ours)
    }

    @Test("providers describe and make libvpx VP8 encoders and decoders")
    func providers() throws {
        let encoders = VP8EncoderProvider(), decoders = VP8DecoderProvider()
        #expect(encoders.name == "libvpx" && encoders.codec == .vp8)
        #expect(decoders.name == "libvpx" && decoders.codec == .vp8)
        #expect(encoders.inputCaps.matches(.video(rawFormat())))
        #expect(!encoders.inputCaps.matches(.video(rawFormat(width: 1))))
        #expect(decoders.outputCaps(for: vp8Format()) == Caps(.video(rawFormat())))
        #expect(try encoders.makeEncoder(format: rawFormat(), settings: VideoEncoderSettings()) is VP8Encoder)
        #expect(try decoders.makeDecoder(format: vp8Format(), threads: 2) is VP8Decoder)

        var registry = CodecRegistry()
        registry.register(encoders)
        registry.register(decoders)
        #expect(try registry.videoEncoder(for: .vp8).name == "libvpx")
        #expect(try registry.videoDecoder(for: .vp8).name == "libvpx")
    }
}
