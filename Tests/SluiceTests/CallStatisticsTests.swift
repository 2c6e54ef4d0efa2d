import Sluice
import Testing
import TestSupport

/// A loopback call traced end to end: one `FrameTracer` shared by the sending `Transcoder` and the
/// `RTPReceivePipeline`, and the W3C webrtc-stats each reports. In `RTPStreamingTests`, serialized:
/// it streams in real time.
extension RTPStreamingTests {
    @Test func aTracedLoopbackCallReportsMatchingStatsAndOrderedStageLatencies() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let tracer = FrameTracer()
            var options = ReceiveOptions()
            options.limits.silence = .seconds(10)
            options.tracer = tracer
            let receiver = try RTPReceivePipeline(stream: try Self.loopback(.vp8), output: dir.file("received.y4m"), options: options)
            var sendOptions = TranscodeOptions()
            sendOptions.maxFrames = 40
            sendOptions.bitrate = 600_000  // decoded and encoded again: a new stream, traced from capture
            sendOptions.tracer = tracer
            let sender = try Transcoder(input: TestSupport.sampleIVF, sendingTo: Self.destination(of: receiver), options: sendOptions)
            let report = try Self.stream(into: receiver) { _ = try sender.run() }

            let sent = try #require(sender.stats())
            let received = receiver.stats()
            let delivered = report.nodes.last!.itemsIn
            #expect(sent.framesEncoded == 40 && sent.framesSent == 40)
            #expect(sent.keyFramesEncoded >= 1 && sent.totalEncodeTime > 0)
            #expect((sent.frameWidth, sent.frameHeight) == (640, 360))
            #expect(delivered == 40)
            #expect(received.framesDecoded == delivered && received.framesReceived == 40)
            #expect(received.keyFramesDecoded >= 1 && received.totalDecodeTime > 0)
            // Nothing is lost on loopback. A sender stalled mid-frame (a loaded machine) can draw a
            // tail NACK for a packet it had not sent yet (JitterBuffer, "Tail"), and the packet then
            // comes twice: RFC 3550 counts a duplicate as a negative loss, and both sides count the
            // retransmission, so the totals still match.
            #expect(sent.packetsSent == received.packetsReceived && received.packetsLost <= 0,
                    "\(sent.retransmittedPacketsSent) retransmitted, \(received.packetsLost) lost")
            #expect(received.packetsLost >= -sent.retransmittedPacketsSent)
            #expect(sent.bytesSent == received.bytesReceived)
            #expect(received.jitterBufferEmittedCount == 40 && received.jitterBufferDelay > 0)
            #expect(received.jitterBufferTargetDelay > 0)

            let latencies = try #require(received.latencies)
            #expect(latencies.framesTraced == 40)
            #expect(latencies.negativeIntervals == 0)
            for stage in FrameStage.allCases.dropFirst() {
                #expect(latencies[stage].count == 40, "\(stage)")
            }
            // Every stage follows the one before it; end to end is their chain.
            #expect(latencies.endToEnd.count == 40)
            #expect(latencies.endToEnd.p50 > .zero && latencies.endToEnd.p50 < .milliseconds(500))
            #expect(latencies.endToEnd.min >= latencies[.jitterRelease].min)
            #expect(latencies[.receiveLast].p99 < .milliseconds(100), "loopback transit: \(latencies[.receiveLast])")
        }
    }

    /// Opus into WAV: the decoder drops the encoder's pre-skip (RFC 7845 §4.2), which puts its
    /// frames' pts 312 samples before their packets'. End to end still runs from capture through
    /// the jitter buffer (its 10 ms minimum delay) to the sink, for every frame but the first
    /// decoded one (shortened by the pre-skip, at no packet's pts). The last captured frame may go
    /// sooner: the encoder's flush packet, sent at once after it, looks 20 ms early to the buffer.
    @Test func aTracedOpusLoopbackCallMeasuresEndToEndThroughTheJitterBuffer() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = dir.file("tone.wav")
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
                                    "-ac", "2", "-c:a", "pcm_s16le", input])
            let tracer = FrameTracer()
            var options = ReceiveOptions()
            options.limits.silence = .seconds(10)
            options.tracer = tracer
            let receiver = try RTPReceivePipeline(stream: try Self.loopback(.opus, payloadType: 111),
                                                  output: dir.file("received.wav"), options: options)
            var sendOptions = TranscodeOptions()
            sendOptions.codec = .opus
            sendOptions.bitrate = 32_000
            sendOptions.maxFrames = 25
            sendOptions.tracer = tracer
            let sender = try Transcoder(input: input, sendingTo: Self.destination(of: receiver), options: sendOptions)
            _ = try Self.stream(into: receiver) { _ = try sender.run() }

            let sent = try #require(sender.stats())
            let received = receiver.stats()
            let latencies = try #require(received.latencies)
            // The encoder's end may add a packet: its lookahead's worth of padding.
            #expect(sent.framesSent >= 25 && received.jitterBufferEmittedCount == sent.framesSent)
            #expect(latencies.negativeIntervals == 0)
            #expect(latencies[.jitterRelease].count == sent.framesSent)
            #expect(latencies[.decodeEnd].count >= 24, "decoded frames meet their packets: \(latencies[.decodeEnd])")
            #expect(latencies.endToEnd.count >= 24, "\(latencies.endToEnd)")
            #expect(latencies.endToEnd.p50 >= .milliseconds(10), "through the jitter buffer: \(latencies.endToEnd)")
            #expect(latencies.endToEnd.min >= latencies[.jitterRelease].min)
        }
    }
}
