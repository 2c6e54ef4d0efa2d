import Foundation
import Sluice
import Testing
import TestSupport

/// `sluice run` and `sluice inspect` as a user meets them: real pipelines on the bundled sample and
/// on media ffmpeg makes, outputs counted by ffprobe; inspections checked against ffprobe's values.
@Suite struct RunAndInspectCLITests {
    let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path

    /// Test media made by ffmpeg in `dir`: H.264 + AAC MP4, VP8 + Opus WebM, Y4M, WAV, Ogg Opus, Annex-B H.264.
    static func makeMedia(in dir: URL) throws {
        let video = ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25"]
        let audio = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"]
        try TestSupport.ffmpeg(video + audio + ["-t", "2", "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac",
                                                "-shortest", dir.file("av.mp4")])
        try TestSupport.ffmpeg(video + audio + ["-t", "2", "-c:v", "libvpx", "-g", "25", "-c:a", "libopus", "-shortest", dir.file("av.webm")])
        try TestSupport.ffmpeg(video + ["-t", "1", "-pix_fmt", "yuv420p", dir.file("clip.y4m")])
        try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-ac", "2", "-t", "1.5", dir.file("tone.wav")])
        try TestSupport.ffmpeg(["-i", dir.file("tone.wav"), "-c:a", "libopus", "-b:a", "32k", dir.file("tone.ogg")])
        try TestSupport.ffmpeg(video + ["-t", "2", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-profile:v", "baseline", "-g", "10",
                                        "-f", "h264", dir.file("clip.h264")])
    }

    // MARK: run

    /// Pipeline, then per output file: ffprobe's codec and frame count of its first video (or audio) stream.
    @Test(arguments: [
        ("file:IVF frames=30 ! decode ! scale size=320x180 ! vp8enc bitrate=300k ! file:OUT/o.ivf", [("o.ivf", "vp8", 30)]),
        ("file:IVF frames=20 ! decode ! tee name=t ! x264enc keyint=10 ! file:OUT/a.mp4  t. ! openh264enc ! file:OUT/b.h264  t. ! file:OUT/c.y4m",
         [("a.mp4", "h264", 20), ("b.h264", "h264", 20), ("c.y4m", "rawvideo", 20)]),
        ("file:IN/clip.y4m ! framerate fps=10 ! videoconvert ! vp8enc ! file:OUT/o.mkv", [("o.mkv", "vp8", 10)]),
        ("file:IN/clip.h264 ! decode ! vp8enc ! file:OUT/o.webm", [("o.webm", "vp8", 50)]),
        ("file:IN/av.webm name=in  in.video ! file:OUT/v.ivf  in.audio ! file:OUT/a.opus", [("v.ivf", "vp8", 50), ("a.opus", "opus", 101)]),
        ("file:IN/tone.wav ! audioconvert rate=48000 ! opusenc bitrate=32k ! file:OUT/t.ogg", [("t.ogg", "opus", 76)]),
        ("file:IN/tone.ogg ! decode ! file:OUT/t.wav", [("t.wav", "pcm_f32le", -1)]),
    ] as [(String, [(String, String, Int)])])
    func pipelinesRunAndWriteWhatTheySay(pipeline: String, outputs: [(String, String, Int)]) throws {
        try TestSupport.withTemporaryDirectory { dir in
            try Self.makeMedia(in: dir)
            let out = dir.appendingPathComponent("out")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let text = pipeline.replacingOccurrences(of: "IVF", with: TestSupport.sampleIVF)
                .replacingOccurrences(of: "IN/", with: dir.path + "/").replacingOccurrences(of: "OUT/", with: out.path + "/")
            let result = try TestSupport.run(sluice, ["run", text], timeout: 300)
            #expect(result.status == 0, "\(result.stderr)")
            for (name, codec, frames) in outputs {
                let fields = try TestSupport.ffprobe(out.file(name), entries: "stream=codec_name,nb_read_packets",
                                                     extra: ["-count_packets", "-select_streams", "0"])
                #expect(fields["codec_name"] == codec, "\(name): \(fields)")
                if frames >= 0 {
                    #expect(Int(fields["nb_read_packets"] ?? "") == frames, "\(name): \(fields)")
                }
                #expect(result.stdoutText.contains("\(out.file(name)): "), "\(result.stdoutText)")
            }
        }
    }

    /// The device kinds through alsa-lib, with PCMs from a test configuration (no sound card here): a
    /// microphone (the `file` plugin reading raw samples) into Ogg Opus, and a WAV played on a speaker
    /// (the `file` plugin writing what it is given as WAV), each counted.
    @Test(arguments: [
        ("alsasrc device=sluice_capture duration=1.5 ! opusenc bitrate=32k ! file:OUT/mic.ogg", "mic.ogg", "opus", 1.5),
        ("alsasrc device=sluice_capture rate=16000 channels=1 duration=1 ! audioconvert rate=48000 ! opusenc ! file:OUT/mic.webm",
         "mic.webm", "opus", 1.0),
        ("file:IN/tone.wav ! audioconvert rate=48000 ! alsasink device=sluice_playback", "played.wav", "pcm_s16le", 1.5),
        ("file:IN/tone.ogg ! decode ! audioconvert ! alsasink device=sluice_playback", "played.wav", "pcm_s16le", 1.5),
    ])
    func devicePipelinesRun(pipeline: String, output: String, codec: String, seconds: Double) throws {
        try TestSupport.withTemporaryDirectory { dir in
            try Self.makeMedia(in: dir)
            let out = dir.appendingPathComponent("out")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let alsa = try ALSATestConfiguration(path: dir.file("asound.conf"), captureInput: dir.file("in.raw"),
                                                 playbackOutput: out.file("played.wav"))
            try TestAudio.raw(seconds: 2).write(to: URL(fileURLWithPath: alsa.captureInput))
            let text = pipeline.replacingOccurrences(of: "IN/", with: dir.path + "/").replacingOccurrences(of: "OUT/", with: out.path + "/")
            let result = try TestSupport.run("/usr/bin/env", ["ALSA_CONFIG_PATH=\(alsa.path)", sluice, "run", text], timeout: 120)
            #expect(result.status == 0, "\(result.stderr)")
            let fields = try TestSupport.ffprobe(out.file(output), entries: "stream=codec_name:format=duration",
                                                 extra: ["-select_streams", "a:0"])
            #expect(fields["codec_name"] == codec, "\(output): \(fields)")
            let duration = Double(fields["duration"] ?? "") ?? 0
            #expect(abs(duration - seconds) < 0.03, "\(output): \(duration) s, expected \(seconds) s")
            let target = pipeline.contains("alsasink") ? "alsa:sluice_playback" : out.file(output)
            #expect(result.stdoutText.contains("\(target): "), "\(result.stdoutText)")
        }
    }

    /// Video and audio of one MP4 into one WebM, through two branches of one graph, with the graph drawn.
    @Test func bothStreamsOfAContainerTravelInOneGraph() throws {
        try TestSupport.withTemporaryDirectory { dir in
            try Self.makeMedia(in: dir)
            let pipeline = "file:\(dir.file("av.mp4")) name=in  in.video ! decode ! scale size=160x120 ! vp8enc ! file:\(dir.file("o.webm")) name=out"
                + "  in.audio ! decode ! audioconvert rate=48000 channels=1 format=f32 ! opusenc ! out."
            let result = try TestSupport.run(sluice, ["run", pipeline, "--dot", dir.file("g.dot")], timeout: 300)
            #expect(result.status == 0, "\(result.stderr)")
            let video = try TestSupport.probeVideo(dir.file("o.webm"))
            #expect(video.codec == "vp8" && video.width == 160 && video.frames == 50)
            let audio = try TestSupport.ffprobe(dir.file("o.webm"), entries: "stream=codec_name,sample_rate,channels",
                                                extra: ["-select_streams", "a:0"])
            #expect(audio["codec_name"] == "opus" && audio["channels"] == "1", "\(audio)")
            let dot = try String(contentsOfFile: dir.file("g.dot"), encoding: .utf8)
            #expect(dot.contains("\"in-audio\" -> \"aac-decoder\" [label=\"audio/AAC 48000Hz 1ch\"]"), "\(dot)")
            #expect(dot.contains("\"vp8enc\" -> \"out-video\" [label=\"video/VP8 160x120@25\"]"), "\(dot)")
        }
    }

    /// rtpsend paces the file in real time and sends through the impairment.
    @Test func rtpSendIsPacedAndImpaired() throws {
        let port = try RTPInteropTests.freePortPair()
        let holder = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: port))
        defer { holder.close() }
        let start = Date()
        let result = try TestSupport.run(sluice, ["run", "file:\(TestSupport.sampleIVF) frames=10 ! rtpsend to=127.0.0.1:\(port) impair=loss=10%"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText.contains("rtp://127.0.0.1:\(port): 10 frames"), "\(result.stdoutText)")
        #expect(Date().timeIntervalSince(start) >= 0.3, "10 frames at 25 fps take 0.36 s")
    }

    /// One `sluice run` sends the sample as RTP, another receives it from an SDP into a file.
    @Test func rtpReceiveTakesWhatRtpSendSends() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let port = try RTPInteropTests.freePortPair()
            let sdp = dir.file("stream.sdp")
            try "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video \(port) RTP/AVP 96\r\na=rtpmap:96 VP8/90000\r\n"
                .write(toFile: sdp, atomically: true, encoding: .utf8)
            let receiver = TestSupport.start(sluice, ["run", "rtpreceive sdp=\(sdp) timeout=3 ! file:\(dir.file("received.ivf"))"], timeout: 60)
            Thread.sleep(forTimeInterval: 2)  // the receiver binds its port when it starts
            let sender = try TestSupport.run(sluice, ["run", "file:\(TestSupport.sampleIVF) frames=25 ! rtpsend to=127.0.0.1:\(port)"])
            #expect(sender.status == 0, "\(sender.stderr)")
            let received = try receiver.wait()
            #expect(received.status == 0, "\(received.stderr)")
            let probe = try TestSupport.probeVideo(dir.file("received.ivf"))
            #expect(probe.codec == "vp8" && probe.width == 640 && probe.frames == 25, "\(probe)")
        }
    }

    /// frames=N on a container cuts its audio where the N-th picture ends, so the streams stay together.
    @Test func aFrameLimitCutsTheAudioWithTheVideo() throws {
        try TestSupport.withTemporaryDirectory { dir in
            try Self.makeMedia(in: dir)
            let pipeline = "file:\(dir.file("av.webm")) name=in frames=25  in.video ! file:\(dir.file("o.mkv")) name=out  in.audio ! out."
            let result = try TestSupport.run(sluice, ["run", pipeline])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try TestSupport.probeVideo(dir.file("o.mkv")).frames == 25)
            let audio = try TestSupport.ffprobe(dir.file("o.mkv"), entries: "stream=nb_read_packets",
                                                extra: ["-count_packets", "-select_streams", "a:0"])
            // 1 s of 20 ms packets.
            #expect(abs((Int(audio["nb_read_packets"] ?? "") ?? 0) - 50) <= 1, "\(audio)")
        }
    }

    @Test func aWrongPipelineIsOneLineNamingWhatIsWrong() throws {
        let result = try TestSupport.run(sluice, ["run", "file:\(TestSupport.sampleIVF) ! vp8enc bitrat=1M ! file:/tmp/never.ivf"])
        #expect(result.status != 0)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("vp8enc: no property 'bitrat'; did you mean 'bitrate'?"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/never.ivf"))
    }

    @Test func listAndHelpShowTheKindsTheirOptionsAndExamples() throws {
        let list = try TestSupport.runChecked(sluice, ["run", "--list"])
        for fragment in ["file:PATH", "decode", "vp8enc", "x264enc", "openh264enc", "opusenc", "scale", "size=WxH", "tee",
                         "audioconvert", "rtpsend", "impair=PROFILE", "v4l2src  captures raw video", "device=TEXT", "fps=FPS",
                         "alsasrc  captures raw audio", "duration=SECONDS", "alsasink  plays raw audio",
                         "whip  publishes raw video or audio to a WHIP endpoint", "url=TEXT"] {
            #expect(list.stdoutText.contains(fragment), "--list lacks \(fragment)")
        }
        let help = try TestSupport.runChecked(sluice, ["run", "--help"])
        #expect(help.stdoutText.contains("sluice run \"file:clip.y4m ! vp8enc bitrate=1M ! file:out.ivf\""))
        let inspect = try TestSupport.runChecked(sluice, ["inspect", "--help"])
        #expect(inspect.stdoutText.contains("sluice inspect clip.mp4"))
    }

    /// `.ogg` is taken as Ogg Opus by `sluice transcode`.
    @Test func transcodeReadsOgg() throws {
        try TestSupport.withTemporaryDirectory { dir in
            try Self.makeMedia(in: dir)
            let result = try TestSupport.run(sluice, ["transcode", dir.file("tone.ogg"), dir.file("tone.wav"), "--quiet"])
            #expect(result.status == 0, "\(result.stderr)")
            let fields = try TestSupport.ffprobe(dir.file("tone.wav"), entries: "format=duration")
            #expect(abs((Double(fields["duration"] ?? "") ?? 0) - 1.5) < 0.03, "\(fields)")
        }
    }

    // MARK: inspect

    /// `sluice inspect --json` against ffprobe: codec, size, rates, channels, packet count and duration
    /// of every stream.
    @Test(arguments: ["IVF", "av.mp4", "av.webm", "clip.y4m", "tone.wav", "tone.ogg", "clip.h264"])
    func inspectAgreesWithFFprobe(name: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            try Self.makeMedia(in: dir)
            let path = name == "IVF" ? TestSupport.sampleIVF : dir.file(name)
            let result = try TestSupport.run(sluice, ["inspect", path, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
            let streams = try #require(json["streams"] as? [[String: Any]])
            let probe = try TestSupport.runChecked("ffprobe", ["-v", "error", "-count_packets", "-show_entries",
                "stream=codec_name,width,height,r_frame_rate,sample_rate,channels,nb_read_packets,duration:format=duration",
                "-of", "json", path])
            let probed = try #require(try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any])
            let probedStreams = try #require(probed["streams"] as? [[String: Any]])
            #expect(streams.count == probedStreams.count)
            let formatDuration = Double((probed["format"] as? [String: Any])?["duration"] as? String ?? "")
            for (ours, theirs) in zip(streams, probedStreams) {
                let codec = (ours["codec"] as? String ?? "").lowercased()
                #expect(codec == theirs["codec_name"] as? String, "\(ours) vs \(theirs)")
                if let width = theirs["width"] as? Int {
                    #expect(ours["width"] as? Int == width && ours["height"] as? Int == theirs["height"] as? Int)
                    #expect(ours["frame_rate"] as? String == (theirs["r_frame_rate"] as? String)?.replacingOccurrences(of: "/1", with: ""))
                }
                if let rate = theirs["sample_rate"] as? String {
                    #expect(ours["sample_rate"] as? Int == Int(rate) && ours["channels"] as? Int == theirs["channels"] as? Int)
                }
                // PCM: ffprobe's packets are blocks of its choosing; Sluice counts samples.
                if !codec.hasPrefix("pcm") {
                    #expect(ours["frames"] as? Int == Int(theirs["nb_read_packets"] as? String ?? ""), "\(name): \(ours) vs \(theirs)")
                }
                // Within one Opus packet (plus its pre-skip) of the stream's, else the file's, duration.
                if let expected = Double(theirs["duration"] as? String ?? "") ?? formatDuration, let duration = ours["duration"] as? Double {
                    #expect(abs(duration - expected) < 0.03, "\(name): \(duration) vs \(expected)")
                }
            }
            let keyframes = streams.first?["keyframes"] as? Int ?? 0
            #expect(keyframes >= 1)
        }
    }

    @Test func inspectCountsKeyframesLikeFFprobe() throws {
        let result = try TestSupport.runChecked(sluice, ["inspect", TestSupport.sampleIVF])
        let probe = try TestSupport.runChecked("ffprobe", ["-v", "error", "-show_entries", "packet=flags", "-of", "csv=p=0", TestSupport.sampleIVF])
        let keyframes = probe.stdoutText.split(separator: "\n").filter { $0.hasPrefix("K") }.count
        #expect(result.stdoutText.contains("\(TestSupport.sampleFrameCount) frames, \(keyframes) keyframes"), "\(result.stdoutText)")
        #expect(result.stdoutText.contains("video VP8, 640x360, 25 fps"))
    }

    /// A cut file: what was read, then the named error with file and offset, and a failure status.
    @Test(arguments: [("IVF", 200_000, "truncated at byte 198192"), ("av.mp4", 20_000, "MP4 without its index"),
                      ("clip.y4m", 300_000, "truncated at byte")])
    func inspectReportsDamageWithFileAndOffset(name: String, keep: Int, expected: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            try Self.makeMedia(in: dir)
            let source = name == "IVF" ? TestSupport.sampleIVF : dir.file(name)
            let cut = dir.file("cut-" + (source as NSString).lastPathComponent)
            try Data(try Data(contentsOf: URL(fileURLWithPath: source)).prefix(keep)).write(to: URL(fileURLWithPath: cut))
            let result = try TestSupport.run(sluice, ["inspect", cut, "--json"])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("sluice: \(cut): ") && result.stderr.contains(expected), "\(result.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
            #expect((json["error"] as? String)?.contains(expected) == true)
            if name == "IVF" { #expect((json["streams"] as? [[String: Any]])?.first?["frames"] as? Int == 64) }
        }
    }

    /// An Ogg that is not Opus goes to libavformat; codecs Sluice does not read are named, not refused.
    @Test func inspectNamesStreamsSluiceDoesNotRead() throws {
        try TestSupport.withTemporaryDirectory { dir in
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine", "-t", "1", "-c:a", "libvorbis", dir.file("vorbis.ogg")])
            let result = try TestSupport.runChecked(sluice, ["inspect", dir.file("vorbis.ogg")])
            #expect(result.stdoutText.contains("stream 0: audio vorbis, 44100 Hz, 1 ch"), "\(result.stdoutText)")
            #expect(result.stdoutText.contains("not read by Sluice"))
            let refused = try TestSupport.run(sluice, ["run", "file:\(dir.file("vorbis.ogg")) ! decode ! file:\(dir.file("o.wav"))"])
            #expect(refused.status != 0 && refused.stderr.contains("no OpusHead"), "\(refused.stderr)")
        }
    }

    /// An offer of codecs Sluice has none of (AV1, H.265, H.264 Constrained High; G.722) is refused section by
    /// section, and each codec says why.
    @Test func inspectSaysWhenNothingIsInCommon() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let offer = dir.file("unsupported.sdp")
            let description = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                + "m=video 5004 RTP/AVP 45 49 100\r\na=rtpmap:45 AV1/90000\r\na=rtpmap:49 H265/90000\r\n"
                + "a=rtpmap:100 H264/90000\r\na=fmtp:100 profile-level-id=640c1f;packetization-mode=1\r\n"
                + "m=audio 5006 RTP/AVP 9\r\n"
            try description.write(toFile: offer, atomically: true, encoding: .utf8)
            let text = try TestSupport.runChecked(sluice, ["inspect", offer]).stdoutText
            #expect(text.contains("45 AV1/90000  [refused: not supported]"), "\(text)")
            #expect(text.contains("49 H265/90000  [refused: not supported]"))
            #expect(text.contains("100 H264/90000  profile-level-id=640c1f;packetization-mode=1  [refused: no Constrained High profile here]"))
            #expect(text.contains("sluice would refuse the section: no common codec: offered AV1/90000 (not supported); "
                                  + "H265/90000 (not supported); H264 profile 640c1f (Constrained High 3.1) packetization-mode 1 (no Constrained High profile here)"))
            #expect(text.contains("9 G722/8000/1  [refused: not supported]"))
            let json = try TestSupport.runChecked(sluice, ["inspect", offer, "--json"]).stdout
            let sections = try #require((try JSONSerialization.jsonObject(with: json) as? [String: Any])?["media"] as? [[String: Any]])
            for section in sections {
                let answer = try #require(section["answer"] as? [String: Any])
                #expect(answer["chosen"] is NSNull && answer["accepted"] as? [Int] == [])
                #expect((answer["rejection"] as? String)?.hasPrefix("no common codec") == true, "\(answer)")
            }
        }
    }

    @Test func inspectDescribesAnSDP() throws {
        let fixtures = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures")
        let chrome = try TestSupport.runChecked(sluice, ["inspect", fixtures.file("chrome-offer.sdp")])
        #expect(chrome.stdoutText.contains("0: audio port 9 UDP/TLS/RTP/SAVPF, mid 0, sendrecv, fingerprint (DTLS)"), "\(chrome.stdoutText)")
        #expect(chrome.stdoutText.contains("111 opus/48000/2  minptime=10;useinbandfec=1"))
        let sdes = try TestSupport.runChecked(sluice, ["inspect", fixtures.file("sdes-crypto.sdp"), "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: sdes.stdout) as? [String: Any])
        let media = try #require((json["media"] as? [[String: Any]])?.first)
        #expect(json["type"] as? String == "sdp" && media["crypto"] as? Bool == true && media["fingerprint"] as? Bool == false)
        #expect((media["codecs"] as? [[String: Any]])?.map { $0["name"] as? String } == ["PCMU", "PCMA", "telephone-event"])
        // What Sluice would answer, codec by codec, in text and JSON.
        #expect(chrome.stdoutText.contains("111 opus/48000/2  minptime=10;useinbandfec=1  [taken, chosen]"))
        #expect(chrome.stdoutText.contains("sluice would answer sendrecv with opus (111)"))
        #expect(chrome.stdoutText.contains("profile-level-id=64001f  [refused: no High profile here]"), "\(chrome.stdoutText)")
        #expect(chrome.stdoutText.contains("97 rtx/90000  apt=96  [taken]"))
        #expect(chrome.stdoutText.contains("sluice would answer sendrecv with VP8 (96), also 102 104 106 108"))
        #expect(chrome.stdoutText.contains("sluice would answer sendrecv (data channels)"))
        let chromeJSON = try TestSupport.runChecked(sluice, ["inspect", fixtures.file("chrome-offer.sdp"), "--json"])
        let sections = try #require((try JSONSerialization.jsonObject(with: chromeJSON.stdout) as? [String: Any])?["media"] as? [[String: Any]])
        let video = try #require(sections[1]["answer"] as? [String: Any])
        #expect(video["chosen"] as? Int == 96 && video["accepted"] as? [Int] == [96, 102, 104, 106, 108] && video["rejection"] is NSNull)
        let videoCodecs = try #require(sections[1]["codecs"] as? [[String: Any]])
        let main = try #require(videoCodecs.first { $0["payload_type"] as? Int == 127 })
        #expect(main["accepted"] as? Bool == false && main["refusal"] as? String == "no Main profile here")
        let bad = try TestSupport.run(sluice, ["inspect", "/dev/null"])
        #expect(bad.status != 0 && bad.stderr.hasPrefix("sluice: /dev/null"), "\(bad.stderr)")
    }
}
