import MediaCore
import Testing

@testable import MediaRTP

private func ms(_ value: Int64) -> ClockTime { ClockTime(nanoseconds: value * 1_000_000) }

@Suite struct NetworkImpairmentProfileTests {
    @Test func parsesEveryKey() throws {
        let profile = try ImpairmentProfile(parsing:
            "loss=5%,burst=3,reorder=3%,reorder-delay=20ms,duplicate=1%,delay=40ms,jitter=10ms,rate=2M,queue=100ms,seed=42")
        #expect(profile == ImpairmentProfile(
            lossPercent: 5, meanBurstLength: 3, reorderPercent: 3, reorderDelay: ms(20), duplicatePercent: 1,
            delay: ms(40), jitter: ms(10), rateBitsPerSecond: 2_000_000, queueLimit: ms(100), seed: 42))
    }

    @Test(arguments: [
        ("", ImpairmentProfile()),
        ("none", ImpairmentProfile()),
        ("  loss=0.5% , delay=1.5ms ", ImpairmentProfile(lossPercent: 0.5, delay: ClockTime(nanoseconds: 1_500_000))),
        ("loss=100%", ImpairmentProfile(lossPercent: 100)),
        ("loss=80%,burst=4", ImpairmentProfile(lossPercent: 80, meanBurstLength: 4)),
        ("burst=2.5", ImpairmentProfile(meanBurstLength: 2.5)),
        ("delay=250us,jitter=250000ns", ImpairmentProfile(delay: ClockTime(nanoseconds: 250_000), jitter: ClockTime(nanoseconds: 250_000))),
        ("delay=2s,jitter=1.000000000s", ImpairmentProfile(delay: ms(2000), jitter: ms(1000))),
        ("rate=1500kbit,queue=0ms", ImpairmentProfile(rateBitsPerSecond: 1_500_000, queueLimit: .zero)),
        ("rate=64000bit", ImpairmentProfile(rateBitsPerSecond: 64_000)),
        ("rate=1.5Gbit", ImpairmentProfile(rateBitsPerSecond: 1_500_000_000)),
        ("rate=1000G,queue=3600s", ImpairmentProfile(rateBitsPerSecond: 1_000_000_000_000, queueLimit: ms(3_600_000))),
        ("seed=18446744073709551615", ImpairmentProfile(seed: .max)),
        ("duplicate=100%,reorder=0.001%", ImpairmentProfile(reorderPercent: 0.001, duplicatePercent: 100)),
    ])
    func parsesGoodStrings(text: String, expected: ImpairmentProfile) throws {
        #expect(try ImpairmentProfile(parsing: text) == expected)
    }

    @Test(arguments: [
        ("loss=5%,,delay=1ms", ImpairmentProfileError.emptyItem(position: 2)),
        ("loss=5%,", .emptyItem(position: 2)),
        ("latency=40ms", .unknownKey(item: "latency=40ms")),
        ("Loss=5%", .unknownKey(item: "Loss=5%")),
        ("=5%", .unknownKey(item: "=5%")),
        ("loss", .missingValue(item: "loss")),
        ("delay=", .missingValue(item: "delay=")),
        ("loss=1%,delay=4ms,loss=2%", .repeatedKey(item: "loss=2%")),
        ("loss=five%", .badNumber(item: "loss=five%")),
        ("loss=1e-3%", .badNumber(item: "loss=1e-3%")),
        ("loss=.5%", .badNumber(item: "loss=.5%")),
        ("loss=5.%", .badNumber(item: "loss=5.%")),
        ("delay=1.2.3ms", .badNumber(item: "delay=1.2.3ms")),
        ("delay=0.5ns", .badNumber(item: "delay=0.5ns")),
        ("rate=1.5bit", .badNumber(item: "rate=1.5bit")),
        ("seed=4.2", .badNumber(item: "seed=4.2")),
        ("seed=0x2A", .badNumber(item: "seed=0x2A")),
        ("loss=5", .missingUnit(item: "loss=5", expected: "%")),
        ("delay=40", .missingUnit(item: "delay=40", expected: "ns, us, ms, s")),
        ("rate=2000000", .missingUnit(item: "rate=2000000", expected: "bit, k, kbit, M, Mbit, G, Gbit")),
        ("delay=40 ms", .unknownUnit(item: "delay=40 ms", expected: "ns, us, ms, s")),
        ("jitter=1min", .unknownUnit(item: "jitter=1min", expected: "ns, us, ms, s")),
        ("rate=2m", .unknownUnit(item: "rate=2m", expected: "bit, k, kbit, M, Mbit, G, Gbit")),
        ("loss=5ms", .unknownUnit(item: "loss=5ms", expected: "%")),
        ("burst=3%", .unknownUnit(item: "burst=3%", expected: "none")),
        ("loss=101%", .outOfRange(item: "loss=101%", allowed: "0% to 100%")),
        ("duplicate=-1%", .outOfRange(item: "duplicate=-1%", allowed: "0% to 100%")),
        ("burst=0.5", .outOfRange(item: "burst=0.5", allowed: "at least 1")),
        ("burst=2,loss=80%", .outOfRange(item: "burst=2", allowed: "at least 4 at loss=80%")),
        ("loss=100%,burst=2", .outOfRange(item: "burst=2", allowed: "1 at loss=100%")),
        ("reorder=3%,reorder-delay=0ms", .outOfRange(item: "reorder-delay=0ms", allowed: "1ns to 3600s")),
        ("delay=-5ms", .outOfRange(item: "delay=-5ms", allowed: "0ns to 3600s")),
        ("delay=3601s", .outOfRange(item: "delay=3601s", allowed: "0ns to 3600s")),
        ("queue=99999999999999999999s", .outOfRange(item: "queue=99999999999999999999s", allowed: "0ns to 3600s")),
        ("rate=0M", .outOfRange(item: "rate=0M", allowed: "1bit to 1000G")),
        ("rate=1001G", .outOfRange(item: "rate=1001G", allowed: "1bit to 1000G")),
        ("seed=-1", .outOfRange(item: "seed=-1", allowed: "0 to 18446744073709551615")),
        ("seed=18446744073709551616", .outOfRange(item: "seed=18446744073709551616", allowed: "0 to 18446744073709551615")),
        ("jitter=10ms", .outOfRange(item: "jitter=10ms", allowed: "at most delay=0ns")),
        ("jitter=10ms,delay=5ms", .outOfRange(item: "jitter=10ms", allowed: "at most delay=5ms")),
    ])
    func rejectsBadStringsNamingTheItem(text: String, expected: ImpairmentProfileError) {
        #expect(throws: expected) { try ImpairmentProfile(parsing: text) }
    }

    @Test func errorMessagesNameTheItem() {
        #expect(ImpairmentProfileError.missingUnit(item: "delay=40", expected: "ns, us, ms, s").description
            == "delay=40: missing unit (ns, us, ms, s)")
        #expect(ImpairmentProfileError.outOfRange(item: "loss=101%", allowed: "0% to 100%").description
            == "loss=101%: out of range (0% to 100%)")
        #expect(ImpairmentProfileError.unknownKey(item: "latency=4ms").description.hasPrefix("latency=4ms: unknown key (known: loss, burst,"))
        #expect(ImpairmentProfileError.emptyItem(position: 3).description == "impairment item 3 is empty")
    }

    /// Canonical strings (keys in order, defaults left out, largest exact unit) print back as written.
    @Test(arguments: [
        "none",
        "loss=5%,burst=3,reorder=3%,reorder-delay=20ms,duplicate=1%,delay=40ms,jitter=10ms,rate=2M,queue=100ms,seed=42",
        "loss=0.5%",
        "burst=1.25",
        "reorder=3%,reorder-delay=10ms",
        "reorder-delay=15ms",
        "delay=1500us,jitter=1ms",
        "rate=1500k,queue=100ms",
        "rate=1234bit,queue=0ns",
        "queue=250ms",
        "rate=3G,queue=1s",
        "seed=7",
    ])
    func canonicalStringsPrintBack(text: String) throws {
        #expect(try ImpairmentProfile(parsing: text).description == text)
    }

    @Test func descriptionShowsTheEffectiveDefaults() throws {
        #expect(try ImpairmentProfile(parsing: "rate=2Mbit").description == "rate=2M,queue=100ms")
        #expect(try ImpairmentProfile(parsing: "reorder=1%").description == "reorder=1%,reorder-delay=10ms")
        #expect(try ImpairmentProfile(parsing: "delay=1000ms,queue=100ms,burst=1").description == "delay=1s")
    }

    /// Values no one would type, set in code, still parse back to the same profile.
    @Test(arguments: [
        ImpairmentProfile(lossPercent: 1e-7, meanBurstLength: 1 + 0x1p-40),
        ImpairmentProfile(lossPercent: 33.333333333333336, reorderPercent: 0.1 + 0.2),
        ImpairmentProfile(lossPercent: 70, meanBurstLength: 70.0 / 30.0, duplicatePercent: .leastNonzeroMagnitude),
        ImpairmentProfile(meanBurstLength: 1.5e16),
        ImpairmentProfile(reorderDelay: ClockTime(nanoseconds: 1), delay: ClockTime(nanoseconds: 1_234_567),
                          jitter: ClockTime(nanoseconds: 999), rateBitsPerSecond: 1, queueLimit: ClockTime(nanoseconds: 7)),
        ImpairmentProfile(rateBitsPerSecond: 999_999_999_999, seed: 123_456_789_012_345),
    ])
    func descriptionRoundTrips(profile: ImpairmentProfile) throws {
        try profile.validate()
        #expect(try ImpairmentProfile(parsing: profile.description) == profile, "\(profile)")
    }

    @Test func plainDecimalsNeverUseExponents() {
        #expect(NumberText.plain(1e-5) == "0.00001")
        #expect(NumberText.plain(1.25e-7) == "0.000000125")
        #expect(NumberText.plain(1.5e16) == "15000000000000000")
        #expect(NumberText.plain(3) == "3")
        #expect(NumberText.plain(0.1 + 0.2) == "0.30000000000000004")
    }

    @Test func validateNamesTheItemOfAProfileBuiltInCode() {
        #expect(throws: ImpairmentProfileError.outOfRange(item: "jitter=50ms", allowed: "at most delay=20ms")) {
            try ImpairmentProfile(delay: ms(20), jitter: ms(50)).validate()
        }
        #expect(throws: ImpairmentProfileError.outOfRange(item: "loss=150%", allowed: "0% to 100%")) {
            try ImpairmentProfile(lossPercent: 150).validate()
        }
        #expect(throws: ImpairmentProfileError.outOfRange(item: "burst=nan", allowed: "at least 1")) {
            try ImpairmentProfile(meanBurstLength: .nan).validate()
        }
    }
}
