// The terminal table of a run: one line per metric, the ratio against bare on each scenario's first line.
import Foundation

/// Renders results as aligned text columns: scenario, metric, value, unit, ratio, target.
public enum ResultTable {
    public static func render(_ results: [ScenarioResult]) -> String {
        var rows: [[String]] = [["scenario", "metric", "value", "unit", "sluice/bare (rounds)", "target"]]
        for result in results {
            func percent(_ fraction: Double) -> String { format(fraction * 100, digits: 1) }
            var ratio = result.ratio.map { percent($0) + "%" } ?? ""
            if let spread = result.ratioSpread { ratio += " (\(percent(spread.lowerBound))-\(percent(spread.upperBound)))" }
            let target: String
            switch result.meetsTarget {
            case .some(let met): target = "≥" + format(result.target! * 100, digits: 0) + "% " + (met ? "ok" : "MISSED")
            case .none: target = ""
            }
            for (index, metric) in result.metrics.enumerated() {
                rows.append([index == 0 ? result.scenario : "", metric.name, format(metric.value), metric.unit,
                             index == 0 ? ratio : "", index == 0 ? target : ""])
            }
            if let load = result.machineLoad {
                // How busy the rest of the machine was: a ratio measured beside others' work is noisy.
                var value = format(load.otherProcesses, digits: 2)
                if load.stolen >= 0.005 { value += " + \(format(load.stolen, digits: 2)) stolen" }
                rows.append(["", "others' CPU", value, "cores", "", ""])
            }
            for latency in result.latencies {
                rows.append(["", "latency " + latency.stage,
                             "p50 \(format(latency.p50, digits: 2)) p90 \(format(latency.p90, digits: 2)) p99 \(format(latency.p99, digits: 2))",
                             "ms", "", ""])
            }
        }
        return align(rows, rightAligned: [2, 4])
    }

    /// `rows` with each column padded to its widest cell; columns in `rightAligned` pad on the left.
    static func align(_ rows: [[String]], rightAligned: Set<Int>) -> String {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return rightAligned.contains(column) ? padding + cell : cell + padding
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }.joined(separator: "\n")
    }

    /// `value` with `digits` decimals, or fewer decimals as it grows (3 significant figures at least).
    public static func format(_ value: Double, digits: Int? = nil) -> String {
        let decimals = digits ?? (abs(value) >= 100 ? 0 : abs(value) >= 10 ? 1 : 2)
        return String(format: "%.\(decimals)f", value)
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
