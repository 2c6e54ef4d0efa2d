// What a pipebench scenario is: a named measurement that runs for a given size and returns figures.
import MediaRTP

/// One measurement pipebench can run, e.g. "encode.vp8" (VP8 through the graph against libvpx alone).
///
/// To add one: write a type conforming to `Scenario` (one file under `Scenarios/`) and list it in
/// `ScenarioRegistry.builtIn`. `run` should honour `size` (stop after about `size.seconds`, use at
/// most `size.frames` frames or packets per repetition when set), be deterministic in its input, and
/// put its figures in a `ScenarioResult` (named metrics, the ratio to a bare-library run if there is
/// one, latency percentiles per stage if it measures them).
public protocol Scenario: Sendable {
    /// Dotted name, category first ("encode.vp8", "rtp.send.aes128gcm"); globs select by it.
    var name: String { get }
    /// One line on what is measured, shown by `--list`.
    var summary: String { get }
    /// Whether a run without scenario names includes it (the default set takes about a minute).
    var inDefaultSet: Bool { get }
    /// Runs the measurement.
    func run(_ size: RunSize) throws -> ScenarioResult
}

/// How big a run is.
public struct RunSize: Sendable, Equatable {
    /// Measuring time to aim at per scenario, warm-up not included.
    public var seconds: Double
    /// Frames (or packets) per repetition; `nil`: the scenario's own default.
    public var frames: Int?
    /// The network between the two ends of the call scenarios (`--impair`); nil: a clean loopback.
    public var impairment: ImpairmentProfile?
    /// The scale scenarios' call count (`--calls`): one trial at this count instead of the search.
    public var calls: Int?

    public init(seconds: Double = 4, frames: Int? = nil) {
        self.seconds = seconds
        self.frames = frames
    }

    /// `frames` if set (at least 1), else `standard`.
    public func count(default standard: Int) -> Int { max(1, frames ?? standard) }
}
