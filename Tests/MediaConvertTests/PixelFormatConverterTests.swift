import Foundation
import MediaConvert
import MediaCore
import Testing
import TestSupport

/// ffmpeg's names for Sluice's pixel formats.
private func ffmpegName(_ format: PixelFormat) -> String {
    switch format {
    case .i420: return "yuv420p"
    case .nv12: return "nv12"
    case .yuy2: return "yuyv422"
    case .uyvy: return "uyvy422"
    }
}

/// The first `count` pictures of the bundled clip at `width`x`height` in `format`, made by ffmpeg and
/// tightly packed.
private func sample(_ format: PixelFormat, width: Int, height: Int, count: Int) throws -> Data {
    try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=\(width):\(height)", "-frames:v", "\(count)",
                            "-pix_fmt", ffmpegName(format), "-f", "rawvideo", "-"]).stdout
}

/// ffmpeg's own conversion of tightly packed pictures from one format to another.
private func ffmpegConvert(_ raw: Data, from: PixelFormat, to: PixelFormat, width: Int, height: Int) throws -> Data {
    try TestSupport.withTemporaryDirectory { folder in
        let input = folder.file("in.raw")
        try raw.write(to: URL(fileURLWithPath: input))
        return try TestSupport.ffmpeg(["-f", "rawvideo", "-pix_fmt", ffmpegName(from), "-s", "\(width)x\(height)",
                                       "-i", input, "-pix_fmt", ffmpegName(to), "-f", "rawvideo", "-"]).stdout
    }
}

/// Picture `index` of tightly packed `raw`, converted by Sluice straight from the bytes.
private func convertPacked(_ raw: Data, index: Int, from format: PixelFormat, width: Int, height: Int,
                           with converter: PixelFormatConverter) throws -> VideoFrame {
    let size = Samples.packedSize(format, width: width, height: height)
    return try raw.withUnsafeBytes { bytes in
        try converter.convert(UnsafeRawBufferPointer(rebasing: bytes[(index * size)..<((index + 1) * size)]),
                              pixelFormat: format, width: width, height: height,
                              layout: PlaneLayout(format, width: width, height: height, rowAlignment: 1),
                              pts: MediaTime(Int64(index), timebase: Samples.timebase))
    }
}

@Suite struct PixelFormatConverterTests {
    static let sizes = [(320, 240), (33, 17)]
    static let count = 4

    /// NV12 -> I420 and I420 -> NV12 only move samples: Sluice's output is ffmpeg's, byte for byte,
    /// through both entry points (a pooled frame, foreign bytes), odd sizes included.
    @Test(arguments: sizes)
    func nv12AndI420ConvertExactlyAsFFmpegDoes(width: Int, height: Int) throws {
        let pool = BufferPool(name: "nv12-test")
        for (from, to) in [(PixelFormat.nv12, PixelFormat.i420), (.i420, .nv12)] {
            let raw = try sample(from, width: width, height: height, count: Self.count)
            let theirs = try ffmpegConvert(raw, from: from, to: to, width: width, height: height)
            let size = Samples.packedSize(to, width: width, height: height)
            #expect(theirs.count == Self.count * size)
            let converter = try PixelFormatConverter(to: to)
            let frames = try Samples.unpackAll(raw, pixelFormat: from, count: Self.count, width: width, height: height,
                                               pool: pool)
            for (index, frame) in frames.enumerated() {
                let expected = [UInt8](theirs[(index * size)..<((index + 1) * size)])
                let converted = try converter.convert(frame)
                #expect(converted.pixelFormat == to && converted.pts == frame.pts && converted.duration == frame.duration)
                #expect(TestSupport.packed(converted) == expected, "\(from) -> \(to) \(width)x\(height) #\(index)")
                let fromBytes = try convertPacked(raw, index: index, from: from, width: width, height: height,
                                                  with: converter)
                #expect(TestSupport.packed(fromBytes) == expected)
            }
        }
    }

    /// 4:2:2 -> 4:2:0 drops vertical chroma resolution. Luma is copied, so it must match ffmpeg's
    /// exactly; each chroma sample is the mean of two rows, and ffmpeg's unscaled path and libyuv
    /// may round that mean differently: at most 1 apart. With chroma one third of an I420 picture's
    /// samples, that bounds the mean squared error by 1/3, hence PSNR >= 10 log10(255^2 * 3) = 52.9 dB.
    ///
    /// At an odd height the last chroma row has one 4:2:2 row to come from, and Sluice copies its
    /// chroma; ffmpeg (5.1) leaves that row unset, so it is checked against the source bytes instead.
    @Test(arguments: [PixelFormat.yuy2, .uyvy], sizes)
    func packed422ConvertsToI420AsFFmpegDoesWithinRounding(format: PixelFormat, size: (Int, Int)) throws {
        let (width, height) = size
        let raw = try sample(format, width: width, height: height, count: Self.count)
        let theirs = try ffmpegConvert(raw, from: format, to: .i420, width: width, height: height)
        let pool = BufferPool(name: "422-test")
        let references = try Samples.unpackAll(theirs, count: Self.count, width: width, height: height, pool: pool)
        let converter = try PixelFormatConverter(to: .i420)
        let frames = try Samples.unpackAll(raw, pixelFormat: format, count: Self.count, width: width, height: height,
                                           pool: pool)
        for (frame, reference) in zip(frames, references) {
            let converted = try converter.convert(frame)
            #expect((0..<height).allSatisfy { Array(converted.row($0, ofPlane: 0)) == Array(reference.row($0, ofPlane: 0)) })
            #expect(maxDifference(converted, reference, planes: 1...2, rows: 0..<(height / 2)) <= 1)
            if height % 2 == 0 {
                let psnr = PictureQuality.psnr(reference, converted)
                print("\(format) -> I420 \(width)x\(height): PSNR \(psnr) dB against ffmpeg")
                #expect(psnr >= 52.9)
            } else {
                // U and V of each pixel pair in the last source row: bytes 1 and 3 of YUYV, 0 and 2 of UYVY.
                let last = frame.row(height - 1, ofPlane: 0)
                let (u, v) = format == .yuy2 ? (1, 3) : (0, 2)
                #expect(Array(converted.row(height / 2, ofPlane: 1)) == stride(from: u, to: last.count, by: 4).map { last[$0] })
                #expect(Array(converted.row(height / 2, ofPlane: 2)) == stride(from: v, to: last.count, by: 4).map { last[$0] })
            }
        }
    }

    /// YUY2 and UYVY also go to NV12; the result is the I420 conversion's samples, interleaved.
    @Test(arguments: [PixelFormat.yuy2, .uyvy])
    func packed422ToNV12HoldsTheSameSamplesAsToI420(format: PixelFormat) throws {
        let raw = try sample(format, width: 33, height: 17, count: 1)
        let toI420 = try convertPacked(raw, index: 0, from: format, width: 33, height: 17, with: PixelFormatConverter(to: .i420))
        let toNV12 = try convertPacked(raw, index: 0, from: format, width: 33, height: 17, with: PixelFormatConverter(to: .nv12))
        let back = try PixelFormatConverter(to: .i420).convert(toNV12)
        #expect(TestSupport.packed(back) == TestSupport.packed(toI420))
    }

    @Test func i420ThroughNV12AndBackIsTheSamePicture() throws {
        let pool = BufferPool(name: "round-trip")
        let pictures = try TestSupport.sampleFrames(count: 2, width: 321, height: 181, pool: pool)
        let (toNV12, toI420) = (try PixelFormatConverter(to: .nv12), try PixelFormatConverter(to: .i420))
        for picture in pictures {
            let nv12 = try toNV12.convert(picture)
            #expect(nv12.pixelFormat == .nv12 && nv12.layout[1].width == 322)
            #expect(TestSupport.packed(try toI420.convert(nv12)) == TestSupport.packed(picture))
        }
    }

    /// A capture buffer whose rows are padded (V4L2's bytesperline) converts as the packed picture does.
    @Test(arguments: [(PixelFormat.nv12, 48), (.yuy2, 80), (.i420, 48)])
    func paddedCaptureRowsConvertLikePackedOnes(format: PixelFormat, bytesPerLine: Int) throws {
        let (width, height) = (33, 17)
        let raw = [UInt8](try sample(format, width: width, height: height, count: 1))
        let tight = PlaneLayout(format, width: width, height: height, rowAlignment: 1)
        let padded = try #require(PlaneLayout(format, width: width, height: height, bytesPerLine: bytesPerLine))
        var buffer = [UInt8](repeating: 0xEE, count: padded.byteCount)
        for plane in 0..<tight.planeCount {
            for row in 0..<tight[plane].rows {
                let from = tight[plane].offset + row * tight[plane].stride, to = padded[plane].offset + row * padded[plane].stride
                buffer[to..<(to + tight[plane].width)] = raw[from..<(from + tight[plane].width)]
            }
        }
        let target: PixelFormat = format == .i420 ? .nv12 : .i420
        let converter = try PixelFormatConverter(to: target)
        let time = MediaTime(0, timebase: Samples.timebase)
        let fromPadded = try buffer.withUnsafeBytes {
            try converter.convert($0, pixelFormat: format, width: width, height: height, layout: padded, pts: time)
        }
        let fromTight = try raw.withUnsafeBytes {
            try converter.convert($0, pixelFormat: format, width: width, height: height, layout: tight, pts: time)
        }
        #expect(TestSupport.packed(fromPadded) == TestSupport.packed(fromTight))
        // One byte short of the last row.
        #expect(throws: ConversionError.bufferTooSmall(needed: padded.byteCount, available: padded.byteCount - 1)) {
            try buffer.dropLast().withUnsafeBytes {
                try converter.convert($0, pixelFormat: format, width: width, height: height, layout: padded, pts: time)
            }
        }
    }

    @Test func pictureAlreadyInTheTargetFormatPassesThrough() throws {
        let picture = try TestSupport.sampleFrames(count: 1, width: 64, height: 48, pool: BufferPool(name: "same"))[0]
        #expect(try PixelFormatConverter(to: .i420).convert(picture).buffer === picture.buffer)
    }

    @Test func warmConverterAllocatesNothing() throws {
        let pool = BufferPool(name: "warm")
        let raw = try sample(.yuy2, width: 320, height: 240, count: 10)
        let frames = try Samples.unpackAll(raw, pixelFormat: .yuy2, count: 10, width: 320, height: 240, pool: pool)
        let converter = try PixelFormatConverter(to: .i420)
        for frame in frames { _ = try converter.convert(frame) }
        #expect(converter.pool.allocations == 1)
    }

    @Test func badInputIsANamedError() throws {
        #expect(throws: ConversionError.unsupportedConversion(from: nil, to: .yuy2)) { try PixelFormatConverter(to: .yuy2) }
        let converter = try PixelFormatConverter(to: .i420)
        let bytes = [UInt8](repeating: 0, count: 64 * 48 * 2)
        let time = MediaTime(0, timebase: Samples.timebase)
        try bytes.withUnsafeBytes { bytes in
            let yuy2 = PlaneLayout(.yuy2, width: 64, height: 48, rowAlignment: 1)
            #expect(throws: ConversionError.invalidSize(width: 0, height: 48)) {
                try converter.convert(bytes, pixelFormat: .yuy2, width: 0, height: 48, layout: yuy2, pts: time)
            }
            // 64x48 YUY2 needs 6144 bytes; a 64x49 picture does not fit.
            #expect(throws: ConversionError.bufferTooSmall(needed: 6272, available: 6144)) {
                try converter.convert(bytes, pixelFormat: .yuy2, width: 64, height: 49,
                                      layout: PlaneLayout(.yuy2, width: 64, height: 49, rowAlignment: 1), pts: time)
            }
            // The layout of another format or size.
            #expect(throws: ConversionError.layoutMismatch(.yuy2, width: 64, height: 48)) {
                try converter.convert(bytes, pixelFormat: .yuy2, width: 64, height: 48,
                                      layout: PlaneLayout(.nv12, width: 64, height: 48), pts: time)
            }
            #expect(throws: ConversionError.layoutMismatch(.uyvy, width: 61, height: 48)) {
                try converter.convert(bytes, pixelFormat: .uyvy, width: 61, height: 48, layout: yuy2, pts: time)
            }
            // An odd width takes the rows of the next even one.
            let odd = try converter.convert(bytes, pixelFormat: .uyvy, width: 63, height: 48, layout: yuy2, pts: time)
            #expect(odd.width == 63 && odd.layout[1].width == 32)
            // Tightly packed rows are what raw files hold.
            let converted = try converter.convert(bytes, pixelFormat: .yuy2, width: 64, height: 48, layout: yuy2, pts: time)
            #expect(converted.pixelFormat == .i420 && converted.width == 64)
        }
    }
}

/// The largest difference between two pictures' samples in `rows` of `planes`.
private func maxDifference(_ a: VideoFrame, _ b: VideoFrame, planes: ClosedRange<Int>, rows: Range<Int>) -> Int {
    var largest = 0
    for plane in planes {
        for row in rows {
            for (x, y) in zip(a.row(row, ofPlane: plane), b.row(row, ofPlane: plane)) {
                largest = max(largest, abs(Int(x) - Int(y)))
            }
        }
    }
    return largest
}
