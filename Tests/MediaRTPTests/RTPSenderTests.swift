import MediaCore
import Testing

@testable import MediaRTP

@Suite struct RTPSenderTests {
    static let timebase = Rational(1, 30)

    /// A VP8-looking frame of `size` bytes (first byte's bit 0 clear: a key frame, RFC 6386 §9.1).
    static func frame(_ index: Int, size: Int, keyframe: Bool = false) -> EncodedFrame {
        var bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
        bytes[0] = keyframe ? bytes[0] & 0xFE : bytes[0] | 1
        return bytes.withUnsafeBytes {
            EncodedFrame(codec: .vp8, isKeyframe: keyframe, pts: MediaTime(Int64(index), timebase: timebase), copying: $0, pool: nil)
        }
    }

    static func sender(rtx: (payloadType: UInt8, ssrc: UInt32)? = nil, firstSequence: UInt16 = 65534,
                       history: Int = 16) throws -> RTPSender<VP8Packetizer> {
        RTPSender(packetizer: try VP8Packetizer(maxPayloadSize: 1000),
                  configuration: .init(payloadType: 96, ssrc: 0x1234_5678, initialSequenceNumber: firstSequence,
                                       timestampOffset: 0xFFFF_F000, historySize: history, rtx: rtx))
    }

    static func send(_ frame: EncodedFrame, with sender: inout RTPSender<VP8Packetizer>, at seconds: Double = 0) throws -> [[UInt8]] {
        var packets: [[UInt8]] = []
        try sender.send(frame, at: .seconds(seconds)) { packets.append(Array($0)) }
        return packets
    }

    @Test func framesBecomeNumberedStampedPacketsThatDepacketizeBack() throws {
        var sender = try Self.sender()
        var depacketizer = VP8Depacketizer()
        var output = [UInt8](repeating: 0, count: 5000)
        for index in 0..<3 {
            let frame = Self.frame(index, size: 2500, keyframe: index == 0)
            let packets = try Self.send(frame, with: &sender)
            #expect(packets.count == 3, "2500 bytes in payloads of at most 1000")
            depacketizer.startFrame()
            for (n, bytes) in packets.enumerated() {
                let packet = try RTPPacket(parsing: bytes)
                #expect(packet.header.payloadType == 96 && packet.header.ssrc == 0x1234_5678)
                // Sequence numbers run on across the 16-bit wrap (RFC 3550 §5.1).
                #expect(packet.header.sequenceNumber == 65534 &+ UInt16(3 * index + n))
                // 1/30 s is 3000 ticks of the 90 kHz clock, after the random offset, modulo 2^32.
                #expect(packet.header.timestamp == 0xFFFF_F000 &+ UInt32(3000 * index))
                #expect(packet.header.marker == (n == 2))
                try bytes.withUnsafeBytes { raw in
                    try output.withUnsafeMutableBytes { out in
                        try depacketizer.append(UnsafeRawBufferPointer(rebasing: raw[packet.payloadRange]),
                                                sequenceNumber: packet.header.sequenceNumber, marker: packet.header.marker,
                                                into: out)
                    }
                }
            }
            let info = try depacketizer.finishFrame()
            #expect(Array(output.prefix(info.byteCount)) == Array(frame.bytes))
            #expect(info.isKeyframe == (index == 0))
        }
        #expect(sender.statistics.packetCount == 9)
        #expect(sender.statistics.octetCount > 3 * 2500, "payloads include the VP8 descriptors")
    }

    @Test func aNackedPacketIsSentAgainAsItWas() throws {
        var sender = try Self.sender()
        let packets = try Self.send(Self.frame(0, size: 2500), with: &sender)
        var resent: [[UInt8]] = []
        #expect(try sender.retransmit(65535) { resent.append(Array($0)) })
        #expect(resent == [packets[1]])
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 0x1234_5678, lostSequenceNumbers: [65534, 0])
        resent = []
        try sender.retransmit(nack) { resent.append(Array($0)) }
        #expect(resent == [packets[0], packets[2]])
        #expect(sender.statistics.retransmissions == 3)
    }

    /// The tail-loss probe is the newest packet (across the sequence number's wrap), counted as a
    /// retransmission; before any packet there is nothing to probe with.
    @Test func theTailProbeIsTheLastPacketSentAgain() throws {
        var sender = try Self.sender()
        var resent: [[UInt8]] = []
        #expect(try !sender.resendLast { resent.append(Array($0)) })
        _ = try Self.send(Self.frame(0, size: 2500), with: &sender)
        let second = try Self.send(Self.frame(1, size: 1500), with: &sender)
        #expect(try sender.resendLast { resent.append(Array($0)) })
        #expect(resent == [second[1]], "packet 2 (65534 + 4, wrapped), the marker packet of the last frame")
        #expect(sender.statistics.retransmissions == 1 && sender.statistics.packetCount == 5)
    }

    /// RFC 4588 §4: the RTX packet has the RTX payload type, SSRC and sequence numbering, the
    /// original timestamp and marker, and the original sequence number before the original payload.
    @Test func retransmissionsGoAsRTXWhenConfigured() throws {
        var sender = try Self.sender(rtx: (97, 0xABCD_EF01))
        let packets = try Self.send(Self.frame(0, size: 2500), with: &sender)
        var resent: [[UInt8]] = []
        for sequence: UInt16 in [0, 65534] { try sender.retransmit(sequence) { resent.append(Array($0)) } }
        #expect(resent.count == 2)
        let first = try RTPPacket(parsing: resent[0]), second = try RTPPacket(parsing: resent[1])
        let original = try RTPPacket(parsing: packets[2])
        #expect(first.header.payloadType == 97 && first.header.ssrc == 0xABCD_EF01)
        #expect(first.header.timestamp == original.header.timestamp && first.header.marker)
        #expect(second.header.sequenceNumber == first.header.sequenceNumber &+ 1 && !second.header.marker)
        #expect(Array(resent[0][first.payloadRange].prefix(2)) == [0x00, 0x00], "original sequence number 0")
        #expect(Array(resent[0][first.payloadRange].dropFirst(2)) == Array(packets[2][original.payloadRange]))
        #expect(Array(resent[1][second.payloadRange].prefix(2)) == [0xFF, 0xFE], "original sequence number 65534")
    }

    @Test func packetsOlderThanTheHistoryAreNotResent() throws {
        var sender = try Self.sender(history: 4)
        for index in 0..<3 { _ = try Self.send(Self.frame(index, size: 2500), with: &sender) }
        var resent = 0
        // Nine packets went out (65534...6); four slots keep 3...6.
        #expect(try !sender.retransmit(65534) { _ in resent += 1 })
        #expect(try !sender.retransmit(2) { _ in resent += 1 })
        #expect(try sender.retransmit(3) { _ in resent += 1 })
        #expect(resent == 1)
        #expect(sender.statistics.retransmissionsMissed == 2)
    }

    /// The history keeps a packet's header and descriptor and a reference to its frame: a frame
    /// older than `historyFrames` takes its packets with it, even with slots to spare.
    @Test func packetsOfFramesOlderThanTheFrameHistoryAreNotResent() throws {
        var sender = RTPSender(packetizer: try VP8Packetizer(maxPayloadSize: 1000),
                               configuration: .init(payloadType: 96, ssrc: 7, initialSequenceNumber: 0, historySize: 64,
                                                    historyFrames: 2))
        var sent: [[UInt8]] = []
        for index in 0..<3 { sent += try Self.send(Self.frame(index, size: 1500), with: &sender) }
        var resent: [[UInt8]] = []
        // Six packets, two per frame: frame 0's (0, 1) are gone with it; frames 1 and 2 are kept.
        for sequence: UInt16 in 0..<6 { try sender.retransmit(sequence) { resent.append(Array($0)) } }
        #expect(resent == Array(sent[2...]))
        #expect(sender.statistics.retransmissionsMissed == 2 && sender.statistics.retransmissions == 4)
    }

    /// A packet written into the caller's buffer is the one `send(_:at:emit:)` hands over, and is
    /// written again the same (or as RTX) into another buffer, past the next frame's packets.
    @Test func packetsWrittenIntoTheCallersBufferAreResentTheSame() throws {
        var sender = try Self.sender(rtx: (97, 0xABCD_EF01))
        var reference = try Self.sender(rtx: (97, 0xABCD_EF01))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: sender.maxPacketSize, alignment: 16)
        defer { buffer.deallocate() }
        var written: [[UInt8]] = []
        let frame = Self.frame(0, size: 2500)
        try sender.send(frame, at: .zero, into: buffer) { written.append(Array(buffer[0..<$0])) }
        #expect(written == (try Self.send(frame, with: &reference)))
        _ = try Self.send(Self.frame(1, size: 2500), with: &sender)
        #expect(throws: RTPPacketError.bufferTooSmall(needed: sender.maxPacketSize, available: 100)) {
            try sender.retransmit(65534, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<100])) { _ in }
        }
        var again: [[UInt8]] = []
        try sender.retransmit(65535, into: buffer) { again.append(Array(buffer[0..<$0])) }
        try reference.retransmit(65535) { again.append(Array($0)) }
        let rtx = try RTPPacket(parsing: again[0])
        // The same but for the RTX sequence number, which starts at random in each sender.
        #expect(again[0].count == again[1].count && again[0][..<2] == again[1][..<2] && again[0][4...] == again[1][4...])
        #expect(Array(again[0][rtx.payloadRange].dropFirst(2)) == Array(written[1][12...]))
    }

    /// Sent in parts, a packet is its head in the caller's buffer and its tail in the frame's own
    /// bytes, unread and uncopied: together they are the packet sent whole, and the history resends it.
    @Test func packetsSentInPartsAreTheirHeadsAndTheFramesBytes() throws {
        var sender = try Self.sender()
        var reference = try Self.sender()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: sender.maxPacketSize, alignment: 16)
        defer { buffer.deallocate() }
        let frame = Self.frame(0, size: 2500)
        let frameBytes = frame.bytes
        var joined: [[UInt8]] = []
        var tails: [Int] = []
        var tailsInTheFrame = 0
        try sender.send(frame, at: .zero, into: buffer) { (packet: RTPPacketParts) in
            if let start = packet.tail.baseAddress, start >= frameBytes.baseAddress!,
               start + packet.tail.count <= frameBytes.baseAddress! + frameBytes.count {
                tailsInTheFrame += 1
            }
            joined.append(Array(buffer[0..<packet.headLength]) + Array(packet.tail))
            tails.append(packet.tail.count)
        }
        // Heads of a 12-byte header and a 4-byte payload descriptor (15-bit PictureID), tails of the frame's 2500 bytes.
        #expect(tailsInTheFrame == 3)
        #expect(joined.map(\.count) == [1012, 1012, 524] && tails == [996, 996, 508])
        #expect(joined == (try Self.send(frame, with: &reference)))
        var resent: [[UInt8]] = []
        try sender.retransmit(65535) { resent.append(Array($0)) }
        #expect(resent == [joined[1]])
    }

    /// A pooled frame stays out of its pool while its packets may be resent: the pool hands out
    /// other buffers, and the retransmission carries the frame's bytes.
    @Test func aSentFrameIsHeldFromItsPoolForRetransmission() throws {
        let pool = BufferPool(name: "encoder")
        var sender = try Self.sender()
        let bytes = (0..<1800).map { UInt8(truncatingIfNeeded: $0 * 7) | 1 }
        let frame = bytes.withUnsafeBytes {
            EncodedFrame(codec: .vp8, isKeyframe: false, pts: MediaTime(0, timebase: Self.timebase), copying: $0, pool: pool)
        }
        let packets = try Self.send(frame, with: &sender)
        let buffer = frame.buffer
        _ = consume frame
        let next = pool.acquire(capacity: 1800)
        #expect(next !== buffer)
        next.storage.initializeMemory(as: UInt8.self, repeating: 0)
        var resent: [[UInt8]] = []
        try sender.retransmit(65535) { resent.append(Array($0)) }
        #expect(resent == [packets[1]])
    }

    /// Every payload format says truthfully which bytes of the frame end each payload.
    @Test func frameSlicesAreTheFramesBytesAtThePayloadsEnd() throws {
        // And leaving the slices out writes the same payloads up to them, and nothing after.
        func check<P: RTPPacketizer>(_ packetizer: inout P, _ frame: EncodedFrame) throws -> (slices: Int, payloads: Int) {
            var leaving = packetizer
            try packetizer.startFrame(frame)
            try leaving.startFrame(frame)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: packetizer.maxPayloadSize, alignment: 1)
            let head = UnsafeMutableRawBufferPointer.allocate(byteCount: packetizer.maxPayloadSize, alignment: 1)
            defer { buffer.deallocate(); head.deallocate() }
            var counts = (slices: 0, payloads: 0)
            while let payload = try packetizer.nextPayload(into: buffer) {
                counts.payloads += 1
                head.initializeMemory(as: UInt8.self, repeating: 0xEE)
                let left = try leaving.nextPayload(into: head, leavingFrameSlice: true)
                #expect(left == payload)
                let written = payload.byteCount - (payload.frameSlice?.count ?? 0)
                #expect(Array(head[..<written]) == Array(buffer[..<written]))
                #expect(head[written...].allSatisfy { $0 == 0xEE })
                guard let slice = payload.frameSlice else { continue }
                counts.slices += 1
                #expect(slice.count <= payload.byteCount)
                #expect(Array(buffer[(payload.byteCount - slice.count)..<payload.byteCount]) == Array(frame.bytes[slice]))
            }
            #expect(try leaving.nextPayload(into: head, leavingFrameSlice: true) == nil)
            return counts
        }
        var vp8 = try VP8Packetizer(maxPayloadSize: 700)
        #expect(try check(&vp8, Self.frame(0, size: 2000)) == (3, 3))
        var opus = try OpusPacketizer()
        let opusFrame = [UInt8](repeating: 0x5A, count: 80).withUnsafeBytes {
            EncodedFrame(codec: .opus, isKeyframe: true, pts: MediaTime(0, timebase: Rational(1, 48_000)), copying: $0, pool: nil)
        }
        #expect(try check(&opus, opusFrame) == (1, 1))
        // SPS and PPS go together in a STAP-A (no slice), the IDR slice in FU-As (slices of it).
        var h264 = try H264Packetizer(maxPayloadSize: 500)
        var annexB: [UInt8] = [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1F, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80, 0, 0, 0, 1, 0x65]
        annexB += (0..<1200).map { UInt8(truncatingIfNeeded: $0 * 13) | 0x01 }
        let idr = annexB.withUnsafeBytes {
            EncodedFrame(codec: .h264, isKeyframe: true, pts: MediaTime(0, timebase: Self.timebase), copying: $0, pool: nil)
        }
        #expect(try check(&h264, idr) == (3, 4))
    }

    /// RFC 3550 §6.4.1: the report's RTP timestamp is the one of the same instant as its NTP time.
    @Test func senderReportsMapWallClockToMediaTime() throws {
        var sender = try Self.sender()
        let start = sender.senderReport(at: .zero, wallClock: NTPTimestamp(unixSeconds: 1_000))
        #expect(start.rtpTimestamp == 0xFFFF_F000 && start.packetCount == 0)
        _ = try Self.send(Self.frame(10, size: 500), with: &sender, at: 5)
        let report = sender.senderReport(at: .seconds(5.5), wallClock: NTPTimestamp(unixSeconds: 1_005.5))
        // Frame 10 is at 1/3 s (30000 ticks); half a second later is 45000 ticks on.
        #expect(report.rtpTimestamp == 0xFFFF_F000 &+ 30_000 &+ 45_000)
        #expect(report.ssrc == 0x1234_5678 && report.packetCount == 1)
        #expect(report.octetCount == UInt32(sender.statistics.octetCount))
        #expect(report.ntpTimestamp == NTPTimestamp(unixSeconds: 1_005.5))
    }

    @Test func aFrameThePacketizerRefusesSendsNothing() throws {
        var sender = try Self.sender()
        let empty = [UInt8]().withUnsafeBytes {
            EncodedFrame(codec: .vp8, isKeyframe: true, pts: .init(0, timebase: Self.timebase), copying: $0, pool: nil)
        }
        var sent = 0
        #expect(throws: RTPPayloadError.self) { try sender.send(empty, at: .zero) { _ in sent += 1 } }
        #expect(sent == 0 && sender.statistics.packetCount == 0)
    }
}
