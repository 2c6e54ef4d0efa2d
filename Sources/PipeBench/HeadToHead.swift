// Sluice and a bare library run in alternation in the same process, so machine noise hits both.

/// A Sluice workload measured against the bare library doing the same work.
///
/// Each side is a closure that does one repetition and returns the units it handled (frames, packets).
/// After one unmeasured warm-up round, rounds run until `size.seconds` have been measured (at least two
/// rounds when there is time for them), alternating which side goes first (ABBA), so that drift and
/// noise spread over both. Rates are medians over rounds; the ratio is the median of the rounds' ratios.
///
/// A third side, `alone` (Sluice's codec object called in a plain loop, no graph), splits the gap in
/// two when given: what the codec wrapper costs over the bare library (a picture copied out of a
/// library that keeps its own), and what the graph costs over the wrapper. It runs in the same
/// rounds, between the other two.
public struct HeadToHead {
    public var sluiceRates: [Double] = []
    public var bareRates: [Double] = []
    public var aloneRates: [Double] = []
    /// What one repetition of a side handled (frames, packets), as the last one returned.
    public var unitsPerRepetition = 0

    /// Runs `sluice` and `bare` (and `alone`, if given) in alternation for `size`.
    public static func run(_ size: RunSize, sluice: () throws -> Int, bare: () throws -> Int,
                           alone: (() throws -> Int)? = nil) throws -> HeadToHead {
        _ = try sluice()
        _ = try bare()
        _ = try alone?()
        var outcome = HeadToHead()
        var measured = 0.0
        var round = 0
        var units = 0
        func rate(_ side: Side, _ body: () throws -> Int) throws -> Double {
            let (handled, wall, _) = try ProcessClock.measure { () throws -> Int in
                switch side {
                case .sluice: try sluiceRepetition(body)
                case .bare: try bareRepetition(body)
                case .alone: try aloneRepetition(body)
                }
            }
            measured += wall
            units = handled
            return Double(handled) / max(wall, 1e-9)
        }
        let minimumRounds = size.seconds > 0 ? 2 : 1
        while round < minimumRounds || measured < size.seconds {
            if round % 2 == 0 {
                outcome.sluiceRates.append(try rate(.sluice, sluice))
                if let alone { outcome.aloneRates.append(try rate(.alone, alone)) }
                outcome.bareRates.append(try rate(.bare, bare))
            } else {
                outcome.bareRates.append(try rate(.bare, bare))
                if let alone { outcome.aloneRates.append(try rate(.alone, alone)) }
                outcome.sluiceRates.append(try rate(.sluice, sluice))
            }
            round += 1
        }
        outcome.unitsPerRepetition = units
        return outcome
    }

    enum Side { case sluice, bare, alone }

    // Each side's measured repetitions run in a function of their own, kept out of line, so that a
    // profile (`tools/count-instructions` on a codec scenario) tells the sides apart and leaves out
    // the warm-up. Each notes a different side, so that the compiler cannot merge them into one.
    nonisolated(unsafe) static var sideRunning: Side?
    @inline(never) static func sluiceRepetition(_ body: () throws -> Int) throws -> Int {
        sideRunning = .sluice
        return try body()
    }
    @inline(never) static func bareRepetition(_ body: () throws -> Int) throws -> Int {
        sideRunning = .bare
        return try body()
    }
    @inline(never) static func aloneRepetition(_ body: () throws -> Int) throws -> Int {
        sideRunning = .alone
        return try body()
    }

    public var sluiceRate: Double { Self.median(sluiceRates) }
    public var bareRate: Double { Self.median(bareRates) }
    /// Each round's ratio sluice/bare.
    public var roundRatios: [Double] { zip(sluiceRates, bareRates).map { $0 / $1 } }
    /// Median of the per-round ratios sluice/bare.
    public var ratio: Double { Self.median(roundRatios) }

    /// The result of scenario `name`: "sluice" and "bare" rates in `unit`, and their ratio against
    /// `target`; with an `alone` side, its rate and the two parts of the ratio (medians of the rounds').
    public func result(_ name: String, unit: String, target: Double, notes: [String] = []) -> ScenarioResult {
        var metrics = [Metric("sluice", sluiceRate, unit: unit), Metric("bare", bareRate, unit: unit)]
        var notes = notes
        if !aloneRates.isEmpty {
            metrics += [Metric("codec alone", Self.median(aloneRates), unit: unit),
                        Metric("codec alone/bare", Self.median(zip(aloneRates, bareRates).map { $0 / $1 }) * 100, unit: "%"),
                        Metric("graph/codec alone", Self.median(zip(sluiceRates, aloneRates).map { $0 / $1 }) * 100, unit: "%")]
            notes.append("codec alone: Sluice's codec object in a plain loop, no graph")
        }
        var result = ScenarioResult(scenario: name, metrics: metrics, ratio: ratio, target: target,
                                    notes: notes + ["\(sluiceRates.count) rounds of \(unitsPerRepetition) a side"])
        result.roundRatios = roundRatios
        return result
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
