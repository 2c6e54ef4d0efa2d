/// RTP packets (RFC 3550 §5.1): the public vectors of Tests/Vectors (aiortc, pion) with the fields their
/// README lists, literal packets with each field commented, the named error of every malformed case,
/// and serialization into caller buffers, including re-serialization and in-place rewriting.
import MediaRTP
import TestSupport
import Testing

/// Writes `packet`, parsed from `source`, again into a fresh buffer of exactly `marshalSize` bytes.
private func reserialized(_ packet: RTPPacket, from source: [UInt8]) throws -> [UInt8] {
    try source.withUnsafeBytes { raw in
        try PacketBytes.written(capacity: packet.marshalSize) { out throws(RTPPacketError) in try packet.write(from: raw, into: out) }
    }
}

/// The bytes of a vector file and the packet they parse to.
private func parsedVector(_ name: String) throws -> ([UInt8], RTPPacket) {
    let bytes = try TestSupport.vector(name)
    return (bytes, try RTPPacket(parsing: bytes))
}

@Suite struct RTPPacketVectorTests {
    @Test func aiortcPCMU() throws {
        let (bytes, packet) = try parsedVector("aiortc/rtp.bin")
        #expect(packet.header == RTPHeader(marker: false, payloadType: 0, sequenceNumber: 15743,
                                           timestamp: 3_937_035_252, ssrc: 0xF01B_40E9))
        #expect(packet.headerExtensions == nil)
        #expect(packet.headerLength == 12)
        #expect(packet.payloadRange == 12..<172)
        #expect(packet.paddingLength == 0)
        #expect(try reserialized(packet, from: bytes) == bytes)
    }

    @Test func aiortcPCMURejectsElevenBytesAndVersion3() throws {
        let bytes = try TestSupport.vector("aiortc/rtp.bin")
        #expect(throws: RTPPacketError.headerTruncated) { try RTPPacket(parsing: Array(bytes[..<11])) }
        var wrongVersion = bytes
        wrongVersion[0] = 0xC0  // V=3
        #expect(throws: RTPPacketError.unsupportedVersion(3)) { try RTPPacket(parsing: wrongVersion) }
    }

    @Test func aiortcTelephoneEvent() throws {
        let (bytes, packet) = try parsedVector("aiortc/rtp_dtmf.bin")
        #expect(packet.header == RTPHeader(marker: true, payloadType: 101, sequenceNumber: 24152,
                                           timestamp: 4_021_352_124, ssrc: 0xA6A1_44F2))
        #expect(Array(bytes[packet.payloadRange]) == [0x01, 0x8A, 0x03, 0xC0])
    }

    @Test func aiortcWithCSRCs() throws {
        let (bytes, packet) = try parsedVector("aiortc/rtp_with_csrc.bin")
        #expect(packet.header.csrcs == [2_882_400_001, 3_735_928_559])
        #expect(packet.header.payloadType == 0 && !packet.header.marker)
        #expect(packet.header.sequenceNumber == 16082 && packet.header.timestamp == 144)
        #expect(packet.headerLength == 20 && packet.payloadRange.count == 160)
        #expect(try reserialized(packet, from: bytes) == bytes)
        for length in 12...19 {
            #expect(throws: RTPPacketError.csrcListTruncated) { try RTPPacket(parsing: Array(bytes[..<length])) }
        }
    }

    @Test func aiortcWithSDESMid() throws {
        let (bytes, packet) = try parsedVector("aiortc/rtp_with_sdes_mid.bin")
        #expect(packet.header == RTPHeader(marker: true, payloadType: 111, sequenceNumber: 14156,
                                           timestamp: 1_327_210_925, ssrc: 0xF375_3F70))
        let extensions = try #require(packet.headerExtensions)
        #expect(extensions.profile == 0xBEDE && extensions.form == .oneByte)
        let elements = try extensions.elements(in: bytes)
        #expect(elements.map(\.id) == [9])
        #expect(elements.map { Array(bytes[$0.valueRange]) } == [Array("0".utf8)])
        #expect(packet.payloadRange.count == 54)
        for length in 12...15 {
            #expect(throws: RTPPacketError.extensionHeaderTruncated) { try RTPPacket(parsing: Array(bytes[..<length])) }
        }
        for length in 16...19 {
            #expect(throws: RTPPacketError.extensionTruncated) { try RTPPacket(parsing: Array(bytes[..<length])) }
        }
    }

    @Test func aiortcOnlyPadding() throws {
        let (bytes, packet) = try parsedVector("aiortc/rtp_only_padding.bin")
        #expect(packet.header.payloadType == 120 && packet.header.sequenceNumber == 27759)
        #expect(packet.header.timestamp == 4_044_047_131)
        #expect(packet.payloadRange.isEmpty && packet.paddingLength == 224)
        // The fixed header (P=1) and one byte of padding count: 2 is more than the 1 byte there is.
        #expect(throws: RTPPacketError.paddingExceedsPacket) { try RTPPacket(parsing: bytes[..<12] + [0x02]) }
        #expect(throws: RTPPacketError.paddingCountZero) { try RTPPacket(parsing: bytes[..<12] + [0x00]) }
    }

    @Test func aiortcOnlyPaddingWithAbsSendTime() throws {
        let (bytes, packet) = try parsedVector("aiortc/rtp_only_padding_with_header_extensions.bin")
        #expect(packet.header.payloadType == 98 && packet.header.sequenceNumber == 22138)
        #expect(packet.header.timestamp == 3_171_065_731)
        #expect(packet.payloadRange.isEmpty && packet.paddingLength == 224)
        let extensions = try #require(packet.headerExtensions)
        let absSendTime = try bytes.withUnsafeBytes { raw in try #require(try extensions.value(id: 2, in: raw)) }
        #expect(bytes[absSendTime].reduce(0) { $0 << 8 | Int($1) } == 15_846_540)
    }

    /// The WebRTC set of one-byte elements from aiortc's test_map_header_extensions.
    @Test func aiortcWebRTCExtensions() throws {
        let (bytes, packet) = try parsedVector("aiortc/rtp_header_extensions_webrtc.bin")
        #expect(packet.header == RTPHeader(payloadType: 100, sequenceNumber: 88, timestamp: 0x6543_1278, ssrc: 0x1234_5678))
        let extensions = try #require(packet.headerExtensions)
        #expect(extensions.dataRange == 16..<48)  // 8 words
        let elements = try extensions.elements(in: bytes)
        let values = elements.map { ($0.id, Array(bytes[$0.valueRange])) }
        let expected: [(UInt8, [UInt8])] = [
            (4, [0xDA]),                          // ssrc-audio-level: V=1, level 0x5A = 90
            (2, [0x01, 0x56, 0xCE]),              // toffset 0x156ce
            (6, [0x12, 0x34, 0x56]),              // abs-send-time 0x123456
            (8, [0xCE, 0xAB]),                    // transport-wide-cc seq 0xceab
            (10, [0x03]),                         // unmapped: 2 bytes with its header
            (11, [0x12, 0x48, 0x76]),             // unmapped: 4 bytes with its header
            (12, Array("rtx".utf8)),              // rtp-stream-id
            (13, Array("stream".utf8)),           // repaired-rtp-stream-id
        ]
        #expect(values.map(\.0) == expected.map(\.0))
        #expect(values.map(\.1) == expected.map(\.1))
        #expect(Array(bytes[46..<48]) == [0, 0])  // two trailing padding bytes, skipped
        #expect(packet.payloadRange.isEmpty)
    }

    @Test func pionBasicWithOpaqueExtension() throws {
        let (bytes, packet) = try parsedVector("pion/rtp_basic.bin")
        #expect(packet.header == RTPHeader(marker: true, payloadType: 96, sequenceNumber: 27023,
                                           timestamp: 3_653_407_706, ssrc: 476_325_762))
        let extensions = try #require(packet.headerExtensions)
        #expect(extensions.profile == 0x0001 && extensions.form == .opaque)
        #expect(Array(bytes[extensions.dataRange]) == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(try extensions.elements(in: bytes).isEmpty)
        #expect(Array(bytes[packet.payloadRange]) == [0x98, 0x36, 0xBE, 0x88, 0x9E])
        #expect(try reserialized(packet, from: bytes) == bytes)
    }

    @Test func pionPadding() throws {
        let padded = try RTPPacket(parsing: try TestSupport.vector("pion/rtp_padding4.bin"))
        #expect(padded.paddingLength == 4 && padded.payloadRange == 20..<21)
        let onlyPadding = try RTPPacket(parsing: try TestSupport.vector("pion/rtp_only_padding5.bin"))
        #expect(onlyPadding.paddingLength == 5 && onlyPadding.payloadRange.isEmpty)
        #expect(throws: RTPPacketError.paddingCountZero) {
            try RTPPacket(parsing: try TestSupport.vector("pion/rtp_padding_zero_invalid.bin"))
        }
        #expect(throws: RTPPacketError.paddingExceedsPacket) {
            try RTPPacket(parsing: try TestSupport.vector("pion/rtp_padding_excessive_invalid.bin"))
        }
    }

    @Test(arguments: [
        ("pion/rtp_ext_onebyte_id5.bin", [5], [[0xAA]]),
        ("pion/rtp_ext_onebyte_two.bin", [1, 2], [[0xAA], [0xBB]]),
        ("pion/rtp_ext_onebyte_three_padded.bin", [1, 2, 3], [[0xAA], [0xBB, 0xBB], [0xCC, 0xCC, 0xCC, 0xCC]]),
        ("pion/rtp_ext_twobyte_id5.bin", [5], [[UInt8](repeating: 0xAA, count: 24)]),
    ] as [(String, [UInt8], [[UInt8]])])
    func pionRFC8285Extensions(file: String, ids: [UInt8], values: [[UInt8]]) throws {
        let bytes = try TestSupport.vector(file)
        let packet = try RTPPacket(parsing: bytes)
        let elements = try #require(packet.headerExtensions).elements(in: bytes)
        #expect(elements.map(\.id) == ids)
        #expect(elements.map { Array(bytes[$0.valueRange]) } == values)
        #expect(Array(bytes[packet.payloadRange]) == [0x98, 0x36, 0xBE, 0x88, 0x9E])
        #expect(packet.header.sequenceNumber == 27023 && packet.header.ssrc == 476_325_762)
    }

    @Test func pionTwoByteProfile() throws {
        let bytes = try TestSupport.vector("pion/rtp_ext_twobyte_id5.bin")
        let extensions = try #require(try RTPPacket(parsing: bytes).headerExtensions)
        #expect(extensions.profile == 0x1000 && extensions.form == .twoByte(appBits: 0))
        #expect(extensions.dataRange.count == 28)  // 7 words
    }
}

@Suite struct RTPPacketLiteralTests {
    /// A packet exercising every header field, written by hand.
    static let full: [UInt8] = [
        0b1011_0010,                        // V=2, P=1, X=1, CC=2
        0b1110_0000,                        // M=1, PT=96
        0x12, 0x34,                         // sequence number 0x1234
        0xDE, 0xAD, 0xBE, 0xEF,             // timestamp
        0x00, 0x00, 0x00, 0x2A,             // SSRC 42
        0x00, 0x00, 0x00, 0x01,             // CSRC 1
        0x00, 0x00, 0x00, 0x02,             // CSRC 2
        0xBE, 0xDE, 0x00, 0x01,             // extension profile 0xBEDE, 1 word
        0x10, 0x77, 0x00, 0x00,             //   ID 1, L=0: one byte 0x77; two padding bytes
        0x01, 0x02, 0x03,                   // payload
        0x00, 0x00, 0x03,                   // 3 bytes of padding, the last one its count
    ]

    @Test func parsesEveryField() throws {
        let packet = try RTPPacket(parsing: Self.full)
        #expect(packet.header == RTPHeader(marker: true, payloadType: 96, sequenceNumber: 0x1234,
                                           timestamp: 0xDEAD_BEEF, ssrc: 42, csrcs: [1, 2]))
        #expect(packet.headerExtensions == RTPHeaderExtensions(profile: 0xBEDE, dataRange: 24..<28))
        #expect(packet.headerLength == 28 && packet.payloadRange == 28..<31)
        #expect(packet.paddingLength == 3 && packet.length == Self.full.count)
        #expect(try reserialized(packet, from: Self.full) == Self.full)
    }

    /// One value parsed into again and again, as a receive path does: each parse leaves the same value
    /// as a fresh one, none of the packet before it (its CSRCs, extension, padding).
    @Test func parsingIntoAValueLeavesNothingOfThePacketBefore() throws {
        let plain: [UInt8] = [0x80, 0x00, 0x00, 0x07, 0, 0, 0, 9, 0, 0, 0, 5, 0xAB, 0xCD]
        var packet = RTPPacket()
        for bytes in [Self.full, plain, Self.full, plain] {
            try bytes.withUnsafeBytes { raw in try packet.parse(raw) }
            #expect(packet == (try RTPPacket(parsing: bytes)))
        }
        #expect(packet.header == RTPHeader(payloadType: 0, sequenceNumber: 7, timestamp: 9, ssrc: 5))
        #expect(packet.headerExtensions == nil && packet.paddingLength == 0 && packet.payloadRange == 12..<14)
    }

    /// Each malformed header with the error it must give (RFC 3550 §5.1, §5.3.1, Appendix A.1).
    @Test(arguments: [
        ([], .headerTruncated),
        ([0x80, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], .headerTruncated),     // 11 bytes
        ([0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01], .unsupportedVersion(0)),
        ([0x40, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01], .unsupportedVersion(1)),
        ([0x81,                                                                                     // CC=1
          0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
          0x00, 0x00, 0x00], .csrcListTruncated),                                                   // 3 of 4 CSRC bytes
        ([0x90,                                                                                     // X=1
          0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
          0xBE, 0xDE, 0x00], .extensionHeaderTruncated),                                            // 3 of 4 bytes
        ([0x90,
          0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
          0xBE, 0xDE, 0x00, 0x02,                                                                   // 2 words...
          0x10, 0xAA, 0x00, 0x00], .extensionTruncated),                                            // ...only 1
        ([0xA0,                                                                                     // P=1
          0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01], .paddingExceedsPacket), // no count byte
        ([0xA0,
          0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
          0x55, 0x00], .paddingCountZero),                                                          // count 0
        ([0xA0,
          0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
          0x55, 0x03], .paddingExceedsPacket),                                                      // 3 > 2 bytes
    ] as [([UInt8], RTPPacketError)])
    func malformed(bytes: [UInt8], error: RTPPacketError) {
        #expect(throws: error) { try RTPPacket(parsing: bytes) }
    }

    @Test func paddingMayTakeEverythingAfterTheHeader() throws {
        // V=2, P=1, PT 0, seq 1, ts 0, SSRC 1; then 4 bytes of padding, count 4: an empty payload.
        let bytes: [UInt8] = [0xA0, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4]
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.payloadRange == 12..<12 && packet.paddingLength == 4)
    }

    @Test func writesAPacketFromParts() throws {
        let header = RTPHeader(marker: true, payloadType: 96, sequenceNumber: 0x1234, timestamp: 0xDEAD_BEEF,
                               ssrc: 42, csrcs: [1, 2])
        let extensionBlock: [UInt8] = [0xBE, 0xDE, 0x00, 0x01, 0x10, 0x77, 0x00, 0x00]
        let payload: [UInt8] = [0x01, 0x02, 0x03]
        #expect(RTPPacket.marshalSize(header: header, extensionBlockLength: 8, payloadLength: 3, paddingLength: 3) == 34)
        let bytes = try extensionBlock.withUnsafeBytes { block in
            try payload.withUnsafeBytes { payload in
                try PacketBytes.written(capacity: 34) { out throws(RTPPacketError) in
                    try RTPPacket.write(header: header, extensionBlock: block, payload: payload, paddingLength: 3, into: out)
                }
            }
        }
        #expect(bytes == Self.full)
    }

    @Test func headerThenPayloadInPlace() throws {
        // A packetizer writes the header, then its payload where the header says, then padding.
        let header = RTPHeader(payloadType: 8, sequenceNumber: 7, timestamp: 160, ssrc: 0x0102_0304)
        let bytes = try PacketBytes.written(capacity: 64) { out throws(RTPPacketError) in
            let payloadOffset = try header.write(into: out, padded: true)
            out[payloadOffset] = 0xD5  // one A-law sample
            return try RTPPacket.writePadding(2, at: payloadOffset + 1, into: out)
        }
        #expect(bytes == [
            0xA0, 0x08,                 // V=2, P=1; M=0, PT=8
            0x00, 0x07,                 // sequence number 7
            0x00, 0x00, 0x00, 0xA0,     // timestamp 160
            0x01, 0x02, 0x03, 0x04,     // SSRC
            0xD5,                       // payload
            0x00, 0x02,                 // padding, count 2
        ])
    }

    @Test func writeErrors() throws {
        let header = RTPHeader(payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0)
        var buffer = [UInt8](repeating: 0, count: 16)
        buffer.withUnsafeMutableBytes { out in
            let payload = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<5])
            #expect(throws: RTPPacketError.bufferTooSmall(needed: 17, available: 16)) {
                try RTPPacket.write(header: header, payload: payload, into: out)
            }
            #expect(throws: RTPPacketError.paddingLengthOutOfRange(256)) {
                try RTPPacket.write(header: header, payload: UnsafeRawBufferPointer(start: nil, count: 0),
                                    paddingLength: 256, into: out)
            }
            var badType = header
            badType.payloadType = 128
            #expect(throws: RTPPacketError.payloadTypeOutOfRange(128)) { try badType.write(into: out) }
            // Extension blocks whose length field disagrees with their size, or that are not whole words.
            for block: [UInt8] in [[0xBE, 0xDE, 0x00, 0x02, 0x10, 0xAA, 0x00, 0x00], [0xBE, 0xDE, 0x00], [0xBE, 0xDE, 0x00, 0x00, 0x00]] {
                _ = block.withUnsafeBytes { block in
                    #expect(throws: RTPPacketError.extensionBlockMalformed) { try header.write(into: out, extensionBlock: block) }
                }
            }
            // Re-serializing from bytes that are not the ones the packet was parsed from.
            let parsed = RTPPacket(header: header, headerExtensions: nil, payloadRange: 12..<40, paddingLength: 0)
            #expect(throws: RTPPacketError.sourceMismatch) { try parsed.write(from: UnsafeRawBufferPointer(out), into: out) }
            let cropped = UnsafeMutableRawBufferPointer(rebasing: out[0..<11])
            #expect(throws: RTPPacketError.bufferTooSmall(needed: 12, available: 11)) { try header.write(into: cropped) }
        }
    }

    @Test(arguments: [[1, 2, 3, 4], [], [9]] as [CSRCList])
    func rewritesInPlaceWhenTheCSRCListGrowsOrShrinks(csrcs: CSRCList) throws {
        // Parse the literal packet (2 CSRCs), change its header, and write it back over its own bytes.
        var buffer = Self.full + [UInt8](repeating: 0xEE, count: 8)
        let length = try buffer.withUnsafeMutableBytes { raw in
            var packet = try RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: raw[..<Self.full.count]))
            packet.header.csrcs = csrcs
            packet.header.ssrc = 0x5555_5555
            return try packet.write(from: UnsafeRawBufferPointer(raw), into: raw)
        }
        #expect(length == Self.full.count + 4 * (csrcs.count - 2))
        let rewritten = try RTPPacket(parsing: Array(buffer[..<length]))
        #expect(rewritten.header.csrcs == csrcs && rewritten.header.ssrc == 0x5555_5555)
        #expect(Array(buffer[rewritten.payloadRange]) == [0x01, 0x02, 0x03])
        #expect(rewritten.paddingLength == 3)
        let extensions = try #require(rewritten.headerExtensions)
        #expect(Array(buffer[extensions.blockRange]) == [0xBE, 0xDE, 0x00, 0x01, 0x10, 0x77, 0x00, 0x00])
    }

    @Test func csrcListHoldsFifteen() {
        var list = CSRCList()
        for source in 0..<15 {
            let appended = list.append(UInt32(source))
            #expect(appended)
        }
        let sixteenth = list.append(15)
        #expect(!sixteenth)
        #expect(list.count == 15 && Array(list) == (0..<15).map { UInt32($0) })
        #expect(CSRCList(0..<16) == nil)
        #expect(CSRCList([7, 8]) == [7, 8])
        #expect(CSRCList([7, 8]) != [7])
    }
}
