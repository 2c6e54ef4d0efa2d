import CTurboJPEG
import DeviceV4L2
import MediaConvert
import MediaCore
import Testing

/// The rows of plane `index` of `picture`, each `layout[index].width` bytes.
private func rows(_ picture: VideoFrame, plane index: Int) -> [[UInt8]] {
    (0..<picture.layout[index].rows).map { Array(picture.row($0, ofPlane: index)) }
}

/// Converts `bytes`, a capture buffer of `fourcc`, to I420 timed 40 ms.
private func convert(_ bytes: [UInt8], _ fourcc: String, width: Int, height: Int, bytesPerLine: Int = 0) throws -> VideoFrame {
    let converter = try V4L2FrameConverter(
        format: V4L2CaptureFormat(fourcc: fourcc, width: width, height: height, frameRate: Rational(25, 1)),
        bytesPerLine: bytesPerLine)
    return try bytes.withUnsafeBytes { try converter.convert($0, pts: MediaTime(40, timebase: Rational(1, 1000))) }
}

/// A 4x2 picture: luma 10...80 row by row; chroma U 100/110 over 120/130 and V 200/210 over 220/230,
/// so that 4:2:0 keeps the average of each column pair of rows: U 110, 120 and V 210, 220.
private let expectedLuma: [[UInt8]] = [[10, 20, 30, 40], [50, 60, 70, 80]]
private let expectedU: [[UInt8]] = [[110, 120]]
private let expectedV: [[UInt8]] = [[210, 220]]

@Suite struct V4L2FrameConverterTests {
    @Test func yuyvToI420() throws {
        let yuyv: [UInt8] = [10, 100, 20, 200, 30, 110, 40, 210,  // Y0 U Y1 V, Y2 U Y3 V
                             50, 120, 60, 220, 70, 130, 80, 230]
        let picture = try convert(yuyv, "YUYV", width: 4, height: 2)
        #expect(picture.pixelFormat == .i420 && picture.width == 4 && picture.height == 2)
        #expect(picture.pts == MediaTime(40, timebase: Rational(1, 1000)))
        #expect(rows(picture, plane: 0) == expectedLuma)
        #expect(rows(picture, plane: 1) == expectedU && rows(picture, plane: 2) == expectedV)
    }

    @Test func uyvyToI420() throws {
        let uyvy: [UInt8] = [100, 10, 200, 20, 110, 30, 210, 40,  // U Y0 V Y1, U Y2 V Y3
                             120, 50, 220, 60, 130, 70, 230, 80]
        let picture = try convert(uyvy, "UYVY", width: 4, height: 2)
        #expect(rows(picture, plane: 0) == expectedLuma)
        #expect(rows(picture, plane: 1) == expectedU && rows(picture, plane: 2) == expectedV)
    }

    @Test func nv12ToI420() throws {
        let nv12: [UInt8] = [10, 20, 30, 40, 50, 60, 70, 80,  // Y
                             110, 210, 120, 220]  // U V, U V
        let picture = try convert(nv12, "NV12", width: 4, height: 2)
        #expect(rows(picture, plane: 0) == expectedLuma)
        #expect(rows(picture, plane: 1) == expectedU && rows(picture, plane: 2) == expectedV)
    }

    /// YU12 rows 8 bytes apart (4 of padding, 0xEE), chroma rows 4 apart (2 of padding): the padding stays out.
    @Test func paddedYU12ToI420() throws {
        let yu12: [UInt8] = [10, 20, 30, 40, 0xEE, 0xEE, 0xEE, 0xEE,
                             50, 60, 70, 80, 0xEE, 0xEE, 0xEE, 0xEE,
                             110, 120, 0xEE, 0xEE,  // U
                             210, 220, 0xEE, 0xEE]  // V
        let picture = try convert(yu12, "YU12", width: 4, height: 2, bytesPerLine: 8)
        #expect(rows(picture, plane: 0) == expectedLuma)
        #expect(rows(picture, plane: 1) == expectedU && rows(picture, plane: 2) == expectedV)
    }

    @Test func aShortBufferIsAnError() throws {
        #expect(throws: ConversionError.bufferTooSmall(needed: 16, available: 12)) {
            try convert([UInt8](repeating: 0, count: 12), "YUYV", width: 4, height: 2)
        }
        #expect(throws: ConversionError.self) { try convert([], "GREY", width: 4, height: 2) }
    }

    /// A flat JPEG (quality 100: its DC coefficients are exact) of full-range luma 235 and chroma
    /// 128 decodes to video-range luma 16 + 235 * 219 / 255 = 218 and chroma 128.
    @Test func mjpegToI420() throws {
        let (width, height) = (32, 16)
        let yuv = [UInt8](repeating: 235, count: width * height) + [UInt8](repeating: 128, count: width * height / 2)
        let handle = try #require(tjInitCompress())
        defer { tjDestroy(handle) }
        var jpeg: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        #expect(tjCompressFromYUV(handle, yuv, Int32(width), 1, Int32(height), Int32(TJSAMP_420.rawValue), &jpeg, &size,
                                  100, 0) == 0)
        defer { tjFree(jpeg) }
        let bytes = Array(UnsafeBufferPointer(start: jpeg, count: Int(size)))
        let picture = try convert(bytes, "MJPG", width: width, height: height)
        #expect(picture.pixelFormat == .i420 && picture.width == width && picture.height == height)
        #expect(rows(picture, plane: 0).allSatisfy { $0.allSatisfy { $0 == 218 } })
        #expect((1...2).allSatisfy { plane in rows(picture, plane: plane).allSatisfy { $0.allSatisfy { $0 == 128 } } })
        // A truncated picture is an error (the capture node drops it).
        #expect(throws: (any Error).self) { try convert(Array(bytes.prefix(bytes.count / 2)), "MJPG", width: width, height: height) }
    }

    /// Converting into pooled pictures allocates nothing once warm, when the pictures are let go.
    @Test func picturesComeFromAPool() throws {
        let converter = try V4L2FrameConverter(
            format: V4L2CaptureFormat(fourcc: "YUYV", width: 64, height: 48, frameRate: Rational(30, 1)))
        let buffer = [UInt8](repeating: 128, count: 64 * 48 * 2)
        for index in 0..<20 {
            let picture = try buffer.withUnsafeBytes {
                try converter.convert($0, pts: MediaTime(Int64(index), timebase: Rational(1, 30)))
            }
            #expect(picture.width == 64)
        }
        #expect(converter.allocations == 1)
    }
}
