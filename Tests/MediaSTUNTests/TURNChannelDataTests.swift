import MediaSTUN
import Testing

/// TURN ChannelData framing (RFC 8656 §12.4) and its first-byte test (RFC 7983).
@Suite struct TURNChannelDataTests {
    @Test func writesHeaderDataAndPadding() {
        #expect(TURNChannelData(channel: 0x4001, data: [0xAA, 0xBB, 0xCC, 0xDD, 0xEE]).serialized() == [
            0x40, 0x01,              // channel number
            0x00, 0x05,              // length: the data only
            0xAA, 0xBB, 0xCC, 0xDD,  // data
            0xEE, 0x00, 0x00, 0x00,  // data, zero padding to 4
        ])
        #expect(TURNChannelData(channel: 0x4FFF, data: []).serialized() == [0x4F, 0xFF, 0x00, 0x00])
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 100, 1200])
    func roundTrips(length: Int) throws {
        let message = TURNChannelData(channel: 0x4000 + UInt16(length % 0x1000), data: (0..<length).map { UInt8($0 & 0xFF) })
        let bytes = message.serialized()
        #expect(bytes.count % 4 == 0)
        #expect(TURNChannelData.looksLikeChannelData(bytes))
        #expect(!STUNMessage.looksLikeSTUN(bytes))
        #expect(try TURNChannelData(parsing: bytes) == message)
        // Over UDP the padding may be left out (RFC 8656 §12.5).
        #expect(try TURNChannelData(parsing: Array(bytes.prefix(4 + length))) == message)
    }

    @Test(arguments: [
        ([], STUNError.tooShort(count: 0)),
        ([0x40, 0x00, 0x00], .tooShort(count: 3)),
        ([0x3F, 0xFF, 0x00, 0x00], .badChannelNumber(0x3FFF)),
        ([0x50, 0x00, 0x00, 0x00], .badChannelNumber(0x5000)),
        ([0x40, 0x00, 0x00, 0x05, 1, 2, 3, 4], .badLength(declared: 5, available: 4)),
    ] as [([UInt8], STUNError)])
    func malformed(bytes: [UInt8], error: STUNError) {
        #expect(throws: error) { try TURNChannelData(parsing: bytes) }
    }

    @Test func firstByteTest() {
        #expect(TURNChannelData.looksLikeChannelData([0x40, 0, 0, 0]))
        #expect(TURNChannelData.looksLikeChannelData([0x4F, 0xFF, 0, 0]))
        #expect(!TURNChannelData.looksLikeChannelData([0x50, 0, 0, 0]))  // 80: outside 64-79
        #expect(!TURNChannelData.looksLikeChannelData([0x3F, 0, 0, 0]))
        #expect(!TURNChannelData.looksLikeChannelData([0x40, 0]))
        #expect(!TURNChannelData.looksLikeChannelData(RFC5769.request))
    }
}
