import MediaCore
import TestSupport
import Testing

@testable import MediaRTP

/// RFC 7741: the payload descriptor, packetizer and depacketizer.
@Suite struct VP8PayloadTests {
    func descriptor(_ payload: [UInt8]) throws -> VP8PayloadDescriptor {
        try payload.withUnsafeBytes { try VP8PayloadDescriptor(parsing: $0) }
    }

    func written(_ descriptor: VP8PayloadDescriptor) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0xEE, count: 8)
        let count = try buffer.withUnsafeMutableBytes { try descriptor.write(into: $0) }
        #expect(count == descriptor.byteCount)
        return Array(buffer.prefix(count))
    }

    // MARK: §4.2 payload descriptor

    @Test func everyFieldReadAndWritten() throws {
        let payload: [UInt8] = [
            0xB3,        // X=1 R=0 N=1 S=1 R=0 PID=3
            0xF0,        // I=1 L=1 T=1 K=1 RSV=0
            0x92, 0x67,  // M=1, PictureID 0x1267 = 4711 (§4.6.5's example)
            0x81,        // TL0PICIDX 129
            0x6B,        // TID=1 Y=1 KEYIDX=11
            0x9D,        // VP8 data
        ]
        let parsed = try descriptor(payload)
        let expected = VP8PayloadDescriptor(
            isNonReference: true, startsPartition: true, partitionIndex: 3, pictureID: .fifteenBit(4711),
            tl0PicIndex: 129, temporalLayer: .init(index: 1, isLayerSync: true), keyIndex: 11)
        #expect(parsed == expected)
        #expect(parsed.byteCount == 6)
        #expect(!parsed.startsFrame, "S=1 but PID=3: a later partition")
        #expect(try written(parsed) == Array(payload.prefix(6)))
    }

    @Test func reservedBitsAreIgnoredWhenReadAndZeroWhenWritten() throws {
        let parsed = try descriptor([0xC8, 0x0F, 0x00])  // X=1 R=1 S=0 R=1 PID=0; X octet with only RSV bits
        var expected = VP8PayloadDescriptor()
        expected.hasEmptyExtensionOctet = true
        #expect(parsed == expected)
        #expect(parsed.byteCount == 2)
        #expect(try written(parsed) == [0x80, 0x00])
        #expect(try descriptor([0x58, 0x00]) == VP8PayloadDescriptor(startsPartition: true), "R=1 S=1 R=1, no X")
    }

    @Test func keyIndexWithoutTemporalLayerAndTheReverse() throws {
        #expect(try written(VP8PayloadDescriptor(keyIndex: 5)) == [0x80, 0x10, 0x05])
        #expect(try written(VP8PayloadDescriptor(temporalLayer: .init(index: 2, isLayerSync: false))) == [0x80, 0x20, 0x80])
        #expect(try written(VP8PayloadDescriptor(pictureID: .sevenBit(17))) == [0x80, 0x80, 0x11])
    }

    @Test func fieldsTooLargeAreRefused() {
        #expect(throws: RTPPayloadError.vp8FieldOutOfRange(.pictureID)) { try written(.init(pictureID: .sevenBit(128))) }
        #expect(throws: RTPPayloadError.vp8FieldOutOfRange(.pictureID)) { try written(.init(pictureID: .fifteenBit(0x8000))) }
        #expect(throws: RTPPayloadError.vp8FieldOutOfRange(.partitionIndex)) { try written(.init(partitionIndex: 8)) }
        #expect(throws: RTPPayloadError.vp8FieldOutOfRange(.temporalLayerIndex)) {
            try written(.init(temporalLayer: .init(index: 4, isLayerSync: false)))
        }
        #expect(throws: RTPPayloadError.vp8FieldOutOfRange(.keyIndex)) { try written(.init(keyIndex: 32)) }
        var short = [UInt8](repeating: 0, count: 3)
        #expect(throws: RTPPayloadError.outputTooSmall(needed: 4, available: 3)) {
            try short.withUnsafeMutableBytes { try VP8PayloadDescriptor(pictureID: .fifteenBit(300)).write(into: $0) }
        }
    }

    @Test(arguments: [
        ("", RTPPayloadError.emptyPayload),
        ("80", .vp8DescriptorTruncated(.extensionOctet)),
        ("8080", .vp8DescriptorTruncated(.pictureID)),
        ("808080", .vp8DescriptorTruncated(.pictureID)),
        ("8040", .vp8DescriptorTruncated(.tl0PicIndex)),
        ("8020", .vp8DescriptorTruncated(.temporalLayerAndKeyIndex)),
        ("8010", .vp8DescriptorTruncated(.temporalLayerAndKeyIndex)),
        ("80c011", .vp8DescriptorTruncated(.tl0PicIndex)),
    ])
    func everyTruncationHasItsName(hexPayload: String, expected: RTPPayloadError) {
        #expect(payloadError { _ = try descriptor(bytes(hexPayload)) } == expected)
    }

    @Test func aiortcAndPionDescriptorVectors() throws {
        for vector in try PayloadVectors.section("vp8_descriptor") {
            let name = try #require(vector["name"] as? String)
            let payload = bytes(try #require(vector["payload_hex"] as? String))
            let expected = try #require(vector["expected"] as? [String: Any])
            let parsed = try descriptor(payload)
            func field(_ key: String) -> Int?? {
                guard let value = expected[key] else { return .none }  // not stated: not checked
                return .some(value as? Int)
            }
            if let s = field("S") { #expect((parsed.startsPartition ? 1 : 0) == s, "\(name)") }
            if let pid = field("PID") { #expect(Int(parsed.partitionIndex) == pid, "\(name)") }
            if let pictureID = field("picture_id") { #expect(parsed.pictureID?.value == pictureID, "\(name)") }
            if let bits = field("picture_id_bits") {
                let actual: Int? = switch parsed.pictureID { case .sevenBit: 7; case .fifteenBit: 15; case nil: nil }
                #expect(actual == bits, "\(name)")
            }
            if let tl0 = field("tl0picidx") { #expect(parsed.tl0PicIndex.map(Int.init) == tl0, "\(name)") }
            if let tid = field("tid") { #expect(parsed.temporalLayer.map { Int($0.index) } == tid, "\(name)") }
            if let y = field("y") { #expect(parsed.temporalLayer.map { $0.isLayerSync ? 1 : 0 } == y, "\(name)") }
            if let keyIndex = field("keyidx") { #expect(parsed.keyIndex.map(Int.init) == keyIndex, "\(name)") }
            if let length = field("descriptor_len") { #expect(parsed.byteCount == length, "\(name)") }
            if let length = field("payload_len") { #expect(payload.count - parsed.byteCount == length, "\(name)") }
            // Written back, the descriptor is the same bytes (these vectors set no reserved bit).
            #expect(try written(parsed) == Array(payload.prefix(parsed.byteCount)), "\(name)")
        }
    }

    @Test func aiortcAndPionInvalidDescriptors() throws {
        for vector in try PayloadVectors.section("vp8_descriptor_invalid") {
            let payload = bytes(try #require(vector["payload_hex"] as? String))
            #expect(throws: RTPPayloadError.self, "\(vector["why"] ?? "")") { try descriptor(payload) }
        }
    }

    // MARK: Packetizer

    @Test func pionPacketizeVectors() throws {
        for vector in try PayloadVectors.section("vp8_packetize") {
            let name = try #require(vector["name"] as? String)
            let mode: VP8Packetizer.PictureIDMode = switch name {
            case "picture_id_7bit": .sevenBit
            case "picture_id_15bit": .fifteenBit
            default: .none
            }
            var packetizer = try VP8Packetizer(
                maxPayloadSize: try #require(vector["mtu"] as? Int), pictureIDMode: mode,
                firstPictureID: UInt16(vector["first_picture_id"] as? Int ?? 0))
            let frames = try #require(vector["frames_hex"] as? [String]).map { bytes($0) }
            let expected = try #require(vector["expected_payloads_hex"] as? [[String]]).map { $0.map { bytes($0) } }
            for (frameBytes, expectedPayloads) in zip(frames, expected) {
                let sent = try packetize(frame(.vp8, frameBytes), with: &packetizer)
                #expect(sent.map(\.payload) == expectedPayloads, "\(name)")
                #expect(sent.map(\.marker) == expectedPayloads.indices.map { $0 == expectedPayloads.count - 1 })
            }
        }
    }

    @Test func pictureIDIncrementsPerFrameAndWraps() throws {
        var fifteen = try VP8Packetizer(maxPayloadSize: 100, firstPictureID: 0x7FFF)
        var sevenBit = try VP8Packetizer(maxPayloadSize: 100, pictureIDMode: .sevenBit, firstPictureID: 127)
        var seen15: [Int?] = [], seen7: [Int?] = []
        for _ in 0..<3 {
            let a = try packetize(frame(.vp8, [0x9D, 1, 2]), with: &fifteen)
            seen15.append(try descriptor(a[0].payload).pictureID?.value)
            let b = try packetize(frame(.vp8, [0x9D, 1, 2]), with: &sevenBit)
            seen7.append(try descriptor(b[0].payload).pictureID?.value)
        }
        #expect(seen15 == [0x7FFF, 0, 1])
        #expect(seen7 == [127, 0, 1])
        #expect(fifteen.nextPictureID == 2)
    }

    @Test func payloadOfExactlyTheMaximumAndOneOver() throws {
        // 4-byte descriptor (15-bit PictureID) + 6 bytes = 10.
        var packetizer = try VP8Packetizer(maxPayloadSize: 10, firstPictureID: 5)
        let six: [UInt8] = [0x9C, 1, 2, 3, 4, 5]
        let exact = try packetize(frame(.vp8, six), with: &packetizer)
        #expect(exact.map(\.payload) == [[0x90, 0x80, 0x80, 0x05] + six])
        let seven = six + [6]
        let over = try packetize(frame(.vp8, seven), with: &packetizer)
        #expect(over.map(\.payload) == [[0x90, 0x80, 0x80, 0x06] + six, [0x80, 0x80, 0x80, 0x06, 6]])
    }

    @Test func maximumTooSmallForDescriptorAndOneByteIsRefused() {
        #expect(throws: RTPPayloadError.maxPayloadSizeTooSmall(4, minimum: 5)) { try VP8Packetizer(maxPayloadSize: 4) }
        #expect(throws: RTPPayloadError.maxPayloadSizeTooSmall(3, minimum: 4)) {
            try VP8Packetizer(maxPayloadSize: 3, pictureIDMode: .sevenBit)
        }
        #expect(throws: Never.self) { try VP8Packetizer(maxPayloadSize: 2, pictureIDMode: .none) }
    }

    @Test func emptyOrForeignFramesAreRefused() throws {
        var packetizer = try VP8Packetizer()
        #expect(throws: RTPPayloadError.emptyFrame) { try packetizer.startFrame(frame(.vp8, [])) }
        #expect(throws: RTPPayloadError.wrongCodec(.h264)) { try packetizer.startFrame(frame(.h264, [1])) }
    }

    // MARK: Depacketizer

    func assemble(_ packets: [TestPacket]) throws -> (bytes: [UInt8], info: RTPFrameInfo) {
        var depacketizer = VP8Depacketizer()
        return try depacketize(packets, with: &depacketizer)
    }

    @Test func keyFrameFromThePBitOfTheFirstByte() throws {
        let key = try assemble(packets([
            [0x90, 0x80, 0x81, 0x20, 0x50, 0x42],  // S=1 PID=0, PictureID 288; VP8 data: 0x50 has P=0
            [0x80, 0x80, 0x81, 0x20, 0x9D, 0x01],  // S=0, same PictureID
        ]))
        #expect(key.bytes == [0x50, 0x42, 0x9D, 0x01])
        #expect(key.info == RTPFrameInfo(byteCount: 4, isKeyframe: true, pictureID: 288, packetCount: 2))
        let inter = try assemble(packets([[0x10, 0x51, 0x42]]))  // P=1, no PictureID
        #expect(inter.info == RTPFrameInfo(byteCount: 2, isKeyframe: false, pictureID: nil, packetCount: 1))
    }

    @Test func laterPartitionsMayStartWithS() throws {
        let frame = try assemble(packets([[0x10, 0x50], [0x00, 0x01], [0x11, 0x02], [0x01, 0x03]]))
        #expect(frame.bytes == [0x50, 0x01, 0x02, 0x03])
    }

    @Test func inconsistentFramesAreRejected() {
        #expect(payloadError { _ = try assemble(packets([[0x00, 0x50]])) } == .vp8FrameStartMissing)
        #expect(payloadError { _ = try assemble(packets([[0x11, 0x50]])) } == .vp8FrameStartMissing)
        #expect(payloadError { _ = try assemble(packets([[0x10, 0x50], [0x10, 0x51]])) } == .vp8UnexpectedFrameStart)
        #expect(payloadError { _ = try assemble(packets([[0x90, 0x80, 0x05, 0x50], [0x80, 0x80, 0x06, 0x51]])) }
                == .vp8PictureIDMismatch(expected: 5, received: 6))
        #expect(payloadError { _ = try assemble(packets([[0x90, 0x80, 0x05, 0x50], [0x00, 0x51]])) }
                == .vp8PictureIDMismatch(expected: 5, received: nil))
        #expect(payloadError { _ = try assemble(packets([[0x10]])) } == .vp8PayloadHeaderMissing)
        let frame = packets([[0x10, 0x50], [0x00, 0x51], [0x00, 0x52]])
        #expect(payloadError { _ = try assemble([frame[0], frame[2]]) } == .sequenceGap(expected: 101, received: 102))
    }

    @Test func inspectReportsWhatAJitterBufferNeeds() throws {
        let depacketizer = VP8Depacketizer()
        func info(_ payload: [UInt8]) throws -> RTPPayloadInfo { try payload.withUnsafeBytes { try depacketizer.inspect($0) } }
        #expect(try info([0x90, 0x80, 0x05, 0x50, 1, 2])
                == RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: 3, pictureID: 5))
        #expect(try info([0x90, 0x80, 0x05, 0x51]) == RTPPayloadInfo(startsFrame: true, isKeyframe: false, mediaByteCount: 1, pictureID: 5))
        #expect(try info([0x80, 0x80, 0x85, 0x50, 7])
                == RTPPayloadInfo(startsFrame: false, isKeyframe: false, mediaByteCount: 1, pictureID: 0x0550))
        #expect(try info([0x00]) == RTPPayloadInfo(startsFrame: false, isKeyframe: false, mediaByteCount: 0))
    }

    @Test func appendRefusesAnInspectionOfAnotherPayload() throws {
        var depacketizer = VP8Depacketizer()
        let payload: [UInt8] = [0x90, 0x80, 0x05, 0x50, 1, 2]
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 128, alignment: 1)
        defer { output.deallocate() }
        func append(mediaByteCount: Int) -> RTPPayloadError? {
            let info = RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: mediaByteCount, pictureID: 5)
            depacketizer.startFrame()
            return payloadError {
                try payload.withUnsafeBytes { try depacketizer.append($0, inspected: info, sequenceNumber: 1, marker: true, into: output) }
            }
        }
        // No room left for the descriptor's first octet, or more media than bytes.
        for count in [6, 7, 100, -1] { #expect(append(mediaByteCount: count) == .inspectionMismatch, "\(count)") }
        #expect(append(mediaByteCount: 3) == nil)  // what inspect says: the VP8 data is the last 3 bytes
        #expect(try depacketizer.finishFrame() == RTPFrameInfo(byteCount: 3, isKeyframe: true, pictureID: 5, packetCount: 1))
        #expect(Array(output.prefix(3)) == [0x50, 1, 2])
    }
}
