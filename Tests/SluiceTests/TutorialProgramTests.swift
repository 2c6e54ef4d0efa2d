import Foundation
import Sluice
import Testing
import TestSupport

/// The programs the DocC tutorials build (Examples/, shown step by step in
/// Sources/Sluice/Sluice.docc/Tutorials), run as a reader would run them.
@Suite struct TutorialProgramTests {
    static func program(_ name: String) -> String { TestSupport.productsDirectory.appendingPathComponent(name).path }

    /// The tutorials' code is written from the programs (tools/tutorial-steps): each step is the
    /// next with parts left out, in the same order, and the last is the program without its marks.
    @Test func theTutorialStepsAreWrittenFromTheBuiltPrograms() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let root = TestSupport.repositoryRoot
            let run = try TestSupport.run(root.appendingPathComponent("tools/tutorial-steps").path, [dir.path])
            #expect(run.status == 0, "\(run.stderr)")
            func lines(_ path: String) throws -> [String] {
                try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            }
            for (prefix, steps, program) in [("transcode", 2...4, "Examples/TranscodeFile/main.swift"),
                                             ("call", 1...4, "Examples/LoopbackCall/main.swift")] {
                let files = try steps.map { try lines(dir.file("\(prefix)-0\($0)-main.swift")) }
                let unmarked = try lines(root.appendingPathComponent(program).path).filter { line in
                    let text = line.trimmingCharacters(in: .whitespaces)
                    return !(text == "// @end" || text.hasPrefix("// @step "))
                }
                #expect(files.last == unmarked, "\(prefix): the last step is the program")
                for (earlier, later) in zip(files, files.dropFirst()) {
                    #expect(earlier.count < later.count, "\(prefix): each step adds lines")
                    var rest = later[...]
                    for line in earlier {
                        guard let found = rest.firstIndex(of: line) else {
                            Issue.record("\(prefix): a step has a line the next does not have there: \(line)")
                            break
                        }
                        rest = rest[(found + 1)...]
                    }
                }
            }
        }
    }

    @Test func theTranscodeProgramMakesA640x360WebMOfTheSample() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.file("sample.webm")
            let run = try TestSupport.run(Self.program("example-transcode"), [TestSupport.sampleIVF, output])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdoutText.contains("\(TestSupport.sampleFrameCount) frames"), "\(run.stdoutText)")
            let probed = try TestSupport.probeVideo(output)
            #expect(probed.codec == "vp8" && probed.width == 640 && probed.height == 360)
            #expect(probed.frames == TestSupport.sampleFrameCount)
        }
    }

    /// What `tools/demo` does: the bundled MP4 (H.264 with B-frames, AAC) to a WebM with both streams.
    @Test func theBundledMP4BecomesAWebMWithVideoAndAudio() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.file("demo.webm")
            var options = TranscodeOptions()
            options.bitrate = 500_000
            options.keyframeInterval = 50
            let summary = try Transcoder(input: TestSupport.sampleMP4, output: output, options: options).run()
            #expect(summary.frames == TestSupport.sampleFrameCount)
            let video = try TestSupport.probeVideo(output)
            #expect(video.codec == "vp8" && video.frames == TestSupport.sampleFrameCount)
            let audio = try TestSupport.ffprobe(output, entries: "stream=codec_name,nb_read_packets",
                                                extra: ["-select_streams", "a:0", "-count_packets"])
            // 5.3 s of 20 ms Opus packets.
            #expect(audio["codec_name"] == "opus" && (260...270).contains(Int(audio["nb_read_packets"] ?? "") ?? 0), "\(audio)")
        }
    }

    @Test func theTranscodeProgramNamesAMissingInputAndFails() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let run = try TestSupport.run(Self.program("example-transcode"), [dir.file("missing.mp4"), dir.file("out.webm")])
            #expect(run.status == 1)
            #expect(run.stderr.contains("missing.mp4"), "\(run.stderr)")
            let usage = try TestSupport.run(Self.program("example-transcode"), [])
            #expect(usage.status == 2 && usage.stderr.contains("usage: example-transcode"))
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func theCallProgramRecordsTheVideoItReceives() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.file("received.ivf")
            let run = try TestSupport.run(Self.program("example-call"), [TestSupport.sampleIVF, output, "2"], timeout: 40)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdoutText.contains("connected over"), "\(run.stdoutText)")
            // Two seconds at 25 fps, less the first moments before the first keyframe arrived.
            let probed = try TestSupport.probeVideo(output)
            #expect(probed.codec == "vp8" && probed.width == 640 && probed.height == 360)
            #expect(probed.frames >= 30, "\(probed.frames) frames in \(output)")
        }
    }
}
