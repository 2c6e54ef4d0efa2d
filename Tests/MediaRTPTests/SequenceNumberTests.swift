import Testing

@testable import MediaRTP

@Suite struct SequenceNumberTests {
    @Test(arguments: [
        (UInt16(1), UInt16(2), true), (2, 1, false), (65535, 0, true), (0, 65535, false),
        (65000, 100, true), (100, 65000, false), (7, 7, false), (0, 0x7FFF, true), (0, 0x8000, false),
    ])
    func sixteenBitOrder(a: UInt16, b: UInt16, before: Bool) {
        #expect(SerialNumber.isBefore(a, b) == before)
    }

    @Test func thirtyTwoBitOrderAndDistance() {
        #expect(SerialNumber.isBefore(UInt32.max, 5))
        #expect(!SerialNumber.isBefore(UInt32(5), UInt32.max))
        #expect(SerialNumber.distance(from: UInt32.max - 2, to: 3) == 6)
        #expect(SerialNumber.distance(from: UInt32(3), to: UInt32.max - 2) == -6)
        #expect(SerialNumber.distance(from: UInt16(65530), to: 4) == 10)
    }

    @Test func unwrapsAcrossWrapAroundAndReordering() {
        var unwrapper = SequenceUnwrapper()
        let input: [UInt16] = [65533, 65535, 65534, 0, 2, 1, 65535, 300]
        let expected: [Int64] = [65533, 65535, 65534, 65536, 65538, 65537, 65535, 65836]
        #expect(input.map { unwrapper.unwrap($0) } == expected)
        #expect(unwrapper.highest == 65836)
        #expect(unwrapper.peek(299) == 65835)
        #expect(unwrapper.highest == 65836)
    }

    @Test func packetBehindTheFirstGoesBelowZeroCycle() {
        var unwrapper = SequenceUnwrapper()
        #expect(unwrapper.unwrap(3) == 3)
        #expect(unwrapper.unwrap(65534) == -2)
        #expect(unwrapper.highest == 3)
    }

    @Test func timestampsUnwrap() {
        var unwrapper = TimestampUnwrapper()
        #expect(unwrapper.unwrap(UInt32.max - 3000) == Int64(UInt32.max) - 3000)
        #expect(unwrapper.unwrap(3000) == Int64(UInt32.max) + 3001)
        #expect(unwrapper.unwrap(UInt32.max) == Int64(UInt32.max))
    }
}
