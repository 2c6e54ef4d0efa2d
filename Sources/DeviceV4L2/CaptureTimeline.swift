import MediaCore

/// Maps a driver's capture times onto a graph's media clock.
///
/// The first frame anchors: its pts is the clock's reading when it arrives, counted from `origin`
/// (the clock when capture started). Later frames keep the driver's spacing: pts is the anchor's
/// plus the driver-time delta, so the scheduling jitter of the capture thread does not reach the
/// timestamps. A frame without a monotonic driver time is timed by the clock on arrival. pts always
/// increases, in microseconds (the resolution of `v4l2_buffer.timestamp`).
public struct CaptureTimeline: Sendable {
    public static let timebase = Rational(1, 1_000_000)
    public let origin: ClockTime
    private var anchor: (driver: Int64, clock: ClockTime)?
    private var last: Int64?

    public init(origin: ClockTime) { self.origin = origin }

    /// The pts of a frame the driver captured at `driverTime` (CLOCK_MONOTONIC nanoseconds, nil when
    /// unknown) and that arrived at `arrival` on the graph's clock.
    public mutating func pts(driverTime: Int64?, arrival: ClockTime) -> MediaTime {
        var nanoseconds = (arrival - origin).nanoseconds
        if let driverTime {
            let anchor = self.anchor ?? (driverTime, arrival)
            self.anchor = anchor
            nanoseconds = (anchor.clock - origin).nanoseconds + (driverTime - anchor.driver)
        }
        var microseconds = nanoseconds / 1000
        if let last, microseconds <= last { microseconds = last + 1 }
        last = microseconds
        return MediaTime(microseconds, timebase: Self.timebase)
    }
}
