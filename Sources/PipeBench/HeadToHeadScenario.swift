// A scenario made of a Sluice workload and the bare-library workload it is compared with.

/// The two sides of a comparison, each doing one repetition and returning the units it handled.
public struct Workload {
    public var sluice: () throws -> Int
    public var bare: () throws -> Int
    public var notes: [String]
    /// Bits one unit carries (a packet's wire size), to report Gbit/s beside units/s; `nil`: no Gbit/s.
    public var bitsPerUnit: Double?
    /// Further figures printed beside the two rates (a bound, a reference).
    public var extraMetrics: [Metric] = []
    /// Sluice's codec object doing the same work in a plain loop, outside any graph (`HeadToHead`).
    public var alone: (() throws -> Int)?

    public init(notes: [String] = [], bitsPerUnit: Double? = nil, sluice: @escaping () throws -> Int,
                bare: @escaping () throws -> Int, alone: (() throws -> Int)? = nil) {
        self.sluice = sluice
        self.bare = bare
        self.alone = alone
        self.notes = notes
        self.bitsPerUnit = bitsPerUnit
    }
}

/// A scenario that measures `prepare`'s two workloads with `HeadToHead` and reports rates in `unit`.
public struct HeadToHeadScenario: Scenario {
    public let name: String
    public let summary: String
    public let inDefaultSet: Bool
    public let unit: String
    public let target: Double
    /// Makes the inputs (outside the measurement) and the two workloads for a run of `size`.
    public let prepare: @Sendable (RunSize) throws -> Workload

    public init(_ name: String, _ summary: String, inDefaultSet: Bool = true, unit: String, target: Double,
                prepare: @escaping @Sendable (RunSize) throws -> Workload) {
        self.name = name
        self.summary = summary
        self.inDefaultSet = inDefaultSet
        self.unit = unit
        self.target = target
        self.prepare = prepare
    }

    public func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let workload = try prepare(size)
        let outcome = try HeadToHead.run(size, sluice: workload.sluice, bare: workload.bare, alone: workload.alone)
        var result = outcome.result(name, unit: unit, target: target, notes: workload.notes)
        result.metrics += workload.extraMetrics
        if let bits = workload.bitsPerUnit {
            result.metrics += [Metric("sluice", outcome.sluiceRate * bits / 1e9, unit: "Gbit/s"),
                               Metric("bare", outcome.bareRate * bits / 1e9, unit: "Gbit/s")]
        }
        result.seconds = ProcessClock.now() - start
        return result
    }
}
