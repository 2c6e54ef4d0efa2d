// JSON round trip, --compare arithmetic and the SVG chart, on synthetic results.
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import PipeBench
import Testing

@Suite struct ReportTests {
    static func report(sluice: Double, bare: Double, transcode: Double) -> BenchReport {
        BenchReport(
            machine: MachineInfo(cores: 2, cpuModel: "Test CPU", swiftVersion: "6.3.1", libraries: ["libvpx": "v1.12.0"],
                                 date: "2026-01-01T00:00:00Z", gitCommit: "abc"),
            size: RunSize(seconds: 1, frames: 10), totalSeconds: 3,
            results: [
                ScenarioResult(scenario: "encode.vp8",
                               metrics: [Metric("sluice", sluice, unit: "frames/s"), Metric("bare", bare, unit: "frames/s")],
                               ratio: sluice / bare, target: 0.97,
                               latencies: [StageLatency(stage: "encode", milliseconds: [1, 2, 3, 4])], notes: ["n"]),
                ScenarioResult(scenario: "transcode.h264-vp8",
                               metrics: [Metric("sluice", transcode, unit: "frames/s"),
                                         Metric("latency", 10, unit: "ms", higherIsBetter: false)]),
            ])
    }

    @Test func jsonRoundTrip() throws {
        let report = Self.report(sluice: 400, bare: 500, transcode: 90)
        #expect(try BenchReport(json: report.json()) == report)
    }

    @Test func compareGivesPercentChangePerMetric() throws {
        let old = Self.report(sluice: 400, bare: 500, transcode: 100)
        var new = Self.report(sluice: 500, bare: 500, transcode: 90)
        new.results[1].metrics[1].value = 5
        let changes = Comparison.changes(from: old, to: new)
        func change(_ scenario: String, _ metric: String) -> MetricChange? {
            changes.first { $0.scenario == scenario && $0.metric == metric }
        }
        #expect(change("encode.vp8", "sluice")?.percent == 25)
        #expect(change("encode.vp8", "bare")?.percent == 0)
        #expect(change("encode.vp8", "bare")?.improved == nil)
        #expect(change("encode.vp8", "sluice/bare")?.percent == 25)  // 80% -> 100%
        #expect(change("transcode.h264-vp8", "sluice")?.percent == -10)
        #expect(change("transcode.h264-vp8", "sluice")?.improved == false)
        #expect(change("transcode.h264-vp8", "latency")?.percent == -50)
        #expect(change("transcode.h264-vp8", "latency")?.improved == true)  // lower latency is better
        #expect(Comparison.render(changes).contains("+25.0% better"))
    }

    @Test func percentilesByNearestRank() {
        let latency = StageLatency(stage: "s", milliseconds: (1...100).map(Double.init))
        #expect([latency.p50, latency.p90, latency.p99, latency.max] == [50, 90, 99, 100])
    }

    @Test func chartIsWellFormedWithOneBarPerScenario() throws {
        let results = Self.report(sluice: 400, bare: 500, transcode: 90).results
        let svg = SVGChart.render(results)
        let document = try XMLDocument(xmlString: svg)
        #expect(document.rootElement()?.name == "svg")
        let bars = try document.nodes(forXPath: "//*[local-name()='rect'][@class='bar']")
        #expect(bars.count == results.count)
    }

    /// The rounds' lowest and highest ratio stand beside the median, and survive the JSON; a result
    /// written before they were kept reads back without them.
    @Test func tableShowsTheRoundsSpreadOfTheRatio() throws {
        var report = Self.report(sluice: 400, bare: 500, transcode: 90)
        report.results[0].roundRatios = [0.81, 0.776, 0.8, 0.843]
        #expect(report.results[0].ratioSpread == 0.776...0.843)
        let table = ResultTable.render(report.results)
        #expect(table.contains("80.0% (77.6-84.3)"), "\(table)")
        #expect(try BenchReport(json: report.json()) == report)
        report.results[0].roundRatios = [0.8]
        #expect(report.results[0].ratioSpread == nil)
        let older = String(decoding: try report.json(), as: UTF8.self).replacingOccurrences(of: "\"roundRatios\"", with: "\"unknown\"")
        #expect(try BenchReport(json: Data(older.utf8)).results[0].roundRatios == nil)
    }

    /// The whole-CPU line of /proc/stat gives busy and stolen ticks; two readings give the cores'
    /// worth other processes and the host used between them, never below zero.
    @Test func othersLoadComesFromProcStatLessTheRunsOwnCPU() throws {
        let stat = """
            cpu  6920419 14971 747093 3988420 58993 0 47309 36020 0 0
            cpu0 3460209 7485 373546 1994210 29496 0 23654 18010 0 0
            intr 1 2 3
            """
        let ticks = try #require(MachineLoad.Ticks(procStat: stat))
        #expect(ticks.busy == 6_920_419 + 14_971 + 747_093 + 0 + 47_309)
        #expect(ticks.steal == 36_020)
        #expect(MachineLoad.Ticks(procStat: "cpu  1 2 3\n") == nil, "too few fields")
        #expect(MachineLoad.Ticks(procStat: "intr 1 2 3 4 5 6 7 8\n") == nil, "no cpu line")

        var start = MachineLoad.Reading(ticks: ticks, ownCPU: 10, wall: 100, ticksPerSecond: 100)
        var end = start
        end.ticks.busy += 300  // 3 CPU seconds in all
        end.ticks.steal += 20
        end.ownCPU += 1
        end.wall += 2
        let load = MachineLoad(from: start, to: end)
        #expect(load == MachineLoad(otherProcesses: 1, stolen: 0.1))
        start.ownCPU -= 5  // more than /proc/stat counted: rounding of the ticks, never negative
        #expect(MachineLoad(from: start, to: end).otherProcesses == 0)
    }

    @Test func tableShowsHowBusyTheRestOfTheMachineWas() throws {
        var report = Self.report(sluice: 400, bare: 500, transcode: 90)
        report.results[0].machineLoad = MachineLoad(otherProcesses: 0.934, stolen: 0.02)
        report.results[1].machineLoad = MachineLoad(otherProcesses: 0, stolen: 0.001)
        let lines = ResultTable.render(report.results).split(separator: "\n").map { String($0) }
        #expect(lines.contains { $0.contains("others' CPU") && $0.contains("0.93 + 0.02 stolen") && $0.hasSuffix("cores") })
        #expect(lines.contains { $0.contains("others' CPU") && $0.contains("0.00") && !$0.contains("stolen") })
        #expect(try BenchReport(json: report.json()) == report)
        let older = String(decoding: try report.json(), as: UTF8.self).replacingOccurrences(of: "\"machineLoad\"", with: "\"unknown\"")
        #expect(try BenchReport(json: Data(older.utf8)).results[0].machineLoad == nil)
    }

    @Test func tableAlignsColumnsAndShowsTheRatio() {
        let table = ResultTable.render(Self.report(sluice: 400, bare: 500, transcode: 90).results)
        let lines = table.split(separator: "\n")
        #expect(lines[0].hasPrefix("scenario"))
        #expect(table.contains("80.0%"))
        #expect(table.contains("MISSED"))
        let unitColumn = lines[0].range(of: "unit")!.lowerBound.utf16Offset(in: lines[0])
        #expect(lines[1].dropFirst(unitColumn).hasPrefix("frames/s"))
    }
}
