import Foundation
import Sluice
import Testing
import TestSupport

/// The behaviour every video codec provider must have, run over every built-in provider.
@Suite struct VideoCodecConformanceTests {
    static let format = VideoFormat(encoding: .pixels(.i420), width: 320, height: 240, frameRate: Rational(25, 1))

    func frames(_ count: Int) throws -> [VideoFrame] {
        try TestSupport.sampleFrames(count: count, width: 320, height: 240, pool: BufferPool(name: "conformance"))
    }

    func compressedFormat(_ pair: VideoCodecPair) -> VideoFormat {
        VideoFormat(encoding: .compressed(pair.encoder.codec), width: 320, height: 240, frameRate: Rational(25, 1))
    }

    /// Encodes `pictures` (keyframes forced at `forced`), flushing at the end.
    func encode(_ pictures: [VideoFrame], with encoder: any VideoEncoder, forced: Set<Int> = []) throws -> [EncodedFrame] {
        var out: [EncodedFrame] = []
        for (index, picture) in pictures.enumerated() {
            try encoder.encode(picture, forceKeyframe: forced.contains(index)) { out.append($0) }
        }
        try encoder.flush { out.append($0) }
        return out
    }

    @Test(arguments: VideoCodecPair.builtIn)
    func roundTripKeepsEveryPictureAndQuality(pair: VideoCodecPair) throws {
        let pictures = try frames(30)
        let encoder = try pair.encoder.makeEncoder(format: Self.format, settings: VideoEncoderSettings(bitrate: 600_000))
        let encoded = try encode(pictures, with: encoder)
        #expect(encoded.count == 30)
        #expect(encoded.first?.isKeyframe == true)
        #expect(encoded.allSatisfy { $0.codec == pair.encoder.codec })

        let decoder = try pair.decoder.makeDecoder(format: compressedFormat(pair), threads: 1)
        var decoded: [VideoFrame] = []
        for frame in encoded.sorted(by: { $0.dts < $1.dts }) { try decoder.decode(frame) { decoded.append($0) } }
        try decoder.flush { decoded.append($0) }
        #expect(decoded.count == 30)
        let byPTS = decoded.sorted { $0.pts < $1.pts }
        let (sum, samples) = zip(pictures, byPTS).map(PictureQuality.squaredError).reduce((UInt64(0), 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        let psnr = PictureQuality.psnr(meanSquaredError: Double(sum) / Double(samples))
        print("\(pair): 320x240 at 600 kbit/s, mean PSNR \(psnr) dB")
        #expect(psnr >= 30)
    }

    @Test(arguments: VideoCodecPair.builtIn)
    func keyframeOnRequest(pair: VideoCodecPair) throws {
        let encoder = try pair.encoder.makeEncoder(
            format: Self.format, settings: VideoEncoderSettings(bitrate: 600_000, keyframeInterval: 1000))
        let encoded = try encode(try frames(20), with: encoder, forced: [12])
        let keyframes = encoded.sorted { $0.pts < $1.pts }.indices.filter { encoded.sorted { $0.pts < $1.pts }[$0].isKeyframe }
        #expect(keyframes == [0, 12])
    }

    @Test(arguments: VideoCodecPair.builtIn)
    func bitrateChangeWhileRunning(pair: VideoCodecPair) throws {
        let pictures = try frames(60)
        let encoder = try pair.encoder.makeEncoder(
            format: Self.format, settings: VideoEncoderSettings(bitrate: 2_000_000, keyframeInterval: 1000))
        var sizes: [Int] = []
        for (index, picture) in pictures.enumerated() {
            if index == 30 { try encoder.setBitrate(150_000) }
            try encoder.encode(picture, forceKeyframe: false) { sizes.append($0.byteCount) }
        }
        try encoder.flush { sizes.append($0.byteCount) }
        let before = Double(sizes[10..<30].reduce(0, +)) / 20, after = Double(sizes[45..<60].reduce(0, +)) / 15
        #expect(after < before * 0.5, "mean frame \(before) bytes at 2 Mbit/s, \(after) after switching to 150 kbit/s")
    }

    @Test(arguments: VideoCodecPair.builtIn)
    func encoderAndDecoderAreReusableAfterFlush(pair: VideoCodecPair) throws {
        let pictures = try frames(10)
        let encoder = try pair.encoder.makeEncoder(format: Self.format, settings: VideoEncoderSettings(bitrate: 600_000))
        let decoder = try pair.decoder.makeDecoder(format: compressedFormat(pair), threads: 1)
        for round in 0..<2 {
            let encoded = try encode(Array(pictures[(round * 5)..<(round * 5 + 5)]), with: encoder, forced: [0])
            #expect(encoded.count == 5, "round \(round)")
            var decoded = 0
            for frame in encoded.sorted(by: { $0.dts < $1.dts }) { try decoder.decode(frame) { _ in decoded += 1 } }
            try decoder.flush { _ in decoded += 1 }
            #expect(decoded == 5, "round \(round)")
        }
    }

    /// Encoders take I420 only, and say so: other pixel formats are neither in their caps nor read.
    @Test(arguments: VideoCodecPair.builtIn)
    func otherPixelFormatsAreRefused(pair: VideoCodecPair) throws {
        let encoder = try pair.encoder.makeEncoder(format: Self.format, settings: VideoEncoderSettings(bitrate: 600_000))
        let pool = BufferPool(name: "other-formats")
        for pixelFormat in PixelFormat.allCases where pixelFormat != .i420 {
            #expect(!pair.encoder.inputCaps.matches(.video(VideoFormat(encoding: .pixels(pixelFormat), width: 320,
                                                                       height: 240, frameRate: Rational(25, 1)))))
            let picture = VideoFrame(pixelFormat: pixelFormat, width: 320, height: 240,
                                     pts: MediaTime(0, timebase: Rational(1, 25)), pool: pool)
            #expect(throws: CodecError.self, "\(pixelFormat)") {
                try encoder.encode(picture, forceKeyframe: false) { _ in }
            }
        }
    }

    @Test(arguments: VideoCodecPair.builtIn)
    func badParametersAreInvalidSettings(pair: VideoCodecPair) {
        let bad: [(VideoFormat, VideoEncoderSettings)] = [
            (VideoFormat(encoding: .pixels(.i420), width: 0, height: 240, frameRate: Rational(25, 1)), VideoEncoderSettings()),
            (Self.format, VideoEncoderSettings(bitrate: 0)),
            (Self.format, VideoEncoderSettings(threads: 0)),
            (Self.format, VideoEncoderSettings(keyframeInterval: 0)),
        ]
        for (format, settings) in bad {
            #expect(throws: CodecError.self) { _ = try pair.encoder.makeEncoder(format: format, settings: settings) }
        }
    }
}
