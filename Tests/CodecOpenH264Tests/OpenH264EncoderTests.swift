import CodecOpenH264
import Foundation
import MediaCodecs
import MediaCore
import TestSupport
import Testing

/// The access units concatenated: a raw H.264 Annex-B stream.
func annexBStream(_ frames: [EncodedFrame]) -> Data { frames.reduce(into: Data()) { $0 += $1.bytes } }

func keyframeIndices(_ frames: [EncodedFrame]) -> [Int] { frames.indices.filter { frames[$0].isKeyframe } }

@Suite("H.264 encoding through OpenH264")
struct OpenH264EncoderTests {
    let inputPool = BufferPool(name: "test-input")

    @Test("30 pictures at 500 kbit/s round-trip through our decoder with mean PSNR of at least 30 dB",
          arguments: [true, false])
    func roundTrip(realtime: Bool) throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, realtime: realtime))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(encoded.count == 30)
        #expect(encoded.first?.isKeyframe == true)
        #expect(encoded.map(\.pts) == frames.map(\.pts))
        #expect(encoded.allSatisfy { $0.codec == .h264 && $0.dts == $0.pts && $0.duration == MediaTime(1, timebase: timebase) })

        let decoded = try decodeAll(encoded, with: OpenH264Decoder(format: h264Format()))
        #expect(decoded.count == 30)
        #expect(decoded.map(\.pts) == frames.map(\.pts))
        #expect(decoded.allSatisfy { $0.width == 320 && $0.height == 240 && $0.pixelFormat == .i420 })
        let psnr = meanPSNR(frames, decoded)
        let kbits = Double(encoded.map(\.byteCount).reduce(0, +) * 8) / 1000 / (30 / frameRate.doubleValue)
        print("OpenH264 \(realtime ? "camera real-time" : "camera non-real-time") 320x240 @ 500 kbit/s: mean PSNR "
              + "\(String(format: "%.2f", psnr)) dB, actual \(Int(kbits)) kbit/s")
        #expect(psnr >= 30)
    }

    @Test("ffmpeg decodes our stream: 30 pictures, Constrained Baseline, 320x240, the same bytes as our decoder")
    func ffmpegDecodes() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [15])
        let ours = packedBytes(try decodeAll(encoded, with: OpenH264Decoder(format: h264Format())))
        let (fields, theirs) = try TestSupport.withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("openh264.h264")
            try annexBStream(encoded).write(to: file)
            let fields = try TestSupport.ffprobe(file.path, entries: "stream=codec_name,profile,width,height,nb_read_frames",
                                                 extra: ["-count_frames", "-select_streams", "v:0"])
            let theirs = try TestSupport.ffmpeg(["-i", file.path, "-fps_mode", "passthrough",
                                                 "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
            return (fields, theirs)
        }
        print("ffprobe on our stream: \(fields)")
        #expect(fields["codec_name"] == "h264")
        #expect(fields["profile"] == "Constrained Baseline")
        #expect(fields["width"] == "320" && fields["height"] == "240")
        #expect(fields["nb_read_frames"] == "30")
        #expect(theirs.count == 30 * packedSize(width: 320, height: 240))
        #expect(theirs == ours)
    }

    @Test("every keyframe access unit is SPS, PPS, IDR; the others hold no IDR and no parameter sets")
    func accessUnitLayout() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [15])
        for (index, frame) in encoded.enumerated() {
            let bytes = Array(frame.bytes)
            #expect(bytes.starts(with: [0, 0, 0, 1]), "access unit \(index) starts with a 4-byte start code")
            let types = AnnexB.types(bytes)
            if frame.isKeyframe {
                #expect(Array(types.prefix(3)) == [7, 8, 5], "keyframe \(index): NAL types \(types)")
                #expect(types.dropFirst(2).allSatisfy { $0 == 5 })
            } else {
                #expect(!types.isEmpty && types.allSatisfy { $0 == 1 }, "picture \(index): NAL types \(types)")
            }
        }
        #expect(keyframeIndices(encoded) == [0, 10, 15, 25])
        // The splitter in the tests finds the same access units in the concatenated stream.
        #expect(AnnexB.accessUnits(Array(annexBStream(encoded))) == encoded.map { Array($0.bytes) })
    }

    @Test("forceKeyframe makes exactly that picture an IDR")
    func forcedKeyframe() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [12])
        #expect(keyframeIndices(encoded) == [0, 12])
        #expect(AnnexB.types(Array(encoded[12].bytes)).prefix(3) == [7, 8, 5])
    }

    @Test("keyframeInterval 10 puts IDRs at 0, 10 and 20")
    func keyframeInterval() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(keyframeIndices(encoded) == [0, 10, 20])
        #expect(encoded.indices.filter { AnnexB.types(Array(encoded[$0].bytes)).contains(5) } == [0, 10, 20])
    }

    @Test("setBitrate while running lowers the size of later frames")
    func lowerBitrate() throws {
        let frames = try Samples.bunny(count: 60, pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 2_000_000))
        var sizes: [Int] = []
        for (index, frame) in frames.enumerated() {
            if index == 30 { try encoder.setBitrate(150_000) }
            try encoder.encode(frame, forceKeyframe: false) { sizes.append($0.byteCount) }
        }
        #expect(sizes.count == 60)
        #expect(encoder.settings.bitrate == 150_000)
        func mean(_ range: Range<Int>) -> Double { Double(sizes[range].reduce(0, +)) / Double(range.count) }
        let before = mean(5..<30), after = mean(40..<60)
        print("OpenH264 mean frame size at 2 Mbit/s: \(Int(before)) bytes; after setBitrate(150 kbit/s): \(Int(after)) bytes")
        #expect(after < before / 4)
        // And back up again.
        try encoder.setBitrate(1_000_000)
        #expect(encoder.settings.bitrate == 1_000_000)
    }

    @Test("quality mode: a lower QP gives larger frames and higher PSNR")
    func qualityMode() throws {
        let frames = try Samples.bunny(count: 20, pool: inputPool)
        func run(_ quality: Int) throws -> (bytes: Int, psnr: Double) {
            let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, quality: quality))
            let encoded = try encodeAll(frames, with: encoder)
            let decoded = try decodeAll(encoded, with: OpenH264Decoder(format: h264Format()))
            #expect(decoded.count == frames.count)
            return (encoded.map(\.byteCount).reduce(0, +), meanPSNR(frames, decoded))
        }
        let fine = try run(20), coarse = try run(40)
        print("OpenH264 quality 20: \(fine.bytes) bytes, \(String(format: "%.2f", fine.psnr)) dB; "
              + "quality 40: \(coarse.bytes) bytes, \(String(format: "%.2f", coarse.psnr)) dB")
        #expect(fine.bytes > 2 * coarse.bytes)
        #expect(fine.psnr > coarse.psnr + 5)
    }

    @Test("slices on 2 threads: same output on every run, decodable by us and by ffmpeg alike")
    func threads() throws {
        let frames = try Samples.bunny(count: 20, pool: inputPool)
        func encode() throws -> [EncodedFrame] {
            try encodeAll(frames, with: OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, threads: 2)))
        }
        let encoded = try encode()
        #expect(encoded.map { Data($0.bytes) } == (try encode()).map { Data($0.bytes) })
        #expect(encoded.dropFirst().allSatisfy { AnnexB.types(Array($0.bytes)) == [1, 1] })
        let ours = try decodeAll(encoded, with: OpenH264Decoder(format: h264Format()))
        #expect(ours.count == 20)
        #expect(meanPSNR(frames, ours) >= 30)
        let theirs = try TestSupport.withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("slices.h264")
            try annexBStream(encoded).write(to: file)
            return try TestSupport.ffmpeg(["-i", file.path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
        }
        #expect(theirs == packedBytes(ours))
    }

    @Test("single-threaded output depends only on the input")
    func deterministic() throws {
        let frames = try Samples.bunny(count: 20, pool: inputPool)
        func encode() throws -> [Data] {
            try encodeAll(frames, with: OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000)))
                .map { Data($0.bytes) }
        }
        #expect(try encode() == encode())
    }

    @Test("sizes that are not multiples of 16 round-trip (frame cropping)")
    func croppedSize() throws {
        let raw = try Samples.decode(width: 162, height: 122, count: 10).get()
        let frames = try Samples.frames(from: raw, width: 162, height: 122, pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(width: 162, height: 122), settings: VideoEncoderSettings(bitrate: 400_000))
        let encoded = try encodeAll(frames, with: encoder)
        let decoded = try decodeAll(encoded, with: OpenH264Decoder(format: h264Format(width: 162, height: 122)))
        #expect(decoded.count == 10)
        try #require(decoded.allSatisfy { $0.width == 162 && $0.height == 122 })
        #expect(meanPSNR(frames, decoded) >= 30)
        let probe = try TestSupport.withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("cropped.h264")
            try annexBStream(encoded).write(to: file)
            return try TestSupport.probeVideo(file.path)
        }
        #expect(probe.width == 162 && probe.height == 122 && probe.frames == 10)
    }

    @Test("invalid settings throw CodecError.invalidSetting", arguments: [
        (rawFormat(width: 8), VideoEncoderSettings()),
        (rawFormat(width: 161, height: 121), VideoEncoderSettings()),
        (rawFormat(width: 320, height: 241), VideoEncoderSettings()),
        (rawFormat(width: 4097), VideoEncoderSettings()),
        (rawFormat(height: 0), VideoEncoderSettings()),
        (h264Format(), VideoEncoderSettings()),
        (VideoFormat(encoding: .pixels(.i420), width: 320, height: 240, frameRate: Rational(0, 1)), VideoEncoderSettings()),
        (VideoFormat(encoding: .pixels(.i420), width: 320, height: 240, frameRate: Rational(120, 1)), VideoEncoderSettings()),
        (rawFormat(), VideoEncoderSettings(bitrate: 0)),
        (rawFormat(), VideoEncoderSettings(bitrate: -5)),
        (rawFormat(), VideoEncoderSettings(threads: 0)),
        (rawFormat(), VideoEncoderSettings(threads: 5)),
        (rawFormat(), VideoEncoderSettings(keyframeInterval: 0)),
        (rawFormat(), VideoEncoderSettings(quality: -1)),
        (rawFormat(), VideoEncoderSettings(quality: 52)),
        (rawFormat(), VideoEncoderSettings(profile: "high")),
        (rawFormat(), VideoEncoderSettings(profile: "main")),
        (rawFormat(), VideoEncoderSettings(profile: "baseline-ish")),
    ])
    func invalidSettings(format: VideoFormat, settings: VideoEncoderSettings) {
        do {
            _ = try OpenH264Encoder(format: format, settings: settings)
            Issue.record("no error")
        } catch let error as CodecError {
            guard case .invalidSetting(let text) = error else { Issue.record("unexpected \(error)"); return }
            #expect(!text.isEmpty)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("profile nil or constrained-baseline is accepted")
    func profiles() throws {
        _ = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(profile: nil))
        _ = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(profile: "constrained-baseline"))
        _ = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(profile: "Constrained-Baseline"))
    }

    @Test("bad bitrate changes and picture sizes throw CodecError.invalidSetting")
    func invalidUse() throws {
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings())
        #expect(throws: CodecError.self) { try encoder.setBitrate(0) }
        let wrongSize = VideoFrame(width: 160, height: 120, pts: .zero(timebase), pool: inputPool)
        #expect(throws: CodecError.self) { try encoder.encode(wrongSize, forceKeyframe: false) { _ in } }
        #expect(encoder.settings.bitrate == VideoEncoderSettings().bitrate)
    }

    @Test("warm encoder and decoder pools stop allocating")
    func poolsStayFlat() throws {
        let frames = try Samples.bunny(count: 60, pool: inputPool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 800_000))
        let decoder = try OpenH264Decoder(format: h264Format())
        var encoderAllocations: [Int] = [], decoderAllocations: [Int] = []
        for frame in frames {
            try encoder.encode(frame, forceKeyframe: false) { encoded in
                try decoder.decode(encoded) { _ in }
            }
            encoderAllocations.append(encoder.outputPool.allocations)
            decoderAllocations.append(decoder.outputPool.allocations)
        }
        print("OpenH264 pool allocations after 60 frames: encoder \(encoderAllocations.last!), decoder \(decoderAllocations.last!)")
        #expect(Set(encoderAllocations.suffix(20)).count == 1)
        #expect(Set(decoderAllocations.suffix(20)).count == 1)
        #expect(encoder.outputPool.outstanding == 0 && decoder.outputPool.outstanding == 0)
    }

    @Test("the encoder provider describes and makes OpenH264 encoders")
    func provider() throws {
        let encoders = OpenH264EncoderProvider()
        #expect(encoders.name == "openh264" && encoders.codec == .h264)
        #expect(encoders.inputCaps.matches(.video(rawFormat())))
        #expect(!encoders.inputCaps.matches(.video(rawFormat(width: 8))))
        #expect(!encoders.inputCaps.matches(.video(VideoFormat(encoding: .pixels(.i420), width: 320, height: 240,
                                                                 frameRate: Rational(120, 1)))))
        #expect(try encoders.makeEncoder(format: rawFormat(), settings: VideoEncoderSettings()) is OpenH264Encoder)
        var registry = CodecRegistry()
        registry.register(encoders)
        #expect(try registry.videoEncoder(for: .h264, named: "openh264").name == "openh264")
    }
}
