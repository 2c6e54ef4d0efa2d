// A tiny real run of cheap scenarios gives positive figures.
import Foundation
@testable import PipeBench
import Testing

@Suite struct RunTests {
    @Test func tinyRunsGivePositiveFigures() throws {
        let scenarios = try ScenarioRegistry.builtIn.select(["decode.opus", "srtp.protect.aes128gcm"])
        let report = try BenchRunner.run(scenarios, size: RunSize(seconds: 0, frames: 5))
        #expect(report.results.map(\.scenario) == ["decode.opus", "srtp.protect.aes128gcm"])
        for result in report.results {
            #expect(result.metrics.count >= 2)
            #expect(result.metrics.allSatisfy { $0.value > 0 })
            #expect((result.ratio ?? 0) > 0)
        }
        // A codec scenario also times the codec object alone and splits the gap in two.
        let names = report.results[0].metrics.map(\.name)
        #expect(names == ["sluice", "bare", "codec alone", "codec alone/bare", "graph/codec alone"])
    }

    /// A scenario's converted input and output go to the process's scratch folder, which the command
    /// removes at the end: nothing is written beside it in the temporary directory.
    @Test func scenariosWriteIntoTheScratchFolderOnly() throws {
        let temporary = NSTemporaryDirectory()
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: temporary))
        _ = try BenchRunner.run(try ScenarioRegistry.builtIn.select(["transcode.h264-vp8"]), size: RunSize(seconds: 0, frames: 3))
        let added = Set(try FileManager.default.contentsOfDirectory(atPath: temporary)).subtracting(before)
        #expect(added.allSatisfy { !$0.contains("\(getpid())") || $0 == "pipebench-\(getpid())" }, "\(added)")
        #expect(ScratchFolder.path.hasPrefix(temporary) && ScratchFolder.path.hasSuffix("pipebench-\(getpid())"))
        #expect(FileManager.default.fileExists(atPath: ScratchFolder.file("sample.h264")))
    }

    @Test func aThirdSideRunsInEveryRoundAndSplitsTheRatio() throws {
        var calls = (sluice: 0, bare: 0, alone: 0)
        let outcome = try HeadToHead.run(RunSize(seconds: 0.001, frames: 1),
                                         sluice: { calls.sluice += 1; usleep(4000); return 1 },
                                         bare: { calls.bare += 1; usleep(1000); return 1 },
                                         alone: { calls.alone += 1; usleep(2000); return 1 })
        #expect(calls.sluice == calls.bare && calls.bare == calls.alone && calls.alone >= 3)
        let result = outcome.result("x", unit: "u", target: 1)
        let metrics = Dictionary(uniqueKeysWithValues: result.metrics.map { ($0.name, $0.value) })
        #expect(result.roundRatios?.count == calls.sluice - 1, "every measured round (not the warm-up) gives a ratio")
        #expect(result.ratioSpread.map { $0.contains(result.ratio!) } == true)
        // Sleeps of 4, 2 and 1 ms: the graph side at about half the alone side, which is at half the bare one.
        #expect((20...75).contains(metrics["codec alone/bare"]!))
        #expect((20...75).contains(metrics["graph/codec alone"]!))
    }
}

@Suite struct Transcode720pTests {
    /// The scenario on a small 720p clip of its own: Sluice and ffmpeg both transcode the frames asked
    /// for, and bare libvpx encodes them alone (the bound).
    @Test func sluiceAndFFmpegTranscodeTheSameFramesAndAreCompared() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("t720-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let mp4 = directory.appendingPathComponent("clip.mp4").path
        let made = try Transcode720pScenario.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i",
                                                            "testsrc2=size=1280x720:rate=25:duration=0.48", "-c:v", "libx264",
                                                            "-pix_fmt", "yuv420p", "-bf", "0", mp4])
        #expect(made.status == 0)
        let result = try Transcode720pScenario(mp4: mp4).run(RunSize(seconds: 0, frames: 8))
        #expect(result.metrics.map(\.name) == ["sluice", "ffmpeg", "encode alone", "sluice cpu", "ffmpeg cpu"])
        #expect(result.metrics.allSatisfy { $0.value > 0 })
        #expect((result.ratio ?? 0) > 0 && result.target == 1.15)
        #expect(result.notes.first?.contains("each of 8 frames (48 in the input)") == true, "\(result.notes)")
    }

    @Test func aMissingClipIsNamed() throws {
        do {
            _ = try Transcode720pScenario(mp4: "/nonexistent/bbb.mp4").run(RunSize(seconds: 0, frames: 8))
            Issue.record("a missing clip ran")
        } catch {
            #expect("\(error)".contains("/nonexistent/bbb.mp4 not found"))
        }
    }
}
