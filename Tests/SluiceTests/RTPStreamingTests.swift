import Foundation
import Sluice
import Testing
import TestSupport

/// Sluice to Sluice over UDP on 127.0.0.1: `Transcoder(sendingTo:)` paced in real time, an
/// `RTPReceivePipeline` on the other end, with and without an impaired network between them.
/// Serialized: each test streams for seconds in real time.
@Suite(.serialized) struct RTPStreamingTests {
    /// Runs `receiver` on a thread of its own while `send` runs here; returns the receiver's outcome.
    static func stream(into receiver: RTPReceivePipeline, send: () throws -> Void) throws -> GraphReport {
        let outcome = Locked<Result<GraphReport, any Error>?>(nil)
        let thread = WorkerThread { outcome.withLock { $0 = Result { try receiver.run() } } }
        try send()
        thread.join()
        return try outcome.withLock { $0! }.get()
    }

    static func loopback(_ codec: CodecName, payloadType: UInt8 = 96) throws -> RTPStreamDescription {
        var stream = RTPStreamDescription(codec: codec, payloadType: payloadType, local: try SocketAddress(parsing: "127.0.0.1:0"))
        stream.multiplexed = true
        stream.frameRate = Samples.frameRate
        return stream
    }

    static func destination(of receiver: RTPReceivePipeline) -> RTPDestination {
        var destination = RTPDestination(address: receiver.localAddress)
        destination.multiplexed = true
        return destination
    }

    /// Every frame of an IVF file.
    static func ivfFrames(_ path: String) throws -> [EncodedFrame] {
        let reader = try IVFReader(path: path)
        var frames: [EncodedFrame] = []
        while let frame = try reader.next(pool: nil) { frames.append(frame) }
        return frames
    }

    @Test func aVP8FileSentAsItIsArrivesFrameForFrameAndEndsAtBYE() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.file("received.ivf")
            var options = ReceiveOptions()
            options.limits.silence = .seconds(10)
            let receiver = try RTPReceivePipeline(stream: try Self.loopback(.vp8), output: output, options: options)
            var sendOptions = TranscodeOptions()
            sendOptions.maxFrames = 40
            let sender = try Transcoder(input: TestSupport.sampleIVF, sendingTo: Self.destination(of: receiver), options: sendOptions)
            // Junk first, counted and dropped, nothing else disturbed: on a multiplexed port (RFC 5761 §4) a
            // 1-byte and an all-zero datagram are bad RTP, one whose second byte is 0x40 bad RTCP.
            let junk = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
            for datagram: [UInt8] in [[0x80], Array(repeating: 0x00, count: 40), Array(repeating: 0x40, count: 40)] {
                try datagram.withUnsafeBytes { try junk.send($0, to: receiver.localAddress) }
            }
            junk.close()
            let report = try Self.stream(into: receiver) { _ = try sender.run() }
            #expect(receiver.endReason() == RTPReceiverNode<VP8Depacketizer>.EndReason.goodbye.rawValue)
            #expect(report.nodes.last!.itemsIn == 40)

            let sent = Array(try Self.ivfFrames(TestSupport.sampleIVF).prefix(40)), received = try Self.ivfFrames(output)
            #expect(received.count == 40)
            for (index, (a, b)) in zip(sent, received).enumerated() {
                #expect(Array(a.bytes) == Array(b.bytes), "frame \(index) arrives byte for byte")
            }
            let statistics = receiver.statistics()
            #expect(statistics.jitterBuffer?.framesReleased == 40 && statistics.malformedPackets == 2)
            #expect(statistics.malformedRTCP == 1)
            #expect(statistics.senderReports >= 1, "the sender's reports arrive on the multiplexed port")
            let sentStatistics = sender.rtpSender!.statistics()
            // Packets sent again (the tail probes before the BYE, any NACKed) arrive as copies.
            #expect(sentStatistics.packetsSent + sentStatistics.retransmissions == statistics.packetsReceived)
            #expect(sentStatistics.receiverReports >= 1, "the receiver's reports reach the sender")
        }
    }

    /// What arrived of a stream encoded from `reference`: every received frame decoded (libvpx) and
    /// compared with the reference picture its RTP timestamp names.
    struct Arrival {
        var frames = 0
        var undecodable = 0
        var worstPSNR = Double.infinity
        var indices: [Int] = []
        var missing: [Int] { Array(Set(0..<(indices.max() ?? 0)).subtracting(indices)).sorted() }
    }

    static func check(_ received: String, against reference: [VideoFrame]) throws -> Arrival {
        let decoder = try CodecRegistry.builtIn.videoDecoder(for: .vp8)
            .makeDecoder(format: VideoFormat(encoding: .compressed(.vp8), width: 320, height: 240, frameRate: Samples.frameRate), threads: 1)
        var arrival = Arrival()
        for frame in try ivfFrames(received) {
            arrival.frames += 1
            let index = Int(frame.pts.rescaled(to: Samples.timebase).value)
            arrival.indices.append(index)
            var pictures: [VideoFrame] = []
            do { try decoder.decode(frame) { pictures.append($0) } } catch { arrival.undecodable += 1 }
            for picture in pictures where reference.indices.contains(index) {
                let (sum, count) = PictureQuality.squaredError(picture, reference[index])
                arrival.worstPSNR = min(arrival.worstPSNR, PictureQuality.psnr(meanSquaredError: Double(sum) / Double(count)))
            }
        }
        return arrival
    }

    /// Encodes the reference clip (VP8, 600 kbit/s) and sends it through `impairment` to a receiver
    /// writing what arrives to an IVF file.
    static func sendEncoded(reference: String, through impairment: String, nack: Bool, rtx: UInt8?,
                            in dir: URL) throws -> (received: String, receiver: RTPReceivePipeline, sender: RTPSendStatistics) {
        let output = dir.file("received-\(nack).ivf")
        var options = ReceiveOptions()
        options.nack = nack
        var stream = try loopback(.vp8)
        let rtxSSRC = UInt32.random(in: 1...UInt32.max)
        stream.rtx = rtx.map { ($0, rtxSSRC) }
        let receiver = try RTPReceivePipeline(stream: stream, output: output, options: options)
        var destination = destination(of: receiver)
        destination.impairment = try ImpairmentProfile(parsing: impairment)
        destination.rtxPayloadType = rtx
        destination.rtxSSRC = rtxSSRC
        var sendOptions = TranscodeOptions()
        sendOptions.codec = .vp8
        sendOptions.bitrate = 600_000
        let sender = try Transcoder(input: reference, sendingTo: destination, options: sendOptions)
        _ = try Self.stream(into: receiver) { _ = try sender.run() }
        return (output, receiver, sender.rtpSender!.statistics())
    }

    /// Retransmissions as they were, and as RTX (RFC 4588) on a stream of their own.
    @Test(arguments: [nil, 97] as [UInt8?])
    func withNACKNinetyNinePercentOfFramesArriveThroughFivePercentLossAndReordering(rtx: UInt8?) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let referencePath = try TranscodeTests.makeReference(in: dir)
            let reference = try TranscodeTests.readAll(referencePath)
            let (received, receiver, sent) = try Self.sendEncoded(
                reference: referencePath, through: "loss=5%,reorder=3%,reorder-delay=15ms,duplicate=1%,delay=5ms,seed=11",
                nack: true, rtx: rtx, in: dir)
            let arrival = try Self.check(received, against: reference)
            let statistics = receiver.statistics()
            print("5% loss with NACK (RTX \(rtx.map(String.init) ?? "off")): \(arrival.frames)/\(reference.count) frames (missing \(arrival.missing), last \(arrival.indices.last ?? -1)), worst PSNR \(arrival.worstPSNR) dB; "
                  + "sender: \(sent.nacksReceived) NACKs, \(sent.retransmissions) retransmissions, impairment \(String(describing: sent.impairment)); "
                  + "receiver: \(String(describing: statistics.jitterBuffer))")
            #expect((sent.impairment?.droppedByLoss ?? 0) > 0, "the network did lose packets")
            #expect(sent.retransmissions > 0 && statistics.jitterBuffer!.recovered > 0)
            #expect(statistics.foreignPackets == 0, "RTX packets are taken as the stream's")
            #expect(Double(arrival.frames) >= 0.99 * Double(reference.count))
            #expect(arrival.undecodable == 0)
            #expect(arrival.worstPSNR >= 25, "no corrupted picture")
        }
    }

    @Test func withoutNACKLossCostsFramesButNeverCorruptsOneAndKeyframeRequestsRecover() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let referencePath = try TranscodeTests.makeReference(in: dir)
            let reference = try TranscodeTests.readAll(referencePath)
            let (received, receiver, sent) = try Self.sendEncoded(
                reference: referencePath, through: "loss=2%,seed=5", nack: false, rtx: nil, in: dir)
            let arrival = try Self.check(received, against: reference)
            let statistics = receiver.statistics()
            print("2% loss without NACK: \(arrival.frames)/\(reference.count) frames, worst PSNR \(arrival.worstPSNR) dB; "
                  + "\(sent.keyframeRequests) keyframe requests heard; receiver: \(String(describing: statistics.jitterBuffer))")
            #expect(statistics.keyframeRequestsSent > 0 && sent.keyframeRequests > 0)
            #expect(arrival.frames < reference.count && arrival.frames > reference.count / 2,
                    "frames after a loss wait for the keyframe the PLI brings")
            #expect(arrival.undecodable == 0)
            #expect(arrival.worstPSNR >= 25, "no corrupted picture")
        }
    }

    @Test func opusThroughLossComesOutConcealedAtTheSourceDuration() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let source = dir.file("tone.wav"), output = dir.file("received.wav")
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=3:sample_rate=48000", "-ac", "2", source])
            var stream = try Self.loopback(.opus, payloadType: 111)
            stream.channels = 2
            var options = ReceiveOptions()
            options.nack = false  // audio rides out loss by concealment
            let receiver = try RTPReceivePipeline(stream: stream, output: output, options: options)
            var destination = Self.destination(of: receiver)
            destination.impairment = try ImpairmentProfile(parsing: "loss=5%,seed=3")
            let sender = try Transcoder(input: source, sendingTo: destination)
            _ = try Self.stream(into: receiver) { _ = try sender.run() }
            let statistics = receiver.statistics().jitterBuffer!
            let duration = Double(try TestSupport.ffprobe(output, entries: "format=duration")["duration"] ?? "") ?? 0
            print("Opus through 5% loss: \(statistics.framesReleased) packets, \(statistics.lost) lost, \(duration) s written")
            #expect(statistics.lost > 0 && statistics.keyframeRequests == 0)
            #expect(abs(duration - 3) <= 0.05, "lost packets are concealed, not skipped")
        }
    }

    @Test func theCLIReceivesWhatTheCLISendsThroughTheSDPItWrites() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let sdp = dir.file("stream.sdp"), output = dir.file("received.ivf")
            let port = try RTPInteropTests.freePortPair()
            let sender = TestSupport.start(sluice, ["send", TestSupport.sampleIVF, "--to", "127.0.0.1:\(port)", "--sdp", sdp,
                                                    "--wait", "2", "--frames", "30", "--quiet"], timeout: 30)
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: sdp) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            let received = try TestSupport.run(sluice, ["receive", sdp, output, "--quiet"], timeout: 30)
            let sent = try sender.wait()
            #expect(sent.status == 0 && received.status == 0, "\(sent.stderr) \(received.stderr)")
            #expect(sent.stdoutText.contains("frames   30 in"), "\(sent.stdoutText)")
            #expect(received.stdoutText.contains("(the sender said BYE)") && received.stdoutText.contains("30 written"),
                    "\(received.stdoutText)")
            #expect(try TestSupport.probeVideo(output).frames == 30)
        }
    }

    @Test func aLoopedFilePacedInRealTimeDrivesTheSenderAtItsFrameRate() throws {
        try TestSupport.withTemporaryDirectory { dir in
            // A 20-frame clip (0.8 s at 25 fps) sent as a 50-frame stream: two and a half passes.
            let clip = dir.file("clip.ivf")
            var cut = TranscodeOptions()
            cut.maxFrames = 20
            cut.size = (320, 180)
            _ = try Transcoder(input: TestSupport.sampleIVF, output: clip, options: cut).run()
            let output = dir.file("received.ivf")
            let receiver = try RTPReceivePipeline(stream: try Self.loopback(.vp8), output: output)
            var options = TranscodeOptions()
            options.loop = true
            options.maxFrames = 50
            let sender = try Transcoder(input: clip, sendingTo: Self.destination(of: receiver), options: options)
            var summary: TranscodeSummary?
            _ = try Self.stream(into: receiver) { summary = try sender.run() }

            // 50 frames at 25 fps: the last leaves 49/25 s after the first.
            let elapsed = try #require(summary).elapsed
            #expect(elapsed >= 1.9 && elapsed < 3.0, "\(elapsed) s for 50 frames")
            let frames = try Self.ivfFrames(output)
            #expect(frames.count == 50)
            let ticks = frames.map { $0.pts.rescaled(to: Rational(1, 90_000)).value }
            #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $1 - $0 == 3600 }, "1/25 s a frame, across the seams too")
            #expect(frames[20].isKeyframe && frames[40].isKeyframe)
        }
    }

    @Test func receivingStopsAtAFrameLimitAtADurationAndWhenNothingComes() throws {
        try TestSupport.withTemporaryDirectory { dir in
            func receive(_ limits: RTPReceiveLimits, name: String) throws -> (RTPReceivePipeline, Int) {
                var options = ReceiveOptions()
                options.limits = limits
                let output = dir.file("\(name).ivf")
                let receiver = try RTPReceivePipeline(stream: try Self.loopback(.vp8), output: output, options: options)
                var sendOptions = TranscodeOptions()
                sendOptions.maxFrames = 40
                let sender = try Transcoder(input: TestSupport.sampleIVF, sendingTo: Self.destination(of: receiver),
                                            options: sendOptions)
                _ = try Self.stream(into: receiver) { _ = try sender.run() }
                return (receiver, try Self.ivfFrames(output).count)
            }
            let (byCount, counted) = try receive(RTPReceiveLimits(frames: 10), name: "frames")
            #expect(counted == 10 && byCount.endReason() == "frame limit reached")
            let (byTime, timed) = try receive(RTPReceiveLimits(duration: .milliseconds(600)), name: "duration")
            // 25 frames a second: about 15 in 0.6 s after the first.
            #expect((12...18).contains(timed) && byTime.endReason() == "duration reached", "\(timed) frames")

            let quiet = try RTPReceivePipeline(stream: try Self.loopback(.vp8), output: dir.file("silence.ivf"),
                                               options: { var o = ReceiveOptions(); o.limits.silence = .milliseconds(300); return o }())
            do {
                _ = try quiet.run()
                Issue.record("a receiver that hears nothing ran")
            } catch GraphError.configurationFailed(let node, let error) {
                #expect(node == "rtp-receiver")
                #expect(error as? RTPReceiveError == .noKeyframe(address: "\(quiet.localAddress)", seconds: 0.3, packets: 0))
            }
        }
    }

    @Test func aSizeAndRateChangeWhileSendingShowsUpInTheReceivedFramesFromAKeyframe() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir)
            let output = dir.file("adapted.ivf")
            let receiver = try RTPReceivePipeline(stream: try Self.loopback(.vp8), output: output)
            var options = TranscodeOptions()
            options.codec = .vp8
            options.bitrate = 600_000
            options.adaptable = true
            let sender = try Transcoder(input: reference, sendingTo: Self.destination(of: receiver), options: options)
            // After two seconds the remote asks for at most 80 macroblocks a picture at 15 fps (a new
            // description's max-fs/max-fr): negotiation picks the format, the running pipeline takes it.
            let camera = VideoConstraints(width: .init(ideal: 320, max: 320), height: .init(ideal: 240, max: 240),
                                          frameRate: .init(ideal: 25, max: 25))
            let chosen = try chooseVideoFormat(constraints: camera, remote: RemoteVideoLimits(maxFrameSize: 80, maxFrameRate: 15))
            #expect((chosen.width, chosen.height, chosen.frameRate) == (160, 120, 15))
            // A thread of its own: Dispatch's global queue can start late when the test run is busy.
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 2)
                _ = sender.adaptOutputFormat(width: chosen.width, height: chosen.height,
                                             frameRate: Rational(Int(chosen.frameRate), 1))
            }
            _ = try Self.stream(into: receiver) { _ = try sender.run() }

            let frames = try Self.ivfFrames(output)
            let decoder = try CodecRegistry.builtIn.videoDecoder(for: .vp8)
                .makeDecoder(format: VideoFormat(encoding: .compressed(.vp8), width: 320, height: 240, frameRate: Samples.frameRate), threads: 1)
            var sizes: [(width: Int, height: Int)] = []
            for frame in frames { try decoder.decode(frame) { sizes.append(($0.width, $0.height)) } }
            #expect(sizes.count == frames.count, "every frame decodes")
            let switchIndex = try #require(sizes.firstIndex { $0 == (160, 120) })
            print("adapted at frame \(switchIndex) of \(frames.count)")
            #expect(sizes[..<switchIndex].allSatisfy { $0 == (320, 240) } && sizes[switchIndex...].allSatisfy { $0 == (160, 120) })
            #expect(frames[switchIndex].isKeyframe, "the new size starts with a keyframe")
            #expect((40...65).contains(switchIndex), "about two seconds at 25 fps before the change")
            let ticks = frames.map { $0.pts.rescaled(to: Rational(1, 90_000)).value }
            #expect(ticks[switchIndex - 1] - ticks[switchIndex - 2] == 3600, "1/25 s before")
            // Then 1/15 s a frame on average: the IVF file keeps the 1/25 s timebase negotiated at the
            // start, so single steps read as 2/25 or 1/25 s.
            #expect(ticks[ticks.count - 1] - ticks[ticks.count - 16] == 15 * 6000, "1/15 s after")
            #expect((95...105).contains(frames.count), "2 s at 25 fps, then about 3.3 s at 15 fps")
        }
    }

    @Test func theSDPOfASentStreamDescribesItForTheReceiver() throws {
        var destination = RTPDestination(address: try SocketAddress(host: "127.0.0.1", port: 40_000))
        destination.rtxPayloadType = 97
        destination.srtp = .random(.aes128CmHmacSha1_32)
        var options = TranscodeOptions()
        options.codec = .h264
        let sender = try Transcoder(input: TestSupport.sampleIVF, sendingTo: destination, options: options)
        let text = SessionDescription(describing: sender.rtpSender!, frameRate: Rational(25, 1)).serialized()
        let session = try SessionDescription(parsing: text)
        let stream = try RTPStreamDescription(media: session.media[0], in: session)
        #expect(session.media[0].proto == "RTP/SAVP" && stream.local.port == 40_000)
        #expect(stream.codec == .h264 && stream.payloadType == 96 && stream.frameRate == Rational(25, 1))
        #expect(stream.rtx?.payloadType == 97 && stream.rtx?.ssrc == destination.rtxSSRC, "RTX by apt and ssrc-group FID")
        #expect(stream.srtp?.profile == .aes128CmHmacSha1_32)
        #expect(stream.srtp?.key.masterKey == destination.srtp?.key.masterKey, "the key goes through a=crypto")
        #expect(try session.media[0].formatParameters(for: 96)["packetization-mode"] == "1")

        // A key suite Sluice does not have is named, not ignored.
        let foreign = text.replacingOccurrences(of: "AES_CM_128_HMAC_SHA1_32", with: "F8_128_HMAC_SHA1_80")
        let parsed = try SessionDescription(parsing: foreign)
        #expect(throws: SessionDescriptionError.noUsableKey(suites: ["F8_128_HMAC_SHA1_80"])) {
            try RTPStreamDescription(media: parsed.media[0], in: parsed)
        }
    }
}
