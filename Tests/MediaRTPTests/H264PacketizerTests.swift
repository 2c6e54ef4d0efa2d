import MediaCore
import TestSupport
import Testing

@testable import MediaRTP

/// Annex-B access units in, RFC 6184 payloads out.
@Suite struct H264PacketizerTests {
    static let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0x8C, 0x8D]  // NRI 3, type 7
    static let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]              // NRI 3, type 8

    /// An IDR slice (NRI 3, type 5) of `count` bytes, the header included.
    static func idr(_ count: Int) -> [UInt8] { [0x65] + (1..<count).map { UInt8(truncatingIfNeeded: $0 * 7 + 0x80) } }
    /// A non-IDR slice (NRI 2, type 1) of `count` bytes.
    static func slice(_ count: Int) -> [UInt8] { [0x41] + (1..<count).map { UInt8(truncatingIfNeeded: $0 * 13 + 0x80) } }

    func payloads(_ nalUnits: [[UInt8]], _ packetizer: inout H264Packetizer) throws -> [TestPacket] {
        try packetize(frame(.h264, annexB(nalUnits)), with: &packetizer)
    }

    // MARK: §5.6 single NAL unit mode

    @Test func modeZeroSendsEachNALUnitAloneWithTheMarkerOnTheLast() throws {
        var packetizer = try H264Packetizer(mode: .singleNALUnit, maxPayloadSize: 100)
        let sent = try payloads([Self.sps, Self.pps, Self.idr(100)], &packetizer)
        #expect(sent.map(\.payload) == [Self.sps, Self.pps, Self.idr(100)])
        #expect(sent.map(\.marker) == [false, false, true])
    }

    @Test func modeZeroRefusesANALUnitLargerThanTheMaximum() throws {
        var packetizer = try H264Packetizer(mode: .singleNALUnit, maxPayloadSize: 100)
        #expect(throws: RTPPayloadError.payloadTooLarge(size: 101, maxPayloadSize: 100)) {
            try payloads([Self.sps, Self.pps, Self.idr(101)], &packetizer)
        }
        // Checked before any payload is written: nothing is pending.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 1)
        defer { buffer.deallocate() }
        #expect(try packetizer.nextPayload(into: buffer) == nil)
    }

    // MARK: §5.7.1 STAP-A

    @Test func stapAHasSizesBeforeUnitsAndTheHighestNRI() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 1200)
        let sei: [UInt8] = [0x06, 0x05, 0x01]  // NRI 0
        let sent = try payloads([[0x09, 0xF0], sei, Self.slice(5)], &packetizer)
        #expect(sent.map(\.payload) == [[
            0x58,                                 // F=0, NRI=2 (the slice's, the highest), type 24
            0x00, 0x02, 0x09, 0xF0,               // size 2, access unit delimiter
            0x00, 0x03, 0x06, 0x05, 0x01,         // size 3, SEI
            0x00, 0x05] + Self.slice(5),          // size 5, the slice
        ])
        #expect(sent.map(\.marker) == [true])
    }

    @Test func stapAExactlyAtTheMaximumAndOneByteOver() throws {
        // 1 + (2 + 6) + (2 + 4) + (2 + 9) = 26 bytes.
        let units = [Self.sps, Self.pps, Self.slice(9)]
        var exact = try H264Packetizer(maxPayloadSize: 26)
        #expect(try payloads(units, &exact).map(\.payload.count) == [26])
        var tooSmall = try H264Packetizer(maxPayloadSize: 25)
        // SPS and PPS still fit together (15 bytes); the slice goes alone.
        #expect(try payloads(units, &tooSmall).map(\.payload) == [
            [0x78, 0x00, 0x06] + Self.sps + [0x00, 0x04] + Self.pps, Self.slice(9),
        ])
    }

    @Test func aggregationModes() throws {
        let units = [Self.sps, Self.pps, Self.idr(10), Self.idr(10)]
        var none = try H264Packetizer(aggregation: .none)
        #expect(try payloads(units, &none).map(\.payload) == units)
        var nonVCL = try H264Packetizer(aggregation: .nonVCL)
        #expect(try payloads(units, &nonVCL).map(\.payload) == [
            [0x78, 0x00, 0x06] + Self.sps + [0x00, 0x04] + Self.pps, Self.idr(10), Self.idr(10),
        ])
        var all = try H264Packetizer(aggregation: .all)
        #expect(try payloads(units, &all).map(\.payload.count) == [1 + 8 + 6 + 12 + 12])
    }

    @Test func pionParameterSetAggregationVector() throws {
        let vector = try #require(try PayloadVectors.section("h264_packetize").first)
        let nalUnits = try #require(vector["input_nalus_hex"] as? [String]).map { bytes($0) }
        let expected = try #require(vector["expected_payloads_hex"] as? [String]).map { bytes($0) }
        var packetizer = try H264Packetizer(maxPayloadSize: try #require(vector["mtu"] as? Int), aggregation: .nonVCL)
        let sent = try payloads(nalUnits, &packetizer).map(\.payload)
        // pion writes the STAP-A header as a fixed 0x78 (NRI 3); RFC 6184 §5.7 makes NRI the highest of the
        // aggregated units', which is 0 for these test headers (07, 08): 0x18. Everything else is pion's.
        #expect(expected[0][0] == 0x78)
        #expect(sent == [[0x18] + expected[0].dropFirst(), expected[1]])
    }

    // MARK: §5.8 FU-A

    @Test func nalUnitOfExactlyTheMaximumGoesWhole() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 50)
        #expect(try payloads([Self.idr(50)], &packetizer).map(\.payload) == [Self.idr(50)])
    }

    @Test func oneByteOverTheMaximumIsFragmented() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 50)
        let nal = Self.idr(51)
        let sent = try payloads([nal], &packetizer)
        // 50 bytes after the header: 48 in the first FU-A, 2 in the second.
        #expect(sent.map(\.payload) == [
            [0x7C, 0x85] + nal[1..<49],  // indicator F=0 NRI=3 type 28; S=1 type 5
            [0x7C, 0x45] + nal[49...],   // E=1
        ])
        #expect(sent.map(\.marker) == [false, true])
    }

    @Test func tinyMaximumSendsOneByteOfNALUnitPerFragment() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 3)
        let nal: [UInt8] = [0x41, 0xA1, 0xA2, 0xA3, 0xA4]
        let sent = try payloads([nal], &packetizer)
        #expect(sent.map(\.payload) == [
            [0x5C, 0x81, 0xA1], [0x5C, 0x01, 0xA2], [0x5C, 0x01, 0xA3], [0x5C, 0x41, 0xA4],
        ])
        var depacketizer = H264Depacketizer()
        #expect(try depacketize(sent, with: &depacketizer).bytes == annexB([nal]))
    }

    @Test func maximumTooSmallForAFragmentIsRefused() {
        #expect(throws: RTPPayloadError.maxPayloadSizeTooSmall(2, minimum: 3)) { try H264Packetizer(maxPayloadSize: 2) }
        #expect(throws: RTPPayloadError.maxPayloadSizeTooSmall(0, minimum: 1)) {
            try H264Packetizer(mode: .singleNALUnit, maxPayloadSize: 0)
        }
    }

    @Test func forbiddenBitIsKeptInTheIndicator() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 4)
        let sent = try payloads([[0xE1, 1, 2, 3, 4]], &packetizer)  // F=1 NRI=3 type 1
        #expect(sent.map { $0.payload[0] } == [0xFC, 0xFC])
    }

    // MARK: SPS and PPS before every IDR

    @Test func rememberedParameterSetsGoBeforeAnIDRThatLacksThem() throws {
        var packetizer = try H264Packetizer(aggregation: .none)
        _ = try payloads([Self.sps, Self.pps, Self.idr(20)], &packetizer)
        #expect(packetizer.sequenceParameterSet == Self.sps)
        #expect(try payloads([Self.slice(20)], &packetizer).map(\.payload) == [Self.slice(20)])
        #expect(try payloads([Self.idr(30)], &packetizer).map(\.payload) == [Self.sps, Self.pps, Self.idr(30)])
        // After a leading access unit delimiter.
        #expect(try payloads([[0x09, 0x10], Self.idr(30)], &packetizer).map(\.payload)
                == [[0x09, 0x10], Self.sps, Self.pps, Self.idr(30)])
        // A missing PPS alone goes after the access unit's own SPS, and the newest SPS is remembered.
        let newSPS: [UInt8] = [0x67, 0x64, 0x00, 0x28]
        #expect(try payloads([newSPS, Self.idr(30)], &packetizer).map(\.payload) == [newSPS, Self.pps, Self.idr(30)])
        #expect(try payloads([Self.idr(30)], &packetizer).map(\.payload) == [newSPS, Self.pps, Self.idr(30)])
    }

    @Test func parameterSetsFromTheSessionDescription() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 1200)
        packetizer.setParameterSets(sps: Self.sps, pps: Self.pps)
        let sent = try payloads([Self.idr(2000)], &packetizer)
        #expect(sent[0].payload == [0x78, 0x00, 0x06] + Self.sps + [0x00, 0x04] + Self.pps)
        #expect(sent.count == 3)  // the STAP-A, then two FU-As
        var depacketizer = H264Depacketizer()
        let (bytes, info) = try depacketize(sent, with: &depacketizer)
        #expect(bytes == annexB([Self.sps, Self.pps, Self.idr(2000)]))
        #expect(info.isKeyframe)
    }

    @Test func withoutRememberedParameterSetsTheIDRGoesAsItIs() throws {
        var packetizer = try H264Packetizer()
        #expect(try payloads([Self.idr(10)], &packetizer).map(\.payload) == [Self.idr(10)])
    }

    // MARK: Input that cannot be sent

    @Test func malformedAccessUnitsAreRefused() throws {
        var packetizer = try H264Packetizer()
        #expect(throws: RTPPayloadError.h264MissingStartCode) { try packetize(frame(.h264, [0x65, 0x88]), with: &packetizer) }
        #expect(throws: RTPPayloadError.h264MissingStartCode) { try packetize(frame(.h264, [0, 0, 2, 0x65]), with: &packetizer) }
        #expect(throws: RTPPayloadError.emptyFrame) { try packetize(frame(.h264, []), with: &packetizer) }
        #expect(throws: RTPPayloadError.emptyFrame) { try packetize(frame(.h264, [0, 0, 0, 1, 0, 0]), with: &packetizer) }
        #expect(throws: RTPPayloadError.h264UnsendableNALType(28)) {
            try packetize(frame(.h264, annexB([Self.sps, [0x7C, 0x85]])), with: &packetizer)
        }
        #expect(throws: RTPPayloadError.h264UnsendableNALType(0)) { try packetize(frame(.h264, annexB([[0x00, 1]])), with: &packetizer) }
        #expect(throws: RTPPayloadError.wrongCodec(.vp8)) { try packetize(frame(.vp8, annexB([Self.sps])), with: &packetizer) }
    }

    @Test func threeByteStartCodesAndTrailingZerosAreUnderstood() throws {
        var packetizer = try H264Packetizer(aggregation: .none)
        let unit: [UInt8] = [0, 0, 1] + Self.sps + [0, 0, 0, 0, 1] + Self.pps + [0, 0, 1] + Self.idr(8) + [0, 0]
        let sent = try packetize(frame(.h264, unit), with: &packetizer)
        #expect(sent.map(\.payload) == [Self.sps, Self.pps, Self.idr(8)])
    }

    @Test func bufferShorterThanThePayloadIsAnErrorAndNothingIsLost() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 100, aggregation: .none)
        try packetizer.startFrame(frame(.h264, annexB([Self.idr(60)])))
        let small = UnsafeMutableRawBufferPointer.allocate(byteCount: 59, alignment: 1)
        defer { small.deallocate() }
        #expect(throws: RTPPayloadError.outputTooSmall(needed: 60, available: 59)) { try packetizer.nextPayload(into: small) }
        let large = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 1)
        defer { large.deallocate() }
        let payload = try #require(try packetizer.nextPayload(into: large))
        // The whole unit, after the 4-byte start code: a slice of the frame.
        #expect(payload == PacketizedPayload(byteCount: 60, isLast: true, marker: true, frameSlice: 4..<64))
        #expect(Array(large.prefix(60)) == Self.idr(60))
    }

    @Test func rtpTimestampIsTheNinetyKilohertzClock() {
        let pts = MediaTime(3, timebase: Rational(1, 25))  // 120 ms
        #expect(H264Packetizer.rtpTimestamp(of: pts) == 10_800)
        #expect(H264Packetizer.rtpTimestamp(of: pts, offset: UInt32.max - 800) == 9_999)  // wraps
    }
}
