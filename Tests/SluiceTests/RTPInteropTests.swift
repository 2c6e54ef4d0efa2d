import Foundation
import Sluice
import Testing
import TestSupport

/// Sluice against real RTP peers on 127.0.0.1: ffmpeg and GStreamer send what Sluice receives
/// (through the SDP ffmpeg writes), and receive what Sluice sends (through the SDP Sluice writes).
/// Pictures are compared with the peer's own decode of the same stream. Serialized: each test
/// streams in real time, and the peers are bounded by timeouts.
@Suite(.serialized) struct RTPInteropTests {
    /// A port P with P and P + 1 free on 127.0.0.1 (RTP and RTCP, RFC 3550 §11).
    static func freePortPair() throws -> UInt16 {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let port = UInt16.random(in: 20_000...40_000, using: &generator) & ~1
            guard let rtp = try? UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: port)) else { continue }
            defer { rtp.close() }
            guard let rtcp = try? UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: port + 1)) else { continue }
            rtcp.close()
            return port
        }
        throw FixtureError(description: "no free UDP port pair on 127.0.0.1")
    }

    /// The stream of the first `kind` section of an SDP file.
    static func stream(fromSDP path: String, kind: String) throws -> RTPStreamDescription {
        let session = try SessionDescription(parsing: try String(contentsOfFile: path, encoding: .utf8))
        let media = try #require(session.media.first { $0.type == kind })
        return try RTPStreamDescription(media: media, in: session)
    }

    /// Receives what `peer` (started once the receiver listens) sends, and waits for the peer.
    static func receive(_ stream: RTPStreamDescription, into output: String, silence: Double = 5,
                        peer: () -> TestSupport.BackgroundProcess) throws -> (RTPReceivePipeline, TestSupport.ProcessResult) {
        var options = ReceiveOptions()
        options.limits.silence = .seconds(silence)
        let receiver = try RTPReceivePipeline(stream: stream, output: output, options: options)
        let process = peer()
        _ = try receiver.run()
        let result = try process.wait()
        #expect(result.status == 0, "peer failed: \(result.stderr)")
        return (receiver, result)
    }

    /// Mean PSNR of two equally long raw videos, and their frame counts.
    static func compare(_ a: String, _ b: String) throws -> (frames: (Int, Int), psnr: Double) {
        let first = try TranscodeTests.readAll(a), second = try TranscodeTests.readAll(b)
        var errorSum: UInt64 = 0, samples = 0
        for (x, y) in zip(first, second) {
            let (sum, count) = PictureQuality.squaredError(x, y)
            errorSum += sum
            samples += count
        }
        let psnr = samples == 0 ? 0 : PictureQuality.psnr(meanSquaredError: Double(errorSum) / Double(samples))
        return ((first.count, second.count), psnr)
    }

    /// An ffmpeg RTP sender's SDP, written by a first run of the same command that sends one frame
    /// (nobody listens yet), so that the receiver can listen before the real run starts.
    static func ffmpegSDP(_ input: [String], _ output: [String], port: UInt16, in dir: URL) throws -> String {
        let sdp = dir.file("ffmpeg-\(port).sdp")
        try TestSupport.ffmpeg(input + ["-frames:v", "1", "-frames:a", "1"] + output
                               + ["-f", "rtp", "-sdp_file", sdp, "rtp://127.0.0.1:\(port)"])
        return sdp
    }

    static func ffmpegSend(_ input: [String], _ output: [String], port: UInt16) -> TestSupport.BackgroundProcess {
        TestSupport.start("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-re"] + input + output
                                    + ["-f", "rtp", "rtp://127.0.0.1:\(port)"], timeout: 30)
    }

    @Test func h264FromFFmpegDecodesAsFFmpegDecodesIt() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir, frames: 75)
            let source = dir.file("source.h264")
            try TestSupport.ffmpeg(["-i", reference, "-c:v", "libx264", "-profile:v", "main", "-bf", "0", "-g", "25",
                                    "-b:v", "600k", source])
            let port = try Self.freePortPair()
            let input = ["-i", source], output = ["-c", "copy"]
            let sdp = try Self.ffmpegSDP(input, output, port: port, in: dir)
            let stream = try Self.stream(fromSDP: sdp, kind: "video")
            #expect(stream.codec == .h264 && stream.payloadType == 96 && stream.local.port == port)

            let received = dir.file("received.y4m")
            let (receiver, _) = try Self.receive(stream, into: received) { Self.ffmpegSend(input, output, port: port) }
            let ffmpegDecode = dir.file("ffmpeg.y4m")
            try TestSupport.ffmpeg(["-i", source, "-pix_fmt", "yuv420p", ffmpegDecode])
            let (frames, psnr) = try Self.compare(received, ffmpegDecode)
            print("H.264 from ffmpeg: \(frames.0) of \(frames.1) frames, PSNR against ffmpeg's decode \(psnr) dB; "
                  + "\(receiver.statistics())")
            #expect(frames.0 == 75 && frames.1 == 75)
            #expect(psnr >= 50, "OpenH264 and ffmpeg decode a main-profile stream without B-frames alike")
            #expect(receiver.endReason() != nil)
        }
    }

    @Test func vp8FromFFmpegArrivesFrameForFrame() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let port = try Self.freePortPair()
            let input = ["-i", TestSupport.sampleIVF], output = ["-frames:v", "60", "-c", "copy"]
            let sdp = try Self.ffmpegSDP(["-i", TestSupport.sampleIVF], ["-c", "copy"], port: port, in: dir)
            let stream = try Self.stream(fromSDP: sdp, kind: "video")
            #expect(stream.codec == .vp8)
            let received = dir.file("received.ivf")
            let (receiver, _) = try Self.receive(stream, into: received) { Self.ffmpegSend(input, output, port: port) }
            let sent = Array(try RTPStreamingTests.ivfFrames(TestSupport.sampleIVF).prefix(60))
            let got = try RTPStreamingTests.ivfFrames(received)
            print("VP8 from ffmpeg: \(got.count) frames; \(receiver.statistics())")
            #expect(got.count == 60)
            #expect(zip(sent, got).allSatisfy { Array($0.bytes) == Array($1.bytes) }, "every frame byte for byte")
        }
    }

    @Test func opusFromFFmpegKeepsEveryPacketAndItsDuration() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let source = dir.file("source.opus")
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=3:sample_rate=48000", "-ac", "2",
                                    "-c:a", "libopus", "-b:a", "64k", source])
            let port = try Self.freePortPair()
            let input = ["-i", source], output = ["-c", "copy"]
            let sdp = try Self.ffmpegSDP(input, output, port: port, in: dir)
            let stream = try Self.stream(fromSDP: sdp, kind: "audio")
            #expect(stream.codec == .opus && stream.channels == 2)
            let received = dir.file("received.opus")
            let (receiver, _) = try Self.receive(stream, into: received, silence: 2) { Self.ffmpegSend(input, output, port: port) }
            let sentPackets = try Self.opusPackets(source), receivedPackets = try Self.opusPackets(received)
            print("Opus from ffmpeg: \(receivedPackets.count) of \(sentPackets.count) packets; \(receiver.statistics())")
            #expect(receivedPackets == sentPackets, "every packet as sent")
            let duration = Double(try TestSupport.ffprobe(received, entries: "format=duration")["duration"] ?? "") ?? 0
            #expect(abs(duration - 3) <= 0.03, "ffprobe reads \(duration) s")
        }
    }

    static func opusPackets(_ path: String) throws -> [[UInt8]] {
        let reader = try OggOpusReader(path: path)
        var packets: [[UInt8]] = []
        while let packet = try reader.next(pool: nil) { packets.append(Array(packet.bytes)) }
        return packets
    }

    @Test func h264FromGStreamerInSTAPAAndSmallFUAFragmentsDecodesAsSent() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir, frames: 50)
            let port = try Self.freePortPair()
            var stream = RTPStreamDescription(codec: .h264, payloadType: 96, local: try SocketAddress(host: "127.0.0.1", port: port))
            stream.frameRate = Samples.frameRate
            let sent = dir.file("sent.h264"), received = dir.file("received.y4m")
            // x264 in GStreamer, its stream both sent (STAP-A for SPS/PPS, FU-A at a 400-byte MTU) and kept.
            let pipeline = "filesrc location=\(reference) ! y4mdec ! x264enc tune=zerolatency key-int-max=25 bitrate=600 "
                + "! video/x-h264,profile=constrained-baseline,stream-format=byte-stream,alignment=au ! tee name=t "
                + "t. ! queue ! rtph264pay pt=96 mtu=400 config-interval=-1 aggregate-mode=zero-latency "
                + "! udpsink host=127.0.0.1 port=\(port) sync=true "
                + "t. ! queue ! filesink location=\(sent)"
            let (receiver, _) = try Self.receive(stream, into: received, silence: 2) {
                TestSupport.start("gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init), timeout: 30)
            }
            let decoded = dir.file("gstreamer.y4m")
            try TestSupport.ffmpeg(["-i", sent, "-pix_fmt", "yuv420p", decoded])
            let (frames, psnr) = try Self.compare(received, decoded)
            print("H.264 from GStreamer: \(frames.0) of \(frames.1) frames, PSNR \(psnr) dB; \(receiver.statistics())")
            #expect(frames.0 == 50 && frames.1 == 50)
            #expect(psnr >= 50)
        }
    }

    /// A receiver of the stream an SDP file describes, writing raw I420 video to `output`.
    static func peerReceiving(_ peer: String, sdp: String, output: String) -> TestSupport.BackgroundProcess {
        if peer == "ffmpeg" {
            return TestSupport.start("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist",
                                                "file,udp,rtp", "-i", sdp, "-pix_fmt", "yuv420p", "-y", output], timeout: 30)
        }
        // Raw I420 frames (GStreamer's y4menc cannot name the rate of an RTP stream), made Y4M afterwards.
        let pipeline = "filesrc location=\(sdp) ! sdpdemux latency=200 ! decodebin ! videoconvert ! video/x-raw,format=I420 "
            + "! filesink location=\(output).yuv"
        return TestSupport.start("gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init), timeout: 30)
    }

    @Test(arguments: [(CodecName.vp8, "ffmpeg", nil), (.h264, "ffmpeg", nil), (.vp8, "gstreamer", nil), (.h264, "gstreamer", nil),
                      // Not AES_CM_128_HMAC_SHA1_32 towards ffmpeg: it expects a 32-bit SRTCP tag there, where
                      // RFC 4568 §6.2.2 (and libsrtp) have 80, so it never reads Sluice's BYE.
                      (.vp8, "ffmpeg", SRTPProfile.aes128CmHmacSha1_80), (.h264, "ffmpeg", .aes128CmHmacSha1_80)])
    func aPeerDecodesWhatSluiceSendsFromTheSDPSluiceWrites(codec: CodecName, peer: String, srtp: SRTPProfile?) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir, frames: 50)
            let port = try Self.freePortPair()
            var options = TranscodeOptions()
            options.codec = codec
            options.bitrate = 800_000
            options.keyframeInterval = 25
            var destination = RTPDestination(address: try SocketAddress(host: "127.0.0.1", port: port))
            destination.srtp = srtp.map { .random($0) }  // the SDP's a=crypto carries the key (RFC 4568)
            let sender = try Transcoder(input: reference, sendingTo: destination, options: options)
            let sdp = dir.file("sluice.sdp")
            try SessionDescription(describing: sender.rtpSender!, frameRate: Samples.frameRate).serialized()
                .write(toFile: sdp, atomically: true, encoding: .utf8)
            let received = dir.file("\(peer)-received.y4m")
            let receiver = Self.peerReceiving(peer, sdp: sdp, output: received)
            Thread.sleep(forTimeInterval: 2)  // the peer opens its port
            let summary = try sender.run()
            let result = try receiver.wait()
            #expect(result.status == 0, "\(peer): \(result.stderr)")
            if peer == "gstreamer" {
                try TestSupport.ffmpeg(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "320x240", "-r", "25",
                                        "-i", received + ".yuv", received])
            }
            let (frames, psnr) = try Self.compare(received, reference)
            print("\(codec) from Sluice to \(peer) (SRTP \(srtp?.sdesName ?? "off")): \(frames.0) of \(frames.1) frames, "
                  + "PSNR \(psnr) dB, \(summary.frames) sent")
            #expect(frames.0 == 50, "the peer ends at Sluice's BYE with every frame")
            #expect(psnr >= 30)
        }
    }

    @Test(arguments: [SRTPProfile.aes128CmHmacSha1_80, .aes128CmHmacSha1_32])
    func srtpFromFFmpegThroughItsSDPArrivesFrameForFrame(profile: SRTPProfile) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let port = try Self.freePortPair()
            let key = SRTPKeyMaterial.random(for: profile).sdesKey.keySalt
            let input = ["-i", TestSupport.sampleIVF]
            let output = ["-frames:v", "50", "-c", "copy", "-srtp_out_suite", profile.sdesName, "-srtp_out_params", key]
            let sdp = dir.file("ffmpeg-srtp.sdp")
            try TestSupport.ffmpeg(input + ["-frames:v", "1", "-c", "copy", "-srtp_out_suite", profile.sdesName, "-srtp_out_params", key,
                                            "-f", "rtp", "-sdp_file", sdp, "srtp://127.0.0.1:\(port)"])
            let stream = try Self.stream(fromSDP: sdp, kind: "video")
            #expect(stream.srtp?.profile == profile)
            let received = dir.file("received.ivf")
            var options = ReceiveOptions()
            options.limits.silence = .seconds(3)
            let receiver = try RTPReceivePipeline(stream: stream, output: received, options: options)
            let ffmpeg = TestSupport.start("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-re"] + input + output
                                                     + ["-f", "rtp", "srtp://127.0.0.1:\(port)"], timeout: 30)
            _ = try receiver.run()
            #expect(try ffmpeg.wait().status == 0)
            let sent = Array(try RTPStreamingTests.ivfFrames(TestSupport.sampleIVF).prefix(50))
            let got = try RTPStreamingTests.ivfFrames(received)
            let statistics = receiver.statistics()
            print("SRTP (\(profile.sdesName)) from ffmpeg: \(got.count) frames; \(String(describing: statistics.srtp))")
            #expect(got.count == 50 && zip(sent, got).allSatisfy { Array($0.bytes) == Array($1.bytes) })
            #expect((statistics.srtp?.unprotectedPackets ?? 0) >= statistics.packetsReceived, "every RTP packet checked")
            // ffmpeg tags its SRTCP with 32 bits under AES_CM_128_HMAC_SHA1_32, where RFC 4568 §6.2.2 (and
            // libsrtp) keep 80: its sender reports then fail authentication here, counted and dropped.
            #expect(profile == .aes128CmHmacSha1_32 || statistics.unprotectFailures == 0)
        }
    }

    @Test func srtpFromGStreamersSrtpencArrivesAndAWrongKeyIsRefusedPacketByPacket() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let key = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)
            let hex = (key.masterKey + key.masterSalt).map { String(format: "%02X", $0) }.joined()
            for (index, rightKey) in [true, false].enumerated() {
                let port = try Self.freePortPair()
                var stream = RTPStreamDescription(codec: .vp8, payloadType: 96, local: try SocketAddress(host: "127.0.0.1", port: port))
                stream.srtp = SRTPParameters(profile: .aes128CmHmacSha1_80, key: rightKey ? key : .random(for: .aes128CmHmacSha1_80))
                var options = ReceiveOptions()
                options.limits.silence = .seconds(2)
                let received = dir.file("gst-\(index).ivf")
                let receiver = try RTPReceivePipeline(stream: stream, output: received, options: options)
                let pipeline = "filesrc location=\(TestSupport.sampleIVF) ! ivfparse ! rtpvp8pay pt=96 "
                    + "! application/x-rtp,ssrc=(uint)1234 ! srtpenc key=\(hex) rtp-cipher=aes-128-icm rtp-auth=hmac-sha1-80 "
                    + "rtcp-cipher=aes-128-icm rtcp-auth=hmac-sha1-80 ! udpsink host=127.0.0.1 port=\(port) sync=true"
                let gst = TestSupport.start("gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init), timeout: 30)
                if rightKey {
                    _ = try receiver.run()
                    #expect(try RTPStreamingTests.ivfFrames(received).count == TestSupport.sampleFrameCount)
                    #expect(receiver.statistics().unprotectFailures == 0)
                } else {
                    #expect(throws: GraphError.self) { _ = try receiver.run() }
                    let statistics = receiver.statistics()
                    print("SRTP with a wrong key: \(statistics.unprotectFailures) packets refused; \(String(describing: statistics.srtp))")
                    #expect(statistics.unprotectFailures > 0 && statistics.packetsReceived == 0)
                    #expect(statistics.srtp?.authenticationFailures == statistics.unprotectFailures)
                }
                _ = try gst.wait()
            }
        }
    }

    @Test func gstreamersSrtpdecDecodesSluicesSRTP() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let port = try Self.freePortPair()
            var destination = RTPDestination(address: try SocketAddress(host: "127.0.0.1", port: port))
            destination.ssrc = 0x5100_1CE5
            destination.srtp = .random(.aes128CmHmacSha1_80)
            let key = destination.srtp!.key
            let hex = (key.masterKey + key.masterSalt).map { String(format: "%02X", $0) }.joined()
            var options = TranscodeOptions()
            options.maxFrames = 40
            let sender = try Transcoder(input: TestSupport.sampleIVF, sendingTo: destination, options: options)
            // GStreamer has no SDES reader: the key goes in srtpdec's caps, for the stream's SSRC.
            let output = dir.file("gstreamer.yuv")
            let caps = "application/x-srtp,media=(string)video,clock-rate=(int)90000,encoding-name=(string)VP8,payload=(int)96,"
                + "ssrc=(uint)\(destination.ssrc),srtp-key=(buffer)\(hex),srtp-cipher=(string)aes-128-icm,"
                + "srtp-auth=(string)hmac-sha1-80,srtcp-cipher=(string)aes-128-icm,srtcp-auth=(string)hmac-sha1-80,roc=(uint)0"
            // udpsrc never ends by itself (and a child here cannot be stopped by a signal): it stops after
            // the packets the 40 frames make, counted with the same packetizer.
            var packetizer = try VP8Packetizer(maxPayloadSize: destination.maxPayloadSize)
            var packets = 0
            var payload = [UInt8](repeating: 0, count: destination.maxPayloadSize)
            for frame in try RTPStreamingTests.ivfFrames(TestSupport.sampleIVF).prefix(40) {
                try packetizer.startFrame(frame)
                while try payload.withUnsafeMutableBytes({ try packetizer.nextPayload(into: $0) }) != nil { packets += 1 }
            }
            let gst = TestSupport.start("gst-launch-1.0", ["-q", "udpsrc", "port=\(port)", "caps=\(caps)", "num-buffers=\(packets)",
                                                           "!", "srtpdec", "!", "rtpvp8depay", "!", "vp8dec", "!", "videoconvert",
                                                           "!", "video/x-raw,format=I420", "!", "filesink", "location=\(output)"],
                                        timeout: 12)
            Thread.sleep(forTimeInterval: 2)  // GStreamer opens its port
            let summary = try sender.run()
            #expect(try gst.wait().status == 0)
            let bytes = (try FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
            print("SRTP from Sluice to GStreamer srtpdec: \(bytes / (640 * 360 * 3 / 2)) of \(summary.frames) frames decoded")
            #expect(bytes == 40 * 640 * 360 * 3 / 2, "every frame")
        }
    }
    /// Whether a socket on this machine is bound to UDP `port` (the kernel's table, read without
    /// binding: a test bind could take the port from the process about to bind it).
    static func isBound(udpPort port: UInt16) -> Bool {
        let table = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
        let needle = ":" + String(format: "%04X", port) + " "
        return table.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first.map { "\($0) ".hasSuffix(needle) } ?? false }
    }

    /// `sluice receive` records the VP8 and Opus that ffmpeg sends (one SDP with two sections) into one
    /// file, in sync (the flash-and-beep clip of `AVSyncTests`), and its help says how.
    ///
    /// ffmpeg (5.1's rtpenc) sends a sender report per stream with its first packet, and the
    /// recording is placed by them (RFC 3550 §6.4.1). ffmpeg's reports tie each stream's first RTP
    /// timestamp to the wall-clock time its first packet left, not to when the media was sampled: streams
    /// sent as they are (`-c copy`) leave together, so the reports put them in sync; streams encoded
    /// live leave as their encoders deliver, and the reports carry the difference in encoder delay
    /// (measured here: the VP8 encoder's first packet leaves about 85 ms after the Opus one, so the
    /// recording has the audio that much early, as any receiver that believes ffmpeg's reports
    /// would). With `-rtpflags skip_rtcp` there are no reports and each track starts at its first
    /// frame, which left together; so too when only the audio has none (after 2 s of waiting for it).
    @Test(arguments: [("call.webm", "copy"), ("call.mkv", "copy"), ("live.mkv", "encode"), ("no-rtcp.mkv", "encode, skip_rtcp"),
                      ("half-rtcp.mkv", "encode, audio skip_rtcp")])
    func audioAndVideoFromFFmpegAreRecordedIntoOneFile(name: String, sending: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let help = try TestSupport.run(sluice, ["receive", "--help"])
            #expect(help.stdoutText.contains("sluice receive call.sdp call.webm"), "\(help.stdoutText)")
            var input = dir.file("clip.mp4")
            try AVSyncTests.makeInput(input, audioCodec: "aac")
            let (videoPort, audioPort) = try Self.freePortPairs()
            let rtcp = sending.hasSuffix(", skip_rtcp") ? ["-rtpflags", "skip_rtcp"] : []
            let audioRTCP = sending.hasSuffix("skip_rtcp") ? ["-rtpflags", "skip_rtcp"] : []
            var codecs = (video: ["-c:v", "libvpx", "-g", "25"], audio: ["-c:a", "libopus"])
            if sending == "copy" {
                let encoded = dir.file("clip.webm")
                try TestSupport.ffmpeg(["-i", input] + codecs.video + codecs.audio + [encoded])
                (input, codecs) = (encoded, (["-c:v", "copy"], ["-c:a", "copy"]))
            }
            let outputs = ["-map", "0:v"] + codecs.video + ["-f", "rtp"] + rtcp + ["rtp://127.0.0.1:\(videoPort)",
                           "-map", "0:a"] + codecs.audio + ["-f", "rtp"] + audioRTCP + ["rtp://127.0.0.1:\(audioPort)"]
            let sdp = dir.file("call.sdp"), output = dir.file(name)
            try TestSupport.ffmpeg(["-i", input, "-frames:v", "1", "-frames:a", "1"] + outputs + ["-sdp_file", sdp])
            let (received, _) = try Self.receiveWhileFFmpegSends(sdp, into: output, timeout: 2, ports: [videoPort, audioPort],
                                                                 ffmpeg: ["-i", input] + outputs)
            #expect(received.stdoutText.contains("received rtp://127.0.0.1:\(videoPort) -> \(output)"), "\(received.stdoutText)")
            #expect(received.stdoutText.contains("received rtp://127.0.0.1:\(audioPort) -> \(output)"), "\(received.stdoutText)")
            let placed = audioRTCP.isEmpty ? "(by the sender reports)" : "(at its first frame: no sender report)"
            #expect(received.stdoutText.components(separatedBy: placed).count == 3, "\(received.stdoutText)")
            let video = try ContainerTranscodeTests.probe(output, stream: "v:0"), audio = try ContainerTranscodeTests.probe(output, stream: "a:0")
            #expect(video["codec_name"] == "vp8" && audio["codec_name"] == "opus", "\(video) \(audio)")
            // Listening before ffmpeg starts, every frame arrives: 100 pictures, 4 s of 20 ms packets.
            #expect(video["nb_read_frames"] == "100", "\(video)")
            let packets = Int(audio["nb_read_frames"] ?? "") ?? 0
            #expect((198...202).contains(packets), "\(packets) Opus packets for 4 s")
            let seconds = try ContainerTranscodeTests.duration(output)
            #expect(abs(seconds - 4.0) < 0.15, "\(seconds) s")
            #expect(try ContainerTranscodeTests.decodesCleanly(output))
            // Encoding live, ffmpeg's sender reports carry its VP8 encoder's start-up delay, which
            // grows with the machine's load (100 ms seen at a load average of 10): the video is placed
            // that much after the audio, so its flashes land that much late in the file.
            let offsets = try AVSyncTests.offsets(in: output, scratch: dir, flashTolerance: sending == "copy" ? 0.1 : 0.25)
            print("ffmpeg A+V (\(sending)) into \(name): beep minus flash \(offsets.map { Int(($0 * 1000).rounded()) }) ms")
            for offset in offsets {
                if sending == "encode" {
                    // ffmpeg's reports, believed: audio early by the VP8 encoder's extra start-up delay.
                    #expect(offset < 0 && offset > -0.2, "audio \(Int(offset * 1000)) ms from video")
                } else {
                    #expect(abs(offset) < 0.04, "audio \(Int(offset * 1000)) ms from video")
                }
            }
        }
    }

    /// Runs `sluice receive SDP OUTPUT --timeout SECONDS`, listening on `ports` before ffmpeg (run with
    /// `-re` and `arguments`) sends; its result, and how long it went on after ffmpeg ended.
    static func receiveWhileFFmpegSends(_ sdp: String, into output: String, timeout: Int, ports: [UInt16],
                                        ffmpeg arguments: [String]) throws -> (result: TestSupport.ProcessResult, lag: Double) {
        let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
        let receiving = TestSupport.start(sluice, ["receive", sdp, output, "--quiet", "--timeout", "\(timeout)"], timeout: 60)
        for _ in 0..<200 where !ports.allSatisfy(isBound(udpPort:)) { usleep(25_000) }
        let sender = try TestSupport.run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-re"] + arguments, timeout: 30)
        let senderEnded = Date()
        #expect(sender.status == 0, "ffmpeg: \(sender.stderr)")
        let received = try receiving.wait()
        let lag = Date().timeIntervalSince(senderEnded)
        #expect(received.status == 0, "sluice receive: \(received.stderr)")
        return (received, lag)
    }

    /// Two distinct free port pairs: video and audio.
    static func freePortPairs() throws -> (UInt16, UInt16) {
        let videoPort = try freePortPair()
        var audioPort = try freePortPair()
        while audioPort == videoPort { audioPort = try freePortPair() }
        return (videoPort, audioPort)
    }

    /// ffmpeg sends BYE only with `-rtpflags send_bye` (ffmpeg 5.1; by default it just stops), as an
    /// SR + BYE compound on the RTCP port (RTP port + 1). `sluice receive` ends at it with every frame,
    /// at once rather than after `--timeout` of silence.
    @Test func ffmpegsByeEndsTheReceiveAtOnce() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let port = try Self.freePortPair()
            let sdp = try Self.ffmpegSDP(["-i", TestSupport.sampleIVF], ["-c", "copy"], port: port, in: dir)
            let output = dir.file("received.ivf")
            let (received, lag) = try Self.receiveWhileFFmpegSends(
                sdp, into: output, timeout: 10, ports: [port],
                ffmpeg: ["-i", TestSupport.sampleIVF, "-frames:v", "60", "-c", "copy", "-f", "rtp", "-rtpflags", "send_bye", "rtp://127.0.0.1:\(port)"])
            print("ffmpeg BYE: sluice receive ended \(Int(lag * 1000)) ms after ffmpeg; \(received.stdoutText)")
            #expect(received.stdoutText.contains("(the sender said BYE)"), "\(received.stdoutText)")
            #expect(lag < 1.5, "ended \(lag) s after the sender, --timeout is 10 s")
            let sent = Array(try RTPStreamingTests.ivfFrames(TestSupport.sampleIVF).prefix(60))
            let got = try RTPStreamingTests.ivfFrames(output)
            #expect(got.count == 60)
            #expect(zip(sent, got).allSatisfy { Array($0.bytes) == Array($1.bytes) }, "every frame byte for byte")
        }
    }

    /// Audio and video from ffmpeg into one file end at their BYEs: both said (each its own), or only the
    /// video's said and the audio then went silent (ended 1 s after its last packet, not at `--timeout`).
    @Test(arguments: [true, false])
    func audioAndVideoFromFFmpegEndAtTheirByes(audioSaysBye: Bool) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = dir.file("clip.mp4")
            try AVSyncTests.makeInput(input, audioCodec: "aac")
            let (videoPort, audioPort) = try Self.freePortPairs()
            let outputs = ["-map", "0:v", "-c:v", "libvpx", "-g", "25", "-f", "rtp", "-rtpflags", "send_bye", "rtp://127.0.0.1:\(videoPort)",
                           "-map", "0:a", "-c:a", "libopus", "-f", "rtp"] + (audioSaysBye ? ["-rtpflags", "send_bye"] : [])
                + ["rtp://127.0.0.1:\(audioPort)"]
            let sdp = dir.file("call.sdp"), output = dir.file("call.mkv")
            try TestSupport.ffmpeg(["-i", input, "-frames:v", "1", "-frames:a", "1"] + outputs + ["-sdp_file", sdp])
            let (received, lag) = try Self.receiveWhileFFmpegSends(sdp, into: output, timeout: 10, ports: [videoPort, audioPort],
                                                                   ffmpeg: ["-i", input] + outputs)
            print("ffmpeg A+V, audio BYE \(audioSaysBye): sluice receive ended \(Int(lag * 1000)) ms after ffmpeg")
            let text = received.stdoutText
            #expect(text.contains("received rtp://127.0.0.1:\(videoPort) -> \(output) (the sender said BYE)"), "\(text)")
            let audioEnd = audioSaysBye ? "the sender said BYE" : "silent after another stream of the sender said BYE"
            #expect(text.contains("received rtp://127.0.0.1:\(audioPort) -> \(output) (\(audioEnd))"), "\(text)")
            #expect(lag < (audioSaysBye ? 1.5 : 2.5), "ended \(lag) s after the sender, --timeout is 10 s")
            let video = try ContainerTranscodeTests.probe(output, stream: "v:0"), audio = try ContainerTranscodeTests.probe(output, stream: "a:0")
            #expect(video["nb_read_frames"] == "100", "\(video)")
            let packets = Int(audio["nb_read_frames"] ?? "") ?? 0
            #expect((198...202).contains(packets), "\(packets) Opus packets for 4 s")
            #expect(try ContainerTranscodeTests.decodesCleanly(output))
        }
    }

    /// `sluice send clip.mp4 --audio-to` sends the video as it is and the AAC as Opus, in one SDP that
    /// `sluice receive` records into one Matroska file: every frame and packet, ended by both BYEs, in sync.
    @Test func sluiceSendsAudioAndVideoThatSluiceReceivesIntoOneFile() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let input = dir.file("clip.mp4"), sdp = dir.file("call.sdp"), output = dir.file("call.mkv")
            try AVSyncTests.makeInput(input, audioCodec: "aac")
            let (videoPort, audioPort) = try Self.freePortPairs()
            let sending = TestSupport.start(sluice, ["send", input, "--to", "127.0.0.1:\(videoPort)", "--audio-to", "127.0.0.1:\(audioPort)",
                                                     "--sdp", sdp, "--wait", "2", "--quiet"], timeout: 60)
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: sdp) { usleep(25_000) }
            let received = try TestSupport.run(sluice, ["receive", sdp, output, "--quiet", "--timeout", "5"], timeout: 60)
            let sent = try sending.wait()
            #expect(sent.status == 0 && received.status == 0, "send: \(sent.stderr) receive: \(received.stderr)")
            #expect(sent.stdoutText.contains("audio    aac -> rtp://127.0.0.1:\(audioPort) (OPUS, payload type 111"), "\(sent.stdoutText)")
            let description = try SessionDescription(contentsOfFile: sdp)
            #expect(description.media.map(\.type) == ["video", "audio"] && description.media.map(\.port) == [Int(videoPort), Int(audioPort)])
            #expect(received.stdoutText.components(separatedBy: "(the sender said BYE)").count == 3, "\(received.stdoutText)")
            let video = try ContainerTranscodeTests.probe(output, stream: "v:0"), audio = try ContainerTranscodeTests.probe(output, stream: "a:0")
            #expect(video["codec_name"] == "h264" && video["nb_read_frames"] == "100", "\(video)")
            let packets = Int(audio["nb_read_frames"] ?? "") ?? 0
            #expect(audio["codec_name"] == "opus" && (199...202).contains(packets), "\(audio)")
            for offset in try AVSyncTests.offsets(in: output, scratch: dir) {
                #expect(abs(offset) < 0.04, "audio \(Int(offset * 1000)) ms from video")
            }
        }
    }
}
