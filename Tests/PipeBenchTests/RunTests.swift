// A tiny real run of cheap scenarios gives positive figures.
import PipeBench
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
    }
}
