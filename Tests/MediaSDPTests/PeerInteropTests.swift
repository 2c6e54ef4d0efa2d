/// ffmpeg and GStreamer as peers: each receives RTP described by an SDP that Sluice wrote (what
/// `sluice send` will hand them), and Sluice reads the SDP ffmpeg writes for the same stream.
import Foundation
import MediaSDP
import TestSupport
import Testing

@Suite struct PeerInteropTests {
    /// The description of a VP8 stream to `port` on the loopback, built from the model.
    static func vp8Description(port: Int) -> SessionDescription {
        var video = MediaDescription(type: "video", port: port, formats: ["96"])
        video.append(SDPRTPMap(payloadType: 96, encodingName: "VP8", clockRate: 90000))
        video.appendAttribute("recvonly")
        return SessionDescription(origin: SDPOrigin(sessionID: 1, sessionVersion: 1), sessionName: "Sluice",
                                  connection: SDPConnection(address: "127.0.0.1"), media: [video])
    }

    /// Writes Sluice's SDP for a fresh even port (RTCP on the next, RFC 3550 §11), starts ffmpeg sending the
    /// bundled clip there in a loop (so its keyframe comes round again whenever the receiver starts, and
    /// writing its own SDP to `ffmpeg.sdp`), and runs `receive` with the folder and the SDP's path.
    static func withVP8Sender(_ receive: (URL, String, Int) throws -> Void) throws {
        try TestSupport.withTemporaryDirectory { folder in
            let port = 2 * Int.random(in: 20_000..<29_999)
            let sdpPath = folder.file("sluice.sdp")
            try vp8Description(port: port).serialized().write(toFile: sdpPath, atomically: true, encoding: .utf8)
            let sender = Process()
            sender.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            sender.arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-re", "-stream_loop", "-1",
                                "-i", TestSupport.sampleIVF, "-t", "30", "-c", "copy", "-f", "rtp",
                                "-sdp_file", folder.file("ffmpeg.sdp"), "rtp://127.0.0.1:\(port)"]
            sender.standardOutput = FileHandle.nullDevice
            sender.standardError = FileHandle.nullDevice
            try sender.run()
            defer {
                // SIGKILL: ffmpeg paced by -re does not stop at once on SIGTERM, and it writes no file here.
                if sender.isRunning { kill(sender.processIdentifier, SIGKILL) }
                sender.waitUntilExit()
            }
            try receive(folder, sdpPath, port)
        }
    }

    @Test func ffmpegReceivesFromSluiceSDP() throws {
        try Self.withVP8Sender { folder, sdpPath, port in
            let output = folder.file("received.y4m")
            let receiver = try TestSupport.run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                                                          "-protocol_whitelist", "file,udp,rtp", "-i", sdpPath,
                                                          "-frames:v", "10", output], timeout: 25)
            #expect(receiver.status == 0, "\(receiver.stderr)")
            let probed = try TestSupport.probeVideo(output)
            #expect(probed.width == 640 && probed.height == 360 && probed.frames == 10)

            // And ffmpeg's own description of what it sends reads as the same stream.
            let ffmpegSDP = try SessionDescription(parsing: String(contentsOfFile: folder.file("ffmpeg.sdp"), encoding: .utf8))
            #expect(ffmpegSDP.media[0].port == port)
            #expect(try ffmpegSDP.media[0].rtpMap(for: 96) == SDPRTPMap(payloadType: 96, encodingName: "VP8", clockRate: 90000))
            #expect(ffmpegSDP.media[0].connection(in: ffmpegSDP)?.address == "127.0.0.1")
        }
    }

    /// GStreamer's sdpdemux sets up its RTP session from the SDP alone.
    @Test func gstreamerReceivesFromSluiceSDP() throws {
        try Self.withVP8Sender { folder, sdpPath, _ in
            let output = folder.file("received.y4m")
            let receiver = try TestSupport.run("gst-launch-1.0", [
                "-q", "filesrc", "location=\(sdpPath)", "!", "sdpdemux", "latency=100", "!", "rtpvp8depay", "!", "vp8dec",
                "!", "identity", "eos-after=10", "!", "videoconvert", "!", "y4menc", "!", "filesink", "location=\(output)",
            ], timeout: 25)
            #expect(receiver.status == 0, "\(receiver.stderr)")
            let probed = try TestSupport.probeVideo(output)
            #expect(probed.width == 640 && probed.height == 360 && probed.frames >= 5)
        }
    }
}
