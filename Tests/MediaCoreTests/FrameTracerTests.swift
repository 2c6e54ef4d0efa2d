import CSluiceShims
import MediaCore
import Testing

@Suite struct FrameTracerTests {
    static let timebase = Rational(1, 30)

    /// Records every stage of frame `index` (pts index/30 s, RTP timestamp 1000 + 3000·index on both
    /// sides) at `start` plus one millisecond a stage.
    static func recordFrame(_ index: Int, in tracer: FrameTracer, start: ClockTime, skipping: Set<FrameStage> = []) {
        let pts = MediaTime(Int64(index), timebase: timebase)
        for stage in FrameStage.allCases where !skipping.contains(stage) {
            tracer.record(stage, pts: pts, at: start + .milliseconds(Int64(stage.rawValue)))
        }
    }

    static func mappedTracer(capacity: Int = 64) -> FrameTracer {
        let tracer = FrameTracer(capacity: capacity, clock: ManualClock())
        tracer.mapTimestamps(.sending, clockRate: 90_000, offset: 1000)
        tracer.mapTimestamps(.receiving, clockRate: 90_000, offset: 1000)
        return tracer
    }

    @Test func eachStageIsMeasuredFromTheStageItFollowsAndEndToEndFromCaptureToSink() {
        let tracer = Self.mappedTracer()
        for index in 0..<100 { Self.recordFrame(index, in: tracer, start: .seconds(Double(index) / 30)) }
        let latencies = tracer.latencies()
        #expect(latencies.framesTraced == 100)
        #expect(latencies.negativeIntervals == 0)
        #expect(latencies.endToEnd.count == 100)
        #expect(latencies.endToEnd.p50 == .milliseconds(10))
        #expect(latencies[.encodeStart].p99 == .milliseconds(1))
        // The first packet arrives 6 - 4 ms after it was sent, the last 7 - 5.
        #expect(latencies[.receiveFirst].p50 == .milliseconds(2))
        #expect(latencies[.receiveLast].p50 == .milliseconds(2))
        #expect(latencies[.jitterRelease].p50 == .milliseconds(1))
        #expect(latencies[.capture].count == 0)
    }

    @Test func theSendersAndTheReceiversTimestampsMeetAtTheRTPTimestamp() {
        let tracer = FrameTracer(capacity: 64, clock: ManualClock())
        tracer.mapTimestamps(.sending, clockRate: 90_000, offset: 0xFFFF_F000)  // wraps around
        // The receiver counts pts from its first frame, frame 2 (RTP 0xFFFF_F000 + 6000).
        tracer.mapTimestamps(.receiving, clockRate: 90_000, offset: 0xFFFF_F000 &+ 6000)
        let sent = MediaTime(3, timebase: Self.timebase)
        let received = MediaTime(3000, timebase: Rational(1, 90_000))
        #expect(tracer.rtpTimestamp(of: sent, at: .capture) == 0xFFFF_F000 &+ 9000)
        #expect(tracer.rtpTimestamp(of: received, at: .sink) == 0xFFFF_F000 &+ 9000)
        tracer.record(.capture, pts: sent, at: .milliseconds(100))
        tracer.record(.sink, pts: received, at: .milliseconds(180))
        #expect(tracer.latencies().endToEnd.p50 == .milliseconds(80))
    }

    @Test func nothingIsTracedByPtsBeforeItsSideIsMapped() {
        let tracer = FrameTracer(capacity: 16, clock: ManualClock())
        tracer.record(.capture, pts: MediaTime(1, timebase: Self.timebase))
        #expect(!tracer.hasMapping(.sending))
        #expect(tracer.latencies().framesTraced == 0)
        tracer.record(.capture, rtpTimestamp: 42)
        #expect(tracer.latencies().framesTraced == 1)
    }

    @Test func framesThatNeverArriveAreFoldedWhenTheirSlotIsNeeded() {
        let tracer = Self.mappedTracer(capacity: 16)
        // Frames lost on the way: the sending stages only, many more than the table holds.
        for index in 0..<200 {
            Self.recordFrame(index, in: tracer, start: .seconds(Double(index)),
                             skipping: [.receiveFirst, .receiveLast, .jitterRelease, .decodeEnd, .sink])
        }
        let latencies = tracer.latencies()
        #expect(latencies.framesTraced == 200)
        #expect(latencies[.sendLast].count == 200)
        #expect(latencies[.sink].count == 0)
        // No frame reached a receiving stage: end to end is capture to the last packet sent.
        #expect(latencies.endToEnd.p50 == .milliseconds(5))
        tracer.reset()
        #expect(tracer.latencies().framesTraced == 0)
    }

    /// The sender records a frame's packets once they have all left; a preempted sending thread
    /// records them after the receiver showed the frame. They still count for that frame.
    @Test func sendingStagesRecordedAfterTheSinkCountForTheSameFrame() {
        let tracer = Self.mappedTracer()
        for index in 0..<40 {
            Self.recordFrame(index, in: tracer, start: .seconds(Double(index) / 30), skipping: [.sendFirst, .sendLast])
            let pts = MediaTime(Int64(index), timebase: Self.timebase)
            let start = ClockTime.seconds(Double(index) / 30)
            tracer.record(.sendFirst, pts: pts, at: start + .milliseconds(Int64(FrameStage.sendFirst.rawValue)))
            tracer.record(.sendLast, pts: pts, at: start + .milliseconds(Int64(FrameStage.sendLast.rawValue)))
        }
        let latencies = tracer.latencies()
        #expect(latencies.framesTraced == 40)
        #expect(latencies.negativeIntervals == 0)
        for stage in FrameStage.allCases.dropFirst() {
            #expect(latencies[stage].count == 40, "\(stage)")
        }
    }

    /// Records of the receiving side whose pts meet no sent frame (a decoder's output on a timeline
    /// of its own) make no end-to-end figure: decode end to sink is not end to end.
    @Test func endToEndNeedsTheStageFramesStartAt() {
        let tracer = Self.mappedTracer()
        for index in 0..<20 {
            let start = ClockTime.seconds(Double(index) / 30)
            Self.recordFrame(index, in: tracer, start: start, skipping: [.decodeEnd, .sink])
            let elsewhere = MediaTime(Int64(index) * 3000 + 1500, timebase: Rational(1, 90_000))
            tracer.record(.decodeEnd, pts: elsewhere, at: start + .milliseconds(20))
            tracer.record(.sink, pts: elsewhere, at: start + .milliseconds(21))
        }
        let latencies = tracer.latencies()
        #expect(latencies[.sink].count == 20)
        #expect(latencies.endToEnd.count == 0, "\(latencies.endToEnd)")
    }

    /// Opus into WAV: the decoder drops the encoder's pre-skip (RFC 7845 §4.2), so each decoded
    /// frame's pts is 312 samples before its packet's (the first frame, shortened, keeps its
    /// packet's pts). With the decoder's delay told, decoded frames meet their packets again.
    @Test func aDecoderDelayLetsDecodedFramesMeetTheirPackets() {
        let tracer = FrameTracer(capacity: 64, clock: ManualClock())
        let samples = Rational(1, 48_000), offset: UInt32 = 0xFFFF_FF00  // wraps around
        tracer.mapTimestamps(.sending, clockRate: 48_000, offset: offset)
        tracer.mapTimestamps(.receiving, clockRate: 48_000, offset: offset)
        tracer.delayDecodedTimestamps(by: MediaTime(312, timebase: samples))
        for index in 0..<50 {
            let start = ClockTime.milliseconds(Int64(index) * 20)
            let packetPTS = MediaTime(Int64(index) * 960, timebase: samples)
            let rtpTimestamp = offset &+ UInt32(index * 960)
            tracer.record(.capture, pts: packetPTS, at: start)
            tracer.record(.encodeStart, pts: packetPTS, at: start)
            tracer.record(.encodeEnd, pts: packetPTS, at: start + .milliseconds(1))
            tracer.record(.sendLast, rtpTimestamp: rtpTimestamp, at: start + .milliseconds(1))
            tracer.record(.receiveLast, rtpTimestamp: rtpTimestamp, at: start + .milliseconds(2))
            tracer.record(.jitterRelease, rtpTimestamp: rtpTimestamp, at: start + .milliseconds(32))
            let decodedPTS = index == 0 ? packetPTS : packetPTS - MediaTime(312, timebase: samples)
            tracer.record(.decodeEnd, pts: decodedPTS, at: start + .milliseconds(33))
            tracer.record(.sink, pts: decodedPTS, at: start + .milliseconds(34))
        }
        let latencies = tracer.latencies()
        #expect(latencies.negativeIntervals == 0)
        // The first decoded frame starts at no packet's pts: the 49 others are measured.
        #expect(latencies[.decodeEnd].count == 49)
        #expect(latencies.endToEnd.count == 49)
        #expect(latencies.endToEnd.min == .milliseconds(34), "through the jitter buffer: \(latencies.endToEnd)")
        #expect(abs((latencies.endToEnd.max - .milliseconds(34)).seconds) < 0.0001)  // three significant digits
    }

    @Test func aStageRecordedAgainKeepsItsFirstTime() {
        let tracer = Self.mappedTracer()
        tracer.record(.capture, rtpTimestamp: 7, at: .milliseconds(10))
        tracer.record(.encodeStart, rtpTimestamp: 7, at: .milliseconds(12))
        tracer.record(.encodeStart, rtpTimestamp: 7, at: .milliseconds(30))
        #expect(tracer.latencies()[.encodeStart].p50 == .milliseconds(2))
    }

    /// Allocation check with glibc's `mallinfo2()` (CSluiceShims): the bytes in use do not grow over
    /// 20,000 warm frames. The figure is the process's, and other suites run alongside, so a window
    /// can grow by what they keep (in one run the quietest of the five grew by 368 bytes, the others
    /// by 848 bytes to 1.7 MB). A leak of the tracer's keeps at least one heap block a frame, 16 bytes
    /// or more: over 320 KB in every window. So the quietest window must have grown by less than a
    /// byte a frame.
    /// Transient allocations are counted by the `FrameTracer100k` benchmark (Benchmarks/ GraphRuntime),
    /// whose budget is zero mallocs.
    @Test func recordingKeepsNoMoreMemoryOnceWarm() {
        let tracer = Self.mappedTracer(capacity: 256)
        for index in 0..<2000 { Self.recordFrame(index, in: tracer, start: .seconds(Double(index))) }
        var growth: [Int] = []
        for window in 0..<5 {
            let before = sluice_heap_bytes_in_use()
            for index in 0..<20_000 {
                let frame = 2000 + window * 20_000 + index
                Self.recordFrame(frame, in: tracer, start: .seconds(Double(frame)))
            }
            growth.append(Int(sluice_heap_bytes_in_use()) - Int(before))
        }
        #expect(growth.min()! < 20_000, "grew by \(growth) bytes")
        #expect(tracer.latencies().endToEnd.count == 102_000)
    }
}
