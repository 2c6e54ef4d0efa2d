import Foundation
import Sluice
import Testing
import TestSupport

/// The programs the DocC tutorials build (Examples/, shown step by step in
/// Sources/Sluice/Sluice.docc/Tutorials), run as a reader would run them.
@Suite struct TutorialProgramTests {
    static func program(_ name: String) -> String { TestSupport.productsDirectory.appendingPathComponent(name).path }

    /// Each earlier step of a tutorial is the final program with parts left out: its lines come in
    /// the same order in the program the package builds, so a change to the program that a step
    /// would contradict fails here.
    @Test(arguments: [("transcode", ["transcode-02-main.swift", "transcode-03-main.swift"], "Examples/TranscodeFile/main.swift"),
                      ("call", ["call-01-main.swift", "call-02-main.swift", "call-03-main.swift"], "Examples/LoopbackCall/main.swift")])
    func everyStepIsTheBuiltProgramWithPartsLeftOut(tutorial: String, steps: [String], program: String) throws {
        let root = TestSupport.repositoryRoot
        func lines(_ path: String) throws -> [String] {
            try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8).split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let final = try lines(program)
        for step in steps {
            var remaining = final[...]
            for line in try lines("Sources/Sluice/Sluice.docc/Resources/" + step) {
                guard let found = remaining.firstIndex(of: line) else {
                    Issue.record("\(tutorial): \(step) has a line the program does not have there: \(line)")
                    break
                }
                remaining = remaining[(found + 1)...]
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
