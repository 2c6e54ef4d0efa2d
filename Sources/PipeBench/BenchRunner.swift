// Runs the chosen scenarios one after the other and gathers a report.

/// Runs scenarios in order and collects their results with the machine's description.
public enum BenchRunner {
    /// Runs `scenarios` at `size`, calling `progress` before each with its name and after each with
    /// its result; a scenario that throws stops the run.
    public static func run(_ scenarios: [any Scenario], size: RunSize,
                           starting: (any Scenario) -> Void = { _ in },
                           finished: (ScenarioResult) -> Void = { _ in }) throws -> BenchReport {
        let machine = MachineInfo.current()
        let start = ProcessClock.now()
        var results: [ScenarioResult] = []
        for scenario in scenarios {
            starting(scenario)
            var (result, load) = try MachineLoad.measure { try scenario.run(size) }
            result.machineLoad = load
            results.append(result)
            finished(result)
        }
        return BenchReport(machine: machine, size: size, totalSeconds: ProcessClock.now() - start, results: results)
    }
}
