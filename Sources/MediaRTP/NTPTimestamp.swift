/// NTP timestamps as RTCP carries them (RFC 3550 §4): 64-bit unsigned fixed point, whole seconds since
/// 1900-01-01 00:00 UTC in the high 32 bits and the fraction in the low 32. Reports echo only the
/// middle 32 bits ("compact" form, 16.16: LSR in §6.4.1), and give delays in units of 1/65536 s (DLSR).

public struct NTPTimestamp: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
    public static let unixEpochOffset: UInt32 = 2_208_988_800

    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(seconds: UInt32, fraction: UInt32) {
        rawValue = UInt64(seconds) << 32 | UInt64(fraction)
    }

    /// The timestamp `seconds` after 1900-01-01, clamped to era 0 (0 ..< 2^32 s).
    public init(secondsSince1900 seconds: Double) {
        let scaled = (seconds * 4_294_967_296).rounded()
        rawValue = scaled <= 0 ? 0 : scaled >= 18_446_744_073_709_551_616 ? .max : UInt64(scaled)
    }

    /// The timestamp `seconds` after 1970-01-01 (Unix time).
    public init(unixSeconds seconds: Double) {
        self.init(secondsSince1900: seconds + Double(Self.unixEpochOffset))
    }

    /// The high 32 bits: whole seconds since 1900.
    public var seconds: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) }
    /// The low 32 bits: the fraction of a second in units of 2^-32 s.
    public var fraction: UInt32 { UInt32(truncatingIfNeeded: rawValue) }

    public var secondsSince1900: Double { Double(rawValue) / 4_294_967_296 }
    public var unixSeconds: Double { secondsSince1900 - Double(Self.unixEpochOffset) }

    /// The middle 32 bits (16.16 seconds), the form an RR echoes as "last SR" (LSR, RFC 3550 §6.4.1).
    public var compact: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 16) }

    /// A duration in the 16.16 compact form (units of 1/65536 s), e.g. DLSR; clamped to 0 ..< 65536 s.
    public static func compactDuration(seconds: Double) -> UInt32 {
        let scaled = (seconds * 65536).rounded()
        return scaled <= 0 ? 0 : scaled >= 4_294_967_296 ? .max : UInt32(scaled)
    }

    /// Seconds in a 16.16 compact value.
    public static func seconds(compact: UInt32) -> Double { Double(compact) / 65536 }

    public static func < (lhs: NTPTimestamp, rhs: NTPTimestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "NTP \(seconds).\(fraction) (\(secondsSince1900) s)" }
}
