import CX264
import Foundation
import MediaCodecs
import MediaCore
import MediaFiles
import TestSupport
import Testing

@testable import CodecX264

@Suite("H.264 through libx264")
struct X264Tests {
    let inputPool = BufferPool(name: "test-input")

    @Test("libx264 reports its version")
    func version() {
        print("libx264 \(X264.version), API build \(X264.build)")
        #expect(X264.build >= 148)
        #expect(X264.version.hasPrefix("0.\(X264.build)."))
    }

    @Test("each profile: ffmpeg reads our Annex-B file as that profile, 320x240, 30 frames, PSNR of at least 30 dB",
          arguments: [("constrained-baseline", "Constrained Baseline"), ("main", "Main"), ("high", "High")])
    func profile(name: String, ffprobeName: String) throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, profile: name))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(encoded.count == 30)
        #expect(encoded.map(\.pts) == frames.map(\.pts))
        #expect(encoded.map(\.dts) == frames.map(\.pts))  // realtime: no reordering
        #expect(encoded.allSatisfy { $0.codec == .h264 && $0.duration == MediaTime(1, timebase: Samples.timebase) })
        #expect(encoded.first?.isKeyframe == true)

        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("x264-\(name).h264")
            try writeAnnexB(encoded, to: path)
            let stream = try TestSupport.ffprobe(path, entries: "stream=codec_name,profile,width,height,nb_read_frames",
                                                 extra: ["-count_frames", "-select_streams", "v:0"])
            #expect(stream["codec_name"] == "h264")
            #expect(stream["profile"] == ffprobeName)
            #expect(stream["width"] == "320" && stream["height"] == "240")
            #expect(stream["nb_read_frames"] == "30")

            let decoded = try ffmpegDecode(path, width: 320, height: 240, pool: inputPool)
            #expect(decoded.count == 30)
            let psnr = overallPSNR(frames, decoded)
            let kbits = Double(encoded.map(\.byteCount).reduce(0, +) * 8) / 1000 / (30 / Samples.frameRate.doubleValue)
            print("x264 \(name) realtime 320x240 @ 500 kbit/s: PSNR \(String(format: "%.2f", psnr)) dB, "
                  + "actual \(Int(kbits)) kbit/s")
            #expect(psnr >= 30)

            // Our own reader and SPS parser agree with ffprobe, and give back exactly what was written.
            let reader = try AnnexBReader(path: path, frameRate: Samples.frameRate)
            #expect(reader.width == 320 && reader.height == 240)
            #expect(reader.sequenceParameterSet.profileName == ffprobeName)
            var read: [EncodedFrame] = []
            while let unit = try reader.next(pool: nil) { read.append(unit) }
            #expect(read.map { Data($0.bytes) } == encoded.map { Data($0.bytes) })
            #expect(read.map(\.isKeyframe) == encoded.map(\.isKeyframe))
        }
    }

    @Test("keyframes carry SPS and PPS before the IDR slice; other frames have neither", arguments: [true, false])
    func keyframeLayout(realtime: Bool) throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(),
                                      settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10, realtime: realtime))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [15])
        #expect(encoded.filter(\.isKeyframe).count >= 3)
        for (index, frame) in encoded.enumerated() {
            #expect(AnnexB.startsWithStartCode(frame.bytes))
            let types = nalTypes(frame)
            let slices = types.filter { H264NALType.isVCL($0) }
            #expect(!slices.isEmpty, "frame \(index) has no slice: \(types)")
            if frame.isKeyframe {
                #expect(Array(types.prefix(2)) == [H264NALType.sps, H264NALType.pps], "keyframe \(index): \(types)")
                // Only SEI (x264 writes its version into the first one) between the parameter sets and the slices.
                let firstSlice = types.firstIndex { H264NALType.isVCL($0) }!
                #expect(types[2..<firstSlice].allSatisfy { $0 == H264NALType.sei }, "keyframe \(index): \(types)")
                #expect(slices.allSatisfy { $0 == H264NALType.idrSlice }, "keyframe \(index): \(types)")
            } else {
                #expect(!types.contains(H264NALType.idrSlice) && !types.contains(H264NALType.sps)
                        && !types.contains(H264NALType.pps), "frame \(index): \(types)")
            }
        }
    }

    @Test("a size that is no multiple of 16 is cropped in the SPS and round-trips")
    func croppedSize() throws {
        let frames = try Samples.unpackAll(try Samples.decode(width: 322, height: 182, count: 10).get(), count: 10,
                                           width: 322, height: 182, pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(width: 322, height: 182),
                                      settings: VideoEncoderSettings(bitrate: 500_000, realtime: false))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(encoded.count == 10)
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("cropped.h264")
            try writeAnnexB(encoded, to: path)
            let probed = try TestSupport.probeVideo(path)
            #expect(probed.codec == "h264" && probed.width == 322 && probed.height == 182 && probed.frames == 10)
            let reader = try AnnexBReader(path: path)
            #expect(reader.width == 322 && reader.height == 182)
            #expect(reader.sequenceParameterSet.cropRight == 14 && reader.sequenceParameterSet.cropBottom == 10)
            let decoded = try ffmpegDecode(path, width: 322, height: 182, pool: inputPool)
            #expect(decoded.count == 10)
            #expect(overallPSNR(frames, decoded) >= 30)
        }
    }

    @Test("forceKeyframe makes exactly that picture an IDR picture")
    func forcedKeyframe() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(),
                                      settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 1000))
        let encoded = try encodeAll(frames, with: encoder, forceKeyframesAt: [12])
        #expect(encoded.indices.filter { encoded[$0].isKeyframe } == [0, 12])
        #expect(nalTypes(encoded[12]).contains(H264NALType.idrSlice))
    }

    @Test("keyframeInterval 10 puts IDR pictures at 0, 10 and 20")
    func keyframeInterval() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(),
                                      settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(encoded.indices.filter { encoded[$0].isKeyframe } == [0, 10, 20])
    }

    @Test("constant quality: CRF 23 spends more bits than CRF 40 and looks better")
    func constantQuality() throws {
        let frames = try Samples.bunny(pool: inputPool)
        func encode(quality: Int) throws -> (bytes: Int, psnr: Double) {
            let encoder = try X264Encoder(format: rawFormat(), settings: VideoEncoderSettings(quality: quality))
            let encoded = try encodeAll(frames, with: encoder)
            #expect(encoded.count == 30)
            let psnr = try TestSupport.withTemporaryDirectory { dir in
                let path = dir.file("crf.h264")
                try writeAnnexB(encoded, to: path)
                return overallPSNR(frames, try ffmpegDecode(path, width: 320, height: 240, pool: inputPool))
            }
            return (encoded.map(\.byteCount).reduce(0, +), psnr)
        }
        let fine = try encode(quality: 23), coarse = try encode(quality: 40)
        print("x264 CRF 23: \(fine.bytes) bytes, \(String(format: "%.2f", fine.psnr)) dB; "
              + "CRF 40: \(coarse.bytes) bytes, \(String(format: "%.2f", coarse.psnr)) dB")
        #expect(fine.bytes > 2 * coarse.bytes)
        #expect(fine.psnr > coarse.psnr + 3)
    }

    @Test("setBitrate while running lowers the size of later frames")
    func lowerBitrate() throws {
        let frames = try Samples.bunny(count: 60, pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 2_000_000))
        var sizes: [Int] = []
        for (index, frame) in frames.enumerated() {
            if index == 30 { try encoder.setBitrate(150_000) }
            try encoder.encode(frame, forceKeyframe: false) { sizes.append($0.byteCount) }
        }
        try encoder.flush { sizes.append($0.byteCount) }
        #expect(sizes.count == 60)
        #expect(encoder.settings.bitrate == 150_000)
        let before = mean(sizes, 5..<30), after = mean(sizes, 40..<60)
        print("x264 mean frame size at 2 Mbit/s: \(Int(before)) bytes; after setBitrate(150 kbit/s): \(Int(after)) bytes")
        #expect(after < before / 4)
    }

    @Test("non-realtime mode reorders with B-frames: dts before pts, flush returns every frame, ffmpeg decodes it")
    func bFrames() throws {
        let frames = try Samples.bunny(pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, realtime: false))
        #expect(encoder.profile == "high")
        var duringEncode: [EncodedFrame] = [], duringFlush: [EncodedFrame] = []
        for frame in frames { try encoder.encode(frame, forceKeyframe: false) { duringEncode.append($0) } }
        try encoder.flush { duringFlush.append($0) }
        let encoded = duringEncode + duringFlush
        #expect(encoded.count == 30)
        #expect(!duringFlush.isEmpty)  // the lookahead holds pictures back
        #expect(encoded.map(\.pts).sorted() == frames.map(\.pts))
        #expect(encoded.contains { $0.dts != $0.pts })
        #expect(zip(encoded, encoded.dropFirst()).allSatisfy { $0.dts < $1.dts })
        #expect(encoded.allSatisfy { $0.dts <= $0.pts })
        #expect(encoded.first?.isKeyframe == true)
        // Decoding order is not presentation order: a B-frame comes after the picture it is shown before.
        let reordered = zip(encoded, encoded.dropFirst()).filter { $0.pts > $1.pts }.count
        print("x264 non-realtime: \(duringFlush.count) frames came out in flush, \(reordered) out of order (B-frames)")
        #expect(reordered > 0)

        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bframes.h264")
            try writeAnnexB(encoded, to: path)
            let decoded = try ffmpegDecode(path, width: 320, height: 240, pool: inputPool)
            #expect(decoded.count == 30)
            #expect(overallPSNR(frames, decoded) >= 30)
        }
    }

    @Test("flush returns every frame with worker threads", arguments: [true, false])
    func threads(realtime: Bool) throws {
        let frames = try Samples.bunny(count: 25, pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(),
                                      settings: VideoEncoderSettings(bitrate: 400_000, threads: 2, realtime: realtime))
        let encoded = try encodeAll(frames, with: encoder)
        #expect(encoded.count == 25)
        #expect(encoded.map(\.pts).sorted() == frames.map(\.pts))
    }

    @Test("the encoder is reusable after flush: a new stream that starts with an IDR picture", arguments: [true, false])
    func reuseAfterFlush(realtime: Bool) throws {
        let frames = try Samples.bunny(count: 20, pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(),
                                      settings: VideoEncoderSettings(bitrate: 500_000, threads: 2, realtime: realtime))
        var encoded: [EncodedFrame] = []
        for round in 0..<2 {
            let part = try encodeAll(Array(frames[(round * 10)..<(round * 10 + 10)]), with: encoder)
            #expect(part.count == 10, "round \(round)")
            #expect(part.first?.isKeyframe == true, "round \(round)")
            #expect(part.map(\.pts).sorted() == frames[(round * 10)..<(round * 10 + 10)].map(\.pts), "round \(round)")
            encoded += part
        }
        try encoder.flush { _ in Issue.record("a second flush emitted a frame") }
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("two-streams.h264")
            try writeAnnexB(encoded, to: path)
            let decoded = try ffmpegDecode(path, width: 320, height: 240, pool: inputPool)
            #expect(decoded.count == 20)
            #expect(overallPSNR(frames, decoded) >= 30)
        }
    }

    @Test("x264's own reason for refusing parameters reaches CodecError.library")
    func libraryErrorMessage() throws {
        var param = x264_param_t()
        #expect(x264_param_default_preset(&param, "veryfast", "zerolatency") == 0)
        let log = X264Log()
        log.attach(to: &param)
        param.i_width = 0  // X264Encoder's own checks never let this through
        param.i_height = 0
        do {
            _ = try X264Encoder.open(&param, log: log)
            Issue.record("x264 opened a 0x0 encoder")
        } catch CodecError.library(let name, let operation, let code, let message) {
            print("x264 refusal: \(message)")
            #expect(name == "x264" && operation == "encoder_open" && code == -1)
            #expect(message.contains("width"))
        }
        #expect(log.takeLastError().isEmpty)  // taken once
    }

    @Test("invalid settings throw CodecError.invalidSetting", arguments: [
        (rawFormat(width: 0), VideoEncoderSettings()),
        (rawFormat(width: 321), VideoEncoderSettings()),
        (rawFormat(height: 0), VideoEncoderSettings()),
        (rawFormat(width: 16386), VideoEncoderSettings()),
        (VideoFormat(encoding: .compressed(.h264), width: 320, height: 240, frameRate: Rational(25, 1)), VideoEncoderSettings()),
        (VideoFormat(encoding: .pixels(.i420), width: 320, height: 240, frameRate: Rational(0, 1)), VideoEncoderSettings()),
        (rawFormat(), VideoEncoderSettings(profile: "ultra")),
        (rawFormat(), VideoEncoderSettings(profile: "High")),
        (rawFormat(), VideoEncoderSettings(quality: 60)),
        (rawFormat(), VideoEncoderSettings(quality: -1)),
        (rawFormat(), VideoEncoderSettings(quality: 0)),
        (rawFormat(), VideoEncoderSettings(bitrate: 0)),
        (rawFormat(), VideoEncoderSettings(threads: 0)),
        (rawFormat(), VideoEncoderSettings(keyframeInterval: 0)),
    ])
    func invalidSettings(format: VideoFormat, settings: VideoEncoderSettings) {
        do {
            _ = try X264Encoder(format: format, settings: settings)
            Issue.record("\(format) \(settings) was accepted")
        } catch CodecError.invalidSetting(let text) {
            #expect(text.hasPrefix("x264 encoder: "))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("bad bitrate changes and picture sizes throw CodecError.invalidSetting")
    func invalidUse() throws {
        let encoder = try X264Encoder(format: rawFormat(), settings: VideoEncoderSettings())
        #expect(throws: CodecError.self) { try encoder.setBitrate(0) }
        let wrongSize = try Samples.bunny(count: 1, width: 640, height: 360, pool: inputPool)[0]
        #expect(throws: CodecError.self) { try encoder.encode(wrongSize, forceKeyframe: false) { _ in } }
        #expect(encoder.settings.bitrate == VideoEncoderSettings().bitrate)

        let constantQuality = try X264Encoder(format: rawFormat(), settings: VideoEncoderSettings(quality: 30))
        #expect(throws: CodecError.self) { try constantQuality.setBitrate(300_000) }
    }

    @Test("a warm encoder's output pool stops allocating")
    func poolStaysFlat() throws {
        let frames = try Samples.bunny(count: 60, pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 800_000))
        var allocations: [Int] = []
        for frame in frames {
            try encoder.encode(frame, forceKeyframe: false) { _ in }
            allocations.append(encoder.outputPool.allocations)
        }
        print("x264 output pool allocations after 60 frames: \(allocations.last!)")
        #expect(Set(allocations.suffix(30)).count == 1)
        #expect(encoder.outputPool.outstanding == 0)
    }

    @Test("realtime encoding speed at 640x360 (figures meaningful in a release build)")
    func speed() throws {
        let frames = try Samples.bunny(count: 60, width: 640, height: 360, pool: inputPool)
        let encoder = try X264Encoder(format: rawFormat(width: 640, height: 360),
                                      settings: VideoEncoderSettings(bitrate: 1_000_000))
        var count = 0
        let start = ContinuousClock.now
        for round in 0..<3 {
            for (index, frame) in frames.enumerated() {
                var picture = frame
                picture.pts = MediaTime(Int64(round * frames.count + index), timebase: Samples.timebase)
                try encoder.encode(picture, forceKeyframe: false) { _ in count += 1 }
            }
        }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        print("x264 realtime constrained-baseline 640x360 @ 1 Mbit/s: \(String(format: "%.0f", Double(count) / seconds)) fps")
        #expect(count == 180)
    }

    @Test("the provider describes and makes x264 encoders")
    func provider() throws {
        let provider = X264EncoderProvider()
        #expect(provider.name == "x264" && provider.codec == .h264)
        #expect(provider.inputCaps.matches(.video(rawFormat())))
        #expect(!provider.inputCaps.matches(.video(rawFormat(width: 1))))
        #expect(try provider.makeEncoder(format: rawFormat(), settings: VideoEncoderSettings()) is X264Encoder)

        var registry = CodecRegistry()
        registry.register(provider)
        #expect(try registry.videoEncoder(for: .h264).name == "x264")
    }
}
