// An SVG bar chart of a run, written by hand: one bar per scenario.
import Foundation

/// Draws one horizontal bar per scenario: Sluice/bare in % on a 0-120% axis with the target marked, or,
/// for scenarios without a bare comparison, the first metric scaled to the largest of its unit.
public enum SVGChart {
    static let rowHeight = 22
    static let labelWidth = 200
    static let barWidth = 420
    static let axisMaximum = 1.2

    public static func render(_ results: [ScenarioResult], title: String = "pipebench") -> String {
        let height = 50 + rowHeight * results.count + 20
        let width = labelWidth + barWidth + 160
        var lines = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" font-family=\"sans-serif\" font-size=\"12\">",
            "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>",
            "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">\(escape(title)): Sluice / bare library (throughput where there is no bare run)</text>",
        ]
        for percent in stride(from: 0, through: 120, by: 20) {
            let x = labelWidth + Int(Double(percent) / 100 / axisMaximum * Double(barWidth))
            lines.append("<line x1=\"\(x)\" y1=\"35\" x2=\"\(x)\" y2=\"\(height - 20)\" stroke=\"#ddd\"/>")
            lines.append("<text x=\"\(x)\" y=\"\(height - 6)\" text-anchor=\"middle\" fill=\"#666\">\(percent)%</text>")
        }
        let largest = Dictionary(results.compactMap { $0.metrics.first.map { ($0.unit, $0.value) } }, uniquingKeysWith: max)
        for (row, result) in results.enumerated() {
            let y = 40 + row * rowHeight
            lines.append("<text x=\"\(labelWidth - 8)\" y=\"\(y + 14)\" text-anchor=\"end\">\(escape(result.scenario))</text>")
            let fraction: Double
            let label: String
            let colour: String
            if let ratio = result.ratio {
                fraction = ratio / axisMaximum
                label = ResultTable.format(ratio * 100, digits: 1) + "%"
                colour = result.meetsTarget == false ? "#d9534f" : "#5cb85c"
            } else if let metric = result.metrics.first {
                fraction = metric.value / max(largest[metric.unit] ?? 1, 1e-9)
                label = ResultTable.format(metric.value) + " " + metric.unit
                colour = "#5b8dd9"
            } else {
                (fraction, label, colour) = (0, "", "#999")
            }
            let length = Int(min(max(fraction, 0), 1) * Double(barWidth))
            lines.append("<rect class=\"bar\" x=\"\(labelWidth)\" y=\"\(y + 3)\" width=\"\(length)\" height=\"\(rowHeight - 6)\" fill=\"\(colour)\"/>")
            lines.append("<text x=\"\(labelWidth + length + 6)\" y=\"\(y + 14)\">\(escape(label))</text>")
            if let target = result.target, result.ratio != nil {
                let x = labelWidth + Int(target / axisMaximum * Double(barWidth))
                lines.append("<line x1=\"\(x)\" y1=\"\(y + 1)\" x2=\"\(x)\" y2=\"\(y + rowHeight - 1)\" stroke=\"black\" stroke-dasharray=\"3,2\"/>")
            }
        }
        lines.append("</svg>")
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` with the XML special characters escaped.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
