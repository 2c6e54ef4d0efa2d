import Foundation
import Sluice
import Testing
import TestSupport

/// `sluice transcode` with MP4, WebM and Matroska files, checked by ffprobe and ffmpeg.
@Suite struct ContainerTranscodeTests {
    /// ffprobe's fields of stream `stream` ("v:0", "a:0") of `path`, frames counted.
    static func probe(_ path: String, stream: String) throws -> [String: String] {
        try TestSupport.ffprobe(path, entries: "stream=codec_name,nb_read_frames,start_time,duration,channels",
                                extra: ["-count_frames", "-select_streams", stream])
    }

    /// Seconds ffprobe gives for the whole file.
    static func duration(_ path: String) throws -> Double {
        Double(try TestSupport.ffprobe(path, entries: "format=duration")["duration"] ?? "") ?? -1
    }

    /// ffmpeg decodes every stream of `path` without an error (`-xerror` stops at the first).
    static func decodesCleanly(_ path: String) throws -> Bool {
        try TestSupport.run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"]).status == 0
    }

    /// An MP4 made by ffmpeg: `frames` pictures of the sample (H.264 Baseline, 320x180 at 25 fps) and
    /// a stereo 440 Hz tone in AAC as long as them (`-t`: `-frames:v` would cut the audio where the
    /// video ends in ffmpeg's interleaving, well before its end).
    static func makeMP4(in dir: URL, frames: Int, extra: [String] = []) throws -> String {
        let path = dir.appendingPathComponent("clip.mp4").path
        let seconds = Double(frames) / 25
        try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
                                "-map", "0:v", "-map", "1:a", "-t", "\(seconds)", "-vf", "scale=320:180",
                                "-c:v", "libx264", "-profile:v", "baseline", "-g", "25", "-ac", "2", "-c:a", "aac"] + extra + [path])
        return path
    }

    @Test(arguments: [("out.webm", "vp8"), ("out.mp4", "h264"), ("out.mkv", "vp8")])
    func encodedVideoIsWrittenWithEveryFrame(name: String, codec: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.appendingPathComponent(name).path
            var options = TranscodeOptions()
            options.maxFrames = 50
            options.size = (320, 180)
            let summary = try Transcoder(input: TestSupport.sampleIVF, output: output, options: options).run()
            #expect(summary.frames == 50)
            let video = try Self.probe(output, stream: "v:0")
            #expect(video["codec_name"] == codec && video["nb_read_frames"] == "50")
            let seconds = try Self.duration(output)
            #expect(abs(seconds - 2.0) < 0.05, "\(name) lasts \(seconds) s, 50 frames at 25 fps")
            #expect(try Self.decodesCleanly(output))
        }
    }

    @Test func mp4WithAACBecomesWebMWithOpusInSync() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = try Self.makeMP4(in: dir, frames: 50)
            let output = dir.appendingPathComponent("clip.webm").path
            let transcoder = try Transcoder(input: input, output: output)
            let summary = try transcoder.run()
            #expect(summary.frames == 50)
            let audioSeconds = try #require(transcoder.audioBranch).mediaSeconds
            #expect(abs(audioSeconds - 2.0) < 0.03, "audio: \(audioSeconds) s")
            let video = try Self.probe(output, stream: "v:0"), audio = try Self.probe(output, stream: "a:0")
            #expect(video["codec_name"] == "vp8" && video["nb_read_frames"] == "50")
            #expect(audio["codec_name"] == "opus" && audio["channels"] == "2")
            let packets = Int(audio["nb_read_frames"] ?? "") ?? 0
            #expect((99...102).contains(packets), "2 s of 20 ms Opus packets, \(packets) written")
            // WebM states Opus's encoder delay (CodecDelay) and ffprobe starts the stream that much early:
            // the first sample heard is at start_time + 312/48000.
            let videoStart = Double(video["start_time"] ?? "") ?? -1, audioStart = Double(audio["start_time"] ?? "") ?? -1
            let offset = videoStart - (audioStart + 312.0 / 48_000)
            #expect(abs(offset) < 0.04, "A/V offset \(offset) s: under one frame")
            #expect(try Self.decodesCleanly(output))
        }
    }

    /// The commands a new user types first: an MP4 to IVF, and to WebM with its audio.
    @Test func theCLITakesAnMP4() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = try Self.makeMP4(in: dir, frames: 50)
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let ivf = dir.appendingPathComponent("out.ivf").path, webm = dir.appendingPathComponent("clip.webm").path
            let toIVF = try TestSupport.run(sluice, ["transcode", input, ivf, "--quiet"])
            #expect(toIVF.status == 0, "stderr: \(toIVF.stderr)")
            #expect(toIVF.stdoutText.contains("input    video/H264 320x180@25"), "\(toIVF.stdoutText)")
            #expect(try TestSupport.probeVideo(ivf).frames == 50)
            let toWebM = try TestSupport.run(sluice, ["transcode", input, webm, "--quiet"])
            #expect(toWebM.status == 0, "stderr: \(toWebM.stderr)")
            #expect(toWebM.stdoutText.contains("audio    aac -> opus"), "\(toWebM.stdoutText)")
            #expect(try Self.probe(webm, stream: "a:0")["codec_name"] == "opus")
            // A cut input: one line naming the file and the offset, and a non-zero status.
            let bytes = try Data(contentsOf: URL(fileURLWithPath: input))
            let cut = dir.appendingPathComponent("cut.mp4").path
            try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
            let refused = try TestSupport.run(sluice, ["transcode", cut, ivf, "--quiet"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("\(cut): truncated at byte"), "\(refused.stderr)")
        }
    }

    /// A container holding only audio is audio: AAC at 44.1 kHz becomes Opus (resampled to 48 kHz), and
    /// WebM's Opus becomes the samples ffmpeg decodes from it.
    @Test func audioOnlyContainersBecomeOpusOrWAV() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let aac = dir.appendingPathComponent("tone.mp4").path, webm = dir.appendingPathComponent("tone.webm").path
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=2", "-ac", "2", "-c:a", "aac", aac])
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2", "-c:a", "libopus", webm])
            let opus = dir.appendingPathComponent("tone.opus").path
            let toOpus = try Transcoder(input: aac, output: opus)
            #expect(toOpus.outputFormat == .audio(AudioFormat(encoding: .compressed(.opus), sampleRate: 48_000, channels: 2)))
            let seconds = try toOpus.run().mediaDuration
            #expect(abs(seconds - 2.0) < 0.05, "\(seconds) s of Opus from 2 s of AAC")
            #expect(try Self.probe(opus, stream: "a:0")["codec_name"] == "opus")

            let wav = dir.appendingPathComponent("tone.wav").path
            #expect(abs(try Transcoder(input: webm, output: wav).run().mediaDuration - 2.0) < 0.03)
            let ours = floats(try TestSupport.ffmpeg(["-i", wav, "-f", "f32le", "-"]).stdout, format: .f32)
            let theirs = floats(try TestSupport.ffmpeg(["-i", webm, "-f", "f32le", "-"]).stdout, format: .f32)
            let common = min(ours.count, theirs.count)
            #expect(common >= 95_000)
            #expect(snr(theirs[..<common], ours[..<common]) > 30, "libopus and ffmpeg's decoder, aligned by the pre-skip")
        }
    }

    @Test func aFrameLimitCutsTheAudioWithTheVideo() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = try Self.makeMP4(in: dir, frames: 50)
            let output = dir.appendingPathComponent("short.mkv").path
            var options = TranscodeOptions()
            options.maxFrames = 25
            let transcoder = try Transcoder(input: input, output: output, options: options)
            #expect(try transcoder.run().frames == 25)
            let audioSeconds = try #require(transcoder.audioBranch).mediaSeconds
            #expect(abs(audioSeconds - 1.0) < 0.05, "audio: \(audioSeconds) s for 1 s of video")
            #expect(try Self.probe(output, stream: "v:0")["nb_read_frames"] == "25")
        }
    }

    /// A cut input ends the run with an error naming the file, and the MP4 written so far gets its
    /// index (the trailer): ffmpeg plays every frame in it.
    @Test func aCutInputLeavesAPlayableMP4() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let whole = try Self.makeMP4(in: dir, frames: 75, extra: ["-movflags", "+faststart"])
            let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
            let input = dir.appendingPathComponent("cut.mp4").path
            try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: input))
            let output = dir.appendingPathComponent("partial.mp4").path
            let transcoder = try Transcoder(input: input, output: output)
            #expect {
                _ = try transcoder.run()
            } throws: { error in
                guard case GraphError.nodeFailed(_, let cause) = error, case MediaFileError.truncated(input, _, _) = cause else {
                    Issue.record("\(error)")
                    return false
                }
                return true
            }
            let frames = Int(try Self.probe(output, stream: "v:0")["nb_read_frames"] ?? "") ?? 0
            #expect(frames >= 20 && frames < 75, "\(frames) frames in the partial output")
            #expect(try Self.decodesCleanly(output))
        }
    }

    /// `sluice receive` writes a received stream into a container: VP8 over RTP into WebM, H.264 into MP4.
    @Test(arguments: [(CodecName.vp8, "received.webm", "vp8"), (.h264, "received.mp4", "h264")])
    func aReceivedStreamIsWrittenToAContainer(codec: CodecName, name: String, probed: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.appendingPathComponent(name).path
            var options = ReceiveOptions()
            options.limits.silence = .seconds(10)
            let receiver = try RTPReceivePipeline(stream: try RTPStreamingTests.loopback(codec), output: output, options: options)
            var sendOptions = TranscodeOptions()
            sendOptions.maxFrames = 40
            sendOptions.codec = codec
            let sender = try Transcoder(input: TestSupport.sampleIVF, sendingTo: RTPStreamingTests.destination(of: receiver),
                                        options: sendOptions)
            _ = try RTPStreamingTests.stream(into: receiver) { _ = try sender.run() }
            let video = try Self.probe(output, stream: "v:0")
            #expect(video["codec_name"] == probed && video["nb_read_frames"] == "40", "\(video)")
            let seconds = try Self.duration(output)
            #expect(abs(seconds - 1.6) < 0.1, "40 frames at 25 fps, \(seconds) s")
            #expect(try Self.decodesCleanly(output))
        }
    }

    /// Audio and video of a call received into one file, as `sluice receive call.sdp call.webm` does:
    /// 40 pictures of the sample and 1.6 s of a tone, sent at once by two senders.
    @Test(arguments: [(CodecName.vp8, "call.webm", "vp8"), (.vp8, "call.mkv", "vp8"), (.h264, "call.mp4", "h264")])
    func audioAndVideoAreReceivedIntoOneFile(codec: CodecName, name: String, probed: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.file(name), tone = dir.file("tone.wav")
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1.6", "-ac", "2", tone])
            var options = ReceiveOptions()
            options.limits.silence = .seconds(10)
            let receiver = try RTPReceivePipeline(streams: [try RTPStreamingTests.loopback(codec), try RTPStreamingTests.loopback(.opus, payloadType: 111)],
                                                  output: output, options: options)
            #expect(receiver.localAddresses.count == 2 && receiver.localAddresses[0] != receiver.localAddresses[1])
            var videoOptions = TranscodeOptions()
            videoOptions.maxFrames = 40
            videoOptions.codec = codec
            let video = try Transcoder(input: TestSupport.sampleIVF, sendingTo: RTPStreamingTests.destination(of: receiver),
                                       options: videoOptions)
            var audioDestination = RTPDestination(address: receiver.localAddresses[1])
            audioDestination.multiplexed = true
            let audio = try Transcoder(input: tone, sendingTo: audioDestination)
            _ = try RTPStreamingTests.stream(into: receiver) {
                let audioThread = WorkerThread { _ = try? audio.run() }
                _ = try video.run()
                audioThread.join()
            }
            #expect(receiver.framesDone(ofStream: 0) == 40)
            let packets = receiver.framesDone(ofStream: 1)
            #expect((78...82).contains(packets), "1.6 s of 20 ms Opus packets, \(packets) received")
            let videoProbe = try Self.probe(output, stream: "v:0"), audioProbe = try Self.probe(output, stream: "a:0")
            #expect(videoProbe["codec_name"] == probed && videoProbe["nb_read_frames"] == "40", "\(videoProbe)")
            #expect(audioProbe["codec_name"] == "opus" && audioProbe["nb_read_frames"] == "\(packets)", "\(audioProbe)")
            let seconds = try Self.duration(output)
            #expect(abs(seconds - 1.6) < 0.1, "40 frames at 25 fps and 1.6 s of audio, \(seconds) s")
            #expect(try Self.decodesCleanly(output))
        }
    }

    /// One file of a single-stream format takes one stream: audio and video together are refused.
    @Test func twoStreamsNeedAContainer() throws {
        #expect {
            _ = try RTPReceivePipeline(streams: [try RTPStreamingTests.loopback(.vp8), try RTPStreamingTests.loopback(.opus)],
                                       output: "/tmp/never-written.ivf")
        } throws: { error in
            "\(error)".contains("/tmp/never-written.ivf: a .ivf file holds one stream")
        }
        #expect {
            _ = try RTPReceivePipeline(streams: [try RTPStreamingTests.loopback(.h264), try RTPStreamingTests.loopback(.opus)],
                                       output: "/tmp/never-written.webm")
        } throws: { error in
            "\(error)".contains("a .webm file takes VP8, OPUS, not the H264 stream")
        }
    }

    /// Stopping a run (Ctrl-C) also writes the index.
    @Test func aStoppedRunLeavesAPlayableMP4() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = try Self.makeMP4(in: dir, frames: 50)
            let output = dir.appendingPathComponent("stopped.mp4").path
            var options = TranscodeOptions()
            options.pacing = .realTime
            let transcoder = try Transcoder(input: input, output: output, options: options)
            let stopper = Thread {
                for _ in 0..<1000 where transcoder.framesDone < 5 { usleep(10_000) }
                transcoder.graph.cancel()
            }
            stopper.start()
            #expect(throws: GraphError.self) { try transcoder.run() }
            let frames = Int(try Self.probe(output, stream: "v:0")["nb_read_frames"] ?? "") ?? 0
            #expect(frames >= 5 && frames < 50, "\(frames) frames in the stopped output")
            #expect(try Self.decodesCleanly(output))
        }
    }
}
