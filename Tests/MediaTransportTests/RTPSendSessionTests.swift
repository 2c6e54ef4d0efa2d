import Foundation
import Glibc
import MediaCore
import MediaRTP
import Synchronization
import Testing

@testable import MediaTransport

/// An `RTPSendSession` against a plain socket playing the receiver: what it sends, and how it
/// answers RTCP feedback (RFC 4585, RFC 5104).
@Suite struct RTPSendSessionTests {
    static let ssrc: UInt32 = 0x5EED_0001

    /// A receiver socket on RTP and RTCP multiplexed (RFC 5761), and a session sending to it.
    static func pair(rtx: (payloadType: UInt8, ssrc: UInt32)? = nil) throws -> (UDPSocket, RTPSendSession<VP8Packetizer>) {
        let receiver = try UDPSocket(bindingTo: SocketAddress(parsing: "127.0.0.1:0"))
        let configuration = try RTPSendSession<VP8Packetizer>.Configuration(
            remote: receiver.localAddress, multiplexed: true,
            sender: .init(payloadType: 96, ssrc: ssrc, initialSequenceNumber: 100, rtx: rtx))
        return (receiver, try RTPSendSession(packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: configuration))
    }

    static func keyframe(size: Int) -> EncodedFrame {
        var bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
        bytes[0] &= 0xFE
        return bytes.withUnsafeBytes {
            EncodedFrame(codec: .vp8, isKeyframe: true, pts: .init(0, timebase: Rational(1, 30)), copying: $0, pool: nil)
        }
    }

    /// Every datagram that arrives within `seconds`, split into RTP packets and RTCP compounds.
    static func drain(_ socket: UDPSocket, for seconds: Double = 0.3) throws -> (rtp: [[UInt8]], rtcp: [RTCPCompoundPacket]) {
        var rtp: [[UInt8]] = [], rtcp: [RTCPCompoundPacket] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        let deadline = SystemClock().now + .seconds(seconds)
        while SystemClock().now < deadline {
            guard let received = try buffer.withUnsafeMutableBytes({ try socket.receive(into: $0, timeout: .milliseconds(20)) })
            else { continue }
            let datagram = Array(buffer[0..<received.count])
            if datagram.withUnsafeBytes(RTPSessionSockets.isRTCP) {
                rtcp.append(try RTCPCompoundPacket(parsing: datagram))
            } else {
                rtp.append(datagram)
            }
        }
        return (rtp, rtcp)
    }

    static func send(_ packets: [RTCPPacket], from socket: UDPSocket, to session: RTPSendSession<VP8Packetizer>) throws {
        let compound = RTCPCompoundPacket(packets)
        var bytes = [UInt8](repeating: 0, count: compound.marshalSize)
        _ = try bytes.withUnsafeMutableBytes { try compound.write(into: $0) }
        let address = try #require(session.sockets).rtp.localAddress
        try bytes.withUnsafeBytes { try socket.send($0, to: address) }
    }

    /// A receiver heard for the first time after the stream's first second gets a keyframe at its
    /// first report (it joined late); a receiver heard before, one reporting on another stream, and
    /// a flood of forged new reporters get at most one keyframe a second between them.
    @Test func aNewReceiversFirstReportAsksForAKeyframeAtMostOnceASecond() throws {
        let (receiver, session) = try Self.pair()
        defer {
            session.close()
            receiver.close()
        }
        let requests = Atomic(0)
        session.onKeyframeRequest = { requests.add(1, ordering: .relaxed) }
        let start = SystemClock().now
        func report(from reporter: UInt32, about ssrc: UInt32 = Self.ssrc, at offset: ClockTime) throws {
            let compound = RTCPCompoundPacket([.receiverReport(ReceiverReport(ssrc: reporter, reportBlocks: [ReportBlock(ssrc: ssrc)]))])
            var bytes = [UInt8](repeating: 0, count: compound.marshalSize)
            _ = try bytes.withUnsafeMutableBytes { try compound.write(into: $0) }
            bytes.withUnsafeBytes { _ = session.receiveRTCP($0, at: start + offset) }
        }
        try report(from: 1, at: .milliseconds(100))
        #expect(requests.load(ordering: .relaxed) == 0, "within the first second the stream's first keyframe serves it")
        try report(from: 2, at: .seconds(2))
        #expect(requests.load(ordering: .relaxed) == 1, "a late joiner")
        try report(from: 2, at: .seconds(4))
        try report(from: 3, about: 0x1234, at: .seconds(4))
        #expect(requests.load(ordering: .relaxed) == 1, "heard before, or reporting on another stream")
        for forged in 0..<1000 { try report(from: UInt32(100 + forged), at: .seconds(5) + .milliseconds(Int64(forged))) }
        #expect(requests.load(ordering: .relaxed) == 2, "a thousand forged reporters in a second: one keyframe")
        #expect(session.statistics.newReceivers == 2)
    }

    @Test func framesGoOutWithASenderReportAndFeedbackIsAnswered() throws {
        let (receiver, session) = try Self.pair()
        let requests = Atomic<Int>(0)
        session.onKeyframeRequest = { requests.add(1, ordering: .relaxed) }
        session.start()
        try session.send(Self.keyframe(size: 1200))
        let first = try Self.drain(receiver)
        #expect(first.rtp.count == 3, "1200 bytes in payloads of at most 500")
        let sr = first.rtcp.first?.packets.first
        guard case .senderReport(let report) = sr else { Issue.record("no sender report first: \(String(describing: sr))"); return }
        #expect(report.ssrc == Self.ssrc && report.packetCount == 3)
        #expect(first.rtcp.first?.packets.contains { if case .sourceDescription = $0 { true } else { false } } == true,
                "SDES with the CNAME in the same compound (RFC 3550 §6.1)")

        let me: UInt32 = 77
        try Self.send([.receiverReport(ReceiverReport(ssrc: me)),
                       .genericNACK(GenericNACK(senderSSRC: me, mediaSSRC: Self.ssrc, lostSequenceNumbers: [101])),
                       .pictureLossIndication(PictureLossIndication(senderSSRC: me, mediaSSRC: Self.ssrc)),
                       .fullIntraRequest(FullIntraRequest(senderSSRC: me, entries: [.init(ssrc: Self.ssrc, sequenceNumber: 1)]))],
                      from: receiver, to: session)
        let address = try #require(session.sockets).rtp.localAddress
        try [UInt8](repeating: 0xFF, count: 9).withUnsafeBytes { try receiver.send($0, to: address) }
        let second = try Self.drain(receiver)
        #expect(second.rtp == [first.rtp[1]], "packet 101 sent again as it was")
        #expect(requests.load(ordering: .relaxed) == 1, "PLI and FIR of one compound make one keyframe request")
        let statistics = session.statistics
        #expect(statistics.nacksReceived == 1 && statistics.retransmissions == 1 && statistics.keyframeRequests == 1)
        #expect(statistics.malformedRTCP == 1, "a datagram that is not RTCP is counted and dropped")

        session.close()
        let last = try Self.drain(receiver, for: 0.1)
        #expect(last.rtcp.last?.packets.contains { if case .goodbye(let bye) = $0 { bye.sources == [Self.ssrc] } else { false } } == true,
                "BYE at the end (RFC 3550 §6.6)")
    }

    /// A sender report pairs an RTP timestamp with the wall clock of the same instant (RFC 3550
    /// §6.4.1). One sent after a frame whose three packets took 30 ms to go out places that frame at
    /// the time it started going out; before, the report's wall clock was read after the packets and
    /// its timestamp was the frame's own, which put the frame 30 ms late (a receiver then misplaces
    /// the stream against its others in a recording).
    @Test func aSenderReportAfterASlowFramePlacesTheFrameWhenItWasSent() throws {
        let (a, b) = try InMemoryRTPTransport.pair(sendTime: .milliseconds(10))
        let configuration = try RTPSendSession<VP8Packetizer>.Configuration(
            remote: SocketAddress(parsing: "127.0.0.1:9"), multiplexed: true, sender: .init(payloadType: 96, ssrc: Self.ssrc))
        let session = RTPSendSession(packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: configuration, transport: a)
        let sentFrom = NTPTimestamp.now.secondsSince1900
        try session.send(Self.keyframe(size: 1200))
        let sentFor = NTPTimestamp.now.secondsSince1900 - sentFrom
        var timestamps: [UInt32] = [], reports: [SenderReport] = []
        _ = try b.receive(timeout: .zero) { packet in
            switch packet {
            case .rtp(let bytes, _): if let packet = try? RTPPacket(parsing: bytes) { timestamps.append(packet.header.timestamp) }
            case .rtcp(let bytes):
                for case .senderReport(let report) in (try? RTCPCompoundPacket(parsing: Array(bytes)))?.packets ?? [] { reports.append(report) }
            case .unprotectFailed: break
            }
            return true
        }
        let report = try #require(reports.first)
        #expect(timestamps.count == 3 && Set(timestamps).count == 1 && sentFor >= 0.03, "\(timestamps), sent in \(sentFor) s")
        let ticks = Int32(bitPattern: report.rtpTimestamp &- timestamps[0])
        let placedAt = report.ntpTimestamp.secondsSince1900 - Double(ticks) / 90_000
        #expect(abs(placedAt - sentFrom) < 0.01, "the frame placed \(Int((placedAt - sentFrom) * 1000)) ms after it started going out")
        session.close()
    }

    /// The round trip from a receiver report (RFC 3550 §6.4.1: arrival − LSR − DLSR) is taken at
    /// the report's arrival in the kernel, not at its read: a report left unread for half a second
    /// (a busy feedback thread) adds nothing to it.
    @Test func theRoundTripFromAReportIsTimedAtItsArrivalNotItsRead() throws {
        let (receiver, session) = try Self.pair()
        defer {
            session.close()
            receiver.close()
        }
        try session.send(Self.keyframe(size: 100))
        guard case .senderReport(let report)? = try Self.drain(receiver, for: 0.05).rtcp.first?.packets.first else {
            Issue.record("no sender report")
            return
        }
        let block = ReportBlock(ssrc: Self.ssrc, lastSenderReport: report.ntpTimestamp.compact, delaySinceLastSenderReport: 0)
        let sentAt = NTPTimestamp.now
        try Self.send([.receiverReport(ReceiverReport(ssrc: 9, reportBlocks: [block]))], from: receiver, to: session)
        let unread = 0.5
        usleep(UInt32(unread * 1e6))  // the report waits in the kernel, as behind a busy reader
        session.serviceTransport(timeout: .zero)
        let expected = sentAt.secondsSince1900 - report.ntpTimestamp.secondsSince1900
        let rtt = try #require(session.statistics.roundTripTime)
        #expect(abs(rtt - expected) < unread / 5, "\(rtt) s measured, \(expected) s from the report to its arrival")
    }

    @Test func retransmissionsGoAsRTXOnTheirOwnSSRC() throws {
        let (receiver, session) = try Self.pair(rtx: (97, 0xABCD))
        session.start()
        try session.send(Self.keyframe(size: 1200))
        let first = try Self.drain(receiver)
        try Self.send([.receiverReport(ReceiverReport(ssrc: 5)),
                       .genericNACK(GenericNACK(senderSSRC: 5, mediaSSRC: Self.ssrc, lostSequenceNumbers: [102]))],
                      from: receiver, to: session)
        let resent = try #require(try Self.drain(receiver).rtp.first)
        let packet = try RTPPacket(parsing: resent)
        #expect(packet.header.payloadType == 97 && packet.header.ssrc == 0xABCD)
        // RFC 4588 §4: the original sequence number, then the original payload.
        let original = try RTPPacket(parsing: first.rtp[2])
        #expect(Array(resent[packet.payloadRange].prefix(2)) == [0, 102])
        #expect(Array(resent[packet.payloadRange].dropFirst(2)) == Array(first.rtp[2][original.payloadRange]))
        session.close()
    }

    /// Frames sent on the test's thread while NACKs keep the RTCP thread retransmitting, through an
    /// impairment (which takes packets in time order): both threads read the clock before taking the
    /// session's lock, and the later one could hand the transport the earlier time, which trapped
    /// ("time went back", seen in pipebench's soak). Times are now made monotonic under the lock.
    @Test(.timeLimit(.minutes(1)))
    func retransmittingWhileSendingKeepsTimeGoingForward() throws {
        let receiver = try UDPSocket(bindingTo: SocketAddress(parsing: "127.0.0.1:0"))
        let configuration = try RTPSendSession<VP8Packetizer>.Configuration(
            remote: receiver.localAddress, multiplexed: true, sender: .init(payloadType: 96, ssrc: Self.ssrc, initialSequenceNumber: 100),
            impairment: ImpairmentProfile(delay: .milliseconds(1)))
        let session = try RTPSendSession(packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: configuration,
                                         clock: LaggingClock())
        session.start()
        let stop = Atomic<Bool>(false)
        let sent = Atomic<Int>(0)
        let nacker = Thread {
            var back = 0
            while !stop.load(ordering: .relaxed) {
                // A packet of one of the last frames sent (three packets each): still in the history.
                let sequence = UInt16(truncatingIfNeeded: 100 + max(0, 3 * sent.load(ordering: .relaxed) - 1 - back))
                try? Self.send([.receiverReport(ReceiverReport(ssrc: 5)),
                                .genericNACK(GenericNACK(senderSSRC: 5, mediaSSRC: Self.ssrc, lostSequenceNumbers: [sequence]))],
                               from: receiver, to: session)
                back = (back + 1) % 12
                usleep(50)
            }
        }
        nacker.start()
        let end = SystemClock().now + .seconds(2)
        var frames = 0
        while SystemClock().now < end {
            try session.send(Self.keyframe(size: 1200))
            frames += 1
            sent.store(frames, ordering: .relaxed)
        }
        stop.store(true, ordering: .relaxed)
        while !nacker.isFinished { usleep(1000) }
        let statistics = session.statistics
        session.close()
        #expect(frames > 100 && statistics.retransmissions > 100, "\(frames) frames, \(statistics.retransmissions) retransmissions")
    }
}

/// The system clock, but the reading thread is held 100 µs after it reads: the time a thread
/// read is then often older than another's by the time either takes a lock.
private final class LaggingClock: MediaClock {
    private let system = SystemClock()
    var now: ClockTime {
        let now = system.now
        usleep(100)
        return now
    }
    func sleep(until deadline: ClockTime, unless stop: StopSignal) { system.sleep(until: deadline, unless: stop) }
}
