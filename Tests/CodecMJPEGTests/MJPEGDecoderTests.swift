import CodecMJPEG
import Foundation
import MediaCodecs
import MediaCore
import Testing
import TestSupport

private func streamFormat(width: Int, height: Int) -> VideoFormat {
    VideoFormat(encoding: .compressed(.mjpeg), width: width, height: height, frameRate: Samples.frameRate)
}

private func encoded(_ jpeg: Data, index: Int = 0) -> EncodedFrame {
    jpeg.withUnsafeBytes {
        EncodedFrame(codec: .mjpeg, isKeyframe: true, pts: MediaTime(Int64(index), timebase: Samples.timebase),
                     duration: MediaTime(1, timebase: Samples.timebase), copying: $0, pool: nil)
    }
}

/// Decodes one JPEG picture, which must give exactly one picture.
private func decodeOne(_ jpeg: Data, with decoder: MJPEGDecoder, index: Int = 0) throws -> VideoFrame {
    var pictures: [VideoFrame] = []
    try decoder.decode(encoded(jpeg, index: index)) { pictures.append($0) }
    try #require(pictures.count == 1)
    return pictures[0]
}

@Suite struct MJPEGDecoderTests {
    /// JPEGs of each subsampling, written by ffmpeg and by GStreamer (whose libjpeg writes 4:2:2 as
    /// cameras do), decoded to I420 by Sluice and compared with ffmpeg's own decoding of the same files.
    ///
    /// The thresholds: libjpeg-turbo's and ffmpeg's integer inverse DCTs round differently, a sample
    /// here and there 1 apart. Allowing 5% of samples off by 1 (MSE 0.05) gives 61 dB for 4:2:0,
    /// where scaling to video range rounds alike (measured: 63.5-65.5 dB). 4:2:2 and 4:4:4 chroma
    /// must then be halved, libyuv averaging sample pairs and ffmpeg's swscale filtering with a wider
    /// kernel, which differ most at edges and at odd sizes' last column and row: allowing chroma (one
    /// third of the samples) an RMS difference of 2.5 levels gives MSE 2.1 and 45 dB (measured:
    /// 46.8-48 dB at 33x17, 56.7-58.2 dB at 320x240).
    @Test(arguments: [(Samples.JPEGEncoder.ffmpeg, "yuvj420p", 61.0), (.ffmpeg, "yuvj422p", 45.0),
                      (.ffmpeg, "yuvj444p", 45.0), (.gstreamer, "Y42B", 45.0), (.gstreamer, "I420", 61.0)],
          [(320, 240), (33, 17)])
    func decodesAsFFmpegDoes(fixture: (encoder: Samples.JPEGEncoder, pixelFormat: String, threshold: Double),
                             size: (Int, Int)) throws {
        let (width, height) = size
        let (jpegs, theirs) = try Samples.jpegs(count: 3, width: width, height: height, pixelFormat: fixture.pixelFormat,
                                                encoder: fixture.encoder, decodedAs: "yuv420p")
        let references = try Samples.unpackAll(theirs, count: 3, width: width, height: height, pool: BufferPool(name: "ref"))
        let decoder = try MJPEGDecoder(format: streamFormat(width: width, height: height))
        for (index, (jpeg, reference)) in zip(jpegs, references).enumerated() {
            let picture = try decodeOne(jpeg, with: decoder, index: index)
            #expect(picture.pixelFormat == .i420 && picture.width == width && picture.height == height)
            #expect(picture.pts == MediaTime(Int64(index), timebase: Samples.timebase))
            let psnr = PictureQuality.psnr(reference, picture)
            print("MJPEG \(fixture.encoder) \(fixture.pixelFormat) \(width)x\(height) #\(index): PSNR \(psnr) dB against ffmpeg")
            #expect(psnr >= fixture.threshold)
        }
        #expect(decoder.damagedPictures == 0)
    }

    /// With `.full` the JPEG's samples come out unscaled, as ffmpeg decodes them to `yuvj420p`.
    @Test func fullRangeKeepsTheJPEGSamples() throws {
        let (jpegs, theirs) = try Samples.jpegs(count: 2, width: 320, height: 240, pixelFormat: "yuvj420p",
                                                decodedAs: "yuvj420p")
        let references = try Samples.unpackAll(theirs, count: 2, width: 320, height: 240, pool: BufferPool(name: "ref"))
        let full = try MJPEGDecoder(format: streamFormat(width: 320, height: 240), range: .full)
        let limited = try MJPEGDecoder(format: streamFormat(width: 320, height: 240))
        for (jpeg, reference) in zip(jpegs, references) {
            let picture = try decodeOne(jpeg, with: full)
            let psnr = PictureQuality.psnr(reference, picture)
            print("MJPEG yuvj420p, full range: PSNR \(psnr) dB against ffmpeg")
            #expect(psnr >= 61)  // as for video range: only the inverse DCTs differ
            // The same picture in video range: black and white move in to 16 and 235.
            let scaled = try decodeOne(jpeg, with: limited)
            let (lo, hi) = (picture.plane(0).min()!, picture.plane(0).max()!)
            #expect(scaled.plane(0).min()! == UInt8(16 + (Int(lo) * 219 + 127) / 255))
            #expect(scaled.plane(0).max()! == UInt8(16 + (Int(hi) * 219 + 127) / 255))
        }
    }

    @Test func frameHeaderNamesSizeAndSubsampling() throws {
        let cases: [(Samples.JPEGEncoder, String, JPEGFrameHeader.Subsampling)] = [
            (.ffmpeg, "yuvj420p", .yuv420), (.ffmpeg, "yuvj422p", .yuv422), (.ffmpeg, "yuvj444p", .yuv444),
            (.gstreamer, "Y42B", .yuv422), (.gstreamer, "GRAY8", .gray),
        ]
        for (encoder, pixelFormat, expected) in cases {
            let jpeg = try Samples.jpegs(count: 1, width: 33, height: 17, pixelFormat: pixelFormat, encoder: encoder,
                                         decodedAs: "gray").pictures[0]
            let header = try jpeg.withUnsafeBytes { try JPEGFrameHeader(parsing: $0) }
            #expect(header == JPEGFrameHeader(width: 33, height: 17, subsampling: expected, process: 0xC0), "\(pixelFormat)")
        }
    }

    @Test func grayPicturesGetNeutralChroma() throws {
        let (jpegs, theirs) = try Samples.jpegs(count: 1, width: 64, height: 48, pixelFormat: "GRAY8", encoder: .gstreamer,
                                                decodedAs: "yuv420p")
        let picture = try decodeOne(jpegs[0], with: MJPEGDecoder(format: streamFormat(width: 64, height: 48)))
        #expect(picture.plane(1).allSatisfy { $0 == 128 } && picture.plane(2).allSatisfy { $0 == 128 })
        let reference = try Samples.unpackAll(theirs, count: 1, width: 64, height: 48, pool: BufferPool(name: "ref"))[0]
        let psnr = PictureQuality.psnr(reference, picture)
        print("MJPEG gray: PSNR \(psnr) dB against ffmpeg")
        #expect(psnr >= 61)
    }

    @Test func warmDecoderTakesEveryPictureFromItsPool() throws {
        let jpegs = try Samples.jpegs(count: 10, width: 160, height: 120, pixelFormat: "yuvj422p", decodedAs: "yuv420p").pictures
        let decoder = try MJPEGDecoder(format: streamFormat(width: 160, height: 120))
        for (index, jpeg) in jpegs.enumerated() { _ = try decodeOne(jpeg, with: decoder, index: index) }
        #expect(decoder.outputPool.allocations == 1)
    }
}

/// Damaged and unsupported JPEGs give named errors, never a crash or a picture of garbage headers.
@Suite struct MJPEGCorruptInputTests {
    static let jpeg: Data = {
        (try? Samples.jpegs(count: 1, width: 64, height: 48, pixelFormat: "yuvj422p", decodedAs: "yuv420p").pictures[0]) ?? Data()
    }()

    /// Offset of the first `FF marker` in the fixture.
    func offset(of marker: UInt8) throws -> Int {
        let bytes = [UInt8](Self.jpeg)
        return try #require((0..<(bytes.count - 1)).first { bytes[$0] == 0xFF && bytes[$0 + 1] == marker })
    }

    func decode(_ bytes: Data, width: Int = 64, height: Int = 48) throws {
        let decoder = try MJPEGDecoder(format: streamFormat(width: width, height: height))
        try decoder.decode(encoded(bytes)) { _ in }
    }

    @Test func namedErrors() throws {
        let jpeg = Self.jpeg
        try #require(jpeg.count > 500)
        let dqt = try offset(of: 0xDB), sof = try offset(of: 0xC0), dht = try offset(of: 0xC4)

        #expect(throws: MJPEGError.notJPEG) { try decode(Data()) }
        #expect(throws: MJPEGError.notJPEG) { try decode(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])) }
        // Cut inside the frame header segment.
        #expect(throws: MJPEGError.truncated(offset: sof)) { try decode(jpeg.prefix(sof + 6)) }
        // Cut inside the entropy-coded data: the headers are whole, the EOI is gone.
        let cut = jpeg.prefix(jpeg.count - 100)
        #expect(throws: MJPEGError.missingEndOfImage(byteCount: cut.count)) { try decode(cut) }
        // The frame header removed: the scan comes first.
        var noFrame = jpeg
        let sofLength = Int(jpeg[sof + 2]) << 8 | Int(jpeg[sof + 3])
        noFrame.removeSubrange(sof..<(sof + 2 + sofLength))
        #expect(throws: MJPEGError.missingFrameHeader) { try decode(noFrame) }
        // A segment length of 1 (lengths count their own two bytes).
        var badLength = jpeg
        badLength[dqt + 2] = 0
        badLength[dqt + 3] = 1
        #expect(throws: MJPEGError.malformedSegment(marker: 0xDB, offset: dqt)) { try decode(badLength) }
        // 12-bit samples, lossless coding and 4:1:1 sampling are valid JPEG that Sluice does not take.
        var twelveBit = jpeg
        twelveBit[sof + 4] = 12
        #expect(throws: MJPEGError.unsupported("12-bit samples")) { try decode(twelveBit) }
        var lossless = jpeg
        lossless[sof + 1] = 0xC3
        #expect(throws: MJPEGError.unsupported("lossless JPEG (SOF3)")) { try decode(lossless) }
        var oddSampling = jpeg
        oddSampling[sof + 11] = 0x41  // luma 4x1: 4:1:1
        #expect(throws: MJPEGError.unsupported("chroma sampling 4x1, 1x2, 1x2")) { try decode(oddSampling) }
        // A picture of another size than the stream's.
        #expect(throws: MJPEGError.sizeMismatch(width: 64, height: 48, expectedWidth: 320, expectedHeight: 240)) {
            try decode(jpeg, width: 320, height: 240)
        }
        // Headers that parse but that libjpeg-turbo rejects: a Huffman table class of 7 (T.81 B.2.4.2
        // allows 0 and 1).
        var badTable = jpeg
        badTable[dht + 4] = 0x70
        #expect {
            try decode(badTable)
        } throws: { error in
            guard case CodecError.library("libturbojpeg", "tjDecompressHeader3", let code, let message) = error else {
                return false
            }
            return code == 1 && !message.isEmpty  // TJERR_FATAL
        }
    }

    /// Entropy-coded data cut short but closed with EOI: libjpeg-turbo warns and fills the rest. The
    /// picture is emitted and counted as damaged, or with `strict` it is an error (TJERR_WARNING, 0).
    @Test func damagedDataIsCountedOrWithStrictRejected() throws {
        let jpeg = Self.jpeg
        try #require(jpeg.count > 500)
        let damaged = jpeg.prefix(jpeg.count * 3 / 4) + Data([0xFF, 0xD9])
        let lenient = try MJPEGDecoder(format: streamFormat(width: 64, height: 48))
        _ = try decodeOne(damaged, with: lenient)
        _ = try decodeOne(jpeg, with: lenient)
        #expect(lenient.damagedPictures == 1)
        print("damaged picture: \(lenient.lastWarning ?? "no warning")")
        #expect(lenient.lastWarning?.isEmpty == false)
        let strict = try MJPEGDecoder(format: streamFormat(width: 64, height: 48), strict: true)
        #expect {
            try strict.decode(encoded(damaged)) { _ in }
        } throws: { error in
            guard case CodecError.library("libturbojpeg", "tjDecompressToYUVPlanes", 0, _) = error else { return false }
            return true
        }
        _ = try decodeOne(jpeg, with: strict)
    }

    /// Every prefix of a picture that ends before its frame header does is named by the header parser.
    @Test func everyCutBeforeTheFrameHeaderEndIsNamed() throws {
        let bytes = [UInt8](Self.jpeg)
        let sof = try offset(of: 0xC0)
        let end = sof + 2 + (Int(bytes[sof + 2]) << 8 | Int(bytes[sof + 3]))
        for length in 0..<end {
            #expect(throws: MJPEGError.self, "\(length) bytes") {
                try bytes[..<length].withUnsafeBytes { _ = try JPEGFrameHeader(parsing: $0) }
            }
        }
        let whole = try bytes[..<end].withUnsafeBytes { try JPEGFrameHeader(parsing: $0) }
        #expect(whole == JPEGFrameHeader(width: 64, height: 48, subsampling: .yuv422))
    }

    /// Random damage anywhere in a valid picture: each attempt decodes (perhaps counted as damaged)
    /// or throws a named error.
    @Test func randomDamageNeverCrashes() throws {
        var generator = SplitMix64(seed: 0x4A50_4547)
        let original = [UInt8](Self.jpeg)
        try #require(original.count > 500)
        var outcomes = (decoded: 0, failed: 0)
        for _ in 0..<300 {
            var damaged = original
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                damaged[Int.random(in: 2..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) { damaged.removeLast(Int.random(in: 0..<(damaged.count / 2), using: &generator)) }
            do {
                try decode(Data(damaged))
                outcomes.decoded += 1
            } catch is MJPEGError {
                outcomes.failed += 1
            } catch let error as CodecError {
                guard case .library("libturbojpeg", _, _, _) = error else { throw error }
                outcomes.failed += 1
            }
        }
        print("random damage: \(outcomes.decoded) decoded, \(outcomes.failed) rejected")
        #expect(outcomes.failed > 0 && outcomes.decoded > 0 && outcomes.decoded + outcomes.failed == 300)
    }

    @Test func badStreamFormatsAreInvalidSettings() {
        #expect(throws: CodecError.self) {
            try MJPEGDecoder(format: VideoFormat(encoding: .compressed(.vp8), width: 64, height: 48, frameRate: Samples.frameRate))
        }
        #expect(throws: CodecError.self) { try MJPEGDecoder(format: streamFormat(width: 0, height: 48)) }
    }
}
