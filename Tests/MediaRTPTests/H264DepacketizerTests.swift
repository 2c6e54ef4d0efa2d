import Foundation
import MediaCore
import TestSupport
import Testing

@testable import MediaRTP

/// RFC 6184 payloads in, Annex-B access units out.
@Suite struct H264DepacketizerTests {
    /// Assembles `payloads` (consecutive sequence numbers, marker on the last) into one access unit.
    func accessUnit(_ payloads: [[UInt8]]) throws -> (bytes: [UInt8], info: RTPFrameInfo) {
        var depacketizer = H264Depacketizer()
        return try depacketize(packets(payloads), with: &depacketizer)
    }

    func inspect(_ payload: [UInt8]) throws -> RTPPayloadInfo {
        try payload.withUnsafeBytes { try H264Depacketizer().inspect($0) }
    }

    // MARK: §5.6 single NAL unit packets

    @Test func singleNALUnitPacketGetsAStartCode() throws {
        let payload: [UInt8] = [
            0x65,              // F=0 NRI=3 type 5: an IDR slice
            0x88, 0x84, 0x21,  // slice data (first_mb_in_slice = 0: the top bit is 1)
        ]
        let (bytes, info) = try accessUnit([payload])
        #expect(bytes == [0, 0, 0, 1, 0x65, 0x88, 0x84, 0x21])
        #expect(info.isKeyframe)
        #expect(info.packetCount == 1)
        #expect(try inspect(payload) == RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: 8))
    }

    @Test func firstSliceOfAPictureStartsTheAccessUnitOthersDoNot() throws {
        #expect(try inspect([0x41, 0x9A, 0x00]).startsFrame)       // P slice, first_mb_in_slice 0
        #expect(try !inspect([0x41, 0x1A, 0x00]).startsFrame)      // P slice, first_mb_in_slice > 0
        #expect(try inspect([0x09, 0xF0]).startsFrame)             // access unit delimiter
        #expect(try inspect([0x67, 0x42, 0xC0]).startsFrame)       // SPS
        #expect(try inspect([0x06, 0x05]).startsFrame)             // SEI
        #expect(try !inspect([0x0A]).startsFrame)                  // end of sequence
        #expect(try !inspect([0x41, 0x9A]).isKeyframe)             // a P slice is not a keyframe
    }

    // MARK: §5.7.1 STAP-A

    @Test func stapAOfParameterSetsAndSlice() throws {
        let payload: [UInt8] = [
            0x78,                                 // F=0 NRI=3 type 24: STAP-A
            0x00, 0x04, 0x67, 0x42, 0xC0, 0x1F,   // size 4, SPS
            0x00, 0x03, 0x68, 0xCE, 0x3C,         // size 3, PPS
            0x00, 0x02, 0x65, 0x88,               // size 2, IDR slice
        ]
        let (bytes, info) = try accessUnit([payload])
        #expect(bytes == annexB([[0x67, 0x42, 0xC0, 0x1F], [0x68, 0xCE, 0x3C], [0x65, 0x88]]))
        #expect(info.isKeyframe)
        #expect(try inspect(payload) == RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: 21))
    }

    @Test func parameterSetsAloneAreNotAKeyframe() throws {
        let (bytes, info) = try accessUnit([[0x78, 0x00, 0x02, 0x67, 0x42, 0x00, 0x02, 0x68, 0xCE]])
        #expect(bytes == annexB([[0x67, 0x42], [0x68, 0xCE]]))
        #expect(!info.isKeyframe)
        let (_, withSlice) = try accessUnit([[0x78, 0x00, 0x02, 0x67, 0x42, 0x00, 0x02, 0x68, 0xCE], [0x41, 0x9A]])
        #expect(!withSlice.isKeyframe, "a non-IDR slice after parameter sets")
    }

    // MARK: §5.8 FU-A

    @Test func fuAFragmentsRebuildTheNALUnit() throws {
        let payloads: [[UInt8]] = [
            [0x7C, 0x85, 0x88, 0x01],  // indicator F=0 NRI=3 type 28; header S=1 E=0 type 5; data
            [0x7C, 0x05, 0x02, 0x03],  // S=0 E=0: middle
            [0x7C, 0x45, 0x04],        // S=0 E=1: end
        ]
        let (bytes, info) = try accessUnit(payloads)
        // Header rebuilt from the indicator's F and NRI and the FU header's type: 0x65.
        #expect(bytes == [0, 0, 0, 1, 0x65, 0x88, 0x01, 0x02, 0x03, 0x04])
        #expect(info.isKeyframe)
        #expect(info.packetCount == 3)
        #expect(try inspect(payloads[0]) == RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: 7))
        #expect(try inspect(payloads[1]) == RTPPayloadInfo(startsFrame: false, isKeyframe: true, mediaByteCount: 2))
    }

    @Test func slicesAfterAFragmentedOneFollowInTheSameAccessUnit() throws {
        let (bytes, _) = try accessUnit([
            [0x7C, 0x81, 0x9A, 0x01],  // FU-A start of a P slice (type 1)
            [0x7C, 0x41, 0x02],        // its end
            [0x41, 0x1A, 0x03],        // a second slice, single NAL unit packet
        ])
        #expect(bytes == annexB([[0x61, 0x9A, 0x01, 0x02], [0x41, 0x1A, 0x03]]))
    }

    // MARK: Malformed payloads: one named error each

    @Test(arguments: [
        ("", RTPPayloadError.emptyPayload),
        ("00 11", .h264ReservedPacketType(0)),
        ("1e 11", .h264ReservedPacketType(30)),
        ("1f 11", .h264ReservedPacketType(31)),
        ("19 00 01 41", .h264UnsupportedPacketType(25)),    // STAP-B
        ("1a 00 00", .h264UnsupportedPacketType(26)),       // MTAP16
        ("1b 00 00", .h264UnsupportedPacketType(27)),       // MTAP24
        ("1d 85 00", .h264UnsupportedPacketType(29)),       // FU-B
        ("78", .h264AggregationEmpty),
        ("78 00", .h264AggregationSizeTruncated(offset: 1)),
        ("78 00 02 41 9a 00", .h264AggregationSizeTruncated(offset: 5)),
        ("78 00 05 41 9a", .h264AggregationUnitTruncated(declared: 5, available: 2)),
        ("78 00 00 00 01 41", .h264AggregationUnitEmpty(offset: 1)),
        ("78 00 02 7c 85", .h264AggregatedPacketType(28)),
        ("78 00 01 00", .h264AggregatedPacketType(0)),
        ("7c", .h264FragmentTooShort),
        ("7c c5 88", .h264FragmentStartAndEnd),
    ])
    func malformedPayloadIsRejected(hexPayload: String, expected: RTPPayloadError) {
        let payload = bytes(hexPayload)
        #expect(payloadError { _ = try inspect(payload) } == expected)
        var depacketizer = H264Depacketizer()
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { output.deallocate() }
        #expect(payloadError {
            try payload.withUnsafeBytes { try depacketizer.append($0, sequenceNumber: 1, marker: true, into: output) }
        } == expected)
    }

    // MARK: Packets that do not fit together: the frame is rejected, never glued

    func assemblyError(_ packets: [TestPacket]) -> RTPPayloadError? {
        var depacketizer = H264Depacketizer()
        return payloadError { _ = try depacketize(packets, with: &depacketizer) }
    }

    @Test func lostFUAMiddleFragmentIsDetected() {
        let fragments = packets([[0x7C, 0x85, 0x88, 0x01], [0x7C, 0x05, 0x02], [0x7C, 0x45, 0x03]])
        #expect(assemblyError([fragments[0], fragments[2]]) == .sequenceGap(expected: 101, received: 102))
    }

    @Test func fuAEndWithoutStartIsRejected() {
        #expect(assemblyError(packets([[0x7C, 0x45, 0x03]])) == .h264FragmentWithoutStart)
        #expect(assemblyError(packets([[0x7C, 0x05, 0x03], [0x7C, 0x45, 0x03]])) == .h264FragmentWithoutStart)
    }

    @Test func fuAWithoutEndIsRejected() {
        #expect(assemblyError(packets([[0x7C, 0x85, 0x88], [0x7C, 0x05, 0x02]])) == .h264FragmentNotEnded)
        // A new NAL unit while one is open.
        #expect(assemblyError(packets([[0x7C, 0x85, 0x88], [0x41, 0x9A]])) == .h264FragmentNotEnded)
        #expect(assemblyError(packets([[0x7C, 0x85, 0x88], [0x7C, 0x85, 0x88]])) == .h264FragmentNotEnded)
    }

    @Test func fuAOfAnotherTypeIsRejected() {
        #expect(assemblyError(packets([[0x7C, 0x85, 0x88], [0x7C, 0x41, 0x02]]))
                == .h264FragmentTypeMismatch(expected: 5, received: 1))
    }

    @Test func packetAfterTheMarkerIsRejected() {
        let first = TestPacket(payload: [0x65, 0x88], marker: true, sequenceNumber: 7)
        let second = TestPacket(payload: [0x65, 0x08], marker: true, sequenceNumber: 8)
        #expect(assemblyError([first, second]) == .packetAfterFrameEnd(sequenceNumber: 8))
    }

    @Test func sequenceNumbersWrapWithinAFrame() throws {
        var depacketizer = H264Depacketizer()
        let (bytes, _) = try depacketize(packets([[0x7C, 0x85, 0x88], [0x7C, 0x45, 0x01]], firstSequence: 65535),
                                         with: &depacketizer)
        #expect(bytes == [0, 0, 0, 1, 0x65, 0x88, 0x01])
    }

    @Test func finishingWithNothingIsAnError() {
        var depacketizer = H264Depacketizer()
        #expect(payloadError { _ = try depacketizer.finishFrame() } == .emptyFrame)
    }

    @Test func outputTooSmallChangesNothingAndCanBeRetried() throws {
        var depacketizer = H264Depacketizer()
        let small = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 1)
        defer { small.deallocate() }
        let first: [UInt8] = [0x7C, 0x85, 0x88, 0x01]   // 7 bytes out
        let second: [UInt8] = [0x7C, 0x45, 0x02, 0x03]  // 2 more
        try first.withUnsafeBytes { try depacketizer.append($0, sequenceNumber: 1, marker: false, into: small) }
        #expect(payloadError {
            try second.withUnsafeBytes { try depacketizer.append($0, sequenceNumber: 2, marker: true, into: small) }
        } == .outputTooSmall(needed: 9, available: 8))
        // The caller grows its buffer, keeping the bytes so far, and appends the same packet again.
        let large = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { large.deallocate() }
        large.copyMemory(from: UnsafeRawBufferPointer(small))
        try second.withUnsafeBytes { try depacketizer.append($0, sequenceNumber: 2, marker: true, into: large) }
        let info = try depacketizer.finishFrame()
        #expect(Array(large.prefix(info.byteCount)) == [0, 0, 0, 1, 0x65, 0x88, 0x01, 0x02, 0x03])
    }

    /// `append` checks the handed `info` against each kind of payload header, and takes whether the
    /// frame is a keyframe from the header, not from the info.
    @Test(arguments: [
        ([0x65, 0x88, 0x84], [0, 0, 0, 1, 0x65, 0x88, 0x84], true),              // single NAL unit: an IDR slice
        ([0x7C, 0x85, 0x88, 0x01], [0, 0, 0, 1, 0x65, 0x88, 0x01], true),        // FU-A start of an IDR slice
        ([0x78, 0x00, 0x02, 0x67, 0x42, 0x00, 0x01, 0x41],
         [0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x41], false),                      // STAP-A: SPS and a P slice
    ] as [([UInt8], [UInt8], Bool)])
    func appendRefusesAnInspectionOfAnotherPayload(payload: [UInt8], expected: [UInt8], isKeyframe: Bool) throws {
        #expect(try inspect(payload).mediaByteCount == expected.count)
        var depacketizer = H264Depacketizer()
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { output.deallocate() }
        func append(mediaByteCount: Int, isKeyframe: Bool) -> RTPPayloadError? {
            let info = RTPPayloadInfo(startsFrame: true, isKeyframe: isKeyframe, mediaByteCount: mediaByteCount)
            depacketizer.startFrame()
            return payloadError {
                try payload.withUnsafeBytes { try depacketizer.append($0, inspected: info, sequenceNumber: 1, marker: false, into: output) }
            }
        }
        for count in [expected.count - 1, expected.count + 1, 0, -1, 1000] {
            #expect(append(mediaByteCount: count, isKeyframe: isKeyframe) == .inspectionMismatch, "\(count)")
        }
        #expect(append(mediaByteCount: expected.count, isKeyframe: !isKeyframe) == nil)
        #expect(Array(output.prefix(expected.count)) == expected)
        if H264Payload.type(payload[0]) != H264Payload.fuA {  // an FU-A start alone leaves its NAL unit open
            let frame = try depacketizer.finishFrame()
            #expect(frame.byteCount == expected.count)
            #expect(frame.isKeyframe == isKeyframe)
        }
    }

    // MARK: Public vectors (Tests/Vectors/README.md)

    @Test func pionDepacketizeVectors() throws {
        for vector in try PayloadVectors.section("h264_depacketize") {
            let name = try #require(vector["name"] as? String)
            let payloads = try #require(vector["payloads_hex"] as? [String]).map { bytes($0) }
            let result = Result { try accessUnit(payloads) }
            switch name {
            case "stap_a_truncated_second_length":
                // pion keeps the first NAL unit; the README allows a stricter depacketizer to refuse the
                // packet, which this one does: one byte of a 16-bit size is malformed.
                #expect(throws: RTPPayloadError.h264AggregationSizeTruncated(offset: 18)) { try result.get() }
            case _ where vector["expected_error"] as? Bool == true:
                #expect(throws: RTPPayloadError.self, "\(name)") { try result.get() }
            case "end_of_sequence_nal":
                #expect(try result.get().bytes == [0, 0, 0, 1, 0x0A])
            default:
                let expected = bytes(try #require(vector["expected_annexb_hex"] as? String))
                #expect(try result.get().bytes == expected, "\(name)")
            }
        }
    }

    @Test func aiortcSTAPA() throws {
        let payload = try TestSupport.vector("aiortc/h264_0000.bin")
        let (bytes, info) = try accessUnit([payload])
        #expect(bytes.count == 26)
        #expect(Array(bytes.prefix(8)) == [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1F])
        #expect(Array(bytes.suffix(8)) == [0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80])
        #expect(!info.isKeyframe)
        #expect(try inspect(payload).startsFrame)
        #expect(payloadError { _ = try inspect(Array(payload.prefix(1))) } == .h264AggregationEmpty)
        #expect(payloadError { _ = try inspect(Array(payload.prefix(2))) } == .h264AggregationSizeTruncated(offset: 1))
        #expect(payloadError { _ = try inspect(Array(payload.prefix(3))) }
                == .h264AggregationUnitTruncated(declared: 14, available: 0))
    }

    @Test func aiortcFUAStartAndEnd() throws {
        let start = try TestSupport.vector("aiortc/h264_0001.bin")
        let end = try TestSupport.vector("aiortc/h264_0002.bin")
        #expect(try inspect(start) == RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: 916))
        #expect(try inspect(end) == RTPPayloadInfo(startsFrame: false, isKeyframe: true, mediaByteCount: 912))
        let (bytes, info) = try accessUnit([start, end])
        #expect(bytes.count == 916 + 912)
        #expect(Array(bytes.prefix(5)) == [0, 0, 0, 1, 0x65])
        #expect(Array(bytes[5..<916]) == Array(start[2...]))
        #expect(Array(bytes[916...]) == Array(end[2...]))
        #expect(info.isKeyframe)
        #expect(throws: RTPPayloadError.h264FragmentWithoutStart) { try accessUnit([end]) }
    }

    @Test func aiortcSingleNALUnit() throws {
        let payload = try TestSupport.vector("aiortc/h264_0003.bin")
        let (bytes, info) = try accessUnit([payload])
        #expect(bytes == [0, 0, 0, 1] + payload)
        #expect(bytes.count == 564)
        #expect(!info.isKeyframe)
        #expect(try inspect(payload).startsFrame)
    }
}
