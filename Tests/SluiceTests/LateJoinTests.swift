import Foundation
import Sluice
import Testing
import TestSupport

/// Receivers that start after the sender, as a user starts them: `sluice send --sdp` first, then
/// ffmpeg (or a Sluice receiver) on the SDP a moment later, after the stream's first keyframe has
/// left. Each must decode from within a second of starting. Serialized: real-time streams.
@Suite(.serialized) struct LateJoinTests {
    /// 90 frames at 25 fps: 3.6 s.
    static let frames = 90
    static let rate = 25.0

    /// Decoded frames of `received` that match the reference's last frames (PSNR of the tail).
    static func tailPSNR(_ received: String, _ reference: String) throws -> (frames: Int, psnr: Double) {
        let decoded = try TranscodeTests.readAll(received), source = try TranscodeTests.readAll(reference)
        var errorSum: UInt64 = 0, samples = 0
        for (x, y) in zip(decoded.reversed(), source.reversed()) {
            let (sum, count) = PictureQuality.squaredError(x, y)
            errorSum += sum
            samples += count
        }
        return (decoded.count, samples == 0 ? 0 : PictureQuality.psnr(meanSquaredError: Double(errorSum) / Double(samples)))
    }

    /// `sluice send clip.y4m --codec C --sdp s.sdp`, then ffmpeg on the SDP `delay` seconds after it
    /// appears: ffmpeg sends no RTCP to a sender it knows from an SDP only, so the periodic keyframe
    /// of `send` (one a second) is what lets it in. Allowed: one second from its start, plus half a
    /// second for ffmpeg's own start on a busy machine, plus a frame in transit.
    @Test(arguments: [CodecName.h264, .vp8])
    func ffmpegStartedAfterSluiceSendDecodesWithinASecond(codec: CodecName) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir, frames: Self.frames)
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let sdp = dir.file("stream.sdp"), received = dir.file("ffmpeg.y4m")
            let port = try RTPInteropTests.freePortPair()
            let sender = TestSupport.start(sluice, ["send", reference, "--to", "127.0.0.1:\(port)", "--codec", codec.rawValue,
                                                    "--sdp", sdp, "--quiet"], timeout: 30)
            let deadline = Date().addingTimeInterval(15)
            while !FileManager.default.fileExists(atPath: sdp) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            let written = Date()
            Thread.sleep(forTimeInterval: 0.3)  // the first keyframe has left
            let offset = Date().timeIntervalSince(written)
            let receiver = RTPInteropTests.peerReceiving("ffmpeg", sdp: sdp, output: received)
            let sent = try sender.wait()
            let result = try receiver.wait()
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(result.status == 0 || FileManager.default.fileExists(atPath: received), "ffmpeg: \(result.stderr)")
            let (decoded, psnr) = try Self.tailPSNR(received, reference)
            let bound = Self.frames - Int(((offset + 1.0 + 0.5) * Self.rate).rounded(.up)) - 1
            print("late ffmpeg (\(codec)) started \(String(format: "%.2f", offset)) s after the SDP: \(decoded) of \(Self.frames) frames "
                  + "(at least \(bound)), PSNR of those \(String(format: "%.1f", psnr)) dB")
            #expect(decoded >= bound, "a picture within a second of starting")
            #expect(psnr >= 30, "decodable pictures, not concealment")
        }
    }

    /// A Sluice receiver that joins 1.5 s into a stream whose encoder has no periodic keyframe: its
    /// first receiver report is a new receiver's (`keyframeOnNewReceiver`), and the keyframe it
    /// asks for arrives within a round trip. Its first report reaches the sender because the
    /// sender's RTCP port is its RTP port + 1, where the receiver looks before any sender report.
    @Test func aSluiceReceiverJoiningLateGetsAKeyframeForItsFirstReport() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir, frames: Self.frames)
            let port = try RTPInteropTests.freePortPair()
            var options = TranscodeOptions()
            options.codec = .vp8
            options.keyframeInterval = 1000  // nothing periodic
            let sender = try Transcoder(input: reference, sendingTo: RTPDestination(address: try SocketAddress(host: "127.0.0.1", port: port)),
                                        options: options)
            let sdp = SessionDescription(describing: sender.rtpSender!, frameRate: Samples.frameRate)
            let output = dir.file("late.y4m")
            let thread = WorkerThread { _ = try? sender.run() }
            defer { thread.join() }
            Thread.sleep(forTimeInterval: 1.5)
            var receiveOptions = ReceiveOptions()
            receiveOptions.limits.silence = .seconds(5)
            let receiver = try RTPReceivePipeline(stream: try RTPStreamDescription(media: sdp.media[0], in: sdp), output: output,
                                                  options: receiveOptions)
            _ = try receiver.run()
            let offset = 1.5
            let (decoded, psnr) = try Self.tailPSNR(output, reference)
            let statistics = sender.rtpSender!.statistics()
            // Half a second: a round trip and the encoder's next frame, with room for a busy machine.
            let bound = Self.frames - Int(((offset + 0.5) * Self.rate).rounded(.up))
            print("late Sluice receiver at 1.5 s: \(decoded) of \(Self.frames) frames (at least \(bound)), PSNR \(String(format: "%.1f", psnr)) dB, "
                  + "sender heard \(statistics.newReceivers) new receiver(s), \(statistics.keyframeRequests) keyframe requests")
            #expect(statistics.newReceivers == 1)
            #expect(decoded >= bound)
            #expect(psnr >= 30)
        }
    }
}
