import Glibc
import MediaCore
import MediaRTP
import MediaSRTP
import Synchronization
import Testing

@testable import MediaTransport

/// A send session and a receive session over an in-memory `RTPDatagramTransport` pair, driven by
/// hand with a manual clock: the sessions' RTP/RTCP logic runs with no socket, as it will over a
/// peer's bundled transport. Frames cross (RFC 3550), losses are repaired by NACK (RFC 4585
/// §6.2.1) with RTX (RFC 4588), a PLI (RFC 4585 §6.3.1) reaches the sender as a keyframe request,
/// reports flow both ways (RFC 3550 §6.4), and the BYE ends the stream (§6.6).
@Suite struct RTPSessionTransportTests {
    static let ssrc: UInt32 = 0x5EED_0002
    static let rtx: (payloadType: UInt8, ssrc: UInt32) = (97, 0x5EED_0003)
    static let frameInterval = ClockTime.milliseconds(33)
    /// Not used: a session given its transport ignores the configuration's addresses.
    static let unusedAddress = try! SocketAddress(parsing: "127.0.0.1:9")

    /// A VP8 frame of 1400 bytes (three packets of at most 500) whose bytes tell it apart.
    static func frame(_ index: Int, keyframe: Bool) -> EncodedFrame {
        var bytes = (0..<1400).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
        // VP8 payload header (RFC 6386 §9.1): the P bit, bit 0 of the first byte, is 0 on keyframes.
        bytes[0] = keyframe ? bytes[0] & 0xFE : bytes[0] | 0x01
        return bytes.withUnsafeBytes {
            EncodedFrame(codec: .vp8, isKeyframe: keyframe, pts: .init(Int64(index), timebase: Rational(1, 30)),
                         copying: $0, pool: nil)
        }
    }

    /// Set by the sender's `onKeyframeRequest`, taken by the next frame sent.
    final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    final class Call {
        let clock = ManualClock(start: .seconds(10))
        let a: InMemoryRTPTransport
        let b: InMemoryRTPTransport
        let sender: RTPSendSession<VP8Packetizer>
        let receiver: RTPReceiveSession<VP8Depacketizer>
        let keyframeRequested = Flag()

        init(impairment: ImpairmentProfile?, srtp: Bool) throws {
            (a, b) = try InMemoryRTPTransport.pair(impairment: impairment, srtp: srtp ? .random() : nil)
            let sending = try RTPSendSession<VP8Packetizer>.Configuration(
                remote: RTPSessionTransportTests.unusedAddress, multiplexed: true,
                sender: .init(payloadType: 96, ssrc: RTPSessionTransportTests.ssrc, rtx: RTPSessionTransportTests.rtx),
                reportInterval: .milliseconds(500))
            sender = RTPSendSession(packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: sending,
                                    transport: a, clock: clock)
            let receiving = RTPReceiveSession<VP8Depacketizer>.Configuration(
                local: RTPSessionTransportTests.unusedAddress, multiplexed: true, payloadType: 96,
                jitterBuffer: .init(rtx: RTPSessionTransportTests.rtx), reportInterval: .milliseconds(500))
            receiver = RTPReceiveSession(depacketizer: VP8Depacketizer(), configuration: receiving, transport: b, clock: clock)
            let flag = keyframeRequested
            sender.onKeyframeRequest = { flag.raised.store(true, ordering: .relaxed) }
        }

        /// Lets the receiver take what arrived and hand out the frames due; false once it saw the BYE.
        func receive(into frames: inout [EncodedFrame]) throws -> Bool {
            try receiver.receive(timeout: .zero)
            while true {
                switch try receiver.next(until: clock.now) {
                case .frame(let frame): frames.append(frame)
                case .timedOut: return true
                case .goodbye: return false
                }
            }
        }

        /// Sends `count` frames, a delta frame first and a keyframe whenever the receiver asks, in
        /// 5 ms steps with a second more for repairs, then closes the sender and drains the receiver.
        /// Returns what was sent and what came out.
        func run(frames count: Int) throws -> (sent: [EncodedFrame], received: [EncodedFrame], goodbye: Bool) {
            var sent: [EncodedFrame] = [], received: [EncodedFrame] = []
            var nextFrame = clock.now
            let end = clock.now + .milliseconds(33 * Int64(count)) + .seconds(1)
            while clock.now < end {
                if sent.count < count, clock.now >= nextFrame {
                    let keyframe = keyframeRequested.raised.exchange(false, ordering: .relaxed)
                    let frame = RTPSessionTransportTests.frame(sent.count, keyframe: keyframe)
                    try sender.send(frame)
                    sent.append(frame)
                    nextFrame = nextFrame + RTPSessionTransportTests.frameInterval
                }
                _ = try receive(into: &received)
                sender.serviceTransport(timeout: .zero)
                clock.advance(by: .milliseconds(5))
            }
            sender.close()
            var goodbye = false
            for _ in 0..<10 where !goodbye { goodbye = try !receive(into: &received) }
            receiver.close()
            return (sent, received, goodbye)
        }
    }

    /// Every frame from the first keyframe on comes out whole and in order; with and without SRTP
    /// (the session copies packets to be protected in place only when the transport has overhead).
    /// RTCP that says nothing of the stream's source (RFC 3550 §6.6: a BYE for others, reports of
    /// strangers) is counted and dropped: it does not end the stream. The source's own BYE does.
    @Test func rtcpOfStrangersNeitherEndsTheStreamNorPassesForItsOwn() throws {
        let call = try Call(impairment: nil, srtp: false)
        try call.sender.send(Self.frame(0, keyframe: true))
        var frames: [EncodedFrame] = []
        #expect(try call.receive(into: &frames))
        func deliver(_ packets: [RTCPPacket]) throws -> Bool {
            let compound = RTCPCompoundPacket(packets)
            var bytes = [UInt8](repeating: 0, count: compound.marshalSize)
            _ = try bytes.withUnsafeMutableBytes { try compound.write(into: $0) }
            return bytes.withUnsafeBytes { call.receiver.receiveRTCP($0, at: call.clock.now) }
        }
        let stranger: UInt32 = 0xBAD0_BAD0
        #expect(try !deliver([.receiverReport(ReceiverReport(ssrc: stranger)), .goodbye(Goodbye(sources: [stranger, 7]))]))
        #expect(try !deliver([.senderReport(SenderReport(ssrc: stranger, ntpTimestamp: NTPTimestamp(unixSeconds: 0), rtpTimestamp: 0,
                                                          packetCount: 0, octetCount: 0))]))
        call.clock.advance(by: .milliseconds(100))
        #expect(try call.receive(into: &frames), "no BYE of the stream seen")
        #expect(call.receiver.statistics.foreignRTCP == 2)
        #expect(try deliver([.goodbye(Goodbye(sources: [Self.ssrc]))]))
        #expect(try !call.receive(into: &frames), "the source's own BYE ends the stream")
        #expect(frames.count == 1)
    }

    @Test(arguments: [false, true])
    func framesCrossALossyLinkAndLossesAreRepaired(srtp: Bool) throws {
        let call = try Call(impairment: ImpairmentProfile(lossPercent: 5, delay: .milliseconds(20), seed: 7), srtp: srtp)
        let (sent, received, goodbye) = try call.run(frames: 60)

        let firstKeyframe = try #require(sent.firstIndex { $0.isKeyframe }, "the receiver's PLI brought a keyframe")
        #expect(firstKeyframe >= 1, "the first frame was a delta frame, which the receiver cannot start with")
        let expected = sent[firstKeyframe...].map { Array($0.bytes) }
        #expect(received.map { Array($0.bytes) } == expected, "frames in = frames out, from the keyframe on")
        #expect(received.first?.isKeyframe == true)
        #expect(goodbye, "the sender's BYE reached the receiver")

        let sending = call.sender.statistics, receiving = call.receiver.statistics
        let lost = try #require(sending.impairment?.droppedByLoss)
        #expect(lost > 0, "the impairment dropped packets")
        #expect(receiving.nacksSent > 0 && sending.nacksReceived > 0)
        #expect(sending.retransmissions > 0)
        #expect((receiving.jitterBuffer?.recovered ?? 0) > 0, "lost packets recovered through RTX")
        #expect(receiving.keyframeRequestsSent >= 1 && sending.keyframeRequests >= 1, "PLI sent and heard")
        #expect(sending.senderReports > 0 && receiving.senderReports > 0, "sender reports flow and arrive")
        #expect(receiving.receiverReports > 0 && sending.receiverReports > 0, "receiver reports flow and arrive")
        #expect(sending.malformedRTCP == 0 && receiving.malformedRTCP == 0 && receiving.malformedPackets == 0)
        #expect(call.a.isClosed && call.b.isClosed, "closing a session closes its transport")
        if srtp {
            #expect((sending.srtp?.protectedPackets ?? 0) > 0 && (receiving.srtp?.unprotectedPackets ?? 0) > 0)
            #expect(sending.unprotectFailures == 0 && receiving.unprotectFailures == 0)
        } else {
            #expect(sending.srtp == nil && receiving.srtp == nil)
        }
    }

    /// Every packet of the stream's last frame is lost (and with `probesLost`, the first tail probe
    /// too): no later packet shows the gap and the BYE ends the receiver. The tail probes that
    /// `close()` sends before its BYE, plain or as RTX (RFC 4588), reveal the gap, the receiver
    /// NACKs it (RFC 4585 §6.2.1) within the linger, and every frame comes out.
    @Test(arguments: [false, true], [0, 1])
    func theLastFrameLostWholeIsRecoveredBeforeTheBye(rtx: Bool, probesLost: Int) throws {
        let clock = SteppingClock(start: .seconds(10))
        let (a, b) = try InMemoryRTPTransport.pair(watchable: true)
        let sending = try RTPSendSession<VP8Packetizer>.Configuration(
            remote: Self.unusedAddress, multiplexed: true,
            sender: .init(payloadType: 96, ssrc: Self.ssrc, rtx: rtx ? Self.rtx : nil), reportInterval: .milliseconds(500))
        let sender = RTPSendSession(packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: sending,
                                    transport: a, clock: clock)
        let receiving = RTPReceiveSession<VP8Depacketizer>.Configuration(
            local: Self.unusedAddress, multiplexed: true, payloadType: 96,
            jitterBuffer: .init(rtx: rtx ? Self.rtx : nil), reportInterval: .milliseconds(500))
        let receiver = RTPReceiveSession(depacketizer: VP8Depacketizer(), configuration: receiving, transport: b, clock: clock)
        var received: [EncodedFrame] = [], goodbye = false
        // Each 5 ms: the receiver takes what arrived and sends its feedback, the sender answers it.
        clock.step = {
            taking: while !goodbye, let event = try? receiver.next(until: clock.now) {
                switch event {
                case .frame(let frame): received.append(frame)
                case .goodbye: goodbye = true
                case .timedOut: break taking
                }
            }
            sender.serviceTransport(timeout: .zero)
        }
        sender.start()
        let sent = (0..<5).map { Self.frame($0, keyframe: $0 == 0) }
        for (index, frame) in sent.enumerated() {
            if index == sent.count - 1 { a.loseNext(3 + probesLost) }
            try sender.send(frame)
            clock.sleep(until: clock.now + Self.frameInterval, unless: StopSignal())
        }
        #expect(received.count == sent.count - 1, "the last frame's loss shows nowhere yet")
        sender.close()
        for _ in 0..<10 where !goodbye { clock.step() }
        receiver.close()

        #expect(goodbye)
        #expect(received.count == sent.count, "every frame, the last one too")
        #expect(received.elementsEqual(sent) { Array($0.bytes) == Array($1.bytes) }, "whole and in order")
        let sendingStatistics = sender.statistics, receivingStatistics = receiver.statistics
        #expect(sendingStatistics.tailProbes == 2, "at the linger's start and halfway")
        #expect(receivingStatistics.nacksSent >= 1 && sendingStatistics.nacksReceived >= 1)
        #expect(receivingStatistics.jitterBuffer?.recovered == 2, "the two packets below the probe, NACKed and resent")
        #expect(sendingStatistics.retransmissions >= 4, "two probes and two answers")
    }

    /// `closeStep()` is `close()` without its sleeps, for a caller that must not hold its thread for
    /// the linger (a graph's sender node): each turn sends the tail-loss probes due and says how
    /// long until the next; the last one, at the linger's end, sends the BYE and closes.
    @Test func closingStepByStepLingersWithoutSleeping() throws {
        let clock = ManualClock(start: .seconds(10))
        let (a, b) = try InMemoryRTPTransport.pair(watchable: true)
        let sending = try RTPSendSession<VP8Packetizer>.Configuration(
            remote: Self.unusedAddress, multiplexed: true, sender: .init(payloadType: 96, ssrc: Self.ssrc))
        let sender = RTPSendSession(packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: sending,
                                    transport: a, clock: clock)
        let receiving = RTPReceiveSession<VP8Depacketizer>.Configuration(
            local: Self.unusedAddress, multiplexed: true, payloadType: 96)
        let receiver = RTPReceiveSession(depacketizer: VP8Depacketizer(), configuration: receiving, transport: b, clock: clock)
        sender.start()
        try sender.send(Self.frame(0, keyframe: true))

        #expect(sender.closeStep() == .milliseconds(150), "the first probe now, the next halfway")
        #expect(sender.statistics.tailProbes == 1)
        clock.advance(by: .milliseconds(100))
        #expect(sender.closeStep() == .milliseconds(50), "woken early: nothing due yet")
        #expect(sender.statistics.tailProbes == 1)
        clock.advance(by: .milliseconds(50))
        #expect(sender.closeStep() == .milliseconds(150), "the second probe, then the linger's end")
        #expect(sender.statistics.tailProbes == 2)
        #expect(!a.isClosed)
        clock.advance(by: .milliseconds(150))
        #expect(sender.closeStep() == nil)
        #expect(a.isClosed)
        #expect(sender.closeStep() == nil, "closed stays closed")

        var goodbye = false
        while !goodbye, let event = try? receiver.next(until: clock.now) {
            if case .goodbye = event { goodbye = true }
            if case .timedOut = event { break }
        }
        #expect(goodbye, "the BYE went out at the end")
        receiver.close()
    }

    /// The entry points a transport calls: what is not RTP or RTCP is counted and refused, so that
    /// a symmetric transport does not learn its return address from it.
    @Test func malformedPacketsAreCountedAndRefused() throws {
        let call = try Call(impairment: nil, srtp: false)
        let junk: [UInt8] = [0xFF, 0xFF, 0x00]
        junk.withUnsafeBytes { bytes in
            #expect(!call.receiver.receiveRTP(bytes, at: call.clock.now))
            #expect(!call.receiver.receiveRTCP(bytes, at: call.clock.now))
            #expect(!call.sender.receiveRTCP(bytes, at: call.clock.now))
        }
        var frames: [EncodedFrame] = []
        _ = try call.receive(into: &frames)
        #expect(call.receiver.statistics.malformedPackets == 1 && call.receiver.statistics.malformedRTCP == 1)
        #expect(call.sender.statistics.malformedRTCP == 1)
    }
}

/// The same sessions over `UDPRTPTransport` on loopback, as `sluice send` and `sluice receive` build
/// them: SRTP with one SDES key (RFC 4568), and the receiver learning where its feedback goes from
/// the sender's packets (symmetric RTP, RFC 4961).
@Suite struct UDPRTPTransportTests {
    /// A receiver's RTP socket gets the 4 MiB it asks for, as far as `net.core.rmem_max` allows an
    /// ordinary SO_RCVBUF (the kernel reports twice what it grants).
    @Test func aReceiversRTPSocketHasTheLargestBufferAllowed() throws {
        let configuration = RTPReceiveSession<VP8Depacketizer>.Configuration(local: try SocketAddress(parsing: "127.0.0.1:0"))
        let transport = try UDPRTPTransport(receiving: configuration)
        defer { transport.close() }
        let file = try #require(fopen("/proc/sys/net/core/rmem_max", "r"))
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 32)
        _ = fgets(&line, Int32(line.count), file)
        let limit = try #require(Int(String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .filter(\.isNumber)))
        let granted = try transport.sockets.rtp.receiveBufferSize
        print("receive buffer: asked \(UDPRTPTransport.receiveBufferSize), rmem_max \(limit), kernel reports \(granted)")
        #expect(granted == 2 * min(UDPRTPTransport.receiveBufferSize, limit))
    }

    @Test func aReceiverOverUDPHearsTheFramesAndItsReportsReachTheSender() throws {
        let srtp = SRTPParameters.random()
        var receiving = RTPReceiveSession<VP8Depacketizer>.Configuration(
            local: try SocketAddress(parsing: "127.0.0.1:0"), multiplexed: true, payloadType: 96,
            reportInterval: .milliseconds(50))
        receiving.srtp = srtp
        let receiver = try RTPReceiveSession(depacketizer: VP8Depacketizer(), configuration: receiving)
        var sending = try RTPSendSession<VP8Packetizer>.Configuration(
            remote: try #require(receiver.sockets).rtp.localAddress, multiplexed: true,
            sender: .init(payloadType: 96, ssrc: RTPSessionTransportTests.ssrc), reportInterval: .milliseconds(50))
        sending.srtp = srtp
        let sender = try RTPSendSession(packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: sending)
        #expect(sender.transport is UDPRTPTransport && receiver.transport is UDPRTPTransport)
        sender.start()

        let sent = (0..<3).map { RTPSessionTransportTests.frame($0, keyframe: $0 == 0) }
        for frame in sent { try sender.send(frame) }
        var received: [EncodedFrame] = []
        let deadline = SystemClock().now + .seconds(3)
        while SystemClock().now < deadline, received.count < sent.count || sender.statistics.receiverReports == 0 {
            if case .frame(let frame) = try receiver.next(until: SystemClock().now + .milliseconds(20)) { received.append(frame) }
        }
        #expect(received.map { Array($0.bytes) } == sent.map { Array($0.bytes) })
        #expect(sender.statistics.receiverReports > 0, "the receiver's RTCP went back to where the RTP came from")
        #expect((receiver.statistics.srtp?.unprotectedPackets ?? 0) >= 3 && receiver.statistics.unprotectFailures == 0)
        #expect((sender.statistics.srtp?.protectedPackets ?? 0) >= 3)
        sender.close()
        var ended = false
        while !ended, SystemClock().now < deadline + .seconds(2) {
            if case .goodbye = try receiver.next(until: SystemClock().now + .milliseconds(20)) { ended = true }
        }
        #expect(ended, "the BYE came through SRTCP")
        receiver.close()
    }
}

/// A clock that moves only while someone sleeps on it, and runs the test's world as it does: each
/// 5 ms it calls `step`, then moves on. A session's `close()` that lingers on it thus sees its
/// receiver and its feedback at every step, on the caller's thread, in a set order.
private final class SteppingClock: MediaClock, @unchecked Sendable {
    private let time: Mutex<ClockTime>
    var step: () -> Void = {}

    init(start: ClockTime) { time = Mutex(start) }

    var now: ClockTime { time.withLock { $0 } }

    func sleep(until deadline: ClockTime, unless stop: StopSignal) {
        while now < deadline && !stop.isStopped {
            step()
            time.withLock { $0 = $0 + .milliseconds(5) }
        }
    }
}
