/// Serial-number arithmetic for the 16-bit RTP sequence number and the 32-bit RTP timestamp, both of
/// which wrap around (RFC 3550 §5.1; comparisons as in RFC 1982 serial-number arithmetic).
public enum SerialNumber {
    /// True when `a` comes before `b`, allowing for wrap-around: `b` is less than half the number
    /// space ahead of `a`.
    @inlinable
    public static func isBefore(_ a: UInt16, _ b: UInt16) -> Bool { a != b && b &- a < 0x8000 }

    @inlinable
    public static func isBefore(_ a: UInt32, _ b: UInt32) -> Bool { a != b && b &- a < 0x8000_0000 }

    /// `b - a` as a signed distance, taking the shorter way around the circle.
    @inlinable
    public static func distance(from a: UInt16, to b: UInt16) -> Int { Int(Int16(bitPattern: b &- a)) }

    @inlinable
    public static func distance(from a: UInt32, to b: UInt32) -> Int64 { Int64(Int32(bitPattern: b &- a)) }
}

/// Turns 16-bit sequence numbers into a 64-bit count that keeps increasing across wrap-around: the
/// "extended highest sequence number" of RFC 3550 §6.4.1 and Appendix A.1, without its probation logic.
///
/// A number within half the space ahead of the highest seen extends it (crossing a wrap counts a
/// cycle); one behind it (a late or reordered packet) maps to the same cycle, or the one before.
public struct SequenceUnwrapper: Sendable, Hashable {
    /// The highest extended sequence number seen, or nil before the first.
    public private(set) var highest: Int64?

    public init() {}

    /// The extended value of `sequence`; advances `highest` when `sequence` is ahead of it.
    public mutating func unwrap(_ sequence: UInt16) -> Int64 {
        let extended = peek(sequence)
        if extended > (highest ?? .min) { highest = extended }
        return extended
    }

    /// The extended value `sequence` would get, without recording it.
    public func peek(_ sequence: UInt16) -> Int64 {
        guard let highest else { return Int64(sequence) }
        return highest + Int64(SerialNumber.distance(from: UInt16(truncatingIfNeeded: highest), to: sequence))
    }
}

/// The same for 32-bit RTP timestamps, whose wrap comes every 13 hours at 90 kHz.
public struct TimestampUnwrapper: Sendable, Hashable {
    public private(set) var highest: Int64?

    public init() {}

    public mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        let extended = peek(timestamp)
        if extended > (highest ?? .min) { highest = extended }
        return extended
    }

    public func peek(_ timestamp: UInt32) -> Int64 {
        guard let highest else { return Int64(timestamp) }
        return highest + SerialNumber.distance(from: UInt32(truncatingIfNeeded: highest), to: timestamp)
    }
}
