import MediaCore

/// What a `NetworkImpairment` does to the packets that cross it: loss (random or in bursts),
/// duplication, a bottleneck link with a bounded queue, delay with jitter, and reordering, all
/// drawn from a seeded generator so that a profile and a packet sequence always give the same fates.
///
/// The CLI syntax (`init(parsing:)`, `description`) is a comma-separated list of `key=value`:
///
/// | key | value | default |
/// |---|---|---|
/// | `loss` | percent of packets lost, `0%` to `100%` | `0%` |
/// | `burst` | mean length of a run of losses, ≥ 1; `1` is independent loss | `1` |
/// | `reorder` | percent of packets held back by `reorder-delay` | `0%` |
/// | `reorder-delay` | extra delay of a held-back packet, > 0 | `10ms` |
/// | `duplicate` | percent of packets sent twice | `0%` |
/// | `delay` | base one-way delay | `0ms` |
/// | `jitter` | delay variation, at most `delay` | `0ms` |
/// | `rate` | bottleneck rate, `bit`, `k`/`kbit`, `M`/`Mbit`, `G`/`Gbit` (SI), none if absent | none |
/// | `queue` | longest wait in the bottleneck's queue before tail drop | `100ms` |
/// | `seed` | the random seed, an unsigned 64-bit integer | `0` |
///
/// Times take `ns`, `us`, `ms` or `s`; numbers are plain decimals (`0.5%`, `1.5ms`). Example:
/// `loss=5%,burst=3,reorder=3%,reorder-delay=20ms,duplicate=1%,delay=40ms,jitter=10ms,rate=2M,queue=100ms,seed=42`.
/// The empty string and `none` are the perfect pipe. A parameter that cannot act alone (`burst`
/// without `loss`, `queue` without `rate`) is accepted and has no effect, so sweeps may pass
/// through zero.
public struct ImpairmentProfile: Sendable, Hashable, CustomStringConvertible {
    /// Percent of submitted packets lost, 0...100 (long-run rate of the loss model).
    public var lossPercent: Double
    /// Mean number of consecutive losses, ≥ 1; 1 means each packet is lost independently. Losses
    /// follow the simple Gilbert model (a two-state Gilbert-Elliott chain); see `GilbertLoss`.
    public var meanBurstLength: Double
    /// Percent of packets held back by `reorderDelay`, so that packets sent within that time after
    /// them arrive first. (netem does the reverse: its reordered packets skip the delay.)
    public var reorderPercent: Double
    /// The extra delay of a held-back packet, > 0.
    public var reorderDelay: ClockTime
    /// Percent of packets that arrive twice. Each copy crosses the bottleneck and draws its delay,
    /// jitter and reordering on its own.
    public var duplicatePercent: Double
    /// Base one-way delay, added after the bottleneck.
    public var delay: ClockTime
    /// Each packet's delay is drawn uniformly from `delay - jitter ... delay + jitter` (to the
    /// nanosecond), independently of other packets, so jitter reorders packets sent less than
    /// 2 × `jitter` apart, as netem does. At most `delay`.
    public var jitter: ClockTime
    /// The bottleneck's rate in bit/s, or nil for none. Packets leave it one after another, each
    /// taking `bytes × 8 / rate`; packets that find it busy wait in a FIFO queue.
    public var rateBitsPerSecond: Int64?
    /// The longest a packet may wait in the bottleneck's queue (from arrival to its first bit being
    /// sent): one that would wait longer is dropped on arrival, like a router's tail drop. At rate R
    /// the queue holds `queueLimit × R / 8` bytes. Zero means no queue: a packet finding the link
    /// busy is dropped.
    public var queueLimit: ClockTime
    public var seed: UInt64

    public static let defaultReorderDelay = ClockTime(nanoseconds: 10_000_000)
    public static let defaultQueueLimit = ClockTime(nanoseconds: 100_000_000)
    /// The longest time a profile accepts (delay, jitter, reorder delay, queue): one hour.
    public static let maximumTime = ClockTime(nanoseconds: 3_600_000_000_000)
    /// The highest bottleneck rate a profile accepts: 1000 Gbit/s.
    public static let maximumRate: Int64 = 1_000_000_000_000

    /// The perfect pipe: every packet delivered once, in order, when it is submitted.
    public static let none = ImpairmentProfile()

    public init(lossPercent: Double = 0, meanBurstLength: Double = 1, reorderPercent: Double = 0,
                reorderDelay: ClockTime = defaultReorderDelay, duplicatePercent: Double = 0,
                delay: ClockTime = .zero, jitter: ClockTime = .zero, rateBitsPerSecond: Int64? = nil,
                queueLimit: ClockTime = defaultQueueLimit, seed: UInt64 = 0) {
        self.lossPercent = lossPercent
        self.meanBurstLength = meanBurstLength
        self.reorderPercent = reorderPercent
        self.reorderDelay = reorderDelay
        self.duplicatePercent = duplicatePercent
        self.delay = delay
        self.jitter = jitter
        self.rateBitsPerSecond = rateBitsPerSecond
        self.queueLimit = queueLimit
        self.seed = seed
    }

    /// Parses the CLI syntax (see the type's documentation); the first malformed item throws.
    public init(parsing text: String) throws(ImpairmentProfileError) {
        self.init()
        let whole = text.trimmingSpaces
        if whole.isEmpty || whole == "none" { return }
        var written: [Key: Substring] = [:]
        for (index, rawItem) in whole.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let item = rawItem.trimmingSpaces
            guard !item.isEmpty else { throw .emptyItem(position: index + 1) }
            let name = item.prefix { $0 != "=" }
            guard let key = Key(rawValue: String(name)) else { throw .unknownKey(item: String(item)) }
            let value = item.dropFirst(name.count + 1)
            guard !value.isEmpty else { throw .missingValue(item: String(item)) }
            guard written.updateValue(item, forKey: key) == nil else { throw .repeatedKey(item: String(item)) }
            try set(key, from: value, item: String(item))
        }
        try validate { key in written[key].map(String.init) ?? key.item(of: self) }
    }

    /// Throws the error `init(parsing:)` would give for an item out of range, naming the item as
    /// `description` writes it. `NetworkImpairment` requires a valid profile.
    public func validate() throws(ImpairmentProfileError) {
        try validate { $0.item(of: self) }
    }

    /// The CLI syntax, keys in the table's order, each only when it differs from its default
    /// (`reorder-delay` also whenever `reorder` is set, and `queue` whenever `rate` is); `none`
    /// for the perfect pipe. Parsing it gives this profile back.
    public var description: String {
        let shown = Key.allCases.filter { key in
            switch key {
            case .loss: lossPercent != 0
            case .burst: meanBurstLength != 1
            case .reorder: reorderPercent != 0
            case .reorderDelay: reorderPercent != 0 || reorderDelay != Self.defaultReorderDelay
            case .duplicate: duplicatePercent != 0
            case .delay: delay != .zero
            case .jitter: jitter != .zero
            case .rate: rateBitsPerSecond != nil
            case .queue: rateBitsPerSecond != nil || queueLimit != Self.defaultQueueLimit
            case .seed: seed != 0
            }
        }
        return shown.isEmpty ? "none" : shown.map { $0.item(of: self) }.joined(separator: ",")
    }

    // MARK: - Items

    enum Key: String, CaseIterable {
        case loss, burst, reorder, reorderDelay = "reorder-delay", duplicate, delay, jitter, rate, queue, seed

        /// `key=value` as `description` writes it.
        func item(of profile: ImpairmentProfile) -> String {
            let value: String = switch self {
            case .loss: NumberText.percent(profile.lossPercent)
            case .burst: NumberText.plain(profile.meanBurstLength)
            case .reorder: NumberText.percent(profile.reorderPercent)
            case .reorderDelay: NumberText.time(profile.reorderDelay)
            case .duplicate: NumberText.percent(profile.duplicatePercent)
            case .delay: NumberText.time(profile.delay)
            case .jitter: NumberText.time(profile.jitter)
            case .rate: profile.rateBitsPerSecond.map(NumberText.rate) ?? "none"
            case .queue: NumberText.time(profile.queueLimit)
            case .seed: String(profile.seed)
            }
            return "\(rawValue)=\(value)"
        }
    }

    private mutating func set(_ key: Key, from value: Substring, item: String) throws(ImpairmentProfileError) {
        let parser = ValueParser(item: item, value: value)
        switch key {
        case .loss: lossPercent = try parser.percent()
        case .burst: meanBurstLength = try parser.plainNumber()
        case .reorder: reorderPercent = try parser.percent()
        case .reorderDelay: reorderDelay = try parser.time()
        case .duplicate: duplicatePercent = try parser.percent()
        case .delay: delay = try parser.time()
        case .jitter: jitter = try parser.time()
        case .rate: rateBitsPerSecond = try parser.rate()
        case .queue: queueLimit = try parser.time()
        case .seed: seed = try parser.seed()
        }
    }

    /// Range checks, each naming its item through `item`.
    private func validate(naming item: (Key) -> String) throws(ImpairmentProfileError) {
        func check(_ key: Key, _ inRange: Bool, _ allowed: @autoclosure () -> String) throws(ImpairmentProfileError) {
            if !inRange { throw .outOfRange(item: item(key), allowed: allowed()) }
        }
        let percentRange = "0% to 100%"
        let timeRange = "0ns to \(NumberText.time(Self.maximumTime))"
        try check(.loss, (0...100).contains(lossPercent), percentRange)
        try check(.burst, meanBurstLength >= 1 && meanBurstLength.isFinite, "at least 1")
        try check(.reorder, (0...100).contains(reorderPercent), percentRange)
        try check(.reorderDelay, reorderDelay > .zero && reorderDelay <= Self.maximumTime,
                  "1ns to \(NumberText.time(Self.maximumTime))")
        try check(.duplicate, (0...100).contains(duplicatePercent), percentRange)
        try check(.delay, delay >= .zero && delay <= Self.maximumTime, timeRange)
        try check(.jitter, jitter >= .zero && jitter <= Self.maximumTime, timeRange)
        if let rate = rateBitsPerSecond {
            try check(.rate, rate >= 1 && rate <= Self.maximumRate, "1bit to \(NumberText.rate(Self.maximumRate))")
        }
        try check(.queue, queueLimit >= .zero && queueLimit <= Self.maximumTime, timeRange)
        // Across items: the Gilbert chain needs p = q / (b (1 − q)) ≤ 1, and the delay may not go below 0.
        if lossPercent == 100 {
            try check(.burst, meanBurstLength == 1, "1 at \(item(.loss))")
        } else if lossPercent > 50 {
            let shortest = lossPercent / (100 - lossPercent)
            try check(.burst, meanBurstLength >= shortest, "at least \(NumberText.plain(shortest)) at \(item(.loss))")
        }
        try check(.jitter, jitter <= delay, "at most \(item(.delay))")
    }
}

/// A malformed item of an impairment profile, named as it was written.
public enum ImpairmentProfileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Nothing between two commas, or a trailing comma; `position` counts items from 1.
    case emptyItem(position: Int)
    case unknownKey(item: String)
    /// `loss` or `loss=`.
    case missingValue(item: String)
    /// The same key twice.
    case repeatedKey(item: String)
    /// Not a plain decimal (`loss=five%`, `delay=1e3ms`), or finer than the unit's resolution
    /// (`delay=0.5ns`).
    case badNumber(item: String)
    /// A number without its unit (`delay=40`); `expected` lists the units.
    case missingUnit(item: String, expected: String)
    case unknownUnit(item: String, expected: String)
    case outOfRange(item: String, allowed: String)

    public var description: String {
        switch self {
        case .emptyItem(let position): "impairment item \(position) is empty"
        case .unknownKey(let item): "\(item): unknown key (known: \(ImpairmentProfile.Key.allCases.map(\.rawValue).joined(separator: ", ")))"
        case .missingValue(let item): "\(item): missing value"
        case .repeatedKey(let item): "\(item): key given twice"
        case .badNumber(let item): "\(item): not a number"
        case .missingUnit(let item, let expected): "\(item): missing unit (\(expected))"
        case .unknownUnit(let item, let expected): "\(item): unknown unit (\(expected))"
        case .outOfRange(let item, let allowed): "\(item): out of range (\(allowed))"
        }
    }
}

// MARK: - Numbers

/// Reads one item's value: a plain decimal (`-`? digits, then `.` digits optionally) and a unit.
private struct ValueParser {
    let item: String
    let number: Substring
    let unit: Substring

    static let timeUnits: [(String, Int64)] = [("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)]
    static let rateUnits: [(String, Int64)] = [
        ("bit", 1), ("k", 1_000), ("kbit", 1_000), ("M", 1_000_000), ("Mbit", 1_000_000),
        ("G", 1_000_000_000), ("Gbit", 1_000_000_000),
    ]

    init(item: String, value: Substring) {
        self.item = item
        // Exponent characters are taken in (no unit starts with them) so that `1e-3%` is a bad number.
        number = value.prefix { "-.+eE".contains($0) || $0.isASCII && $0.isNumber }
        unit = value.dropFirst(number.count)
    }

    private var isPlainDecimal: Bool {
        let digits = number.hasPrefix("-") ? number.dropFirst() : number
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count) && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    private var badNumber: ImpairmentProfileError { .badNumber(item: item) }

    /// The number as a Double (correctly rounded), after checking the unit is `expectedUnit`.
    private func double(unit expectedUnit: String) throws(ImpairmentProfileError) -> Double {
        guard isPlainDecimal, let value = Double(String(number)) else { throw badNumber }
        if !expectedUnit.isEmpty && unit.isEmpty { throw .missingUnit(item: item, expected: expectedUnit) }
        guard unit == expectedUnit else {
            throw .unknownUnit(item: item, expected: expectedUnit.isEmpty ? "none" : expectedUnit)
        }
        return value
    }

    func percent() throws(ImpairmentProfileError) -> Double { try double(unit: "%") }

    func plainNumber() throws(ImpairmentProfileError) -> Double { try double(unit: "") }

    func time() throws(ImpairmentProfileError) -> ClockTime {
        ClockTime(nanoseconds: try exact(units: Self.timeUnits, maximum: ImpairmentProfile.maximumTime.nanoseconds,
                                         allowed: "0ns to \(NumberText.time(ImpairmentProfile.maximumTime))"))
    }

    func rate() throws(ImpairmentProfileError) -> Int64 {
        try exact(units: Self.rateUnits, maximum: ImpairmentProfile.maximumRate,
                  allowed: "1bit to \(NumberText.rate(ImpairmentProfile.maximumRate))")
    }

    func seed() throws(ImpairmentProfileError) -> UInt64 {
        guard isPlainDecimal, !number.contains("."), unit.isEmpty else { throw badNumber }
        guard !number.hasPrefix("-"), let value = UInt64(number) else { throw .outOfRange(item: item, allowed: "0 to \(UInt64.max)") }
        return value
    }

    /// The number times its unit's factor, which must be a whole number of the smallest unit.
    private func exact(units: [(String, Int64)], maximum: Int64, allowed: String) throws(ImpairmentProfileError) -> Int64 {
        guard isPlainDecimal else { throw badNumber }
        let names = units.map(\.0).joined(separator: ", ")
        if unit.isEmpty { throw .missingUnit(item: item, expected: names) }
        guard let factor = units.first(where: { $0.0 == unit })?.1 else { throw .unknownUnit(item: item, expected: names) }
        if number.hasPrefix("-") { throw .outOfRange(item: item, allowed: allowed) }
        let parts = number.split(separator: ".")
        let fraction = parts.count > 1 ? parts[1] : ""
        // Whole part and fraction in the smallest unit; anything past Int64 is out of range.
        var scale = factor
        var fractionValue: Int64 = 0
        for digit in fraction {
            guard scale % 10 == 0 else {
                if digit == "0" { continue } else { throw badNumber }
            }
            scale /= 10
            fractionValue += Int64(digit.wholeNumberValue!) * scale
        }
        guard let whole = Int64(parts[0]) else { throw .outOfRange(item: item, allowed: allowed) }
        let (scaled, overflow) = whole.multipliedReportingOverflow(by: factor)
        guard !overflow, scaled <= maximum - fractionValue else { throw .outOfRange(item: item, allowed: allowed) }
        return scaled + fractionValue
    }
}

/// How `description` writes numbers: plain decimals (never exponents) that parse back exactly.
enum NumberText {
    /// The shortest decimal that reads back as `value`, without an exponent: 5, 0.25, 0.00001.
    static func plain(_ value: Double) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        guard let e = text.firstIndex(of: "e"), let exponent = Int(text[text.index(after: e)...]) else { return text }
        var mantissa = text[..<e]
        let sign = mantissa.hasPrefix("-") ? "-" : ""
        if !sign.isEmpty { mantissa = mantissa.dropFirst() }
        let whole = mantissa.prefix { $0 != "." }
        let digits = String(whole) + String(mantissa.dropFirst(whole.count + 1))
        let point = whole.count + exponent
        if point <= 0 { return sign + "0." + String(repeating: "0", count: -point) + digits }
        if point >= digits.count { return sign + digits + String(repeating: "0", count: point - digits.count) }
        return sign + String(digits.prefix(point)) + "." + String(digits.dropFirst(point))
    }

    static func percent(_ value: Double) -> String { plain(value) + "%" }

    /// In the largest of s, ms, us, ns that divides it.
    static func time(_ time: ClockTime) -> String {
        scaled(time.nanoseconds, units: [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)], smallest: "ns")
    }

    /// In the largest of G, M, k that divides it, else in bit.
    static func rate(_ bitsPerSecond: Int64) -> String {
        scaled(bitsPerSecond, units: [("G", 1_000_000_000), ("M", 1_000_000), ("k", 1_000)], smallest: "bit")
    }

    private static func scaled(_ value: Int64, units: [(String, Int64)], smallest: String) -> String {
        if value != 0, let (name, factor) = units.first(where: { value % $0.1 == 0 }) { return "\(value / factor)\(name)" }
        return "\(value)\(smallest)"
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: SubSequence {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? endIndex
        return self[start..<Swift.max(start, end)]
    }
}
