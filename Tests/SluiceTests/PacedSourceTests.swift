import Sluice
import Testing
import TestSupport

/// A file source paced in real time holds each item until its presentation time, and traces it as
/// captured then: a source that falls behind shows as latency, as a late camera would.
@Suite struct PacedSourceTests {
    @Test func aLateItemIsTracedAsCapturedWhenItWasDue() throws {
        let clock = ManualClock(start: .seconds(10))
        let tracer = FrameTracer(capacity: 64, clock: clock)
        tracer.mapTimestamps(.sending, clockRate: 90_000, offset: 0)
        tracer.mapTimestamps(.receiving, clockRate: 90_000, offset: 0)
        let source = try IVFFileSource(path: TestSupport.sampleIVF, pacing: .realTime)
        try source.start(output: .video(source.format),
                         context: .standalone(name: "paced", clock: clock, tracing: .sending(tracer)))
        guard case .item(let first) = try source.produce() else { Issue.record("the first item goes at once"); return }
        guard case .wait(let due) = try source.produce() else { Issue.record("the second waits for its time"); return }
        // The workers come back 200 ms late: the item goes at once, traced at its due time.
        clock.advance(by: .milliseconds(200))
        guard case .item(let second) = try source.produce() else { Issue.record("a late item goes at once"); return }
        let step = ClockTime(second.pts - first.pts)
        #expect(step > .zero && due == .seconds(10) + step)
        tracer.record(.sink, pts: second.pts, at: clock.now)
        tracer.record(.sink, pts: first.pts, at: .seconds(10))

        let endToEnd = tracer.latencies().endToEnd
        #expect(endToEnd.count == 2)
        #expect(endToEnd.min == .zero)
        // The histogram keeps three significant digits of microseconds.
        let late = ClockTime.milliseconds(200) - step
        #expect(abs((endToEnd.max - late).seconds) < 0.001, "late by as long as the source was held up: \(endToEnd.max)")
    }
}
