// A whole pipebench run as JSON: the machine, the size and every scenario's result.
import Foundation

/// What `--json` writes and `--compare` reads.
public struct BenchReport: Codable, Sendable, Equatable {
    public var machine: MachineInfo
    /// Seconds per scenario asked for (`--seconds`), and frames per repetition if set (`--frames`).
    public var seconds: Double
    public var frames: Int?
    /// Wall time of the whole run.
    public var totalSeconds: Double
    public var results: [ScenarioResult]

    public init(machine: MachineInfo, size: RunSize, totalSeconds: Double, results: [ScenarioResult]) {
        self.machine = machine
        self.seconds = size.seconds
        self.frames = size.frames
        self.totalSeconds = totalSeconds
        self.results = results
    }

    /// The report as pretty-printed JSON with sorted keys.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// Reads a report written by `json()`.
    public init(json data: Data) throws {
        self = try JSONDecoder().decode(BenchReport.self, from: data)
    }

    /// Reads the report in the file at `path`.
    public init(contentsOf path: String) throws {
        try self.init(json: try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
