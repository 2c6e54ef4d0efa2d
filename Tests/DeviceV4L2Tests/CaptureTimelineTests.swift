import DeviceV4L2
import MediaCore
import Testing

private func microseconds(_ value: Int64) -> MediaTime { MediaTime(value, timebase: CaptureTimeline.timebase) }
private func clock(milliseconds: Int64) -> ClockTime { .milliseconds(milliseconds) }

@Suite struct CaptureTimelineTests {
    /// The first frame sits where the clock read on arrival (after capture started); later ones keep
    /// the driver's 33.3 ms spacing, however late the capture thread got to them.
    @Test func theFirstFrameAnchorsTheDriverTimes() {
        var timeline = CaptureTimeline(origin: clock(milliseconds: 1_000))
        let driverStart: Int64 = 987_654_321_000  // CLOCK_MONOTONIC nanoseconds, unrelated to the graph clock
        #expect(timeline.pts(driverTime: driverStart, arrival: clock(milliseconds: 1_050)) == microseconds(50_000))
        #expect(timeline.pts(driverTime: driverStart + 33_333_333, arrival: clock(milliseconds: 1_120))
            == microseconds(83_333))
        #expect(timeline.pts(driverTime: driverStart + 66_666_666, arrival: clock(milliseconds: 1_121))
            == microseconds(116_666))
    }

    @Test func withoutDriverTimesTheArrivalCounts() {
        var timeline = CaptureTimeline(origin: clock(milliseconds: 500))
        #expect(timeline.pts(driverTime: nil, arrival: clock(milliseconds: 510)) == microseconds(10_000))
        #expect(timeline.pts(driverTime: nil, arrival: clock(milliseconds: 543)) == microseconds(43_000))
    }

    /// A driver time that goes back (a broken driver) or repeats still gives increasing pts.
    @Test func ptsAlwaysIncrease() {
        var timeline = CaptureTimeline(origin: .zero)
        let first = timeline.pts(driverTime: 5_000_000_000, arrival: clock(milliseconds: 10))
        let same = timeline.pts(driverTime: 5_000_000_000, arrival: clock(milliseconds: 40))
        let back = timeline.pts(driverTime: 4_000_000_000, arrival: clock(milliseconds: 70))
        #expect(first < same && same < back)
    }
}
