import Foundation
import Sluice
import Testing
import TestSupport

/// End-to-end transcodes on real files, checked by PSNR and by ffmpeg/ffprobe as independent readers.
@Suite struct TranscodeTests {
    /// The sample scaled to 320x240 raw video by ffmpeg: the reference for quality checks.
    static func makeReference(in dir: URL, frames: Int? = nil) throws -> String {
        let path = dir.appendingPathComponent("reference.y4m").path
        var args = ["-i", TestSupport.sampleIVF, "-vf", "scale=320:240", "-pix_fmt", "yuv420p"]
        if let frames { args += ["-frames:v", "\(frames)"] }
        try TestSupport.ffmpeg(args + [path])
        return path
    }

    /// Every picture of a Y4M file.
    static func readAll(_ path: String) throws -> [VideoFrame] {
        let reader = try Y4MReader(path: path, pool: BufferPool(name: "test"))
        var frames: [VideoFrame] = []
        while let frame = try reader.next() { frames.append(frame) }
        return frames
    }

    @Test func y4mToIVFAndBackKeepsEveryFrameAndQuality() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try Self.makeReference(in: dir)
            let ivf = dir.appendingPathComponent("encoded.ivf").path
            let decoded = dir.appendingPathComponent("decoded.y4m").path

            var options = TranscodeOptions()
            options.bitrate = 500_000
            let encode = try Transcoder(input: reference, output: ivf, options: options)
            let encoded = try encode.run()
            #expect(encoded.frames == TestSupport.sampleFrameCount)
            #expect(encode.outputFormat == .video(VideoFormat(encoding: .compressed(.vp8), width: 320, height: 240,
                                                               frameRate: Rational(25, 1))))
            // Within 25% of the target: CBR over 5 s of natural content.
            #expect(abs(encoded.bitrate - 500_000) < 125_000, "bitrate \(encoded.bitrate)")

            let probe = try TestSupport.probeVideo(ivf)
            #expect(probe.codec == "vp8" && probe.width == 320 && probe.height == 240)
            #expect(probe.frames == TestSupport.sampleFrameCount)

            let decode = try Transcoder(input: ivf, output: decoded)
            #expect(try decode.run().frames == TestSupport.sampleFrameCount)

            let original = try Self.readAll(reference), roundTrip = try Self.readAll(decoded)
            #expect(original.count == roundTrip.count)
            var errorSum: UInt64 = 0, samples = 0
            for (a, b) in zip(original, roundTrip) {
                let (sum, count) = PictureQuality.squaredError(a, b)
                errorSum += sum
                samples += count
            }
            let psnr = PictureQuality.psnr(meanSquaredError: Double(errorSum) / Double(samples))
            print("Y4M -> IVF (500 kbit/s) -> Y4M at 320x240: PSNR \(psnr) dB")
            #expect(psnr >= 30)
        }
    }

    @Test func ivfEncodedByFFmpegDecodesExactlyAsFFmpegDecodesIt() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try Self.makeReference(in: dir, frames: 60)
            let theirs = dir.appendingPathComponent("ffmpeg.ivf").path
            try TestSupport.ffmpeg(["-i", reference, "-c:v", "libvpx", "-b:v", "400k", "-g", "20", theirs])
            let ours = dir.appendingPathComponent("sluice.y4m").path
            #expect(try Transcoder(input: theirs, output: ours).run().frames == 60)

            let ffmpegDecode = try TestSupport.ffmpeg(["-c:v", "libvpx", "-i", theirs, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
            let frameBytes = 320 * 240 * 3 / 2
            #expect(ffmpegDecode.stdout.count == 60 * frameBytes)
            let pictures = try Self.readAll(ours)
            #expect(pictures.count == 60)
            for (index, picture) in pictures.enumerated() {
                let packed = Data(TestSupport.packed(picture))
                let start = ffmpegDecode.stdout.startIndex + index * frameBytes
                #expect(packed == ffmpegDecode.stdout[start..<(start + frameBytes)], "frame \(index) differs")
            }
        }
    }

    @Test func truncatedIVFStopsWithTheFileAndOffsetAndKeepsTheOutputValid() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: TestSupport.sampleIVF))
            let cut = dir.appendingPathComponent("cut.ivf").path
            try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
            let output = dir.appendingPathComponent("partial.y4m").path
            let transcoder = try Transcoder(input: cut, output: output)
            do {
                _ = try transcoder.run()
                Issue.record("a truncated file transcoded without error")
            } catch let GraphError.nodeFailed(node, error) {
                #expect(node == "ivf-reader")
                guard case MediaFileError.truncated(let path, let offset, _) = error else {
                    Issue.record("unexpected \(error)"); return
                }
                #expect(path == cut)
                #expect(offset > 32 && offset <= bytes.count / 2)
                #expect("\(error)".contains(cut) && "\(error)".contains("\(offset)"))
            }
            // Every frame before the cut was decoded and written, and the Y4M reads back cleanly.
            let written = try Self.readAll(output)
            #expect(written.count == transcoder.framesDone)
            #expect(written.count > 10)
        }
    }

    @Test func truncatedY4MKeepsTheIVFWrittenSoFarPlayable() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try Self.makeReference(in: dir, frames: 40)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: reference))
            let headerLength = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1
            let frameLength = "FRAME\n".count + 320 * 240 * 3 / 2
            let cut = dir.appendingPathComponent("cut.y4m").path
            try bytes.prefix(headerLength + 29 * frameLength + 1000).write(to: URL(fileURLWithPath: cut))
            let ivf = dir.appendingPathComponent("partial.ivf").path
            let transcoder = try Transcoder(input: cut, output: ivf)
            #expect(throws: GraphError.self) { try transcoder.run() }
            let header = try IVFReader(path: ivf).header
            #expect(header.frameCount == 29)
            #expect(try TestSupport.probeVideo(ivf).frames == header.frameCount)
        }
    }

    @Test func cancelledTranscodeLeavesAValidIVF() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try Self.makeReference(in: dir)
            let ivf = dir.appendingPathComponent("stopped.ivf").path
            var options = TranscodeOptions()
            options.threads = 1
            let transcoder = try Transcoder(input: reference, output: ivf, options: options)
            let watcher = Thread {
                while transcoder.framesDone < 20 { usleep(500) }
                transcoder.graph.cancel()
            }
            watcher.start()
            #expect(throws: GraphError.self) { try transcoder.run() }
            let header = try IVFReader(path: ivf).header
            #expect(header.frameCount >= 20 && header.frameCount < TestSupport.sampleFrameCount)
            #expect(try TestSupport.probeVideo(ivf).frames == header.frameCount)
        }
    }

    @Test func rawFramesComeFromARecycledPool() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try Self.makeReference(in: dir)
            let transcoder = try Transcoder(input: reference, output: dir.appendingPathComponent("x.ivf").path)
            _ = try transcoder.run()
            let pool = try #require(transcoder.sourcePool)
            // 132 pictures went through; storage for only the few in flight was ever allocated.
            #expect(pool.allocations <= transcoder.graph.edgeCapacity * 2 + 3, "\(pool.allocations) buffers")
        }
    }
}
