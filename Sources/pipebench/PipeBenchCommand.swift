// pipebench: measures Sluice's pipelines against the bare libraries they wrap.
import ArgumentParser
import Foundation
import MediaRTP
import PipeBench

@main
struct PipeBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipebench",
        abstract: "Measure Sluice's pipelines against the bare C libraries they wrap.",
        discussion: """
            Each scenario runs Sluice and, where there is one, the bare library (libvpx, libx264, OpenH264, \
            libopus, libsrtp2) on the same input with the same settings, alternating repetitions so that \
            machine noise hits both; figures are medians over repetitions. Run in release: \
            swift run -c release pipebench.

            Table columns: scenario; metric ("sluice" = through Sluice's graph or sessions, "bare" = the \
            library in a plain C loop, other figures as named); value and unit; sluice/bare = the median \
            of the repetitions' throughput ratios (100% = no overhead), with the lowest and highest \
            repetition's in parentheses (the machine's noise over the run); target = the ratio the scenario \
            should reach (99% for codecs, 95% for RTP paths against SRTP alone, 3x and 1.2x libsrtp2 for \
            SRTP) and whether it did. Codec scenarios also time Sluice's codec object alone in a plain \
            loop ("codec alone"), splitting the gap into the wrapper's share and the graph's. "others' \
            CPU" is how busy the rest of the machine was during the scenario, in cores: other processes' \
            CPU time (/proc/stat less this run's own) and time the host took ("stolen"). A ratio measured \
            beside others' work is noise as much as a figure: benchmark a quiet machine.

            Malloc counts per frame or packet are not measured here: the Benchmarks/ package \
            (package-benchmark) keeps them as thresholds (cd Benchmarks && swift package benchmark).

            Files a scenario writes (decoded calls, converted inputs) go to pipebench-<pid>/ in the \
            temporary directory, removed when the run ends or is interrupted.

            Examples:
              pipebench                              the default set
              pipebench 'decode.*' --seconds 8       every decode scenario, 8 s each
              pipebench scale.audio --calls 64       one trial of 64 concurrent Opus calls
              pipebench --json now.json --compare before.json
            """)

    @Flag(name: .long, help: "List the scenarios (* marks the default set) and exit.")
    var list = false

    @Argument(help: "Scenario names or shell globs (\"encode.*\"); none: the default set (about a minute on 2 cores).")
    var scenarios: [String] = []

    @Option(name: .long, help: "Measuring time per scenario, in seconds (warm-up not included).")
    var seconds: Double = 4

    @Option(name: .long, help: "Frames or packets per repetition (video: at most the sample's 132); default: each scenario's own.")
    var frames: Int?

    @Option(name: .long, help: "scale.* scenarios: one trial at this many concurrent calls instead of the search.")
    var calls: Int?

    @Option(name: .long, help: "Network impairment for the call scenarios, e.g. loss=5%,reorder=3%,delay=20ms (sluice send's --impair syntax).")
    var impair: String?

    @Option(name: .long, help: "Write the results and the machine's description (cores, CPU, Swift and library versions, date, git commit) as JSON to this file.")
    var json: String?

    @Option(name: .long, help: "Write an SVG bar chart to this file: one bar per scenario, Sluice/bare in % with the target marked (throughput for scenarios without a bare run).")
    var chart: String?

    @Option(name: .long, help: "Compare with an earlier --json file: print the change of every shared scenario and metric in %.")
    var compare: String?

    mutating func validate() throws {
        guard seconds >= 0 else { throw ValidationError("--seconds must not be negative") }
        if let frames, frames < 1 { throw ValidationError("--frames must be at least 1") }
        if let calls, calls < 1 { throw ValidationError("--calls must be at least 1") }
    }

    func run() throws {
        let registry = ScenarioRegistry.builtIn
        if list {
            for scenario in registry.scenarios {
                print("\(scenario.inDefaultSet ? "*" : " ") \(scenario.name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(scenario.summary)")
            }
            return
        }
        let chosen = try registry.select(scenarios)
        // Read the old report first: a bad file is named before minutes of measuring, not after.
        let old = try compare.map { path in
            do { return try BenchReport(contentsOf: path) } catch {
                throw ValidationError("\(path): not a pipebench JSON report (\(error.localizedDescription))")
            }
        }
        // Inputs and outputs go to one folder, removed at exit or on Ctrl-C.
        ScratchFolder.removeOnInterrupt()
        var size = RunSize(seconds: seconds, frames: frames)
        size.calls = calls
        size.impairment = try impair.map { try ImpairmentProfile(parsing: $0) }
        let report = try BenchRunner.run(chosen, size: size,
                                         starting: { FileHandle.standardError.write(Data("running \($0.name)...\n".utf8)) })
        print(ResultTable.render(report.results))
        print("\nTotal \(ResultTable.format(report.totalSeconds, digits: 1)) s on \(report.machine.cores) cores (\(report.machine.cpuModel))")
        if let json {
            try report.json().write(to: URL(fileURLWithPath: json))
        }
        if let chart {
            try SVGChart.render(report.results).write(toFile: chart, atomically: true, encoding: .utf8)
        }
        if let compare, let old {
            print("\nChange since \(compare) (\(old.machine.date), \(old.machine.gitCommit?.prefix(10) ?? "no commit")):")
            print(Comparison.render(Comparison.changes(from: old, to: report)))
        }
        let failures = report.results.flatMap { result in (result.failures ?? []).map { "\(result.scenario): \($0)" } }
        if !failures.isEmpty {
            FileHandle.standardError.write(Data(("checks failed:\n" + failures.map { "  " + $0 }.joined(separator: "\n") + "\n").utf8))
            throw ExitCode.failure
        }
    }
}
