import MediaCore
import TestSupport
import Testing

@testable import MediaRTP

private func ms(_ value: Int64) -> ClockTime { .milliseconds(value) }

/// A sender and a jitter buffer joined by the test, which decides what arrives when.
private struct Link<P: RTPPacketizer, D: RTPDepacketizer> {
    var sender: RTPSender<P>
    var buffer: JitterBuffer<D>
    var released: [EncodedFrame] = []

    /// The packets of `frame`, as bytes.
    mutating func send(_ frame: EncodedFrame, at now: ClockTime = .zero) throws -> [[UInt8]] {
        var packets: [[UInt8]] = []
        try sender.send(frame, at: now) { packets.append(Array($0)) }
        return packets
    }

    /// Inserts the packet `bytes`; `viaReceiveSlot`: written 3 bytes into the buffer's receive slot
    /// first, as a transport decrypting there does, and the slot that is the receive slot afterwards
    /// overwritten, as the next datagram would.
    @discardableResult
    mutating func insert(_ bytes: [UInt8], at arrival: ClockTime, viaReceiveSlot: Bool = false) throws -> JitterBuffer<D>.InsertResult {
        let packet = try RTPPacket(parsing: bytes)
        guard viaReceiveSlot else { return bytes.withUnsafeBytes { buffer.insert(packet, in: $0, arrival: arrival) } }
        let slot = buffer.receiveSlot
        bytes.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: slot[3..<3 + bytes.count]).copyMemory(from: $0) }
        let result = buffer.insert(packet, in: UnsafeRawBufferPointer(rebasing: slot[3..<3 + bytes.count]), arrival: arrival)
        buffer.receiveSlot.initializeMemory(as: UInt8.self, repeating: 0xEE)
        return result
    }

    /// Answers the NACKs of `feedback` from the sender's history.
    mutating func retransmissions(for nacks: [UInt16]) throws -> [[UInt8]] {
        var packets: [[UInt8]] = []
        for sequence in nacks { try sender.retransmit(sequence) { packets.append(Array($0)) } }
        return packets
    }

    mutating func drain(at now: ClockTime) {
        while let frame = buffer.nextFrame(at: now) { released.append(frame) }
    }
}

private func vp8Link(configuration: JitterBuffer<VP8Depacketizer>.Configuration = .init(), firstSequence: UInt16 = 1000,
                     timestampOffset: UInt32 = 5000, rtx: (payloadType: UInt8, ssrc: UInt32)? = nil) throws
    -> Link<VP8Packetizer, VP8Depacketizer> {
    Link(sender: RTPSender(packetizer: try VP8Packetizer(maxPayloadSize: 1000),
                           configuration: .init(payloadType: 96, ssrc: 0x1234_5678, initialSequenceNumber: firstSequence,
                                                timestampOffset: timestampOffset, historySize: 512, rtx: rtx)),
         buffer: JitterBuffer(depacketizer: VP8Depacketizer(), configuration: configuration, pool: BufferPool(name: "jitter")))
}

private func opusLink(configuration: JitterBuffer<OpusDepacketizer>.Configuration = .init()) throws
    -> Link<OpusPacketizer, OpusDepacketizer> {
    Link(sender: RTPSender(packetizer: try OpusPacketizer(),
                           configuration: .init(payloadType: 111, ssrc: 7, initialSequenceNumber: 0, timestampOffset: 0)),
         buffer: JitterBuffer(depacketizer: OpusDepacketizer(), configuration: configuration, pool: BufferPool(name: "jitter")))
}

/// A 20 ms Opus packet (TOC config 31: CELT FB 20 ms, code 0, RFC 6716 §3.1) numbered `index`.
private func opusFrame(_ index: Int) -> EncodedFrame {
    [0xF8, UInt8(truncatingIfNeeded: index), 0x55].withUnsafeBytes {
        EncodedFrame(codec: .opus, isKeyframe: true, pts: MediaTime(Int64(index) * 960, timebase: Rational(1, 48_000)),
                     duration: MediaTime(960, timebase: Rational(1, 48_000)), copying: $0, pool: nil)
    }
}

private func vp8Frame(_ index: Int, _ size: Int, _ keyframe: Bool) -> EncodedFrame {
    RTPSenderTests.frame(index, size: size, keyframe: keyframe)
}

/// Checks that `frames` hold `expected`, without printing megabytes when they do not.
private func expectBytes(_ frames: [EncodedFrame], _ expected: [[UInt8]], sourceLocation: SourceLocation = #_sourceLocation) {
    let same = frames.map { Array($0.bytes) } == expected
    #expect(same, "\(frames.count) frames released, \(expected.count) expected", sourceLocation: sourceLocation)
}

@Suite struct JitterBufferTests {
    @Test func framesLeaveInOrderAfterTheTargetDelay() throws {
        var link = try opusLink()
        for index in 0..<3 {
            for packet in try link.send(opusFrame(index)) {
                #expect(try link.insert(packet, at: ms(20 * Int64(index))) == .accepted)
            }
        }
        // No jitter, no loss: the target is the 10 ms minimum after the expected (= actual) arrival.
        #expect(link.buffer.statistics.targetDelay == ms(10))
        #expect(link.buffer.nextDeadline == ms(10))
        link.drain(at: ms(9))
        #expect(link.released.isEmpty)
        link.drain(at: ms(30))
        #expect(link.released.map(\.pts.value) == [0, 960])
        #expect(link.released.allSatisfy { $0.duration == MediaTime(960, timebase: Rational(1, 48_000)) && $0.isKeyframe })
        #expect(link.buffer.nextDeadline == ms(50))
        link.drain(at: ms(50))
        expectBytes(link.released, (0..<3).map { [0xF8, UInt8($0), 0x55] })
    }

    @Test func reorderedPacketsMakeAFrameWithoutANACK() throws {
        var link = try vp8Link()
        let frame = vp8Frame(0, 2500, true)
        let packets = try link.send(frame)
        for (order, index) in [2, 0, 1].enumerated() { try link.insert(packets[index], at: ms(Int64(order))) }
        // The gap showed at 0 ms and closed at 2 ms, inside the 5 ms reorder allowance.
        #expect(link.buffer.feedback(at: ms(2)).nacks.isEmpty)
        link.drain(at: ms(100))
        expectBytes(link.released, [Array(frame.bytes)])
        #expect(link.released.first?.isKeyframe == true)
        #expect(link.buffer.statistics.nacked == 0 && link.buffer.statistics.lost == 0)
    }

    @Test func duplicatesAreCountedBeforeAndAfterRelease() throws {
        var link = try vp8Link()
        let packets = try link.send(vp8Frame(0, 500, true))
        #expect(try link.insert(packets[0], at: .zero) == .accepted)
        #expect(try link.insert(packets[0], at: ms(1)) == .duplicate)
        link.drain(at: ms(100))
        #expect(link.released.count == 1)
        #expect(try link.insert(packets[0], at: ms(101)) == .duplicate)
        #expect(link.buffer.statistics.duplicates == 2)
        #expect(link.buffer.statistics.received == 1)
    }

    /// Packets written into `receiveSlot` (as `SRTPSession.unprotect(_:into:)` writes them) are kept
    /// where they are: what is written into the next receive slot leaves them alone, and frames come
    /// out as from copied packets, reordered, duplicated and retransmitted (RTX's OSN skipped) alike.
    @Test(arguments: [false, true])
    func packetsWrittenIntoTheReceiveSlotAreKeptThere(rtx: Bool) throws {
        let rtxStream: (payloadType: UInt8, ssrc: UInt32)? = rtx ? (97, 0xABCD) : nil
        var link = try vp8Link(configuration: .init(rtx: rtxStream), rtx: rtxStream)
        var sent: [[UInt8]] = []
        for index in 0..<8 {
            let frame = vp8Frame(index, 2500, index == 0)
            sent.append(Array(frame.bytes))
            let packets = try link.send(frame)
            let arrival = ms(33 * Int64(index))
            // Frame 3 loses its middle packet; the rest come in as 2, 0, 1, through the slot or copied by turns.
            for (order, number) in [2, 0, 1].enumerated() where index != 3 || number != 1 {
                #expect(try link.insert(packets[number], at: arrival + ms(Int64(order)), viaReceiveSlot: (index + order) % 2 == 0) == .accepted)
            }
            #expect(try link.insert(packets[0], at: arrival + ms(3), viaReceiveSlot: true) == .duplicate)
            if index == 3 {
                let nacks = link.buffer.feedback(at: arrival + ms(20)).nacks
                #expect(nacks.count == 1)
                for packet in try link.retransmissions(for: nacks) {
                    #expect(try link.insert(packet, at: arrival + ms(25), viaReceiveSlot: true) == .accepted)
                }
            }
        }
        link.drain(at: .seconds(2))
        expectBytes(link.released, sent)
        let statistics = link.buffer.statistics
        #expect(statistics.received == 24 && statistics.duplicates == 8 && statistics.recovered == 1 && statistics.lost == 0)
    }

    /// A small window through losses, late packets, duplicates and overflows, half the packets
    /// through the receive slot: every slot freed is used again (none is lost to an entry that left
    /// the window), and every frame released is the one sent.
    @Test func slotsComeBackThroughLossesAndOverflows() throws {
        var link = try vp8Link(configuration: .init(nack: false, capacity: 16))
        var sent: [Int64: [UInt8]] = [:]
        var random = SplitMix64(seed: 0x5EED_0005)
        for index in 0..<400 {
            let frame = vp8Frame(index, 1500 + 700 * (index % 3), index % 10 == 0)
            let packets = try link.send(frame)
            let arrival = ms(33 * Int64(index))
            for packet in packets.shuffled(using: &random) where Int.random(in: 0..<100, using: &random) >= 5 {
                try link.insert(packet, at: arrival, viaReceiveSlot: Bool.random(using: &random))
                if Int.random(in: 0..<100, using: &random) < 5 { try link.insert(packet, at: arrival, viaReceiveSlot: true) }
            }
            sent[Int64(index) * 3000] = Array(frame.bytes)
            // Every few frames the reader is away: the window overflows.
            if index % 12 < 7 { link.drain(at: arrival + ms(15)) }
        }
        link.drain(at: .seconds(100))
        let statistics = link.buffer.statistics
        #expect(statistics.framesReleased > 150 && statistics.overflows > 0 && statistics.duplicates > 0 && statistics.lost > 0,
                "\(statistics)")
        #expect(link.released.allSatisfy { sent[$0.pts.value] == Array($0.bytes) })
    }

    /// Sequence numbers from 65530 and timestamps 5000 below 2^32 both wrap (RFC 3550 §5.1).
    @Test func sequenceNumbersAndTimestampsWrapAround() throws {
        var link = try vp8Link(firstSequence: 65530, timestampOffset: UInt32.max - 5000)
        var sent: [[UInt8]] = []
        for index in 0..<10 {
            let frame = vp8Frame(index, 1500, index == 0)
            sent.append(Array(frame.bytes))
            for packet in try link.send(frame) { try link.insert(packet, at: ms(33 * Int64(index))) }
            link.drain(at: ms(33 * Int64(index) + 20))
        }
        #expect(link.released.map(\.pts.value) == (0..<10).map { Int64($0) * 3000 })
        expectBytes(link.released, sent)
        #expect(link.buffer.reception.extendedHighestSequenceNumber == Int64(65530 + 19))
    }

    @Test(arguments: [false, true])
    func aLostPacketIsNACKedAndRecovered(rtx: Bool) throws {
        var link = try vp8Link(rtx: rtx ? (97, 0xABCD) : nil)
        if rtx { link.buffer = JitterBuffer(depacketizer: VP8Depacketizer(), configuration: .init(rtx: (97, 0xABCD)), pool: BufferPool(name: "rtx")) }
        let frame = vp8Frame(0, 2500, true)
        let packets = try link.send(frame)
        try link.insert(packets[0], at: .zero)
        try link.insert(packets[2], at: ms(1))  // shows the gap; the jitter is 90/16 ticks (62.5 µs)
        #expect(link.buffer.feedback(at: ms(2)).nacks.isEmpty, "still inside the reorder allowance")
        let allowance = ms(6) + .seconds(90.0 / 16 / 90_000 / 2)
        #expect(link.buffer.nextDeadline == allowance)
        let feedback = link.buffer.feedback(at: allowance)
        #expect(feedback.nacks == [1001])
        #expect(feedback.genericNACK(senderSSRC: 1, mediaSSRC: 2)?.lostSequenceNumbers == [1001])
        let resent = try link.retransmissions(for: feedback.nacks)
        #expect(try RTPPacket(parsing: resent[0]).header.payloadType == (rtx ? 97 : 96))
        #expect(try link.insert(resent[0], at: ms(40)) == .accepted)
        link.drain(at: ms(200))
        expectBytes(link.released, [Array(frame.bytes)])
        let statistics = link.buffer.statistics
        #expect(statistics.nacked == 1 && statistics.recovered == 1 && statistics.lost == 0)
        // The round trip is measured from the NACK to its answer; a loss was seen with NACK on, so the
        // target now covers two of them.
        let roundTrip = ms(40) - allowance
        #expect(link.buffer.currentRoundTripTime == roundTrip)
        #expect(statistics.targetDelay >= roundTrip + roundTrip)
    }

    /// Found under load (HostileTrafficTests' flood): answers took longer than the retry interval, and
    /// measured from the latest retry they looked shorter, so the round trip never grew and the retries
    /// outran their answers (duplicates, then packets late for frames already given up). The sample
    /// runs from the first NACK.
    @Test func anAnswerAfterARetryIsMeasuredFromTheFirstNACK() throws {
        var link = try vp8Link()
        let packets = try link.send(vp8Frame(0, 2500, true))
        try link.insert(packets[0], at: .zero)
        try link.insert(packets[2], at: ms(1))
        let first = try #require(link.buffer.nextDeadline)
        #expect(link.buffer.feedback(at: first).nacks == [1001])
        let retry = first + link.buffer.currentRoundTripTime
        #expect(link.buffer.nextDeadline == retry)
        #expect(link.buffer.feedback(at: retry).nacks == [1001], "asked again after the default round trip")
        let resent = try link.retransmissions(for: [1001])
        #expect(try link.insert(resent[0], at: retry + ms(30)) == .accepted)
        #expect(link.buffer.currentRoundTripTime == retry + ms(30) - first)
    }

    /// Runs `link`'s buffer from deadline to deadline until `until`, asking for what it NACKs and
    /// releasing what is due; `answer` says what to do with each NACK of `watched` (its ordinal and
    /// time): the retransmission's arrival time, or nil when it is lost too. Returns the NACK times
    /// for `watched` and when a packet was first given up.
    private static func run(_ link: inout Link<VP8Packetizer, VP8Depacketizer>, until end: ClockTime, watching watched: UInt16,
                            answer: (Int, ClockTime) -> ClockTime?) throws -> (nacks: [ClockTime], givenUp: ClockTime?) {
        var nackTimes: [ClockTime] = [], givenUp: ClockTime?
        var pending: [(at: ClockTime, bytes: [UInt8])] = []
        var now = ClockTime.zero
        for _ in 0..<10_000 {  // bounded: a deadline stuck in the past would spin
            let next = min(link.buffer.nextDeadline ?? .max, pending.map(\.at).min() ?? .max)
            guard next < end else { return (nackTimes, givenUp) }
            now = max(now, next)
            for arrival in pending where arrival.at <= now { try link.insert(arrival.bytes, at: arrival.at) }
            pending.removeAll { $0.at <= now }
            let nacks = link.buffer.feedback(at: now).nacks
            if nacks.contains(watched) {
                nackTimes.append(now)
                if let at = answer(nackTimes.count, now) { pending.append((at, try link.retransmissions(for: [watched])[0])) }
            }
            link.drain(at: now)
            if givenUp == nil && link.buffer.statistics.lost > 0 { givenUp = now }
        }
        Issue.record("the deadlines never passed \(end)")
        return (nackTimes, givenUp)
    }

    @Test func aPacketWhoseRetransmissionsAreLostTwelveTimesIsStillRecovered() throws {
        var link = try vp8Link()  // maximum delay 1 s: a video frame waits that long for what it lacks
        link.buffer.updateRoundTripTime(ms(30))
        let frame = vp8Frame(0, 2500, true)
        let packets = try link.send(frame)
        try link.insert(packets[0], at: .zero)
        try link.insert(packets[2], at: .zero)
        // The first 12 retransmissions are lost too (a flood makes the kernel drop them); the 13th comes.
        let run = try Self.run(&link, until: ms(2000), watching: 1001) { count, now in count > 12 ? now + ms(15) : nil }
        #expect(run.nacks.count == 13)
        #expect(run.nacks.first == ms(5), "first asked for after the reorder allowance")
        #expect(zip(run.nacks, run.nacks.dropFirst()).allSatisfy { $1 - $0 == ms(30) }, "retries one RTT apart")
        expectBytes(link.released, [Array(frame.bytes)])
        #expect(link.buffer.statistics.lost == 0 && link.buffer.statistics.recovered == 1 && run.givenUp == nil)
    }

    @Test func nackRetriesStopWhenNoAnswerCouldComeBeforeTheFrameIsGivenUp() throws {
        var link = try vp8Link(configuration: .init(minimumDelay: ms(10), maximumDelay: ms(300)))
        link.buffer.updateRoundTripTime(ms(50))
        let packets = try link.send(vp8Frame(0, 2500, true))
        try link.insert(packets[0], at: .zero)
        try link.insert(packets[2], at: .zero)
        let run = try Self.run(&link, until: ms(1000), watching: 1001) { _, _ in nil }
        // Every RTT while an answer could still come by the frame's last chance (its expected
        // arrival plus the maximum delay, 300 ms): the last at 205 ms, since one at 255 ms would be answered too late.
        #expect(run.nacks == [ms(5), ms(55), ms(105), ms(155), ms(205)])
        #expect(link.buffer.statistics.nackRequests == 5 && link.buffer.statistics.nacked == 1)
        #expect(run.givenUp == ms(300), "given up at its last chance, not when the NACKs stopped")
        #expect(link.buffer.statistics.lost == 1 && link.buffer.statistics.framesDropped == 1)
        #expect(link.released.isEmpty)
    }

    @Test func nackRetriesFollowTheRoundTripMeasuredFromTheFirstNACK() throws {
        var link = try vp8Link()
        let key = vp8Frame(0, 2500, true), delta = vp8Frame(1, 2500, false)
        let keyPackets = try link.send(key), deltaPackets = try link.send(delta)
        try link.insert(keyPackets[0], at: .zero)
        try link.insert(keyPackets[2], at: .zero)
        #expect(link.buffer.feedback(at: ms(5)).nacks == [1001])
        try link.insert(try link.retransmissions(for: [1001])[0], at: ms(45))  // a 40 ms round trip
        #expect(link.buffer.currentRoundTripTime == ms(40))
        try link.insert(deltaPackets[0], at: ms(50))
        try link.insert(deltaPackets[2], at: ms(50))
        let run = try Self.run(&link, until: ms(400), watching: 1004) { count, now in count == 4 ? now + ms(40) : nil }
        #expect(run.nacks.count == 4)
        #expect(zip(run.nacks, run.nacks.dropFirst()).allSatisfy { $1 - $0 == ms(40) }, "retries one measured RTT apart")
        expectBytes(link.released, [Array(key.bytes), Array(delta.bytes)])
    }

    @Test func nacksPerRoundTripAreBoundedOldestFirst() throws {
        var link = try vp8Link(configuration: .init(maxNACKsPerRoundTrip: 4))
        link.buffer.updateRoundTripTime(ms(20))
        let packets = try link.send(vp8Frame(0, 11_000, true))
        try #require(packets.count == 12)  // 1000...1011
        try link.insert(packets[0], at: .zero)
        try link.insert(packets[11], at: .zero)
        var sent: [(at: ClockTime, sequence: UInt16)] = []
        var now = ClockTime.zero
        while let deadline = link.buffer.nextDeadline, deadline < ms(100) {
            now = max(now, deadline)
            for sequence in link.buffer.feedback(at: now).nacks { sent.append((now, sequence)) }
        }
        #expect(Array(sent.prefix(10).map(\.sequence)) == Array(1001...1010), "each missing packet asked for, oldest first")
        for start in sent.map(\.at) {
            #expect(sent.filter { $0.at >= start && $0.at < start + ms(20) }.count <= 4, "at most 4 NACKs in any 20 ms")
        }
        #expect(sent.count >= 16, "retries keep going within the budget")
    }

    @Test func aLostFrameStopsDeltaFramesUntilAKeyframe() throws {
        var link = try vp8Link(configuration: .init(nack: false))
        var keyframeRequests: [ClockTime] = []
        for index in 0..<15 {
            let now = ms(33 * Int64(index))
            let packets = try link.send(vp8Frame(index, 1500, index == 0 || index == 12), at: now)
            if index != 2 {
                for packet in packets { try link.insert(packet, at: now) }
            }
            link.drain(at: now + ms(20))
            for step in 0..<33 where link.buffer.feedback(at: now + ms(Int64(step))).keyframeRequest {
                keyframeRequests.append(now + ms(Int64(step)))
            }
        }
        // Frame 2 is lost: 3...11 have no reference; output resumes at the keyframe 12.
        #expect(link.released.map { $0.pts.value / 3000 } == [0, 1, 12, 13, 14])
        #expect(link.released.map(\.isKeyframe) == [true, false, true, false, false])
        #expect(link.buffer.statistics.framesDropped == 9)
        // Asked at once, then at most every 250 ms until the keyframe came.
        #expect(keyframeRequests.count == 2)
        if keyframeRequests.count == 2 { #expect(keyframeRequests[1] - keyframeRequests[0] >= ms(250)) }
        #expect(link.buffer.statistics.keyframeRequests == 2)
    }

    @Test func aLostOpusPacketLeavesAPtsGapAndNoKeyframeRequest() throws {
        var link = try opusLink()
        for index in 0..<5 {
            let packets = try link.send(opusFrame(index))
            if index != 2 { try link.insert(packets[0], at: ms(20 * Int64(index))) }
        }
        link.drain(at: ms(1000))
        #expect(link.released.map(\.pts.value) == [0, 960, 2880, 3840])
        #expect(link.buffer.feedback(at: ms(1000)).keyframeRequest == false)
        #expect(link.buffer.statistics.lost == 1 && link.buffer.statistics.keyframeRequests == 0)
    }

    /// RFC 3550 A.8 by hand: 20 ms packets (960 ticks) arriving at 0, 25 and 40 ms. D = 1200 - 960 =
    /// 240, J = 240/16 = 15; then D = 720 - 960 = -240, J = 15 + (240 - 15)/16 = 29.0625.
    @Test func jitterFollowsRFC3550() throws {
        var link = try opusLink()
        for (index, arrival) in [0, 25, 40].enumerated() {
            try link.insert(try link.send(opusFrame(index))[0], at: ms(Int64(arrival)))
        }
        #expect(link.buffer.statistics.jitter == 29.0625)
        #expect(link.buffer.statistics.jitterSeconds == 29.0625 / 48_000)
        #expect(link.buffer.receptionReport(at: ms(40))?.jitter == 29)
    }

    @Test func targetDelayGrowsWithJitterWithinItsBounds() throws {
        var link = try opusLink(configuration: .init(minimumDelay: ms(5), maximumDelay: ms(120), nack: false))
        var targets: [ClockTime] = []
        var random = SplitMix64(seed: 3)
        for index in 0..<400 {
            let spread = index < 100 ? 0 : index < 200 ? 10 : 200  // ms of arrival jitter per phase
            let arrival = ms(20 * Int64(index) + Int64(random.next() % UInt64(spread + 1)))
            try link.insert(try link.send(opusFrame(index))[0], at: arrival)
            targets.append(link.buffer.statistics.targetDelay)
        }
        #expect(targets[99] == ms(5), "no jitter: the minimum")
        #expect(targets[199] > ms(5) && targets[199] < ms(120), "4·J of some milliseconds")
        #expect(targets[399] == ms(120), "clamped to the maximum")
        #expect(targets.allSatisfy { $0 >= ms(5) && $0 <= ms(120) })
    }

    @Test func malformedPayloadsAreCounted() throws {
        var link = try vp8Link(configuration: .init(rtx: (97, 9)))
        func packet(payloadType: UInt8, ssrc: UInt32, _ payload: [UInt8]) throws -> [UInt8] {
            let header = RTPHeader(payloadType: payloadType, sequenceNumber: 1, timestamp: 0, ssrc: ssrc)
            var bytes = [UInt8](repeating: 0, count: 12 + payload.count)
            try bytes.withUnsafeMutableBytes { out in
                try payload.withUnsafeBytes { _ = try RTPPacket.write(header: header, payload: $0, into: out) }
            }
            return bytes
        }
        #expect(try link.insert(packet(payloadType: 96, ssrc: 1, []), at: .zero) == .malformed(.emptyPayload))
        #expect(try link.insert(packet(payloadType: 96, ssrc: 1, [0x90]), at: .zero)
            == .malformed(.vp8DescriptorTruncated(.extensionOctet)))
        #expect(try link.insert(packet(payloadType: 97, ssrc: 9, [0x01]), at: .zero) == .malformed(.rtxOriginalSequenceNumberMissing))
        #expect(try link.insert(packet(payloadType: 96, ssrc: 1, [0x10] + [UInt8](repeating: 0, count: 1600)), at: .zero) == .tooLarge)
        let statistics = link.buffer.statistics
        #expect(statistics.malformed == 3 && statistics.discarded == 4 && statistics.received == 0)
    }

    @Test func theWindowIsBounded() throws {
        let pool = BufferPool(name: "bounded")
        var link = try opusLink(configuration: .init(capacity: 16))
        link.buffer = JitterBuffer(depacketizer: OpusDepacketizer(), configuration: .init(capacity: 16), pool: pool)
        for index in 0..<100 { try link.insert(try link.send(opusFrame(index))[0], at: .zero) }
        #expect(link.buffer.statistics.overflows == 84)
        #expect(link.buffer.statistics.framesDropped == 84)
        link.drain(at: ms(10_000))
        #expect(link.released.map { $0.pts.value / 960 } == Array(84..<100))
        link.released.removeAll()
        let allocations = pool.allocations
        for index in 100..<1000 {
            try link.insert(try link.send(opusFrame(index))[0], at: ms(20 * Int64(index)))
            link.drain(at: ms(20 * Int64(index) + 10))
            link.released.removeAll()
        }
        #expect(pool.allocations == allocations, "frames reuse pooled buffers")
    }

    /// Frames from the real packetizers come out of the jitter buffer byte for byte.
    @Test func h264AccessUnitsComeOutByteIdentical() throws {
        var link = Link(sender: RTPSender(packetizer: try H264Packetizer(maxPayloadSize: 1000),
                                          configuration: .init(payloadType: 102, ssrc: 3)),
                        buffer: JitterBuffer(depacketizer: H264Depacketizer(), pool: BufferPool(name: "h264")))
        var sent: [[UInt8]] = []
        for index in 0..<20 {
            let idr = index % 10 == 0
            let slice: [UInt8] = [idr ? 0x65 : 0x41, 0x88] + (0..<(300 + 250 * index)).map { UInt8(truncatingIfNeeded: $0 * 7 + index) | 1 }
            let units = idr ? [[0x67, 0x42, 0xC0, 0x1F], [0x68, 0xCE, 0x3C, 0x80], slice] : [slice]
            let frame = annexB(units).withUnsafeBytes {
                EncodedFrame(codec: .h264, isKeyframe: idr, pts: MediaTime(Int64(index), timebase: Rational(1, 30)), copying: $0, pool: nil)
            }
            sent.append(Array(frame.bytes))
            let packets = try link.send(frame)
            for packet in packets.reversed() { try link.insert(packet, at: ms(33 * Int64(index))) }
            link.drain(at: ms(33 * Int64(index) + 15))
        }
        expectBytes(link.released, sent)
        #expect(link.released.map(\.isKeyframe) == (0..<20).map { $0 % 10 == 0 })
    }

    /// A long run through a lossy, reordering, duplicating network: whatever is lost, no released
    /// frame follows a gap unless it is a keyframe, and every frame is the one sent.
    @Test(arguments: [(nack: false, rtx: false), (nack: true, rtx: false), (nack: true, rtx: true)])
    func noFrameFollowsAGapUnlessItIsAKeyframe(mode: (nack: Bool, rtx: Bool)) throws {
        let rtx: (payloadType: UInt8, ssrc: UInt32)? = mode.rtx ? (97, 0xABCD) : nil
        var link = try vp8Link(configuration: .init(nack: mode.nack, rtx: rtx), rtx: rtx)
        link.buffer.updateRoundTripTime(ms(60))
        let profile = ImpairmentProfile(lossPercent: 3, meanBurstLength: 2, reorderPercent: 5, duplicatePercent: 2,
                                        delay: ms(30), jitter: ms(8), seed: 42)
        var network = NetworkImpairment<[UInt8]>(profile: profile)
        var sent: [[UInt8]] = []
        var random = SplitMix64(seed: 11)
        var keyframeDue = true
        var sentAt = ClockTime.zero
        for step in 0..<12_000 {
            let now = ms(Int64(step))
            if step % 33 == 0 && step < 11_000 {
                let index = sent.count
                let frame = vp8Frame(index, 300 + Int(random.next() % 3000), keyframeDue || index % 90 == 0)
                keyframeDue = false
                sent.append(Array(frame.bytes))
                for packet in try link.send(frame, at: now) {
                    // The first frame arrives whole, so that pts count from it.
                    if index == 0 { try link.insert(packet, at: now) } else { network.submit(packet, bytes: packet.count, at: now) }
                }
                sentAt = now
            }
            try network.deliver(until: now) { try link.insert($0, at: now) }
            let feedback = link.buffer.feedback(at: now)
            if feedback.keyframeRequest { keyframeDue = true }
            if mode.nack {
                // The NACK crosses the network's delay, the answer crosses it again (through the impairment).
                for packet in try link.retransmissions(for: feedback.nacks) { network.submit(packet, bytes: packet.count, at: now) }
            }
            link.drain(at: now)
        }
        _ = sentAt
        var previous: Int?
        for frame in link.released {
            let index = Int(frame.pts.value / 3000)
            if Array(frame.bytes) != sent[index] { Issue.record("frame \(index) differs from the one sent") }
            if let previous, !frame.isKeyframe { #expect(index == previous + 1, "frame \(index) after \(previous)") }
            previous = index
        }
        let statistics = link.buffer.statistics
        #expect(link.released.count > sent.count / 2)
        #expect(statistics.framesReleased == link.released.count)
        if mode.nack {
            #expect(statistics.recovered > 0 && statistics.nacked > 0)
            #expect(link.released.count > sent.count * 9 / 10, "\(link.released.count) of \(sent.count)")
        } else {
            #expect(statistics.keyframeRequests > 0 && statistics.framesDropped > 0)
        }
    }

    /// What a jitter buffer did over a run: the frames it released, the feedback it gave, its counts.
    private struct RunRecord: Equatable {
        var frames: [[UInt8]] = []
        var pts: [Int64] = []
        var keyframes: [Bool] = []
        var nacks: [[UInt16]] = []
        var keyframeRequests = 0
        var statistics = JitterBufferStatistics()
    }

    /// A long run through a lossy, reordering, duplicating network whose frames vary from 300 bytes to
    /// 40 KB keyframes, one packet in 150 with its PictureID altered (VP8: its frame then does not fit
    /// together), and NACKs answered through the network.
    private func impairedRun(nack: Bool, rtx: Bool, assemblesAsPacketsCome: Bool) throws -> RunRecord {
        let rtxStream: (payloadType: UInt8, ssrc: UInt32)? = rtx ? (97, 0xABCD) : nil
        var link = try vp8Link(configuration: .init(nack: nack, rtx: rtxStream), rtx: rtxStream)
        return try impairedRun(&link, nack: nack, assemblesAsPacketsCome: assemblesAsPacketsCome, alterEvery: 150) {
            vp8Frame($0, $1 ? 40_000 : $2, $1)
        }
    }

    /// H.264 access units: keyframes lead with SPS and PPS in a STAP-A and their IDR slice, split into
    /// FU-As, also looks like an access unit's start.
    private func impairedH264Run(assemblesAsPacketsCome: Bool) throws -> RunRecord {
        var link = Link(sender: RTPSender(packetizer: try H264Packetizer(maxPayloadSize: 1000),
                                          configuration: .init(payloadType: 102, ssrc: 3, initialSequenceNumber: 1000, timestampOffset: 0, historySize: 512)),
                        buffer: JitterBuffer(depacketizer: H264Depacketizer(), pool: BufferPool(name: "h264")))
        return try impairedRun(&link, nack: true, assemblesAsPacketsCome: assemblesAsPacketsCome, alterEvery: nil) {
            index, keyframe, size in
            let slice: [UInt8] = [keyframe ? 0x65 : 0x41, 0x88] + (0..<(keyframe ? 20_000 : size)).map { UInt8(truncatingIfNeeded: $0 * 7 + index) | 1 }
            return annexB(keyframe ? [[0x67, 0x42, 0xC0, 0x1F], [0x68, 0xCE, 0x3C, 0x80], slice] : [slice]).withUnsafeBytes {
                EncodedFrame(codec: .h264, isKeyframe: keyframe, pts: MediaTime(Int64(index) * 3000, timebase: Rational(1, 90_000)),
                             copying: $0, pool: nil)
            }
        }
    }

    /// The run of `link`; `frame(index, keyframe, size)` makes the frames sent.
    private func impairedRun<P: RTPPacketizer, D: RTPDepacketizer>(
        _ link: inout Link<P, D>, nack: Bool, assemblesAsPacketsCome: Bool, alterEvery: Int?,
        frame: (Int, Bool, Int) -> EncodedFrame
    ) throws -> RunRecord {
        link.buffer.assemblesAsPacketsCome = assemblesAsPacketsCome
        link.buffer.updateRoundTripTime(ms(60))
        let profile = ImpairmentProfile(lossPercent: 3, meanBurstLength: 2, reorderPercent: 10, duplicatePercent: 2,
                                        delay: ms(30), jitter: ms(8), seed: 7)
        var network = NetworkImpairment<[UInt8]>(profile: profile)
        var random = SplitMix64(seed: 5)
        var record = RunRecord()
        var keyframeDue = true, packetsSent = 0
        for step in 0..<8_000 {
            let now = ms(Int64(step))
            if step % 33 == 0 && step < 7_000 {
                let index = step / 33, keyframe = keyframeDue || index % 60 == 0
                keyframeDue = false
                for var packet in try link.send(frame(index, keyframe, 300 + Int(random.next() % 3000)), at: now) {
                    packetsSent += 1
                    if let alterEvery, packetsSent % alterEvery == 0 {
                        let payload = try RTPPacket(parsing: packet).payloadRange.lowerBound
                        packet[payload + 3] &+= 1  // the PictureID's low byte (15-bit PictureIDs)
                    }
                    if index == 0 { try link.insert(packet, at: now) } else { network.submit(packet, bytes: packet.count, at: now) }
                }
            }
            try network.deliver(until: now) { try link.insert($0, at: now) }
            let feedback = link.buffer.feedback(at: now)
            if feedback.keyframeRequest {
                keyframeDue = true
                record.keyframeRequests += 1
            }
            if !feedback.nacks.isEmpty { record.nacks.append(feedback.nacks) }
            if nack {
                for packet in try link.retransmissions(for: feedback.nacks) { network.submit(packet, bytes: packet.count, at: now) }
            }
            link.drain(at: now)
        }
        record.frames = link.released.map { Array($0.bytes) }
        record.pts = link.released.map(\.pts.value)
        record.keyframes = link.released.map(\.isKeyframe)
        record.statistics = link.buffer.statistics
        return record
    }

    /// Assembling frames as their packets come changes nothing the buffer does: the same frames (byte
    /// for byte), feedback and counts as assembling each frame from the slots at its release.
    @Test(arguments: [(nack: true, rtx: true), (nack: true, rtx: false), (nack: false, rtx: false)])
    func framesAssembledAsTheirPacketsComeAreTheFramesAssembledAtRelease(mode: (nack: Bool, rtx: Bool)) throws {
        let asTheyCome = try impairedRun(nack: mode.nack, rtx: mode.rtx, assemblesAsPacketsCome: true)
        let atRelease = try impairedRun(nack: mode.nack, rtx: mode.rtx, assemblesAsPacketsCome: false)
        #expect(asTheyCome.frames.count > 40 && asTheyCome.keyframes.filter { $0 }.count >= 3)
        #expect(asTheyCome.statistics.framesDropped > 0 && asTheyCome.statistics.duplicates > 0)
        #expect(mode.nack ? asTheyCome.statistics.recovered > 0 : asTheyCome.statistics.lost > 0)
        let sameFrames = asTheyCome.frames == atRelease.frames
        #expect(sameFrames, "\(asTheyCome.frames.count) and \(atRelease.frames.count) frames")
        #expect(asTheyCome.pts == atRelease.pts && asTheyCome.keyframes == atRelease.keyframes)
        #expect(asTheyCome.nacks == atRelease.nacks && asTheyCome.keyframeRequests == atRelease.keyframeRequests)
        #expect(asTheyCome.statistics == atRelease.statistics)
    }

    /// The same for H.264, where more than the first packet of an access unit may look like its start.
    @Test func h264AccessUnitsAssembledAsTheirPacketsComeAreTheOnesAssembledAtRelease() throws {
        let asTheyCome = try impairedH264Run(assemblesAsPacketsCome: true)
        let atRelease = try impairedH264Run(assemblesAsPacketsCome: false)
        #expect(asTheyCome.frames.count > 150 && asTheyCome.keyframes.filter { $0 }.count >= 3)
        #expect(asTheyCome.statistics.recovered > 0 && asTheyCome.statistics.duplicates > 0)
        let sameFrames = asTheyCome.frames == atRelease.frames
        #expect(sameFrames, "\(asTheyCome.frames.count) and \(atRelease.frames.count) frames")
        #expect(asTheyCome.pts == atRelease.pts && asTheyCome.keyframes == atRelease.keyframes)
        #expect(asTheyCome.nacks == atRelease.nacks)
        #expect(asTheyCome.statistics == atRelease.statistics)
    }

    /// A frame whose packets come in order is assembled as they come: its buffer is taken when its
    /// first packet arrives and grows for a keyframe far larger than the frames before it; a frame
    /// given up lets go of it (frame 43 loses its last packet, so 44, a delta frame, is dropped too).
    /// Once the pool holds the sizes it needs, frames take no new buffers.
    @Test func inOrderFramesAreAssembledAsTheirPacketsCome() throws {
        let pool = BufferPool(name: "open")
        var link = Link(sender: RTPSender(packetizer: try VP8Packetizer(maxPayloadSize: 1000),
                                          configuration: .init(payloadType: 96, ssrc: 9)),
                        buffer: JitterBuffer(depacketizer: VP8Depacketizer(), configuration: .init(nack: false), pool: pool))
        var expected: [[UInt8]] = [], received: [[UInt8]] = [], allocations = 0
        for index in 0..<60 {
            if index == 30 { allocations = pool.allocations }
            let keyframe = index % 30 == 0 || index % 30 == 10 || index == 45
            let frame = vp8Frame(index, index % 30 == 10 ? 60_000 : 1400 + 50 * (index % 7), keyframe)
            if index != 43 && index != 44 { expected.append(Array(frame.bytes)) }
            let packets = try link.send(frame)
            #expect(pool.outstanding == 0)
            try link.insert(packets[0], at: ms(33 * Int64(index)))
            // Frame 0 follows no packet, 44 a lost one and 45 a dropped one: assembled at their release.
            #expect(pool.outstanding == ([0, 44, 45].contains(index) ? 0 : 1), "frame \(index)'s buffer is taken with its first packet")
            for packet in packets.dropFirst().dropLast(index == 43 ? 1 : 0) { try link.insert(packet, at: ms(33 * Int64(index))) }
            link.drain(at: ms(33 * Int64(index) + 15))
            received += link.released.map { Array($0.bytes) }
            link.released.removeAll()
            #expect(pool.outstanding == 0)
        }
        #expect(received == expected)
        #expect(link.buffer.statistics.framesDropped == 2)
        #expect(pool.allocations == allocations, "the second pass takes no new buffer")
    }

    /// Frames waiting for their playout stay assembled, each in its buffer, while the next ones are
    /// assembled as they come; released, they are the frames sent.
    @Test func framesWaitingForTheirPlayoutStayAssembled() throws {
        let pool = BufferPool(name: "waiting")
        var link = Link(sender: RTPSender(packetizer: try OpusPacketizer(), configuration: .init(payloadType: 111, ssrc: 7)),
                        buffer: JitterBuffer(depacketizer: OpusDepacketizer(), configuration: .init(minimumDelay: ms(200)), pool: pool))
        for index in 0..<5 {
            for packet in try link.send(opusFrame(index)) { try link.insert(packet, at: ms(20 * Int64(index))) }
            link.drain(at: ms(20 * Int64(index)))
            #expect(pool.outstanding == index + 1 && link.released.isEmpty)
        }
        link.drain(at: ms(1000))
        expectBytes(link.released, (0..<5).map { [0xF8, UInt8($0), 0x55] })
        link.released.removeAll()
        #expect(pool.outstanding == 0)
    }

    @Test func receptionReportsFollowRFC3550() throws {
        var statistics = ReceptionStatistics(clockRate: 90_000)
        for sequence: UInt16 in [65534, 65535, 1, 2] { statistics.record(sequenceNumber: sequence, timestamp: 0, arrival: .zero) }
        statistics.noteSenderReport(SenderReport(ssrc: 5, ntpTimestamp: NTPTimestamp(seconds: 0x0001_0002, fraction: 0x8000_0000),
                                                 rtpTimestamp: 0, packetCount: 0, octetCount: 0), arrival: ms(1000))
        let block = statistics.reportBlock(ssrc: 5, at: ms(1500))
        #expect(block.extendedHighestSequenceNumber == 0x1_0002)
        #expect(statistics.expected == 5 && block.cumulativeLost == 1)
        #expect(block.fractionLost == 51)  // 1/5 · 256
        #expect(block.lastSenderReport == 0x0002_8000)
        #expect(block.delaySinceLastSenderReport == 32768)  // 0.5 s in 1/65536 s
        statistics.record(sequenceNumber: 3, timestamp: 0, arrival: ms(1600))
        #expect(statistics.reportBlock(ssrc: 5, at: ms(2000)).fractionLost == 0, "nothing lost since the last report")
    }

    @Test func aStreamWhoseFirstPacketsWereLostIsAskedForBackToTheFrameStart() throws {
        var link = try vp8Link()
        let frame = vp8Frame(0, 2500, true)
        let packets = try link.send(frame)  // 1000, 1001, 1002
        try link.insert(packets[2], at: .zero)
        // 1002 does not start its frame: 1001 is asked for at once, then 1000 when 1001 does not either.
        #expect(link.buffer.feedback(at: .zero).nacks == [1001])
        let first = try link.retransmissions(for: [1001])
        try link.insert(first[0], at: ms(5))
        #expect(link.buffer.feedback(at: ms(5)).nacks == [1000])
        try link.insert(try link.retransmissions(for: [1000])[0], at: ms(10))
        #expect(link.buffer.feedback(at: ms(10)).nacks.isEmpty, "1000 starts the frame: nothing more to ask")
        link.drain(at: ms(500))
        expectBytes(link.released, [Array(frame.bytes)])
        #expect(link.buffer.statistics.framesDropped == 0 && link.buffer.statistics.keyframeRequests == 0)
    }

    @Test func aFrameWhoseLastPacketIsLostIsRepairedBeforeTheNextFrameShowsTheGap() throws {
        var link = try vp8Link(configuration: .init(minimumDelay: ms(20)))
        let frame = vp8Frame(0, 2500, true)
        let packets = try link.send(frame)
        try link.insert(packets[0], at: .zero)
        try link.insert(packets[1], at: .zero)  // the marker packet 1002 never comes, nor anything after it
        #expect(link.buffer.feedback(at: ms(1)).nacks.isEmpty, "inside the reorder allowance")
        let probe = try #require(link.buffer.nextDeadline)
        #expect(probe < ms(20), "the probe comes before the frame's playout")
        #expect(link.buffer.feedback(at: probe).nacks == [1002], "the packet after the highest is asked for")
        try link.insert(try link.retransmissions(for: [1002])[0], at: probe + ms(2))
        link.drain(at: ms(100))
        expectBytes(link.released, [Array(frame.bytes)])
        // A NACK for a packet the sender has not sent yet finds nothing: no harm done.
        #expect(try link.retransmissions(for: [1003]).isEmpty)
    }

    @Test func aFrameWaitsPastItsPlayoutWhileItsMissingPacketIsStillAskedFor() throws {
        var link = try vp8Link(configuration: .init(minimumDelay: ms(10), maximumDelay: ms(300)))
        link.buffer.updateRoundTripTime(ms(30))
        let key = vp8Frame(0, 2500, true), delta = vp8Frame(1, 500, false)
        let keyPackets = try link.send(key), deltaPackets = try link.send(delta)
        try link.insert(keyPackets[0], at: .zero)
        try link.insert(keyPackets[2], at: .zero)
        try link.insert(deltaPackets[0], at: ms(33))
        _ = link.buffer.feedback(at: ms(10))  // NACKs 1001 (lost again)
        link.drain(at: ms(80))
        #expect(link.released.isEmpty, "past the playout time, but a NACK is still running")
        _ = link.buffer.feedback(at: ms(80))
        try link.insert(try link.retransmissions(for: [1001])[0], at: ms(100))
        link.drain(at: ms(100))
        expectBytes(link.released, [Array(key.bytes)])
        #expect(link.buffer.targetDelay >= ms(60), "the late release widened the delay for what follows")
        link.drain(at: ms(300))
        expectBytes(link.released, [Array(key.bytes), Array(delta.bytes)])
        #expect(link.buffer.statistics.lost == 0 && link.buffer.statistics.framesDropped == 0)
    }

    // Found by tools/fuzz (target JitterBuffer): with no packet sent once yet there was no transit
    // sample, and the playout time (Int64.max plus the RTP time) trapped in nextFrame.
    @Test func aStreamThatStartsWithARetransmissionPlaysOut() throws {
        var link = try vp8Link(configuration: .init(rtx: (97, 9)))
        // RTX (PT 97 with the marker, SSRC 9), sequence 7, timestamp 3000; OSN 5, then a VP8 key frame.
        let rtx: [UInt8] = [0x80, 0xE1, 0x00, 0x07, 0x00, 0x00, 0x0B, 0xB8, 0x00, 0x00, 0x00, 0x09,
                            0x00, 0x05, 0x10, 0x00, 0x9D, 0x01, 0x2A]
        #expect(try link.insert(rtx, at: ms(20)) == .accepted)
        link.drain(at: .max)
        #expect(link.released.count == 1 && link.released.first?.isKeyframe == true)
    }

    // RTP time reaching 2^33 ticks past the first packet (28 hours at 90 kHz, or a few packets whose
    // timestamps jump ahead 2^31 each) overflowed `ticks * 10^9` and trapped.
    @Test func timestampsFarAheadOfTheFirstDoNotOverflow() throws {
        var link = try vp8Link()
        for index in 0..<8 {
            let timestamp = UInt32(truncatingIfNeeded: index * 0x7FFF_FFFF)
            // A one-packet VP8 key frame with the marker (PT 96, SSRC 1), sequence numbers 0...7.
            let packet: [UInt8] = [0x80, 0xE0, 0x00, UInt8(index)] + withUnsafeBytes(of: timestamp.bigEndian, Array.init)
                + [0x00, 0x00, 0x00, 0x01, 0x10, 0x00, 0x9D, 0x01, 0x2A]
            #expect(try link.insert(packet, at: ms(20 * Int64(index))) == .accepted)
        }
        link.drain(at: .max)
        #expect(link.released.count == 8)
    }
}
