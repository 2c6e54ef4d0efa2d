import CodecOpenH264
import CodecVPX
import Foundation
import MediaCodecs
@testable import MediaContainers
import MediaCore
import MediaFiles
import Testing
import TestSupport

/// Container files made by ffmpeg from the bundled clip, read back by `ContainerReader`.
@Suite struct ContainerReaderTests {
    static let frames = 30
    static let width = 320, height = 180

    /// A file of `frames` pictures of the sample at 320x180, 25 fps, with 1.2 s of a 440 Hz tone when
    /// `audio` names an encoder; H.264 is Constrained Baseline (no B frames: OpenH264 decodes it exactly).
    static func make(_ name: String, in dir: URL, video: [String], audio: [String]? = nil, extra: [String] = []) throws -> String {
        let path = dir.appendingPathComponent(name).path
        var arguments = ["-i", TestSupport.sampleIVF]
        if audio != nil { arguments += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1.2"] }
        arguments += ["-map", "0:v"] + (audio != nil ? ["-map", "1:a"] : [])
        arguments += ["-frames:v", "\(frames)", "-vf", "scale=\(width):\(height)", "-r", "25"] + video + (audio ?? []) + extra
        try TestSupport.ffmpeg(arguments + [path])
        return path
    }

    static let h264 = ["-c:v", "libx264", "-profile:v", "baseline", "-g", "10", "-bf", "0"]
    static let vp8 = ["-c:v", "libvpx", "-b:v", "500k", "-g", "10"]
    static let opus = ["-c:a", "libopus", "-b:a", "48k"]

    /// ffprobe's packets of one stream: pts in the stream's timebase and keyframe flags, in file order.
    static func probePackets(_ path: String, stream: String) throws -> [(pts: Int64, key: Bool)] {
        let result = try TestSupport.runChecked("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries",
                                                            "packet=pts,flags", "-of", "csv=p=0", path])
        return result.stdoutText.split(separator: "\n").map { line in
            let fields = line.split(separator: ",")
            return (Int64(fields[0])!, fields[1].hasPrefix("K"))
        }
    }

    /// Every packet of the file, by stream.
    static func readAll(_ path: String) throws -> (ContainerReader, [Int: [EncodedFrame]]) {
        let reader = try ContainerReader(path: path)
        var packets: [Int: [EncodedFrame]] = [:]
        while let (stream, frame) = try reader.next(pool: nil) { packets[stream, default: []].append(frame) }
        return (reader, packets)
    }

    /// How many packets `path` gives before the error that ends it, and that error.
    static func readUntilFailure(_ path: String) -> (read: Int, failure: (any Error)?) {
        var read = 0
        do {
            let reader = try ContainerReader(path: path)
            while try reader.next(pool: nil) != nil { read += 1 }
            return (read, nil)
        } catch {
            return (read, error)
        }
    }

    /// ffmpeg's decoding of the file's video, as pictures.
    static func reference(_ path: String, count: Int) throws -> [VideoFrame] {
        let raw = try TestSupport.ffmpeg(["-i", path, "-map", "0:v", "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]).stdout
        return try Samples.unpackAll(raw, count: count, width: width, height: height, pool: BufferPool(name: "reference"))
    }

    @Test(arguments: [("clip.mp4", h264, CodecName.h264), ("clip.mkv", h264, .h264), ("clip.webm", vp8, .vp8),
                      ("vp8.mkv", vp8, .vp8)])
    func videoIsReadFrameExact(name: String, video: [String], codec: CodecName) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = try Self.make(name, in: dir, video: video, audio: Self.opus)
            try Self.expectFrameExact(path, codec: codec)
        }
    }

    /// Files GStreamer muxes (qtmux/mp4mux, webmmux, matroskamux) read the same way.
    @Test(arguments: [("gst.mp4", "x264enc key-int-max=10 bframes=0 ! video/x-h264,profile=constrained-baseline ! h264parse ! mp4mux", CodecName.h264),
                      ("gst.mkv", "x264enc key-int-max=10 bframes=0 ! video/x-h264,profile=constrained-baseline ! h264parse ! matroskamux", .h264),
                      ("gst.webm", "vp8enc keyframe-max-dist=10 ! webmmux", .vp8)])
    func gstreamerFilesAreReadFrameExact(name: String, encoder: String, codec: CodecName) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent(name).path
            let pipeline = "videotestsrc num-buffers=\(Self.frames) pattern=ball ! video/x-raw,width=\(Self.width),height=\(Self.height),framerate=25/1 ! "
                + encoder + " ! filesink location=" + path
            try TestSupport.runChecked("gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init), timeout: 60)
            try Self.expectFrameExact(path, codec: codec)
        }
    }

    /// `path`'s video read by `ContainerReader` has ffprobe's packets (count, timestamps, keyframes),
    /// and decodes (libvpx, OpenH264) to the very pictures ffmpeg decodes.
    static func expectFrameExact(_ path: String, codec: CodecName) throws {
        let (reader, packets) = try Self.readAll(path)
        let stream = try reader.firstStream(.video)
        #expect(stream.codec == codec && stream.width == Self.width && stream.height == Self.height)
        #expect(stream.frameRate == Rational(25, 1))
        let frames = packets[stream.index] ?? []
        let probed = try Self.probePackets(path, stream: "v:0")
        #expect(frames.count == Self.frames && probed.count == Self.frames)
        #expect(frames.map(\.pts.value) == probed.map(\.pts))
        #expect(frames.allSatisfy { $0.pts.timebase == stream.timebase })
        #expect(frames.map(\.isKeyframe) == probed.map(\.key))
        #expect(frames.filter(\.isKeyframe).count == 3, "a keyframe every 10 frames")

        let provider: any VideoDecoderProvider = codec == .h264 ? OpenH264DecoderProvider() : VP8DecoderProvider()
        let format = VideoFormat(encoding: .compressed(codec), width: Self.width, height: Self.height, frameRate: Rational(25, 1))
        let decoder = try provider.makeDecoder(format: format, threads: 1)
        var pictures: [VideoFrame] = []
        for frame in frames {
            if codec == .h264 {
                // Sluice's H.264 frames are Annex-B, with SPS and PPS in every IDR access unit.
                #expect(AnnexB.startsWithStartCode(frame.bytes))
                let types = AnnexB.nalUnitTypes(in: frame.bytes)
                #expect(!frame.isKeyframe || (types.contains(7) && types.contains(8) && types.contains(5)))
            }
            try decoder.decode(frame) { pictures.append($0) }
        }
        try decoder.flush { pictures.append($0) }
        let expected = try Self.reference(path, count: Self.frames)
        #expect(pictures.count == Self.frames)
        for (index, (ours, theirs)) in zip(pictures, expected).enumerated() {
            let psnr = PictureQuality.psnr(ours, theirs)
            #expect(psnr == .infinity, "picture \(index): \(psnr) dB against ffmpeg's decoding")
        }
    }

    /// libavformat puts the pre-skip before zero (ffprobe's first packet at -312/48000 s); Sluice's
    /// timeline starts with it, as an Ogg granule position does: every packet is that much later.
    @Test(arguments: ["tone.mp4", "tone.webm", "tone.mkv", "tone.ogg"])
    func opusPacketsKeepTheirTimestampsFromThePreSkip(name: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent(name).path
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1.2"]
                                   + Self.opus + ["-strict", "-2", path])
            let (reader, packets) = try Self.readAll(path)
            let stream = try reader.firstStream(.audio)
            #expect(stream.codec == .opus && stream.channels == 1 && stream.sampleRate == 48_000)
            #expect(stream.preSkip == 312, "libopus's encoder delay at 48 kHz")
            let frames = packets[stream.index] ?? []
            let probed = try Self.probePackets(path, stream: "a:0")
            #expect(frames.count == probed.count && frames.count >= 60)
            let preSkip = MediaTime(312, timebase: Rational(1, 48_000)).rescaled(to: stream.timebase).value
            #expect(frames.first?.pts.value == 0)
            #expect(frames.map(\.pts.value) == probed.map { $0.pts + preSkip })
        }
    }

    @Test func aacIsDecodedToTheSamplesFFmpegDecodes() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("tone.mp4").path
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
                                    "-ac", "2", "-c:a", "aac", "-b:a", "128k", path])
            let (reader, packets) = try Self.readAll(path)
            let stream = try reader.firstStream(.audio)
            #expect(stream.codec == .aac && stream.channels == 2 && stream.sampleRate == 48_000)
            let provider = ContainerAudioDecoderProvider(stream: stream)
            let input = AudioFormat(encoding: .compressed(.aac), sampleRate: 48_000, channels: 2)
            let output = provider.outputCaps(for: input).fixated!.audio!
            #expect(output == AudioFormat(encoding: .samples(.f32), sampleRate: 48_000, channels: 2))
            let decoder = try provider.makeDecoder(input: input, output: output)
            var decoded: [AudioFrame] = []
            for packet in packets[stream.index] ?? [] { try decoder.decode(packet) { decoded.append($0) } }
            try decoder.flush { decoded.append($0) }
            let ours = floats(decoded)
            let theirs = floats(try TestSupport.ffmpeg(["-i", path, "-f", "f32le", "-"]).stdout, format: .f32)
            // ffmpeg also trims the last packet's padding, which the container marks in side data.
            #expect(ours.count >= theirs.count && ours.count - theirs.count < 2 * 1024 && theirs.count >= 96_000,
                    "\(ours.count) samples, ffmpeg \(theirs.count)")
            let common = min(ours.count, theirs.count)
            #expect(snr(theirs[..<common], ours[..<common]) > 90, "libavcodec decodes the same samples either way")
            #expect(decoded.first?.pts == .zero(Rational(1, 48_000)), "the priming before 0 is dropped")
            // Timestamps run on without gaps.
            for (a, b) in zip(decoded, decoded.dropFirst()) { #expect(a.pts + a.duration == b.pts) }
        }
    }

    @Test func surroundAACIsMixedDownToStereo() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("surround.mp4").path
            // A tone only in the front left channel of 5.1.
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.5",
                                    "-af", "pan=5.1|FL=c0", "-c:a", "aac", path])
            let (reader, packets) = try Self.readAll(path)
            let stream = try reader.firstStream(.audio)
            #expect(stream.channels == 6)
            let provider = ContainerAudioDecoderProvider(stream: stream)
            let input = AudioFormat(encoding: .compressed(.aac), sampleRate: 48_000, channels: 6)
            let output = provider.outputCaps(for: input).fixated!.audio!
            #expect(output.channels == 2)
            let decoder = try provider.makeDecoder(input: input, output: output)
            var decoded: [AudioFrame] = []
            for packet in packets[stream.index] ?? [] { try decoder.decode(packet) { decoded.append($0) } }
            let samples = floats(decoded)
            let left = stride(from: 0, to: samples.count, by: 2).map { abs(samples[$0]) }.max() ?? 0
            let right = stride(from: 1, to: samples.count, by: 2).map { abs(samples[$0]) }.max() ?? 0
            #expect(left > 0.05 && right < left / 100, "left \(left), right \(right)")
        }
    }

    @Test func otherCodecsAreNamed() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = try Self.make("mpeg4.mkv", in: dir, video: ["-c:v", "mpeg4"], audio: ["-c:a", "libmp3lame"])
            let reader = try ContainerReader(path: path)
            #expect(reader.streams.map(\.codecName) == ["mpeg4", "mp3"])
            #expect(throws: MediaFileError.unsupported(
                path: path, detail: "stream 0 is mpeg4 video; Sluice reads H.264 and VP8 video, Opus and AAC audio")) {
                try reader.firstStream(.video)
            }
            #expect(try reader.next(pool: nil) == nil, "packets of codecs Sluice does not read are skipped")
        }
    }

    @Test func notAContainerIsCorruptAtByteZero() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("noise.mkv").path
            try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).write(to: URL(fileURLWithPath: path))
            #expect {
                try ContainerReader(path: path)
            } throws: { error in
                guard case MediaFileError.corrupt(path, 0, _) = error else { return false }
                return true
            }
            let empty = dir.appendingPathComponent("empty.mp4").path
            FileManager.default.createFile(atPath: empty, contents: Data())
            #expect(throws: MediaFileError.truncated(path: empty, offset: 0, detail: "empty file")) { try ContainerReader(path: empty) }
        }
    }

    /// A file cut at 60% of its size gives its whole packets up to the cut, then a truncation error
    /// naming the file; an MP4 with its index at the end cannot be read at all, and says why.
    @Test(arguments: [("cut.webm", vp8, [String]()), ("cut.mkv", h264, []), ("cut.mp4", h264, ["-movflags", "+faststart"]),
                      ("cut-index-last.mp4", h264, [])])
    func cutFilesEndWithATruncationError(name: String, video: [String], extra: [String]) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let whole = try Self.make("whole-" + name, in: dir, video: video, audio: Self.opus, extra: extra)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
            let path = dir.appendingPathComponent(name).path
            try bytes.prefix(bytes.count * 6 / 10).write(to: URL(fileURLWithPath: path))
            let (read, failure) = Self.readUntilFailure(path)
            guard case MediaFileError.truncated(path, let offset, let detail)? = failure else {
                Issue.record("\(name): \(read) packets, then \(failure.map { "\($0)" } ?? "no error")")
                return
            }
            #expect(offset > 0 && offset <= bytes.count * 6 / 10, "\(detail)")
            if name == "cut-index-last.mp4" {
                #expect(read == 0 && detail.contains("moov"))
            } else {
                #expect(read > 20, "\(name): the packets before the cut are read")
            }
        }
    }

    /// 3000 bytes of noise at 40% of the file: the packets before the damage are read, then an error
    /// names the file and an offset at the damage (Matroska's demuxer would resynchronise past it
    /// silently; the error it logs is caught).
    @Test(arguments: [("damaged.webm", vp8, [String]()), ("damaged.mkv", h264, []), ("damaged.mp4", h264, ["-movflags", "+faststart"])])
    func damageInTheMiddleIsACorruptError(name: String, video: [String], extra: [String]) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let whole = try Self.make("whole-" + name, in: dir, video: video + ["-b:v", "2M"], audio: Self.opus, extra: extra)
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: whole)))
            let damage = bytes.count * 4 / 10
            for index in damage..<(damage + 3000) { bytes[index] = UInt8(truncatingIfNeeded: index &* 7919 &+ 13) }
            let path = dir.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let (read, failure) = Self.readUntilFailure(path)
            guard case MediaFileError.corrupt(path, let offset, let detail)? = failure else {
                Issue.record("\(name): \(read) packets, then \(failure.map { "\($0)" } ?? "no error")")
                return
            }
            #expect(offset > damage - 64 * 1024 && offset < damage + 3000, "\(name): offset \(offset), damage at \(damage): \(detail)")
            #expect(read > 5, "\(name): the packets before the damage are read")
        }
    }
}

/// One file read by two streams' readers through a `ContainerDemuxer`.
@Suite struct ContainerDemuxerTests {
    @Test func eachStreamGetsItsPacketsAndAReaderFarAheadIsToldToWait() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = try ContainerReaderTests.make("av.webm", in: dir, video: ContainerReaderTests.vp8,
                                                     audio: ContainerReaderTests.opus)
            let demuxer = try ContainerDemuxer(path: path, maxQueuedBytes: 20_000)
            let video = try demuxer.reader.firstStream(.video), audio = try demuxer.reader.firstStream(.audio)
            demuxer.claim(video.index)
            demuxer.claim(audio.index)
            // Audio alone, until the video waiting for its reader passes the bound.
            var audioPackets = 0
            while !demuxer.mustWait(for: audio.index), try demuxer.next(stream: audio.index) != nil { audioPackets += 1 }
            #expect(demuxer.mustWait(for: audio.index) && !demuxer.mustWait(for: video.index))
            var videoFrames = 0
            while try demuxer.next(stream: video.index) != nil { videoFrames += 1 }
            #expect(!demuxer.mustWait(for: audio.index), "the video reader took what waited")
            while try demuxer.next(stream: audio.index) != nil { audioPackets += 1 }
            #expect(videoFrames == ContainerReaderTests.frames)
            let probed = try ContainerReaderTests.probePackets(path, stream: "a:0").count
            #expect(audioPackets == probed)
        }
    }
}

/// Container files with bytes changed at random (seeded, so a failure reproduces): reading them ends
/// normally or with a `MediaFileError` naming the file, never anything else.
@Suite struct ContainerFuzzTests {
    @Test(arguments: [("fuzz.webm", ContainerReaderTests.vp8), ("fuzz.mp4", ContainerReaderTests.h264),
                      ("fuzz.mkv", ContainerReaderTests.h264)])
    func damagedFilesEndOnlyInNamedErrors(name: String, video: [String]) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let whole = try ContainerReaderTests.make(name, in: dir, video: video, audio: ContainerReaderTests.opus,
                                                      extra: ["-movflags", "+faststart"])
            let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: whole)))
            var random = SplitMix64(seed: 0x5eed_0000 + UInt64(original.count))
            var outcomes: [String: Int] = [:]
            for round in 0..<40 {
                var bytes = original
                for _ in 0..<(1 + round % 8) {
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    for index in at..<min(at + Int.random(in: 1...16, using: &random), bytes.count) {
                        bytes[index] = UInt8.random(in: 0...255, using: &random)
                    }
                }
                if round % 5 == 4 { bytes.removeLast(Int.random(in: 1..<bytes.count / 2, using: &random)) }
                let path = dir.appendingPathComponent("round-\(round)-" + name).path
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                switch ContainerReaderTests.readUntilFailure(path).failure {
                case nil: outcomes["read to the end", default: 0] += 1
                case let error as MediaFileError:
                    #expect(error.path == path)
                    outcomes["\(error)".split(separator: ":")[1].trimmingCharacters(in: .whitespaces)
                        .split(separator: " ").first.map(String.init) ?? "?", default: 0] += 1
                case let error?:
                    Issue.record("round \(round): \(type(of: error)): \(error)")
                }
            }
            print("\(name): \(outcomes)")
            #expect(outcomes.values.reduce(0, +) == 40)
        }
    }
}

@Suite struct AVCConfigurationTests {
    /// avcC: version 1, profile 66, compatibility, level 30, 4-byte lengths, one SPS, one PPS.
    static let record: [UInt8] = [1, 66, 0xc0, 30, 0xff, 0xe1, 0, 4, 0x67, 66, 0xc0, 30, 1, 0, 3, 0x68, 0xce, 0x3c]

    @Test func lengthPrefixedSamplesBecomeAnnexBWithParameterSetsOnIDR() throws {
        let configuration = try #require(AVCConfiguration(Self.record))
        #expect(configuration.lengthSize == 4)
        #expect(configuration.sequenceParameterSets == [[0x67, 66, 0xc0, 30]])
        #expect(configuration.pictureParameterSets == [[0x68, 0xce, 0x3c]])
        let idr: [UInt8] = [0, 0, 0, 3, 0x65, 0x88, 0x80, 0, 0, 0, 2, 0x06, 0x05]
        let converted = try idr.withUnsafeBytes { try configuration.annexB($0) }
        #expect(converted.isIDR)
        #expect(converted.bytes == [0, 0, 0, 1, 0x67, 66, 0xc0, 30, 0, 0, 0, 1, 0x68, 0xce, 0x3c,
                                    0, 0, 0, 1, 0x65, 0x88, 0x80, 0, 0, 0, 1, 0x06, 0x05])
        let slice: [UInt8] = [0, 0, 0, 2, 0x41, 0x9a]
        let plain = try slice.withUnsafeBytes { try configuration.annexB($0) }
        #expect(!plain.isIDR && plain.bytes == [0, 0, 0, 1, 0x41, 0x9a])
    }

    @Test func damagedSamplesNameTheOffset() throws {
        let configuration = try #require(AVCConfiguration(Self.record))
        let overlong: [UInt8] = [0, 0, 0, 2, 0x41, 0x9a, 0, 0, 0, 9, 0x41]
        #expect(throws: AVCConfiguration.SampleError(offset: 6, detail: "NAL unit of 9 bytes, 1 left in the sample")) {
            try overlong.withUnsafeBytes { try configuration.annexB($0) }
        }
        let cut: [UInt8] = [0, 0, 0, 2, 0x41, 0x9a, 0, 0]
        #expect(throws: AVCConfiguration.SampleError(offset: 6, detail: "NAL unit length field cut short (2 of 4 bytes)")) {
            try cut.withUnsafeBytes { try configuration.annexB($0) }
        }
        #expect(AVCConfiguration([0, 0, 0, 1, 0x67]) == nil, "Annex-B extradata is not a configuration record")
    }
}
