import Testing
@testable import MediaSCTP

/// DCEP messages against bytes written out by hand from RFC 8832 §5.
@Suite struct DCEPTests {
    @Test func reliableOrderedOpenIsTwelveBytesThenLabelAndProtocol() throws {
        let open = DCEPOpen(label: "chat", protocol: "json")
        let bytes: [UInt8] = [0x03, 0x00, 0x01, 0x00,  0x00, 0x00, 0x00, 0x00,  0x00, 0x04, 0x00, 0x04,
                              0x63, 0x68, 0x61, 0x74,  0x6A, 0x73, 0x6F, 0x6E]
        #expect(DCEPMessage.open(open).bytes == bytes)
        #expect(try DCEPMessage(parsing: bytes) == .open(open))
    }

    @Test func partialReliabilityAndOrderShowInTheChannelTypeAndParameter() throws {
        let rexmit = DCEPOpen(reliability: DataChannelReliability(ordered: false, limit: .maxRetransmits(3)),
                              priority: 512, label: "", protocol: "")
        #expect(rexmit.bytes == [0x03, 0x81, 0x02, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00])
        let timed = DCEPOpen(reliability: DataChannelReliability(ordered: true, limit: .maxPacketLifetime(milliseconds: 1500)),
                             priority: 128, label: "t")
        #expect(timed.bytes == [0x03, 0x02, 0x00, 0x80, 0x00, 0x00, 0x05, 0xDC, 0x00, 0x01, 0x00, 0x00, 0x74])
        let unorderedReliable: [UInt8] = [0x03, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        #expect(try DCEPMessage(parsing: unorderedReliable) == .open(DCEPOpen(
            reliability: DataChannelReliability(ordered: false, limit: .reliable), label: "")))
        for message in [rexmit, timed] { #expect(try DCEPMessage(parsing: message.bytes) == .open(message)) }
        let timedUnordered: [UInt8] = [0x03, 0x82, 0x01, 0x00, 0x00, 0x00, 0x00, 0x64, 0x00, 0x00, 0x00, 0x00]
        #expect(try DCEPMessage(parsing: timedUnordered) == .open(DCEPOpen(
            reliability: DataChannelReliability(ordered: false, limit: .maxPacketLifetime(milliseconds: 100)), label: "")))
    }

    @Test func ackIsOneByte() throws {
        #expect(DCEPMessage.ack.bytes == [0x02])
        #expect(try DCEPMessage(parsing: [0x02]) == .ack)
    }

    @Test(arguments: [
        ([], DCEPMessage.ParseError.empty),
        ([0x04], .unknownMessageType(0x04)),
        ([0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], .truncatedOpen),
        ([0x03, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], .unknownChannelType(0x03)),
        ([0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0x61, 0x62], .labelOrProtocolBeyondMessage),
        ([0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0xFF], .labelOrProtocolNotUTF8),
    ] as [([UInt8], DCEPMessage.ParseError)])
    func malformedMessagesNameTheirReason(bytes: [UInt8], error: DCEPMessage.ParseError) {
        #expect(throws: error) { try DCEPMessage(parsing: bytes) }
    }
}
