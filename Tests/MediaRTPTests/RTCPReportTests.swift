/// Report-block arithmetic (RFC 3550 §6.4.1, Appendix A.3) and NTP timestamps (§4): fraction lost,
/// the 24-bit signed cumulative loss on the wire, round-trip time from LSR and DLSR.
import MediaRTP
import Testing

@Suite struct ReportBlockTests {
    @Test(arguments: [
        (0, 0, 0),          // nothing expected
        (100, 100, 0),      // nothing lost
        (100, 75, 64),      // a quarter lost: 64/256
        (3, 2, 85),         // 1/3: 256/3 = 85.33, truncated
        (4, 5, 0),          // duplicates: more received than expected counts as no loss
        (10, 0, 255),       // everything lost: 256/256 saturates to the 8-bit maximum
    ] as [(Int64, Int64, UInt8)])
    func fractionLost(expected: Int64, received: Int64, fraction: UInt8) {
        #expect(ReportBlock.fractionLost(expected: expected, received: received) == fraction)
    }

    @Test(arguments: [
        (10, 3, 7), (3, 10, -7),
        (20_000_000, 0, 0x7F_FFFF),     // clamped to the largest 24-bit signed value
        (0, 20_000_000, -0x80_0000),    // and the smallest
    ] as [(Int64, Int64, Int32)])
    func cumulativeLost(expected: Int64, received: Int64, lost: Int32) {
        #expect(ReportBlock.cumulativeLost(expected: expected, received: received) == lost)
    }

    /// The 24-bit field in an RR on the wire, as written and read back.
    @Test(arguments: [
        (-1, [0xFF, 0xFF, 0xFF], -1),
        (-0x80_0000, [0x80, 0x00, 0x00], -0x80_0000),
        (0x7F_FFFF, [0x7F, 0xFF, 0xFF], 0x7F_FFFF),
        (10_000_000, [0x7F, 0xFF, 0xFF], 0x7F_FFFF),   // out of range: clamped when written
        (-10_000_000, [0x80, 0x00, 0x00], -0x80_0000),
    ] as [(Int32, [UInt8], Int32)])
    func cumulativeLostOnTheWire(value: Int32, wire: [UInt8], parsed: Int32) throws {
        let report = ReceiverReport(ssrc: 1, reportBlocks: [ReportBlock(ssrc: 2, fractionLost: 3, cumulativeLost: value)])
        let bytes = try PacketBytes.serialized(report)
        #expect(Array(bytes[12..<16]) == [3] + wire)  // fraction lost, then the 24 bits
        guard case .receiverReport(let back) = try RTCPCompoundPacket(parsing: bytes).packets.first else {
            Issue.record("not an RR")
            return
        }
        #expect(back.reportBlocks.first?.cumulativeLost == parsed)
    }

    /// The worked example of RFC 3550 §6.4.1: RR arrives at 46864.500 s (0xb710:8000), LSR 46853.125 s
    /// (0xb705:2000), DLSR 5.250 s (0x0005:4000): round trip 6.125 s.
    @Test func roundTripTimeExampleFromTheRFC() {
        let arrival = NTPTimestamp(seconds: 0x0000_B710, fraction: 0x8000_0000)
        #expect(arrival.compact == 0xB710_8000)
        let block = ReportBlock(ssrc: 1, lastSenderReport: 0xB705_2000, delaySinceLastSenderReport: 0x0005_4000)
        #expect(block.roundTripTime(arrival: arrival) == 6.125)
        #expect(ReportBlock(ssrc: 1).roundTripTime(arrival: arrival) == nil)  // no SR received yet
        // A DLSR larger than the time since LSR (clocks disagree) gives 0, not a negative time.
        let early = ReportBlock(ssrc: 1, lastSenderReport: 0xB710_0000, delaySinceLastSenderReport: 0x0001_0000)
        #expect(early.roundTripTime(arrival: arrival) == 0)
    }
}

@Suite struct NTPTimestampTests {
    @Test func fieldsAndSeconds() {
        let stamp = NTPTimestamp(rawValue: 16_016_567_581_311_369_308)  // aiortc's SR
        #expect(stamp.seconds == 0xDE46_475B && stamp.fraction == 0x151A_005C)
        #expect(NTPTimestamp(seconds: stamp.seconds, fraction: stamp.fraction) == stamp)
        #expect(stamp.compact == 0x475B_151A)
        #expect(NTPTimestamp(secondsSince1900: 1.5) == NTPTimestamp(seconds: 1, fraction: 0x8000_0000))
        #expect(NTPTimestamp(secondsSince1900: 3.25).secondsSince1900 == 3.25)
        #expect(NTPTimestamp(secondsSince1900: -4).rawValue == 0)
        #expect(NTPTimestamp(secondsSince1900: 5e9).rawValue == .max)  // beyond era 0
    }

    @Test func unixTime() {
        #expect(NTPTimestamp(unixSeconds: 0) == NTPTimestamp(seconds: 2_208_988_800, fraction: 0))
        // 2024-01-01T00:00:00Z, and a quarter second after it.
        let newYear = NTPTimestamp(unixSeconds: 1_704_067_200.25)
        #expect(newYear.seconds == 3_913_056_000 && newYear.fraction == 0x4000_0000)
        #expect(newYear.unixSeconds == 1_704_067_200.25)
        #expect(NTPTimestamp(unixSeconds: 1) < NTPTimestamp(unixSeconds: 2))
    }

    @Test func compactDurations() {
        #expect(NTPTimestamp.compactDuration(seconds: 5.25) == 0x0005_4000)
        #expect(NTPTimestamp.seconds(compact: 0x0005_4000) == 5.25)
        #expect(NTPTimestamp.compactDuration(seconds: -1) == 0)
        #expect(NTPTimestamp.compactDuration(seconds: 70000) == .max)
    }
}
