import Foundation
import Sluice
import Testing
import TestSupport

/// The `sluice` executable as a user meets it.
@Suite struct CLITests {
    let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path

    @Test(arguments: [
        (["transcode", "in.xyz", "out.ivf"], "unknown file type"),
        (["transcode", "/nonexistent/in.y4m", "out.ivf"], "/nonexistent/in.y4m"),
        (["transcode", "SAMPLE", "out.ivf", "--bitrate", "12q"], "bad bitrate '12q'"),
        (["transcode", "SAMPLE", "out.wav"], "cannot transcode video"),
        (["transcode", "SAMPLE", "out.ivf", "--threads", "0"], "--threads"),
        (["transcode"], "Missing expected argument"),
        (["frobnicate"], "frobnicate"),
        (["send", "SAMPLE", "--to", "nowhere"], "'nowhere' is not an address"),
        (["send", "/nonexistent/in.ivf", "--to", "127.0.0.1:5004"], "/nonexistent/in.ivf"),
        (["receive", "/nonexistent/s.sdp", "out.ivf"], "/nonexistent/s.sdp: cannot read"),
        (["answer", "/nonexistent/offer.sdp"], "/nonexistent/offer.sdp: cannot read"),
        (["offer", "--prefer", "vp9"], "cannot prefer 'vp9'"),
        (["transcode", "v4l2:/dev/video99", "out.ivf"], "/dev/video99: no such video device"),
        (["transcode", "v4l2:", "out.ivf"], "name the device"),
        (["transcode", "alsa:sluice_no_such_pcm", "out.opus"], "ALSA device sluice_no_such_pcm: cannot open"),
        (["transcode", "SAMPLE", "alsa:default"], "cannot play video"),
        (["transcode", "SAMPLE", "v4l2:/dev/video0"], "a camera is an input"),
        (["transcode", "SAMPLE", "out.ivf", "--duration", "2"], "a duration limit applies to capture devices"),
        (["send", "v4l2:/dev/video99", "--to", "127.0.0.1:5004"], "/dev/video99"),
        (["serve"], "nothing to serve"),
        (["serve", "--source", "bad"], "bad --source 'bad'"),
        (["serve", "--source", "x=/nonexistent/in.y4m"], "/nonexistent/in.y4m"),
        (["serve", "--source", "x=SAMPLE", "--relay-only"], "--relay-only needs"),
        (["serve", "--source", "x=SAMPLE", "--ice-server", "turns:example.org"], "TLS is not supported"),
        (["serve", "--source", "x=SAMPLE", "--port", "0"], "bad port 0"),
        (["serve", "--source", "x=SAMPLE", "--source", "x=SAMPLE"], "source x has a video track already"),
        // A negative number is a bad value, not a missing one.
        (["transcode", "SAMPLE", "out.ivf", "--bitrate", "-5"], "bad bitrate '-5'"),
        (["transcode", "SAMPLE", "out.ivf", "--keyint", "-1"], "--keyint must be at least 1"),
        (["receive", "/nonexistent/s.sdp", "out.ivf", "--timeout", "-1"], "--timeout must be positive"),
        (["send", "SAMPLE", "--to", "127.0.0.1:5004", "--wait", "-2"], "--wait must be between 0 and 3600"),
        (["answer", "/nonexistent/offer.sdp", "--max-fps", "-1"], "frame rates must be positive"),
        // A directory where a file belongs says so.
        (["transcode", "/tmp", "out.ivf"], "/tmp: is a directory"),
        (["transcode", "SAMPLE", "/tmp"], "/tmp: is a directory"),
        (["receive", "/tmp", "out.ivf"], "/tmp: cannot read: is a directory"),
        (["answer", "/tmp"], "/tmp: cannot read: is a directory"),
        (["receive", "/dev/null", "out.ivf"], "/dev/null: SDP has no v= line"),
        (["receive", "/dev/zero", "out.ivf"], "/dev/zero: cannot read: larger than 64 KiB"),
        // An SDP that cannot be written is one line, not a Foundation error dump, before anything is sent.
        (["send", "SAMPLE", "--to", "127.0.0.1:5004", "--sdp", "/nonexistent/s.sdp"], "/nonexistent/s.sdp: cannot write: No such file or directory"),
        (["send", "SAMPLE", "--to", "127.0.0.1:5004", "--sdp", "/tmp"], "/tmp: cannot write: Is a directory"),
        // A decoder that does not exist, or not for the input's codec.
        (["transcode", "SAMPLE", "out.y4m", "--decoder", "nope"], "no video decoder named nope registered for VP8"),
        (["transcode", "SAMPLE", "out.y4m", "--decoder", "openh264"], "no video decoder named openh264 registered for VP8"),
        (["codecs", "--kind", "muxer"], "muxer"),
    ])
    func badInputEndsWithOneLineAndAFailureStatus(arguments: [String], expected: String) throws {
        let args = arguments.map { $0.replacingOccurrences(of: "SAMPLE", with: TestSupport.sampleIVF) }
        let result = try TestSupport.run(sluice, args)
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.hasPrefix("sluice: "))
        #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
    }

    /// A port another program holds: one line naming the address and the reason, at once.
    @Test func receivingOnABusyPortSaysSo() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let port = try RTPInteropTests.freePortPair()
            let holder = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: port))
            defer { holder.close() }
            let sdp = dir.file("busy.sdp")
            try "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video \(port) RTP/AVP 96\r\na=rtpmap:96 VP8/90000\r\n"
                .write(toFile: sdp, atomically: true, encoding: .utf8)
            let result = try TestSupport.run(sluice, ["receive", sdp, dir.file("out.ivf"), "--timeout", "1"], timeout: 30)
            #expect(result.status != 0)
            #expect(result.stderr.split(separator: "\n").count == 1, "stderr: \(result.stderr)")
            #expect(result.stderr.contains("127.0.0.1:\(port)") && result.stderr.contains("Address already in use"), "stderr: \(result.stderr)")
        }
    }

    @Test func transcodePrintsWhatItDid() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.appendingPathComponent("first.y4m").path
            let result = try TestSupport.run(sluice, ["transcode", TestSupport.sampleIVF, output, "--frames", "10"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stdoutText.contains("input    video/VP8 640x360@25"))
            #expect(result.stdoutText.contains("output   video/I420 640x360@25"))
            #expect(result.stdoutText.contains("frames   10 (0.40 s of media)"))
            let probe = try TestSupport.probeVideo(output)
            #expect(probe.frames == 10 && probe.width == 640)
        }
    }

    /// Every decoder named with --decoder gives the same pictures (VP8: libavcodec and libvpx are exact).
    @Test(arguments: ["ffmpeg", "libvpx"])
    func decoderIsChosenByName(decoder: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.file("\(decoder).y4m")
            let result = try TestSupport.run(sluice, ["transcode", TestSupport.sampleIVF, output, "--frames", "30", "--decoder", decoder])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let reference = try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-frames:v", "30", "-f", "rawvideo", "-"]).stdout
            #expect(try TestSupport.ffmpeg(["-i", output, "-f", "rawvideo", "-"]).stdout == reference)
        }
    }

    /// A raw .h264 file with B-frames (libx264, High, 3 B-frames): libavcodec's decoder, the default,
    /// gives exactly what `ffmpeg -i x.h264 -f rawvideo` gives.
    @Test func h264WithBFramesDecodesLikeFFmpeg() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = dir.file("b.h264"), output = dir.file("b.y4m")
            try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-frames:v", "60", "-c:v", "libx264", "-profile:v", "high",
                                    "-bf", "3", "-f", "h264", input])
            let result = try TestSupport.run(sluice, ["transcode", input, output, "--quiet", "--threads", "2"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let reference = try TestSupport.ffmpeg(["-i", input, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
            let decoded = try TestSupport.ffmpeg(["-i", output, "-f", "rawvideo", "-"]).stdout
            #expect(reference.count == 60 * 640 * 360 * 3 / 2)
            #expect(decoded == reference)
        }
    }

    @Test func codecsListsEveryProviderWithKindCodecAndRank() throws {
        let result = try TestSupport.runChecked(sluice, ["codecs"])
        let rows = result.stdoutText.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.first == ["KIND", "MEDIA", "CODEC", "RANK", "PROVIDER"])
        for row in [["encoder", "video", "vp8", "1", "libvpx"], ["encoder", "video", "h264", "2", "openh264"],
                    ["decoder", "video", "h264", "1", "ffmpeg"], ["decoder", "video", "h264", "2", "openh264"],
                    ["decoder", "video", "vp8", "1", "ffmpeg"], ["decoder", "video", "vp8", "2", "libvpx"],
                    ["decoder", "audio", "opus", "1", "libopus"]] {
            #expect(rows.contains(row), "\(row) missing from:\n\(result.stdoutText)")
        }
        let decoders = try TestSupport.runChecked(sluice, ["codecs", "--kind", "decoder"]).stdoutText
        #expect(!decoders.contains("encoder") && decoders.contains("openh264"))
        let help = try TestSupport.runChecked(sluice, ["codecs", "--help"]).stdoutText
        #expect(help.contains("--kind") && help.contains("--decoder openh264"))
    }

    @Test func helpExplainsTheFormatsAndOptions() throws {
        let result = try TestSupport.run(sluice, ["transcode", "--help"])
        #expect(result.status == 0)
        for fragment in [".y4m", ".ivf", ".wav", "--bitrate", "--keyint", "--frames", "--threads", "--decoder"] {
            #expect(result.stdoutText.contains(fragment), "help lacks \(fragment)")
        }
    }

    @Test func offerAndAnswerNegotiateFromTheShell() throws {
        let offer = try TestSupport.runChecked(sluice, ["offer", "--prefer", "h264", "--video-only"])
        let offered = try SessionDescription(parsing: offer.stdoutText)
        #expect(offered.media.map(\.type) == ["video"])
        #expect(try offered.media[0].rtpMap(for: offered.media[0].payloadTypes[0])?.encodingName == "H264", "H.264 first")

        let chrome = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures/chrome-offer.sdp").path
        let answer = try TestSupport.runChecked(sluice, ["answer", chrome, "--max-size", "640x360", "--max-fps", "15"])
        let answered = try SessionDescription(parsing: answer.stdoutText)
        #expect(answered.media.map(\.type) == ["audio", "video", "application"])
        #expect(answered.media[2].port == 0, "the data channel is rejected")
        #expect(answer.stderr.contains("send 640x360 at 15 fps"), "\(answer.stderr)")
    }

    /// The harness itself: a peer that hangs is stopped at its timeout, even while tests block threads.
    @Test func aToolThatHangsIsStoppedAtItsTimeout() throws {
        let start = Date()
        let result = try TestSupport.run("sleep", ["30"], timeout: 1)
        #expect(result.status != 0 && Date().timeIntervalSince(start) < 10)
    }

    // MARK: Devices

    @Test func devicesSaysWhenThereAreNoCamerasAndListsTheConfiguredSoundDevices() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let alsa = try ALSATestConfiguration(path: dir.file("asound.conf"), captureInput: dir.file("in.raw"),
                                                 playbackOutput: dir.file("out.wav"))
            let empty = dir.appendingPathComponent("dev")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
            let result = try TestSupport.run("/usr/bin/env", ["ALSA_CONFIG_PATH=\(alsa.path)", sluice, "devices", "--directory", empty.path])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText.contains("cameras: none found"), "\(result.stdoutText)")
            #expect(result.stdoutText.contains("alsa:sluice_capture  [capture"), "\(result.stdoutText)")
            #expect(result.stdoutText.contains("alsa:null"), "\(result.stdoutText)")
            #expect(result.stderr.isEmpty)
        }
    }

    /// Through alsa-lib, with PCMs from a test configuration: a microphone (the `file` plugin reading
    /// raw samples) recorded to Ogg Opus, and that Ogg Opus played on a speaker (the `file` plugin
    /// writing a WAV file) sample for sample as Sluice decodes it to a file.
    @Test func aMicrophoneRecordsToOggOpusAndItPlaysBackOnASpeaker() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let alsa = try ALSATestConfiguration(path: dir.file("asound.conf"), captureInput: dir.file("in.raw"),
                                                 playbackOutput: dir.file("played.wav"))
            try TestAudio.raw(seconds: 1.5).write(to: URL(fileURLWithPath: alsa.captureInput))
            func sluice(_ arguments: [String]) throws -> TestSupport.ProcessResult {
                try TestSupport.run("/usr/bin/env", ["ALSA_CONFIG_PATH=\(alsa.path)", self.sluice] + arguments)
            }
            let recording = dir.file("microphone.opus")
            let recorded = try sluice(["transcode", "alsa:sluice_capture", recording, "--duration", "1.5", "--quiet"])
            #expect(recorded.status == 0, "\(recorded.stderr)")
            #expect(recorded.stdoutText.contains("input    audio/S16 48000Hz 2ch"), "\(recorded.stdoutText)")
            let duration = Double(try TestSupport.ffprobe(recording, entries: "format=duration")["duration"] ?? "") ?? 0
            #expect(abs(duration - 1.5) <= 0.02, "\(duration) s recorded")

            let played = try sluice(["transcode", recording, "alsa:sluice_playback", "--quiet"])
            #expect(played.status == 0, "\(played.stderr)")
            let reference = dir.file("decoded.wav")
            #expect(try sluice(["transcode", recording, reference, "--quiet"]).status == 0)
            func samples(_ path: String) throws -> [Float] {
                floats(try TestSupport.ffmpeg(["-i", path, "-f", "f32le", "-"]).stdout, format: .f32)
            }
            let (heard, decoded) = (try samples(alsa.playbackOutput), try samples(reference))
            #expect(heard.count == decoded.count && heard.count == 2 * 72_000, "\(heard.count) samples played")
            #expect(snr(decoded, heard) > 80, "the speaker gets what the decoder gives (16-bit WAV against float)")
            // And the recording holds the microphone's signal: Opus at 64 kbit/s keeps it well.
            let spoken = floats(try Data(contentsOf: URL(fileURLWithPath: alsa.captureInput)), format: .s16)
            #expect(snr(spoken, decoded) > 12, "the recording is the signal captured")
        }
    }
}
