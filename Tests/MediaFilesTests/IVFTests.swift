import MediaCore
import TestSupport
import Testing

@testable import MediaFiles

@Suite struct IVFTests {
    let pool = BufferPool(name: "ivf-tests")

    /// VP8-like payloads: byte 0 bit 0 clear marks a key frame (RFC 6386 §9.1). Sizes include one larger
    /// than the reader's buffer.
    func payload(_ index: Int, keyframe: Bool) -> [UInt8] {
        let size = [1, 700, 100_000, 33][index % 4]
        var bytes = (0..<size).map { UInt8(truncatingIfNeeded: index &* 17 &+ $0 &* 3) }
        bytes[0] = keyframe ? bytes[0] & 0xFE : bytes[0] | 1
        return bytes
    }

    func encodedFrame(_ index: Int, keyframe: Bool, pts: MediaTime, codec: CodecName = .vp8) -> EncodedFrame {
        payload(index, keyframe: keyframe).withUnsafeBytes {
            EncodedFrame(codec: codec, isKeyframe: keyframe, pts: pts, copying: $0, pool: nil)
        }
    }

    @Test func roundTrip() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("clip.ivf")
            let writer = try IVFWriter(path: path, codec: .vp8, width: 320, height: 240, timebase: Rational(1, 1000))
            let keyframes: Set = [0, 5]
            for i in 0..<10 {
                try writer.write(encodedFrame(i, keyframe: keyframes.contains(i), pts: MediaTime(Int64(i), timebase: Rational(1, 30))))
            }
            #expect(writer.framesWritten == 10)
            try writer.close()
            try writer.close()

            let reader = try IVFReader(path: path)
            #expect(reader.header == IVFHeader(codec: .vp8, width: 320, height: 240, timebase: Rational(1, 1000), frameCount: 10))
            for i in 0..<10 {
                let frame = try #require(try reader.next(pool: pool))
                #expect(frame.codec == .vp8)
                #expect(frame.pts.timebase == Rational(1, 1000))
                #expect(frame.pts.value == Int64((Double(i) * 1000 / 30).rounded()), "frame \(i)")
                #expect(frame.dts == frame.pts)
                #expect(frame.isKeyframe == keyframes.contains(i), "frame \(i)")
                #expect(Array(frame.bytes) == payload(i, keyframe: keyframes.contains(i)), "frame \(i)")
            }
            #expect(try reader.next(pool: pool) == nil)
            #expect(reader.framesRead == 10)
            #expect(pool.outstanding == 0)
        }
    }

    @Test func headerFrameCountIsNotTrusted() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("stream.ivf")
            let writer = try IVFWriter(path: path, codec: .vp8, width: 16, height: 16, timebase: Rational(1, 30))
            for i in 0..<4 { try writer.write(encodedFrame(i, keyframe: i == 0, pts: MediaTime(Int64(i), timebase: Rational(1, 30)))) }
            try writer.close()
            try patch(path, at: 24, with: littleEndian32(0))

            let reader = try IVFReader(path: path)
            #expect(reader.header.frameCount == 0)
            var count = 0
            while try reader.next(pool: nil) != nil { count += 1 }
            #expect(count == 4)
        }
    }

    /// ffmpeg encodes a tiny clip; our key frame flags must match ffprobe's, and copying 3 of its 10 frames
    /// leaves a file that ffprobe reads as 3 frames, both before close (a run that stopped) and after.
    @Test(arguments: [("libvpx", CodecName.vp8), ("libvpx-vp9", CodecName("VP9"))])
    func ffmpegClipAndPartialCopy(encoder: String, codec: CodecName) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let source = dir.file("source.ivf"), copy = dir.file("copy.ivf")
            try TestSupport.ffmpeg([
                "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-frames:v", "10", "-c:v", encoder,
                "-g", "4", "-deadline", "realtime", "-cpu-used", "8", "-lag-in-frames", "0", "-b:v", "200k", source,
            ])
            let probedKeyframes = try TestSupport.runChecked("ffprobe", [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags", "-of", "csv=p=0", source,
            ]).stdout
            let expectedKeyframes = String(decoding: probedKeyframes, as: UTF8.self).split(separator: "\n").map { $0.hasPrefix("K") }
            try #require(expectedKeyframes.count == 10)
            try #require(expectedKeyframes.filter { $0 }.count >= 2, "the clip should have several key frames")

            let reader = try IVFReader(path: source)
            #expect(reader.header.codec == codec)
            #expect(reader.header.width == 64 && reader.header.height == 48)
            var frames: [EncodedFrame] = []
            while let frame = try reader.next(pool: pool) { frames.append(frame) }
            #expect(frames.map(\.isKeyframe) == expectedKeyframes)

            let writer = try IVFWriter(path: copy, codec: codec, width: 64, height: 48, timebase: reader.header.timebase)
            for frame in frames.prefix(3) { try writer.write(frame) }

            func checkThreeFrames() throws {
                #expect(try IVFReader(path: copy).header.frameCount == 3)
                let probed = try TestSupport.ffprobe(copy, entries: "stream=nb_read_frames,width,height", extra: ["-count_frames"])
                #expect(probed == ["nb_read_frames": "3", "width": "64", "height": "48"])
                let copied = try IVFReader(path: copy)
                for original in frames.prefix(3) {
                    let frame = try #require(try copied.next(pool: nil))
                    #expect(Array(frame.bytes) == Array(original.bytes))
                    #expect(frame.pts == original.pts)
                }
                #expect(try copied.next(pool: nil) == nil)
            }
            try checkThreeFrames()  // not closed yet: as a run that stopped part-way leaves it
            try writer.close()
            try checkThreeFrames()
        }
    }

    func writeThreeFrames(to path: String, size: Int = 500) throws {
        let writer = try IVFWriter(path: path, codec: .vp8, width: 16, height: 16, timebase: Rational(1, 30))
        for i in 0..<3 {
            let bytes = [UInt8](repeating: UInt8(i), count: size)
            try writer.write(bytes.withUnsafeBytes {
                EncodedFrame(codec: .vp8, isKeyframe: true, pts: MediaTime(Int64(i), timebase: Rational(1, 30)), copying: $0, pool: nil)
            })
        }
        try writer.close()
    }

    @Test func truncatedFrameNamesItsOffset() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("cut.ivf")
            try writeThreeFrames(to: path)
            let frame2 = 32 + 2 * (12 + 500)
            try cut(path, to: frame2 + 12 + 100)
            let reader = try IVFReader(path: path)
            #expect(try reader.next(pool: nil) != nil)
            #expect(try reader.next(pool: nil) != nil)
            let error = #expect(throws: MediaFileError.self) { try reader.next(pool: nil) }
            #expect(error == .truncated(path: path, offset: frame2, detail: "frame 2 needs 500 bytes, 100 present"))
        }
    }

    @Test func truncatedFrameHeaderNamesItsOffset() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("cut.ivf")
            try writeThreeFrames(to: path)
            let frame2 = 32 + 2 * (12 + 500)
            try cut(path, to: frame2 + 5)
            let reader = try IVFReader(path: path)
            _ = try reader.next(pool: nil)
            _ = try reader.next(pool: nil)
            let error = #expect(throws: MediaFileError.self) { try reader.next(pool: nil) }
            #expect(error == .truncated(path: path, offset: frame2, detail: "frame 2 header needs 12 bytes, 5 present"))
        }
    }

    @Test(arguments: [UInt32(0), UInt32(64 << 20) + 1, UInt32.max])
    func implausibleFrameSizeIsCorrupt(size: UInt32) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bad.ivf")
            try writeThreeFrames(to: path)
            let frame1 = 32 + 12 + 500
            try patch(path, at: frame1, with: littleEndian32(size))
            let reader = try IVFReader(path: path)
            _ = try reader.next(pool: nil)
            let error = #expect(throws: MediaFileError.self) { try reader.next(pool: nil) }
            #expect(error == .corrupt(path: path, offset: frame1, detail: "frame 1 declares \(size) bytes"))
        }
    }

    @Test func badSignatureIsCorruptAtZero() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bad.ivf")
            try writeThreeFrames(to: path)
            try patch(path, at: 0, with: Array("RIFF".utf8))
            let error = #expect(throws: MediaFileError.self) { try IVFReader(path: path) }
            guard case .corrupt(path, 0, let detail) = error else {
                Issue.record("expected corrupt at 0, got \(String(describing: error))")
                return
            }
            #expect(detail.contains("\"RIFF\""))
        }
    }

    @Test func shortHeaderIsTruncated() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("short.ivf")
            try writeThreeFrames(to: path)
            try cut(path, to: 20)
            let error = #expect(throws: MediaFileError.self) { try IVFReader(path: path) }
            #expect(error == .truncated(path: path, offset: 0, detail: "file header needs 32 bytes, 20 present"))
        }
    }

    @Test func badHeaderSizeIsCorrupt() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bad.ivf")
            try writeThreeFrames(to: path)
            try patch(path, at: 6, with: [64, 0])
            let error = #expect(throws: MediaFileError.self) { try IVFReader(path: path) }
            #expect(error == .corrupt(path: path, offset: 6, detail: "header size 64, expected 32"))
        }
    }

    @Test func fourccMapping() {
        #expect(IVFHeader.codec(fourcc: Array("VP80".utf8)) == .vp8)
        #expect(IVFHeader.codec(fourcc: Array("VP90".utf8)) == CodecName("VP9"))
        #expect(IVFHeader.codec(fourcc: Array("H264".utf8)) == .h264)
        #expect(IVFHeader.codec(fourcc: Array("AV01".utf8)) == CodecName("AV01"))
        #expect(IVFHeader.fourcc(for: .vp8) == Array("VP80".utf8))
        #expect(IVFHeader.fourcc(for: CodecName("VP9")) == Array("VP90".utf8))
        #expect(IVFHeader.fourcc(for: CodecName("av01")) == Array("AV01".utf8))
        #expect(IVFHeader.fourcc(for: CodecName("AAC")) == nil)
        #expect(IVFHeader.fourcc(for: CodecName("MPEG4")) == nil)
    }

    @Test func writerRejectsWhatIVFCannotHold() throws {
        try TestSupport.withTemporaryDirectory { dir in
            #expect(throws: MediaFileError.self) {
                try IVFWriter(path: dir.file("a.ivf"), codec: CodecName("MPEG4"), width: 16, height: 16, timebase: Rational(1, 30))
            }
            #expect(throws: MediaFileError.self) {
                try IVFWriter(path: dir.file("b.ivf"), codec: .vp8, width: 70000, height: 16, timebase: Rational(1, 30))
            }
            let writer = try IVFWriter(path: dir.file("c.ivf"), codec: .vp8, width: 16, height: 16, timebase: Rational(1, 30))
            #expect(throws: MediaFileError.self) {
                try writer.write(encodedFrame(1, keyframe: true, pts: .zero(Rational(1, 30)), codec: .h264))
            }
            #expect(throws: MediaFileError.self) {
                try writer.write(EncodedFrame(
                    codec: .vp8, isKeyframe: true, pts: .zero(Rational(1, 30)), copying: UnsafeRawBufferPointer(start: nil, count: 0),
                    pool: nil))
            }
            #expect(writer.framesWritten == 0)
        }
    }
}
