import MediaCore
import TestSupport
import Testing

@testable import MediaFiles

@Suite struct Y4MTests {
    let pool = BufferPool(name: "y4m-tests")

    @Test func readsWhatFFmpegWrites() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let source = ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-frames:v", "5", "-pix_fmt", "yuv420p"]
            try TestSupport.ffmpeg(source + [dir.file("out.y4m")])
            try TestSupport.ffmpeg(source + ["-f", "rawvideo", dir.file("out.yuv")])
            let raw = try contents(of: dir.file("out.yuv"))
            let frameSize = 64 * 48 * 3 / 2
            try #require(raw.count == 5 * frameSize)

            let reader = try Y4MReader(path: dir.file("out.y4m"), pool: pool)
            #expect(reader.format == VideoFormat(encoding: .pixels(.i420), width: 64, height: 48, frameRate: Rational(10, 1)))
            var index = 0
            while let frame = try reader.next() {
                #expect(frame.pts.value == Int64(index))
                #expect(frame.pts.timebase == Rational(1, 10))
                #expect(frame.duration?.value == 1)
                #expect(frame.duration?.timebase == Rational(1, 10))
                #expect(TestSupport.packed(frame) == Array(raw[(index * frameSize)..<((index + 1) * frameSize)]), "frame \(index)")
                index += 1
            }
            #expect(index == 5)
            #expect(reader.framesRead == 5)
            #expect(reader.byteOffset == (try contents(of: dir.file("out.y4m"))).count)
        }
    }

    @Test(arguments: [(64, 48), (33, 17), (1, 1), (2, 3)])
    func roundTripsAndFFmpegAgrees(width: Int, height: Int) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("clip.y4m")
            let format = VideoFormat(encoding: .pixels(.i420), width: width, height: height, frameRate: Rational(30000, 1001))
            let pictures = (0..<4).map { testPicture(width: width, height: height, seed: $0, pool: pool) }
            let writer = try Y4MWriter(path: path, format: format)
            for picture in pictures { try writer.write(picture) }
            #expect(writer.framesWritten == 4)
            try writer.close()
            try writer.close()

            let reader = try Y4MReader(path: path, pool: pool)
            #expect(reader.format == format)
            for (index, picture) in pictures.enumerated() {
                let frame = try #require(try reader.next())
                #expect(TestSupport.packed(frame) == TestSupport.packed(picture), "frame \(index)")
                #expect(frame.pts == MediaTime(Int64(index), timebase: Rational(1001, 30000)))
            }
            #expect(try reader.next() == nil)

            // ffmpeg decodes our file to the same pixels.
            try TestSupport.ffmpeg(["-i", path, "-f", "rawvideo", "-pix_fmt", "yuv420p", dir.file("check.yuv")])
            #expect(try contents(of: dir.file("check.yuv")) == pictures.flatMap(TestSupport.packed))
        }
    }

    /// Writes five 64x48 pictures; returns the header length and the size of one frame record.
    func writeFiveFrames(to path: String) throws -> (header: Int, record: Int) {
        let format = VideoFormat(encoding: .pixels(.i420), width: 64, height: 48, frameRate: Rational(10, 1))
        let writer = try Y4MWriter(path: path, format: format)
        for seed in 0..<5 { try writer.write(testPicture(width: 64, height: 48, seed: seed, pool: pool)) }
        try writer.close()
        return ("YUV4MPEG2 W64 H48 F10:1 Ip A1:1 C420jpeg\n".utf8.count, 6 + 4608)
    }

    @Test func truncatedFrameGivesEarlierFramesThenExactOffset() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("clip.y4m")
            let (header, record) = try writeFiveFrames(to: path)
            #expect(try contents(of: path).count == header + 5 * record)
            let frame3 = header + 3 * record
            try cut(path, to: frame3 + 6 + 1000)

            let reader = try Y4MReader(path: path, pool: pool)
            for seed in 0..<3 {
                let frame = try #require(try reader.next())
                #expect(TestSupport.packed(frame) == TestSupport.packed(testPicture(width: 64, height: 48, seed: seed, pool: pool)))
            }
            let error = #expect(throws: MediaFileError.self) { try reader.next() }
            #expect(error == .truncated(path: path, offset: frame3, detail: "frame 3 needs 4608 bytes, 1000 present"))
            #expect(error?.description == "\(path): truncated at byte \(frame3): frame 3 needs 4608 bytes, 1000 present")
            #expect(reader.framesRead == 3)
        }
    }

    @Test func fileCutInsideFrameLineIsTruncated() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("clip.y4m")
            let (header, record) = try writeFiveFrames(to: path)
            try cut(path, to: header + record + 3)
            let reader = try Y4MReader(path: path, pool: pool)
            _ = try reader.next()
            let error = #expect(throws: MediaFileError.self) { try reader.next() }
            #expect(error == .truncated(path: path, offset: header + record, detail: "frame 1 header is cut short"))
        }
    }

    @Test func garbageInsteadOfFrameIsCorruptAtItsOffset() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("clip.y4m")
            let (header, record) = try writeFiveFrames(to: path)
            try patch(path, at: header + 2 * record, with: Array("JUNK!".utf8))
            let reader = try Y4MReader(path: path, pool: pool)
            _ = try reader.next()
            _ = try reader.next()
            let error = #expect(throws: MediaFileError.self) { try reader.next() }
            guard case .corrupt(path, header + 2 * record, let detail) = error else {
                Issue.record("expected corrupt at \(header + 2 * record), got \(String(describing: error))")
                return
            }
            #expect(detail.contains("\"JUNK!\\x0A"))
            #expect(detail.contains("FRAME"))
        }
    }

    @Test func frameParametersAreAllowed() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("params.y4m")
            try write(Array("YUV4MPEG2 W2 H2 F25:1\nFRAME Ixyz Xfoo\n".utf8) + [1, 2, 3, 4, 5, 6], to: path)
            let reader = try Y4MReader(path: path, pool: pool)
            let frame = try #require(try reader.next())
            #expect(TestSupport.packed(frame) == [1, 2, 3, 4, 5, 6])
            #expect(try reader.next() == nil)
        }
    }

    @Test(arguments: [nil, "420", "420jpeg", "420paldv", "420mpeg2"])
    func acceptsFourTwoZeroChroma(tag: String?) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("chroma.y4m")
            let chroma = tag.map { " C\($0)" } ?? ""
            try write(Array("YUV4MPEG2 W4 H2 F25:1 It A10:11\(chroma) XYSCSS=420JPEG\nFRAME\n".utf8) + Array(0..<12), to: path)
            let reader = try Y4MReader(path: path, pool: pool)
            #expect(reader.format == VideoFormat(encoding: .pixels(.i420), width: 4, height: 2, frameRate: Rational(25, 1)))
            #expect(TestSupport.packed(try #require(try reader.next())) == Array(0..<12))
        }
    }

    @Test(arguments: ["444", "422", "mono", "420p10", "411", "444alpha"])
    func rejectsOtherChroma(tag: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("chroma.y4m")
            try write(Array("YUV4MPEG2 W4 H2 F25:1 C\(tag)\n".utf8), to: path)
            let error = #expect(throws: MediaFileError.self) { try Y4MReader(path: path, pool: pool) }
            guard case .unsupported(path, let detail) = error else {
                Issue.record("expected unsupported, got \(String(describing: error))")
                return
            }
            #expect(detail.contains("chroma \(tag) "))
        }
    }

    @Test(arguments: [
        ("YUV4MPEG2 H2 F25:1\n", "no W tag"), ("YUV4MPEG2 W2 F25:1\n", "no H tag"), ("YUV4MPEG2 W2 H2\n", "no F tag"),
        ("YUV4MPEG2 W2 H2 F25:0\n", "bad frame rate"), ("YUV4MPEG2 W0 H2 F25:1\n", "bad width"),
        ("YUV4MPEG3 W2 H2 F25:1\n", "not a YUV4MPEG2 file"),
    ])
    func rejectsBadHeaders(header: String, expected: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bad.y4m")
            try write(Array(header.utf8), to: path)
            let error = #expect(throws: MediaFileError.self) { try Y4MReader(path: path, pool: pool) }
            guard case .corrupt(path, _, let detail) = error else {
                Issue.record("expected corrupt, got \(String(describing: error))")
                return
            }
            #expect(detail.contains(expected))
        }
    }

    @Test func badValueNamesItsOffset() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bad.y4m")
            try write(Array("YUV4MPEG2 W2 Hx F25:1\n".utf8), to: path)
            let error = #expect(throws: MediaFileError.self) { try Y4MReader(path: path, pool: pool) }
            #expect(error == .corrupt(path: path, offset: 13, detail: "bad height \"Hx\""))
        }
    }

    @Test func headerWithoutNewlineIsTruncated() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("short.y4m")
            try write(Array("YUV4MPEG2 W2 H2".utf8), to: path)
            let error = #expect(throws: MediaFileError.self) { try Y4MReader(path: path, pool: pool) }
            #expect(error == .truncated(path: path, offset: 0, detail: "stream header is cut short"))
        }
    }

    @Test func missingFileCannotBeOpened() throws {
        let error = #expect(throws: MediaFileError.self) {
            try Y4MReader(path: "/nonexistent/dir/clip.y4m", pool: pool)
        }
        guard case .cannotOpen("/nonexistent/dir/clip.y4m", _) = error else {
            Issue.record("expected cannotOpen, got \(String(describing: error))")
            return
        }
    }

    @Test func writerRejectsMismatchedPicturesAndWritesAfterClose() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("out.y4m")
            let format = VideoFormat(encoding: .pixels(.i420), width: 8, height: 8, frameRate: Rational(25, 1))
            let writer = try Y4MWriter(path: path, format: format)
            #expect(throws: MediaFileError.self) { try writer.write(testPicture(width: 4, height: 8, seed: 0, pool: pool)) }
            // Y4M here is I420 only: an NV12 picture of the right size is refused, not misread.
            let nv12 = VideoFrame(pixelFormat: .nv12, width: 8, height: 8, pts: MediaTime(0, timebase: Rational(1, 25)), pool: pool)
            #expect(throws: MediaFileError.self) { try writer.write(nv12) }
            #expect(throws: MediaFileError.self) {
                try Y4MWriter(path: dir.file("nv12.y4m"), format: VideoFormat(
                    encoding: .pixels(.nv12), width: 8, height: 8, frameRate: Rational(25, 1)))
            }
            try writer.close()
            #expect(throws: MediaFileError.self) { try writer.write(testPicture(width: 8, height: 8, seed: 0, pool: pool)) }
            #expect(writer.framesWritten == 0)
            #expect(throws: MediaFileError.self) {
                try Y4MWriter(path: dir.file("vp8.y4m"), format: VideoFormat(
                    encoding: .compressed(.vp8), width: 8, height: 8, frameRate: Rational(25, 1)))
            }
        }
    }
}
