/// RTP header extensions: reading RFC 8285 one-byte (§4.2) and two-byte (§4.3) elements with padding,
/// the reserved ID 15 and truncated elements; opaque RFC 3550 §5.3.1 profiles; and the writer, which
/// pads to 32 bits and switches to the two-byte form when an element needs it.
import MediaRTP
import TestSupport
import Testing

/// The elements of extension `data` in `profile`'s form, up to the end or the first error.
private func readElements(profile: UInt16, data: [UInt8]) -> (elements: [(UInt8, [UInt8])], error: RTPHeaderExtensionError?) {
    let extensions = RTPHeaderExtensions(profile: profile, dataRange: 0..<data.count)
    return data.withUnsafeBytes { raw in
        var iterator = extensions.elements(in: raw)
        var elements: [(UInt8, [UInt8])] = []
        do throws(RTPHeaderExtensionError) {
            while let element = try iterator.next() { elements.append((element.id, Array(data[element.valueRange]))) }
            return (elements, nil)
        } catch {
            // After an error the iterator is done.
            #expect((try? iterator.next()) == nil)
            return (elements, error)
        }
    }
}

/// Builds an extension block with `body` on a writer over a buffer of `capacity` bytes.
private func block(capacity: Int = 64, form: RTPHeaderExtensionWriter.Form = .automatic,
                   _ body: (inout RTPHeaderExtensionWriter) throws -> Void) throws -> [UInt8]
{
    var buffer = [UInt8](repeating: 0xEE, count: capacity)
    let length = try buffer.withUnsafeMutableBytes { raw in
        var writer = RTPHeaderExtensionWriter(buffer: raw, form: form)
        try body(&writer)
        #expect(writer.marshalSize == (try writer.finish()))
        return try writer.finish()
    }
    return Array(buffer[..<length])
}

@Suite struct RTPHeaderExtensionReadingTests {
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var profile: UInt16
        var data: [UInt8]
        var elements: [(UInt8, [UInt8])]
        var error: RTPHeaderExtensionError? = nil
    }

    static let cases: [Case] = [
        Case(description: "one-byte, padding between and after", profile: 0xBEDE, data: [
            0x10, 0xAA,                     // ID 1, L=0: 1 byte
            0x00,                           // padding
            0x21, 0xBB, 0xCC,               // ID 2, L=1: 2 bytes
            0x00, 0x00,                     // padding to the word boundary
        ], elements: [(1, [0xAA]), (2, [0xBB, 0xCC])]),
        Case(description: "one-byte, longest value", profile: 0xBEDE, data:
            [0xEF] + [UInt8](1...16)         // ID 14, L=15: 16 bytes
            + [0x00, 0x00, 0x00],
            elements: [(14, [UInt8](1...16))]),
        Case(description: "one-byte, ID 15 stops parsing", profile: 0xBEDE, data: [
            0x10, 0xAA,                     // ID 1: counts
            0xF3,                           // ID 15: reserved, its length ignored
            0x20, 0xBB, 0x00, 0x00, 0x00,   // ID 2: never read
        ], elements: [(1, [0xAA])], error: .reservedID15(offset: 2)),
        Case(description: "one-byte, value past the end", profile: 0xBEDE, data: [
            0x10, 0xAA,                     // ID 1
            0x23, 0xBB,                     // ID 2, L=3: 4 bytes, only 1 left
        ], elements: [(1, [0xAA])], error: .elementTruncated(id: 2, offset: 2)),
        Case(description: "two-byte, padding and an empty value", profile: 0x1000, data: [
            0x05, 0x02, 0xAA, 0xBB,         // ID 5, length 2
            0x00,                           // padding
            0x07, 0x00,                     // ID 7, length 0
            0x00,                           // padding
        ], elements: [(5, [0xAA, 0xBB]), (7, [])]),
        Case(description: "two-byte, IDs 15 and 255 are ordinary", profile: 0x100F, data: [
            0x0F, 0x01, 0x99,               // ID 15, length 1
            0xFF, 0x01, 0x77,               // ID 255, length 1
            0x00, 0x00,
        ], elements: [(15, [0x99]), (255, [0x77])]),
        Case(description: "two-byte, length byte missing", profile: 0x1000, data: [
            0x05, 0x01, 0xAA,               // ID 5, length 1
            0x09,                           // ID 9 and nothing more
        ], elements: [(5, [0xAA])], error: .elementTruncated(id: 9, offset: 3)),
        Case(description: "two-byte, value past the end", profile: 0x1000, data: [
            0x05, 0x04, 0xAA, 0xBB,         // ID 5, length 4: 2 bytes missing
        ], elements: [], error: .elementTruncated(id: 5, offset: 0)),
        Case(description: "other profile: opaque", profile: 0xABAC, data: [0x10, 0xAA, 0x00, 0x00], elements: []),
        Case(description: "empty one-byte extension", profile: 0xBEDE, data: [], elements: []),
    ]

    @Test(arguments: cases)
    func reads(_ testCase: Case) {
        let (elements, error) = readElements(profile: testCase.profile, data: testCase.data)
        #expect(elements.map(\.0) == testCase.elements.map(\.0))
        #expect(elements.map(\.1) == testCase.elements.map(\.1))
        #expect(error == testCase.error)
    }

    @Test func forms() {
        #expect(RTPHeaderExtensions(profile: 0xBEDE, dataRange: 0..<0).form == .oneByte)
        #expect(RTPHeaderExtensions(profile: 0x1000, dataRange: 0..<0).form == .twoByte(appBits: 0))
        #expect(RTPHeaderExtensions(profile: 0x100A, dataRange: 0..<0).form == .twoByte(appBits: 10))
        #expect(RTPHeaderExtensions(profile: 0x1010, dataRange: 0..<0).form == .opaque)
        #expect(RTPHeaderExtensions(profile: 0xBEDF, dataRange: 0..<0).form == .opaque)
    }

    @Test func findsAValueByID() throws {
        let data: [UInt8] = [0x10, 0xAA, 0x21, 0xBB, 0xCC, 0xF0, 0x30, 0x01]
        let extensions = RTPHeaderExtensions(profile: 0xBEDE, dataRange: 0..<data.count)
        try data.withUnsafeBytes { raw throws in
            #expect(try extensions.value(id: 2, in: raw) == 3..<5)
            #expect(try extensions.value(id: 1, in: raw) == 1..<2)
            #expect(try extensions.value(id: 4, in: raw) == nil)
            #expect(try extensions.value(id: 3, in: raw) == nil)  // after ID 15: not considered
        }
        let truncated: [UInt8] = [0x10, 0xAA, 0x25, 0xBB]
        let short = RTPHeaderExtensions(profile: 0xBEDE, dataRange: 0..<truncated.count)
        _ = truncated.withUnsafeBytes { raw in
            #expect(throws: RTPHeaderExtensionError.elementTruncated(id: 2, offset: 2)) { try short.value(id: 3, in: raw) }
        }
    }
}

@Suite struct RTPHeaderExtensionWriterTests {
    @Test func oneByteElementsPaddedToAWord() throws {
        let bytes = try block { writer in
            try writer.append(id: 1, value: [0xAA])
            try writer.append(id: 2, value: [0xBB, 0xBB])
            try writer.append(id: 3, bigEndian: 0x12_3456, byteCount: 3)  // e.g. abs-send-time
            #expect(writer.form == .oneByte && writer.elementCount == 3)
        }
        #expect(bytes == [
            0xBE, 0xDE, 0x00, 0x03,         // one-byte form, 3 words
            0x10, 0xAA,                     // ID 1, 1 byte
            0x21, 0xBB, 0xBB,               // ID 2, 2 bytes
            0x32, 0x12, 0x34, 0x56,         // ID 3, 3 bytes
            0x00, 0x00, 0x00,               // padding
        ])
    }

    /// pion's element list with padding between elements, written again: the padding moves to the end.
    @Test func rewritesPionPaddedElementsWithPaddingAtTheEnd() throws {
        let bytes = try TestSupport.vector("pion/rtp_ext_onebyte_three_padded.bin")
        let extensions = try #require(try RTPPacket(parsing: bytes).headerExtensions)
        let rewritten = try block { writer in
            for element in try extensions.elements(in: bytes) { try writer.append(id: element.id, value: bytes[element.valueRange]) }
        }
        #expect(rewritten == [
            0xBE, 0xDE, 0x00, 0x03,         // same 3 words as the original
            0x10, 0xAA,                     // ID 1
            0x21, 0xBB, 0xBB,               // ID 2 (the original has two padding bytes after it)
            0x33, 0xCC, 0xCC, 0xCC, 0xCC,   // ID 3
            0x00, 0x00,                     // padding
        ])
    }

    @Test func nothingWrittenIsAnEmptyBlock() throws {
        #expect(try block { _ in } == [0xBE, 0xDE, 0x00, 0x00])
    }

    @Test func idFifteenSwitchesToTwoByteForm() throws {
        let bytes = try block { writer in
            try writer.append(id: 1, value: [0xAA])
            try writer.append(id: 2, value: [0xBB, 0xCC])
            try writer.append(id: 15, value: [0xDD])
            #expect(writer.form == .twoByte(appBits: 0))
        }
        #expect(bytes == [
            0x10, 0x00, 0x00, 0x03,         // two-byte form, appbits 0, 3 words
            0x01, 0x01, 0xAA,               // ID 1, length 1 (rewritten from one-byte)
            0x02, 0x02, 0xBB, 0xCC,         // ID 2, length 2 (rewritten)
            0x0F, 0x01, 0xDD,               // ID 15, length 1
            0x00, 0x00,                     // padding
        ])
    }

    @Test(arguments: [[UInt8](), [UInt8](repeating: 0x5A, count: 17), [UInt8](repeating: 0x5A, count: 255)])
    func valuesOutsideOneToSixteenBytesNeedTwoByteForm(value: [UInt8]) throws {
        let bytes = try block(capacity: 300) { writer in
            try writer.append(id: 4, value: [0x44])
            try writer.append(id: 5, value: value)
        }
        #expect(Array(bytes[0..<2]) == [0x10, 0x00])
        let (elements, error) = readElements(profile: 0x1000, data: Array(bytes[4...]))
        #expect(error == nil)
        #expect(elements.map(\.0) == [4, 5] && elements.map(\.1) == [[0x44], value])
    }

    @Test func twoByteFormWithAppBitsFromTheStart() throws {
        let bytes = try block(form: .twoByte(appBits: 5)) { writer in
            try writer.append(id: 1, value: [0xAA])
        }
        #expect(bytes == [0x10, 0x05, 0x00, 0x01, 0x01, 0x01, 0xAA, 0x00])
    }

    @Test func errors() throws {
        var buffer = [UInt8](repeating: 0, count: 8)
        try buffer.withUnsafeMutableBytes { raw in
            var writer = RTPHeaderExtensionWriter(buffer: raw)
            #expect(throws: RTPHeaderExtensionError.invalidID(0)) { try writer.append(id: 0, value: [1]) }
            #expect(throws: RTPHeaderExtensionError.valueTooLong(id: 1, length: 256)) {
                try writer.append(id: 1, value: [UInt8](repeating: 0, count: 256))
            }
            #expect(throws: RTPHeaderExtensionError.bufferTooSmall(needed: 12, available: 8)) {
                try writer.append(id: 1, value: [1, 2, 3, 4])
            }
            try writer.append(id: 1, value: [0xAA])
            // Switching to the two-byte form would not fit either; the one-byte block stays as it was.
            #expect(throws: RTPHeaderExtensionError.bufferTooSmall(needed: 12, available: 8)) {
                try writer.append(id: 15, value: [0xBB])
            }
            #expect(try writer.finish() == 8 && writer.form == .oneByte)
        }
        #expect(buffer == [0xBE, 0xDE, 0x00, 0x01, 0x10, 0xAA, 0x00, 0x00])
        var tiny = [UInt8](repeating: 0, count: 3)
        _ = tiny.withUnsafeMutableBytes { raw in
            #expect(throws: RTPHeaderExtensionError.bufferTooSmall(needed: 4, available: 3)) {
                try RTPHeaderExtensionWriter(buffer: raw).finish()
            }
        }
    }

    /// The writer builds the extension where the packet needs it and `RTPHeader.write` finds it there.
    @Test func writtenInPlaceInsideThePacket() throws {
        let header = RTPHeader(payloadType: 111, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [4])
        var buffer = [UInt8](repeating: 0xEE, count: 100)
        let length = try buffer.withUnsafeMutableBytes { raw in
            var writer = RTPHeaderExtensionWriter(buffer: UnsafeMutableRawBufferPointer(rebasing: raw[header.length...]))
            try writer.append(id: 9, value: Array("0".utf8))  // sdes:mid
            let blockLength = try writer.finish()
            let block = UnsafeRawBufferPointer(rebasing: raw[header.length..<header.length + blockLength])
            let payloadOffset = try header.write(into: raw, extensionBlock: block)
            raw[payloadOffset] = 0x42
            return payloadOffset + 1
        }
        let bytes = Array(buffer[..<length])
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.header == header)
        let element = try #require(try packet.headerExtensions?.elements(in: bytes).first)
        #expect(element.id == 9 && bytes[element.valueRange] == [0x30])
        #expect(Array(bytes[packet.payloadRange]) == [0x42])
    }

    /// Random element lists written, put in a packet, parsed and read back (seeded, reproducible).
    @Test func randomRoundTrips() throws {
        var random = SplitMix64(seed: 8285)
        for _ in 0..<500 {
            var elements: [(UInt8, [UInt8])] = []
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                let id = Bool.random(using: &random) ? UInt8.random(in: 1...14, using: &random)
                                                     : UInt8.random(in: 1...255, using: &random)
                let length = Bool.random(using: &random) ? Int.random(in: 1...16, using: &random)
                                                         : Int.random(in: 0...255, using: &random)
                elements.append((id, (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }))
            }
            let extensionBlock = try block(capacity: 2048) { writer in
                for (id, value) in elements { try writer.append(id: id, value: value) }
            }
            let header = RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1)
            let payload: [UInt8] = [1, 2, 3]
            var packetBytes = [UInt8](repeating: 0, count: 12 + extensionBlock.count + 3)
            try packetBytes.withUnsafeMutableBytes { out in
                try extensionBlock.withUnsafeBytes { block in
                    try payload.withUnsafeBytes { payload in
                        _ = try RTPPacket.write(header: header, extensionBlock: block, payload: payload, into: out)
                    }
                }
            }
            let packet = try RTPPacket(parsing: packetBytes)
            let extensions = try #require(packet.headerExtensions)
            let needsTwoByte = elements.contains { $0.0 > 14 || $0.1.isEmpty || $0.1.count > 16 }
            #expect(extensions.form == (needsTwoByte ? .twoByte(appBits: 0) : .oneByte))
            let read = try extensions.elements(in: packetBytes)
            #expect(read.map(\.id) == elements.map(\.0))
            #expect(read.map { Array(packetBytes[$0.valueRange]) } == elements.map(\.1))
            #expect(Array(packetBytes[packet.payloadRange]) == payload)
        }
    }
}
