import MediaCore

/// What a receiver counts of one RTP source for its reception reports (RFC 3550 §6.4.1 and
/// Appendix A.3, A.8): the extended highest sequence number, packets expected and received, losses
/// overall and since the last report, the interarrival jitter, and the last sender report's time.
/// Pure bookkeeping: the caller passes every packet and the clock.
public struct ReceptionStatistics: Sendable, Hashable {
    /// The RTP clock rate of the source, for the jitter's timestamp units.
    public let clockRate: Int
    /// Timestamp units per nanosecond and seconds per unit, so that the packet path multiplies
    /// where it divided (a division's latency stood out in the receive path's profile).
    private let ticksPerNanosecond: Double
    private let secondsPerTick: Double
    private var unwrapper = SequenceUnwrapper()
    /// The first extended sequence number seen ("base_seq", A.1).
    public private(set) var baseSequenceNumber: Int64?
    /// Packets received, duplicates included (A.3).
    public private(set) var received: Int64 = 0
    /// The interarrival jitter J in timestamp units (A.8), as a real number.
    public private(set) var jitter: Double = 0
    private var previousArrival: ClockTime?
    private var previousTimestamp: UInt32 = 0
    private var expectedPrior: Int64 = 0
    private var receivedPrior: Int64 = 0
    /// The last SR's NTP time (compact) and when it arrived.
    private var lastSenderReport: UInt32?
    private var lastSenderReportArrival = ClockTime.zero

    public init(clockRate: Int) {
        self.clockRate = clockRate
        ticksPerNanosecond = Double(clockRate) / 1e9
        secondsPerTick = 1 / Double(clockRate)
    }

    /// The extended highest sequence number received (cycles above 16 bits), nil before the first.
    public var extendedHighestSequenceNumber: Int64? { unwrapper.highest }

    /// Packets expected: extended highest minus base, plus one (A.3).
    public var expected: Int64 {
        guard let baseSequenceNumber, let highest = unwrapper.highest else { return 0 }
        return highest - baseSequenceNumber + 1
    }

    /// Expected minus received; negative when duplicates outnumber losses (§6.4.1).
    public var cumulativeLost: Int64 { expected - received }

    /// The jitter in seconds.
    public var jitterSeconds: Double { jitter * secondsPerTick }

    /// Counts a packet and returns its extended sequence number. `measuresJitter` is false for
    /// retransmissions, whose transit says nothing about the network's jitter.
    @discardableResult
    public mutating func record(sequenceNumber: UInt16, timestamp: UInt32, arrival: ClockTime,
                                measuresJitter: Bool = true) -> Int64 {
        let extended = unwrapper.unwrap(sequenceNumber)
        baseSequenceNumber = min(baseSequenceNumber ?? extended, extended)
        received += 1
        guard measuresJitter else { return extended }
        // A.8: D(i-1, i) = (R_i - R_{i-1}) - (S_i - S_{i-1}) in timestamp units; J += (|D| - J) / 16.
        if let previousArrival {
            let arrivalTicks = Double((arrival - previousArrival).nanoseconds) * ticksPerNanosecond
            let difference = arrivalTicks - Double(SerialNumber.distance(from: previousTimestamp, to: timestamp))
            jitter += (abs(difference) - jitter) / 16
        }
        (previousArrival, previousTimestamp) = (arrival, timestamp)
        return extended
    }

    /// Notes a sender report from the source, for LSR and DLSR (§6.4.1).
    public mutating func noteSenderReport(_ report: SenderReport, arrival: ClockTime) {
        (lastSenderReport, lastSenderReportArrival) = (report.ntpTimestamp.compact, arrival)
    }

    /// The report block about source `ssrc` at `now`, starting a new interval for "fraction lost"
    /// (A.3: lost in the interval over expected in the interval).
    public mutating func reportBlock(ssrc: UInt32, at now: ClockTime) -> ReportBlock {
        let expected = self.expected
        let fraction = ReportBlock.fractionLost(expected: expected - expectedPrior, received: received - receivedPrior)
        expectedPrior = expected
        receivedPrior = received
        return ReportBlock(
            ssrc: ssrc, fractionLost: fraction,
            cumulativeLost: ReportBlock.cumulativeLost(expected: expected, received: received),
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: unwrapper.highest ?? 0),
            jitter: UInt32(min(jitter.rounded(), Double(UInt32.max))),
            lastSenderReport: lastSenderReport ?? 0,
            delaySinceLastSenderReport: lastSenderReport == nil
                ? 0 : NTPTimestamp.compactDuration(seconds: (now - lastSenderReportArrival).seconds))
    }
}
