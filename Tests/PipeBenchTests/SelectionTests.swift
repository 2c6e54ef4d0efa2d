// Choosing scenarios by exact name and by glob.
import PipeBench
import Testing

@Suite struct SelectionTests {
    struct Fake: Scenario {
        let name: String
        var summary: String { "fake" }
        let inDefaultSet: Bool
        func run(_ size: RunSize) throws -> ScenarioResult { ScenarioResult(scenario: name) }
    }

    let registry = ScenarioRegistry([
        Fake(name: "encode.vp8", inDefaultSet: true), Fake(name: "encode.x264", inDefaultSet: true),
        Fake(name: "decode.vp8", inDefaultSet: true), Fake(name: "rtp.send.aes128cm", inDefaultSet: false),
    ])

    @Test func noPatternsGiveTheDefaultSet() throws {
        #expect(try registry.select([]).map(\.name) == ["encode.vp8", "encode.x264", "decode.vp8"])
    }

    @Test func exactNamesAndGlobsKeepRegistryOrder() throws {
        #expect(try registry.select(["decode.vp8", "encode.*"]).map(\.name) == ["encode.vp8", "encode.x264", "decode.vp8"])
        #expect(try registry.select(["*.vp8"]).map(\.name) == ["encode.vp8", "decode.vp8"])
        #expect(try registry.select(["rtp.send.aes128c?"]).map(\.name) == ["rtp.send.aes128cm"])
    }

    @Test func aPatternMatchingNothingIsNamed() {
        #expect(throws: SelectionError.noMatch(pattern: "opus.*", known: registry.scenarios.map(\.name))) {
            try registry.select(["encode.vp8", "opus.*"])
        }
    }

    @Test func builtInNamesAreUnique() {
        let names = ScenarioRegistry.builtIn.scenarios.map(\.name)
        #expect(Set(names).count == names.count)
    }
}
