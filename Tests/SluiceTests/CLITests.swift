import Foundation
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
}
