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
    ])
    func badInputEndsWithOneLineAndAFailureStatus(arguments: [String], expected: String) throws {
        let args = arguments.map { $0 == "SAMPLE" ? TestSupport.sampleIVF : $0 }
        let result = try TestSupport.run(sluice, args)
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.hasPrefix("sluice: "))
        #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
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

    @Test func helpExplainsTheFormatsAndOptions() throws {
        let result = try TestSupport.run(sluice, ["transcode", "--help"])
        #expect(result.status == 0)
        for fragment in [".y4m", ".ivf", ".wav", "--bitrate", "--keyint", "--frames", "--threads"] {
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
}
