// The change between two runs per scenario and metric, in percent, for `--compare`.

/// One metric of one scenario in an old and a new run.
public struct MetricChange: Sendable, Equatable {
    public var scenario: String
    public var metric: String
    public var unit: String
    public var old: Double
    public var new: Double
    public var higherIsBetter: Bool

    /// (new - old) / old in percent; nil when old is 0.
    public var percent: Double? { old == 0 ? nil : (new - old) / old * 100 }
    /// Whether the change is an improvement (by the metric's direction); nil when unchanged.
    public var improved: Bool? { new == old ? nil : (new > old) == higherIsBetter }
}

/// Matches the scenarios and metrics (by name and unit) two reports share; the ratio counts as a metric.
public enum Comparison {
    public static func changes(from old: BenchReport, to new: BenchReport) -> [MetricChange] {
        new.results.flatMap { result -> [MetricChange] in
            guard let before = old.results.first(where: { $0.scenario == result.scenario }) else { return [] }
            return comparable(result).compactMap { metric in
                comparable(before).first { $0.name == metric.name && $0.unit == metric.unit }.map {
                    MetricChange(scenario: result.scenario, metric: metric.name, unit: metric.unit, old: $0.value,
                                 new: metric.value, higherIsBetter: metric.higherIsBetter)
                }
            }
        }
    }

    /// The result's metrics, and its ratio as a metric "sluice/bare".
    static func comparable(_ result: ScenarioResult) -> [Metric] {
        result.metrics + (result.ratio.map { [Metric("sluice/bare", $0 * 100, unit: "%")] } ?? [])
    }

    /// The changes as aligned text: scenario, metric, old, new, change in %.
    public static func render(_ changes: [MetricChange]) -> String {
        var rows = [["scenario", "metric", "old", "new", "unit", "change"]]
        for change in changes {
            let percent = change.percent.map { ($0 >= 0 ? "+" : "") + ResultTable.format($0, digits: 1) + "%" } ?? "n/a"
            let verdict = change.improved.map { $0 ? " better" : " worse" } ?? ""
            rows.append([change.scenario, change.metric, ResultTable.format(change.old), ResultTable.format(change.new),
                         change.unit, percent + verdict])
        }
        return ResultTable.align(rows, rightAligned: [2, 3, 5])
    }
}
