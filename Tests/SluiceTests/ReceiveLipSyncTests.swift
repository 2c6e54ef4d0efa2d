import Foundation
import Sluice
import Testing
import TestSupport

/// A recording of a call's audio and video (`RTPReceivePipeline` into one container file) is placed
/// on the sender's clock by its RTCP sender reports (RFC 3550 §6.4.1), not at each stream's first
/// frame: a sender whose audio starts 500 ms after its video records in sync.
@Suite(.serialized) struct ReceiveLipSyncTests {
    /// One frame of the flash-and-beep clip (25 fps).
    static let oneFrame = 0.04

    /// The H.264 and Opus frames of `AVSyncTests`' clip, read from a Matroska file.
    static func clipFrames(in dir: URL) throws -> (video: [EncodedFrame], audio: [EncodedFrame]) {
        let clip = dir.file("clip.mkv")
        try AVSyncTests.makeInput(clip, audioCodec: "libopus")
        let reader = try ContainerReader(path: clip)
        let videoIndex = try reader.firstStream(.video).index, audioIndex = try reader.firstStream(.audio).index
        var video: [EncodedFrame] = [], audio: [EncodedFrame] = []
        while let (stream, frame) = try reader.next(pool: nil) {
            if stream == videoIndex { video.append(frame) } else if stream == audioIndex { audio.append(frame) }
        }
        return (video, audio)
    }

    /// Sends `video` and `audio` to the two sessions as a live sender would: each frame when its pts
    /// comes on one clock (so audio whose first pts is 0.5 s starts 0.5 s late), each stream's session
    /// started (and so its first sender report sent) with its first frame; both say BYE at the end.
    static func sendLive(video: [EncodedFrame], to videoSession: RTPSendSession<H264Packetizer>,
                         audio: [EncodedFrame], to audioSession: RTPSendSession<OpusPacketizer>) throws {
        let schedule = (video.map { ($0, true) } + audio.map { ($0, false) }).sorted { $0.0.pts.seconds < $1.0.pts.seconds }
        let start = Date()
        var started = (video: false, audio: false)
        for (frame, isVideo) in schedule {
            let due = start.addingTimeInterval(frame.pts.seconds)
            if due > Date() { Thread.sleep(until: due) }
            if isVideo {
                if !started.video { videoSession.start(); started.video = true }
                try videoSession.send(frame)
            } else {
                if !started.audio { audioSession.start(); started.audio = true }
                try audioSession.send(frame)
            }
        }
        videoSession.close()
        audioSession.close()
    }

    /// Written by the receiving thread before `join()` returns.
    final class ErrorBox: @unchecked Sendable { var error: String? }

    @Test func audioStartingHalfASecondLateIsRecordedInSync() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let (video, allAudio) = try Self.clipFrames(in: dir)
            let audio = allAudio.filter { $0.pts.seconds >= 0.5 }
            let firstAudio = try #require(audio.first).pts.seconds
            // ffmpeg moves the clip's streams by Opus's 6.5 ms pre-skip (Matroska's CodecDelay), rounded
            // to the file's 1 ms timebase: the video starts at 7 ms, and the audio leaves 0.494 s after it.
            let firstVideo = try #require(video.first).pts.seconds
            #expect(video.count == 100 && abs(firstAudio - 0.5) < 0.021 && abs(firstVideo - 0.007) < 0.002)

            let local = try SocketAddress(host: "127.0.0.1", port: 0)
            var videoStream = RTPStreamDescription(codec: .h264, payloadType: 96, local: local)
            var audioStream = RTPStreamDescription(codec: .opus, payloadType: 111, local: local)
            videoStream.multiplexed = true
            audioStream.multiplexed = true
            videoStream.frameRate = Rational(25, 1)
            var options = ReceiveOptions()
            options.limits.silence = .seconds(5)
            let output = dir.file("call.mkv")
            let receiver = try RTPReceivePipeline(streams: [videoStream, audioStream], output: output, options: options)
            let failure = ErrorBox()
            let receiving = WorkerThread {
                do { _ = try receiver.run() } catch { failure.error = "\(error)" }
            }

            let videoSession = try RTPSendSession(
                packetizer: try H264Packetizer(), configuration: try .init(remote: receiver.localAddresses[0], multiplexed: true,
                                                                          sender: .init(payloadType: 96)))
            let audioSession = try RTPSendSession(
                packetizer: try OpusPacketizer(), configuration: try .init(remote: receiver.localAddresses[1], multiplexed: true,
                                                                          sender: .init(payloadType: 111)))
            try Self.sendLive(video: video, to: videoSession, audio: audio, to: audioSession)
            receiving.join()
            #expect(failure.error == nil, "\(failure.error ?? "")")

            #expect(receiver.endReason(ofStream: 0) == "the sender said BYE" && receiver.endReason(ofStream: 1) == "the sender said BYE")
            #expect(receiver.synchronizedBySenderReports == true)
            let videoOffset = try #require(receiver.timelineOffset(ofStream: 0))
            let audioOffset = try #require(receiver.timelineOffset(ofStream: 1))
            print("late audio: timeline offsets video \(videoOffset) s, audio \(audioOffset) s (first pts video \(firstVideo) s, audio \(firstAudio) s)")
            #expect(videoOffset == 0)
            #expect(abs(audioOffset - (firstAudio - firstVideo)) < 0.01,
                    "audio placed \(audioOffset) s after the video, sent \(firstAudio - firstVideo) s after it")

            let probedVideo = try ContainerTranscodeTests.probe(output, stream: "v:0")
            let probedAudio = try ContainerTranscodeTests.probe(output, stream: "a:0")
            #expect(probedVideo["nb_read_frames"] == "100", "\(probedVideo)")
            #expect(Int(probedAudio["nb_read_frames"] ?? "") == audio.count, "\(probedAudio), \(audio.count) sent")
            let offsets = try AVSyncTests.offsets(in: output, scratch: dir)
            print("late audio: beep minus flash \(offsets.map { Int(($0 * 1000).rounded()) }) ms")
            #expect(offsets.count == AVSyncTests.marks.count)
            for offset in offsets {
                #expect(abs(offset) < Self.oneFrame, "audio \(Int(offset * 1000)) ms from video")
            }
        }
    }
}
