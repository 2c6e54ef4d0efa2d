import MediaConvert
import MediaCore
import Testing
import TestSupport

@Suite struct VideoScalerTests {
    @Test func downscalingMatchesFFmpegsOwnScaleClosely() throws {
        let pool = BufferPool(name: "scale-test")
        let large = try TestSupport.sampleFrames(count: 3, width: 640, height: 360, pool: pool)
        let reference = try TestSupport.sampleFrames(count: 3, width: 320, height: 180, pool: pool)
        let scaler = try VideoScaler(width: 320, height: 180)
        for (picture, expected) in zip(large, reference) {
            let scaled = try scaler.scale(picture)
            #expect(scaled.width == 320 && scaled.height == 180 && scaled.pts == picture.pts)
            // Two different (good) filters of the same picture agree closely, not exactly.
            let psnr = PictureQuality.psnr(expected, scaled)
            print("libyuv box vs ffmpeg bicubic 640x360 -> 320x180: PSNR \(psnr) dB")
            #expect(psnr > 35)
        }
    }

    @Test func sameSizePassesThePictureThroughAndOddSizesWork() throws {
        let pool = BufferPool(name: "scale-test")
        let picture = try TestSupport.sampleFrames(count: 1, width: 321, height: 181, pool: pool)[0]
        #expect(try VideoScaler(width: 321, height: 181).scale(picture).buffer === picture.buffer)
        let up = try VideoScaler(width: 643, height: 363, filter: .bilinear).scale(picture)
        #expect(up.width == 643 && up.height == 363 && up.layout[1].width == 322)
    }

    @Test func warmScalerAllocatesNothing() throws {
        let pool = BufferPool(name: "scale-test")
        let pictures = try TestSupport.sampleFrames(count: 20, width: 320, height: 240, pool: pool)
        let scaler = try VideoScaler(width: 160, height: 120)
        for picture in pictures { _ = try scaler.scale(picture) }
        #expect(scaler.pool.allocations == 1)
    }

    @Test func onlyI420Scales() throws {
        let nv12 = VideoFrame(pixelFormat: .nv12, width: 64, height: 48, pts: MediaTime(0, timebase: Rational(1, 25)),
                              pool: BufferPool(name: "nv12"))
        #expect(throws: ConversionError.unexpectedPicture(expected: "I420", actual: "NV12 64x48")) {
            try VideoScaler(width: 32, height: 24).scale(nv12)
        }
    }

    @Test func badSizesAreRejected() {
        #expect(throws: ConversionError.invalidSize(width: 0, height: 10)) { try VideoScaler(width: 0, height: 10) }
        #expect(throws: ConversionError.self) { try VideoScaler(width: 20_000, height: 10) }
    }
}

@Suite struct FrameRateConverterTests {
    func pictures(count: Int, rate: Rational) -> [VideoFrame] {
        let pool = BufferPool(name: "fps")
        return (0..<count).map { index in
            let frame = VideoFrame(width: 16, height: 16, pts: MediaTime(Int64(index), timebase: rate.reciprocal),
                                   duration: MediaTime(1, timebase: rate.reciprocal), pool: pool)
            frame.plane(0)[0] = UInt8(index)
            return frame
        }
    }

    func convert(_ input: [VideoFrame], to rate: Rational) throws -> [VideoFrame] {
        var converter = try FrameRateConverter(rate: rate)
        var out: [VideoFrame] = []
        for picture in input { converter.push(picture) { out.append($0) } }
        converter.finish { out.append($0) }
        return out
    }

    @Test(arguments: [(25, 15, 132, 80), (25, 50, 10, 20), (30, 30, 17, 17), (30000, 24, 10, 9)])
    func countsFollowTheDuration(inRate: Int, outRate: Int, inCount: Int, expected: Int) throws {
        let input = pictures(count: inCount, rate: inRate == 30000 ? Rational(30000, 1001) : Rational(inRate, 1))
        let out = try convert(input, to: Rational(outRate, 1))
        #expect(out.count == expected)
        // Output timestamps are consecutive slots of the new rate.
        #expect(out.enumerated().allSatisfy { $0.element.pts == MediaTime(Int64($0.offset), timebase: Rational(1, outRate)) })
    }

    @Test func eachSlotShowsTheLatestPictureAtOrBeforeIt() throws {
        // 25 -> 10 fps: slot k at k/10 s shows input picture floor(k * 2.5).
        let out = try convert(pictures(count: 25, rate: Rational(25, 1)), to: Rational(10, 1))
        #expect(out.map { Int($0.plane(0)[0]) } == (0..<10).map { Int(Double($0) * 2.5) })
        // Doubling the rate repeats each picture, sharing its buffer.
        let doubled = try convert(pictures(count: 3, rate: Rational(25, 1)), to: Rational(50, 1))
        #expect(doubled.map { Int($0.plane(0)[0]) } == [0, 0, 1, 1, 2, 2])
        #expect(doubled[0].buffer === doubled[1].buffer)
    }

    @Test func badRatesAreRejected() {
        #expect(throws: ConversionError.self) { try FrameRateConverter(rate: Rational(0, 1)) }
        #expect(throws: ConversionError.self) { try FrameRateConverter(rate: Rational(-5, 1)) }
    }

    @Test func theRateChangesFromTheNextSlotWhileRunning() throws {
        // 2 s at 25 fps through 25 fps, then the rate falls to 10: slots 1/25 s apart, then 1/10 s.
        var converter = try FrameRateConverter(rate: Rational(25, 1))
        var out: [VideoFrame] = []
        let input = pictures(count: 50, rate: Rational(25, 1))
        for picture in input[..<25] { converter.push(picture) { out.append($0) } }
        try converter.changeRate(to: Rational(10, 1))
        #expect(throws: ConversionError.invalidRate(Rational(0, 1))) { try converter.changeRate(to: Rational(0, 1)) }
        for picture in input[25...] { converter.push(picture) { out.append($0) } }
        converter.finish { out.append($0) }
        let times = out.map { $0.pts.seconds }
        #expect(out.count == 24 + 11, "24 slots emitted before the change, then 1.04 s at 10 fps")
        #expect(zip(times.dropFirst(), times).prefix(23).allSatisfy { abs($0 - $1 - 0.04) < 1e-9 })
        #expect(zip(times.dropFirst(), times).suffix(10).allSatisfy { abs($0 - $1 - 0.1) < 1e-9 })
    }
}
