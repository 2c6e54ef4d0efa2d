/// An exact fraction, used for timebases (seconds per tick) and frame rates (frames per second).
public struct Rational: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let numerator: Int
    public let denominator: Int

    /// Makes a reduced fraction with a positive denominator. The denominator must not be zero.
    public init(_ numerator: Int, _ denominator: Int) {
        precondition(denominator != 0, "Rational with zero denominator")
        // 1/n, the usual timebase (an RTP clock's, made for every frame), is reduced already.
        if numerator == 1 && denominator > 0 {
            (self.numerator, self.denominator) = (1, denominator)
            return
        }
        let divisor = Swift.max(1, greatestCommonDivisor(Swift.abs(numerator), Swift.abs(denominator)))
        let sign = denominator < 0 ? -1 : 1
        self.numerator = sign * numerator / divisor
        self.denominator = sign * denominator / divisor
    }

    public var doubleValue: Double { Double(numerator) / Double(denominator) }
    public var reciprocal: Rational { Rational(denominator, numerator) }
    public var description: String { denominator == 1 ? "\(numerator)" : "\(numerator)/\(denominator)" }

    public static func < (lhs: Rational, rhs: Rational) -> Bool {
        Int128(lhs.numerator) * Int128(rhs.denominator) < Int128(rhs.numerator) * Int128(lhs.denominator)
    }

    /// Parses "30", "30000/1001" or "29.97" (decimals up to three places).
    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), d != 0 {
            self.init(n, d)
        } else if parts.count == 1, let n = Int(parts[0]) {
            self.init(n, 1)
        } else if parts.count == 1, let value = Double(parts[0]), value.isFinite {
            self.init(Int((value * 1000).rounded()), 1000)
        } else {
            return nil
        }
    }
}

func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return a
}

/// A point or span on a media timeline: `value` ticks of `timebase` seconds each.
///
/// Comparison is exact across timebases (1/30 s at timebase 1/30 equals 3000 at timebase 1/90000).
public struct MediaTime: Comparable, Sendable, CustomStringConvertible {
    public var value: Int64
    public var timebase: Rational

    public init(_ value: Int64, timebase: Rational) {
        self.value = value
        self.timebase = timebase
    }

    public static func zero(_ timebase: Rational) -> MediaTime { MediaTime(0, timebase: timebase) }

    public var seconds: Double { Double(value) * timebase.doubleValue }

    /// The same instant in another timebase, rounded to the nearest tick (halves away from zero).
    public func rescaled(to target: Rational) -> MediaTime {
        if target == timebase { return self }
        // In 64 bits when nothing overflows, as with every media clock: a 128-bit division is a
        // library call, made here for every frame an RTP sender stamps.
        let (scale, scaleOverflows) = timebase.numerator.multipliedReportingOverflow(by: target.denominator)
        let (divisor, divisorOverflows) = timebase.denominator.multipliedReportingOverflow(by: target.numerator)
        let (product, productOverflows) = Int(value).multipliedReportingOverflow(by: scale)
        let (shifted, roundingOverflows) = product >= 0 ? product.addingReportingOverflow(divisor / 2)
                                                        : product.subtractingReportingOverflow(divisor / 2)
        if !(scaleOverflows || divisorOverflows || productOverflows || roundingOverflows) {
            return MediaTime(Int64(shifted / divisor), timebase: target)
        }
        let num = Int128(value) * Int128(timebase.numerator) * Int128(target.denominator)
        let den = Int128(timebase.denominator) * Int128(target.numerator)
        let half = den / 2
        let rounded = num >= 0 ? (num + half) / den : (num - half) / den
        return MediaTime(Int64(rounded), timebase: target)
    }

    /// The exact sum, in the finest timebase both operands fit (the left's when they share one).
    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        let (a, b, timebase) = inCommonTimebase(lhs, rhs)
        return MediaTime(a + b, timebase: timebase)
    }

    /// The exact difference, in the finest timebase both operands fit.
    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        let (a, b, timebase) = inCommonTimebase(lhs, rhs)
        return MediaTime(a - b, timebase: timebase)
    }

    /// Both values in the timebase gcd(numerators)/lcm(denominators), of which both are whole multiples.
    private static func inCommonTimebase(_ lhs: MediaTime, _ rhs: MediaTime) -> (Int64, Int64, Rational) {
        if lhs.timebase == rhs.timebase { return (lhs.value, rhs.value, lhs.timebase) }
        let (x, y) = (lhs.timebase, rhs.timebase)
        let numerator = greatestCommonDivisor(x.numerator, y.numerator)
        let denominator = x.denominator / greatestCommonDivisor(x.denominator, y.denominator) * y.denominator
        let common = Rational(numerator, denominator)
        func scaled(_ t: MediaTime) -> Int64 {
            t.value * Int64(t.timebase.numerator / numerator) * Int64(denominator / t.timebase.denominator)
        }
        return (scaled(lhs), scaled(rhs), common)
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        if lhs.timebase == rhs.timebase && lhs.timebase.numerator != 0 { return lhs.value == rhs.value }
        let (left, right) = lhs.crossProducts(rhs)
        return left == right
    }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        // One timebase, as a stream's times mostly share: the values alone (the overflow-checked
        // 128-bit products cost some 200 instructions, paid for every packet a decoder node takes).
        if lhs.timebase == rhs.timebase && lhs.timebase.numerator > 0 { return lhs.value < rhs.value }
        let (left, right) = lhs.crossProducts(rhs)
        return left < right
    }

    private func crossProducts(_ other: MediaTime) -> (Int128, Int128) {
        (Int128(value) * Int128(timebase.numerator) * Int128(other.timebase.denominator),
         Int128(other.value) * Int128(other.timebase.numerator) * Int128(timebase.denominator))
    }

    public var description: String { "\(value)@\(timebase)" }
}

/// A reading of a monotonic clock, in nanoseconds from an arbitrary origin.
public struct ClockTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// Computed rather than stored: a stored static is read through an accessor that checks it was
    /// made, on every use from another module (once per packet in a jitter buffer).
    public static var zero: ClockTime { ClockTime(nanoseconds: 0) }
    public static func seconds(_ s: Double) -> ClockTime { ClockTime(nanoseconds: Int64(s * 1e9)) }
    public static func milliseconds(_ ms: Int64) -> ClockTime { ClockTime(nanoseconds: ms * 1_000_000) }
    /// The latest time there is: a deadline that never comes.
    public static var max: ClockTime { ClockTime(nanoseconds: .max) }
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    public static func < (a: ClockTime, b: ClockTime) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: ClockTime, b: ClockTime) -> ClockTime { ClockTime(nanoseconds: a.nanoseconds + b.nanoseconds) }
    public static func - (a: ClockTime, b: ClockTime) -> ClockTime { ClockTime(nanoseconds: a.nanoseconds - b.nanoseconds) }

    /// The span of a media time, e.g. a frame duration.
    public init(_ span: MediaTime) { self.nanoseconds = span.rescaled(to: Rational(1, 1_000_000_000)).value }

    public var description: String { "\(seconds)s" }
}
