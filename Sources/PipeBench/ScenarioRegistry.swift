// The scenarios pipebench knows, and choosing among them by name or glob.
import Glibc

/// A list of scenarios and selection by name or shell glob ("encode.*", "rtp.*.gcm*").
public struct ScenarioRegistry: Sendable {
    public var scenarios: [any Scenario]

    public init(_ scenarios: [any Scenario]) { self.scenarios = scenarios }

    /// Every scenario pipebench ships, in the order they run.
    public static let builtIn = ScenarioRegistry(
        CodecScenarios.all + TranscodeScenario.all + [Transcode720pScenario()] + RTPScenarios.all + PeerScenarios.all + PeerConnectionScenarios.all
            + [CallLoopbackScenario(), SoakScenario()]
            + CallScaleScenario.all
    )

    /// The scenarios that run when none are named.
    public var defaultSet: [any Scenario] { scenarios.filter(\.inDefaultSet) }

    /// The scenarios matching any of `patterns` (exact names or globs), in registry order; the default
    /// set when `patterns` is empty. A pattern that matches nothing is an error naming it.
    public func select(_ patterns: [String]) throws -> [any Scenario] {
        guard !patterns.isEmpty else { return defaultSet }
        for pattern in patterns where !scenarios.contains(where: { Self.matches($0.name, pattern) }) {
            throw SelectionError.noMatch(pattern: pattern, known: scenarios.map(\.name))
        }
        return scenarios.filter { scenario in patterns.contains { Self.matches(scenario.name, $0) } }
    }

    /// Whether `name` matches the shell glob `pattern` (fnmatch: `*`, `?`, `[...]`).
    public static func matches(_ name: String, _ pattern: String) -> Bool {
        fnmatch(pattern, name, 0) == 0
    }
}

/// A scenario pattern that names nothing.
public enum SelectionError: Error, CustomStringConvertible, Equatable {
    case noMatch(pattern: String, known: [String])

    public var description: String {
        switch self {
        case .noMatch(let pattern, let known):
            return "no scenario matches '\(pattern)' (known: \(known.joined(separator: ", ")))"
        }
    }
}
