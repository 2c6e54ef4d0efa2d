// The figures a scenario returns: named metrics, ratio against a bare library, per-stage latency.

/// One measured figure, e.g. 412.5 frames/s.
public struct Metric: Codable, Sendable, Equatable {
    public var name: String
    public var value: Double
    public var unit: String
    /// Whether a larger value is an improvement (throughput) or not (latency, mallocs).
    public var higherIsBetter: Bool

    public init(_ name: String, _ value: Double, unit: String, higherIsBetter: Bool = true) {
        self.name = name
        self.value = value
        self.unit = unit
        self.higherIsBetter = higherIsBetter
    }
}

/// Latency percentiles of one pipeline stage, in milliseconds.
public struct StageLatency: Codable, Sendable, Equatable {
    public var stage: String
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var max: Double
    public var count: Int

    public init(stage: String, p50: Double, p90: Double, p99: Double, max: Double, count: Int) {
        self.stage = stage
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.max = max
        self.count = count
    }

    /// The percentiles of `milliseconds` (nearest rank); zeros when empty.
    public init(stage: String, milliseconds: [Double]) {
        let sorted = milliseconds.sorted()
        func rank(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[Swift.min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
        }
        self.init(stage: stage, p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: sorted.last ?? 0,
                  count: sorted.count)
    }
}

/// What one scenario measured.
public struct ScenarioResult: Codable, Sendable, Equatable {
    public var scenario: String
    public var metrics: [Metric]
    /// Sluice's throughput over the bare library's, measured in the same run (1 = no overhead).
    public var ratio: Double?
    /// The ratio this scenario should reach (e.g. 0.97).
    public var target: Double?
    /// The ratio of each alternating round, of which `ratio` is the median; nil for scenarios that
    /// measure otherwise (and in results written before it was kept). Their spread is this machine's
    /// noise over the run: a target inside it is neither clearly met nor clearly missed.
    public var roundRatios: [Double]?
    /// The CPU other processes and the host took while the scenario ran; nil where it could not be
    /// read (and in results written before it was kept).
    public var machineLoad: MachineLoad?
    public var latencies: [StageLatency]
    public var notes: [String]
    /// Wall time the scenario took, warm-up included.
    public var seconds: Double
    /// Checks of a scenario that checks as it measures ("soak") that did not hold; nil or empty when all did.
    public var failures: [String]?

    public init(scenario: String, metrics: [Metric] = [], ratio: Double? = nil, target: Double? = nil,
                latencies: [StageLatency] = [], notes: [String] = [], seconds: Double = 0, failed: [String]? = nil) {
        self.failures = failed
        self.scenario = scenario
        self.metrics = metrics
        self.ratio = ratio
        self.target = target
        self.latencies = latencies
        self.notes = notes
        self.seconds = seconds
    }

    /// The metric called `name`, if measured.
    public subscript(metric name: String) -> Metric? { metrics.first { $0.name == name } }

    /// The lowest and highest round's ratio, when there were two rounds or more.
    public var ratioSpread: ClosedRange<Double>? {
        guard let rounds = roundRatios, rounds.count > 1, let low = rounds.min(), let high = rounds.max() else { return nil }
        return low...high
    }

    /// Whether the ratio reaches the target; `nil` when either is missing.
    public var meetsTarget: Bool? {
        guard let ratio, let target else { return nil }
        return ratio >= target
    }
}
