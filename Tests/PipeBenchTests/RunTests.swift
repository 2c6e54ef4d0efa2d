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
            let load = try #require(result.machineLoad, "how busy the machine was, from /proc/stat")
            #expect(load.otherProcesses >= 0 && load.stolen >= 0)
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

    /// Every side runs once unmeasured, then in every round, the order turning round each time (ABBA).
    /// Only the order and the counts are checked: the sides' times are other tests' load as much as theirs.
    @Test func aThirdSideRunsInEveryRoundAndTheOrderAlternates() throws {
        var order = ""
        let outcome = try HeadToHead.run(RunSize(seconds: 0.001, frames: 1),
                                         sluice: { order += "S"; usleep(400); return 7 },
                                         bare: { order += "B"; usleep(100); return 7 },
                                         alone: { order += "A"; usleep(200); return 7 })
        let rounds = outcome.sluiceRates.count
        #expect(rounds >= 2 && outcome.bareRates.count == rounds && outcome.aloneRates.count == rounds)
        let expected = "SBA" + (0..<rounds).map { $0 % 2 == 0 ? "SAB" : "BAS" }.joined()
        #expect(order == expected)
        let result = outcome.result("x", unit: "u", target: 1)
        #expect(result.roundRatios?.count == rounds, "every measured round (not the warm-up) gives a ratio")
        #expect(result.ratioSpread.map { $0.contains(result.ratio!) } == true)
        #expect(outcome.unitsPerRepetition == 7 && result.notes.contains("\(rounds) rounds of 7 a side"))
    }

    /// The ratio is the median of the rounds' ratios, and the third side splits it into the wrapper's
    /// part (alone/bare) and the graph's (sluice/alone), each the median of its rounds.
    @Test func theThirdSideSplitsTheRatioIntoTheWrappersPartAndTheGraphs() {
        let outcome = HeadToHead(sluiceRates: [26, 20, 24], bareRates: [100, 100, 80], aloneRates: [52, 40, 40])
        let result = outcome.result("x", unit: "u", target: 1)
        let metrics = Dictionary(uniqueKeysWithValues: result.metrics.map { ($0.name, $0.value) })
        #expect(result.roundRatios == [0.26, 0.2, 0.3])
        #expect(result.ratio == 0.26 && result.ratioSpread == 0.2...0.3)
        #expect(metrics["sluice"] == 24 && metrics["bare"] == 100 && metrics["codec alone"] == 40)
        #expect(metrics["codec alone/bare"] == 50, "median of 52%, 40% and 50%")
        #expect(metrics["graph/codec alone"] == 50, "median of 50%, 50% and 60%")
        #expect(result.notes.contains("3 rounds of 0 a side"))
    }
}

@Suite struct Transcode720pTests {
    /// The scenario on a small 720p clip of its own: Sluice and ffmpeg both transcode the frames asked
    /// for, and bare libvpx encodes them alone (the bound).
    @Test func sluiceAndFFmpegTranscodeTheSameFramesAndAreCompared() throws {
        // No process id in the name: RunTests' check that pipebench writes nothing beside its scratch
        // folder looks for this process's id in the temporary directory while this test may run.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("t720-\(UUID().uuidString)")
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
