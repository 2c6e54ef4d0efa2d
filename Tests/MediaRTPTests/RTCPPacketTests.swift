/// RTCP framing and packet bodies with literal bytes: compound rules (RFC 3550 §6.1, Appendix A.2), the
/// named error of each malformed case, unknown types passed through, and writing the packets and
/// compounds a session sends (RR + SDES CNAME, SR + SDES, BYE with reason, APP, feedback).
import MediaRTP
import TestSupport
import Testing

@Suite struct RTCPFramingTests {
    /// Malformed framing and compound structure, with the error each must give.
    @Test(arguments: [
        ([], false, .emptyCompound),
        ([0x81, 0xC9, 0x00], false, .headerTruncated),                       // 3 bytes of a header
        ([0x41, 0xC9, 0x00, 0x01, 0, 0, 0, 1], false, .unsupportedVersion(1)),  // V=1
        ([0xC1, 0xC9, 0x00, 0x01, 0, 0, 0, 1], false, .unsupportedVersion(3)),  // V=3
        ([0x80, 0xC9, 0x00, 0x02,                                            // RR, 3 words said...
          0, 0, 0, 1], false, .packetTruncated),                             // ...2 there
        ([0xA0, 0xC9, 0x00, 0x02,                                            // RR, P=1, 3 words
          0, 0, 0, 1,                                                        //   SSRC
          0, 0, 0, 0], false, .paddingCountZero),                            //   padding count 0
        ([0xA0, 0xC9, 0x00, 0x01,                                            // RR, P=1, 2 words
          0, 0, 0, 9], false, .paddingExceedsPacket),                        //   9 bytes of padding > 4
        ([0xA0, 0xC9, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 4,                    // RR, P=1: padded...
          0x81, 0xCB, 0x00, 0x01, 0, 0, 0, 1], false, .paddingNotInLastPacket), // ...but a BYE follows
        ([0x81, 0xCB, 0x00, 0x01, 0, 0, 0, 1], false, .firstPacketNotReport(.goodbye)),
        ([0x80, 0xC9, 0x00, 0x01, 0, 0, 0, 1,                                // RR
          0x81, 0xCB], false, .headerTruncated),                             // 2 stray bytes
        ([0x80, 0xC9, 0x00, 0x01, 0, 0, 0, 1,                                // RR
          0x41, 0xCB, 0x00, 0x01, 0, 0, 0, 1], false, .unsupportedVersion(1)),  // BYE with V=1
        // Reports too short for their SSRC and blocks: validate refuses what parsing refuses (the
        // 4-byte SR was found by the SRTP fuzz target: SRTCP cannot protect it).
        ([0x81, 0xC8, 0x00, 0x00], false, .senderReportLengthInvalid),       // SR, RC=1, no body
        ([0x80, 0xC8, 0x00, 0x01, 0, 0, 0, 1], false, .senderReportLengthInvalid),  // SR without sender info
        ([0x81, 0xC9, 0x00, 0x01, 0, 0, 0, 1], false, .receiverReportLengthInvalid), // RR, RC=1, no block
        ([0x80, 0xC9, 0x00, 0x00], true, .receiverReportLengthInvalid),      // RR without its SSRC
    ] as [([UInt8], Bool, RTCPError)])
    func malformedFraming(bytes: [UInt8], reducedSize: Bool, error: RTCPError) {
        #expect(throws: error) { try RTCPCompoundPacket(parsing: bytes, reducedSize: reducedSize) }
        bytes.withUnsafeBytes { raw in
            #expect(throws: error) { try RTCPCompoundPacket.validate(raw, reducedSize: reducedSize) }
            #expect(throws: error) { _ = try RTCPCompoundPacket.isFrom(1, raw, reducedSize: reducedSize) }
        }
    }

    /// A compound is from the sources of its SRs, its first SDES chunk and its first BYE source, not
    /// from a receiver report's reporter or the sources its blocks, feedback or other chunks name.
    @Test func isFromNamesTheSenderAndTheFirstChunkAndByeSource() throws {
        let blocks = [ReportBlock(ssrc: 7), ReportBlock(ssrc: 8)]
        let cases: [([RTCPPacket], from: Set<UInt32>)] = [
            ([.senderReport(SenderReport(ssrc: 7, ntpTimestamp: NTPTimestamp(rawValue: 1), rtpTimestamp: 2, packetCount: 3,
                                         octetCount: 4, reportBlocks: [ReportBlock(ssrc: 9)]))], [7]),
            ([.receiverReport(ReceiverReport(ssrc: 9, reportBlocks: blocks))], []),
            ([.receiverReport(ReceiverReport(ssrc: 9)),
              .sourceDescription(SourceDescription(chunks: [.init(source: 5, items: []), .init(source: 7, items: [])]))], [5]),
            ([.receiverReport(ReceiverReport(ssrc: 9)), .goodbye(Goodbye(sources: [6, 7]))], [6]),
            ([.receiverReport(ReceiverReport(ssrc: 9)), .goodbye(Goodbye(sources: []))], []),
        ]
        for (packets, senders) in cases {
            let compound = RTCPCompoundPacket(packets)
            var bytes = [UInt8](repeating: 0, count: compound.marshalSize)
            try bytes.withUnsafeMutableBytes { _ = try compound.write(into: $0) }
            let found = try bytes.withUnsafeBytes { raw -> Set<UInt32> in
                var found = Set<UInt32>()
                for source: UInt32 in [5, 6, 7, 8, 9] where try RTCPCompoundPacket.isFrom(source, raw) { found.insert(source) }
                return found
            }
            #expect(found == senders, "\(packets)")
        }
    }

    @Test func iteratorGivesTypeAndRangesAndStopsAfterAnError() throws {
        let bytes: [UInt8] = [
            0x80, 0xC9, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07,   // RR, no blocks, SSRC 7
            0xA3, 0xD0, 0x00, 0x02, 0xAB, 0xCD, 0x00, 0x00,   // PT 208, count 3, P=1, 3 words
            0x00, 0x00, 0x00, 0x04,                           //   4 bytes of padding
            0x80, 0xC9, 0x00, 0x09,                           // RR running past the end
        ]
        try bytes.withUnsafeBytes { raw in
            var iterator = RTCPPacketIterator(raw)
            let first = try #require(try iterator.next())
            #expect(first.header == RTCPHeader(count: 0, packetType: .receiverReport, length: 1))
            #expect(first.range == 0..<8 && first.bodyRange == 4..<8 && first.paddingLength == 0)
            let second = try #require(try iterator.next())
            #expect(second.header == RTCPHeader(padding: true, count: 3, packetType: RTCPPacketType(rawValue: 208), length: 2))
            #expect(second.range == 8..<20 && second.bodyRange == 12..<16 && second.paddingLength == 4)
            #expect(throws: RTCPError.packetTruncated) { try iterator.next() }
            #expect(try iterator.next() == nil)
        }
    }

    /// Malformed bodies, with the error each must give (reduced-size, so any packet may come first).
    @Test(arguments: [
        ([0x81, 0xC8, 0x00, 0x06,                         // SR with RC=1, 7 words
          0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,             //   SSRC, NTP timestamp
          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],            //   RTP ts, counts; no report block
         .senderReportLengthInvalid),
        ([0x81, 0xCB, 0x00, 0x02,                         // BYE, SC=1
          0, 0, 0, 1,                                     //   SSRC
          0x05, 0x61, 0x62, 0x63],                        //   reason of 5 bytes, 3 there
         .goodbyeReasonTruncated),
        ([0x81, 0xCA, 0x00, 0x02,                         // SDES, SC=1
          0, 0, 0, 1,                                     //   SSRC
          0x01, 0x02, 0x61, 0x62],                        //   CNAME "ab", no null octet after it
         .sourceDescriptionItemTruncated),
        ([0x82, 0xCA, 0x00, 0x02,                         // SDES, SC=2
          0, 0, 0, 1, 0x00, 0x00, 0x00, 0x00],            //   one empty chunk; the second is missing
         .sourceDescriptionSourceTruncated),
        ([0x80, 0xCC, 0x00, 0x01, 0, 0, 0, 1],            // APP: SSRC but no name
         .applicationLengthInvalid),
        ([0x81, 0xCE, 0x00, 0x03,                         // PLI, 4 words
          0, 0, 0, 1, 0, 0, 0, 2,                         //   sender, media
          0, 0, 0, 0],                                    //   an FCI PLI must not have
         .payloadSpecificFeedbackLengthInvalid),
        ([0x84, 0xCE, 0x00, 0x03,                         // FIR
          0, 0, 0, 1, 0, 0, 0, 0,                         //   sender, media
          0, 0, 0, 9],                                    //   half an entry
         .payloadSpecificFeedbackLengthInvalid),
        ([0x8F, 0xCE, 0x00, 0x05,                         // PSFB FMT 15
          0, 0, 0, 1, 0, 0, 0, 0,                         //   sender, media
          0x52, 0x45, 0x4D, 0x42,                         //   "REMB"
          0x02, 0x00, 0x00, 0x10,                         //   2 SSRCs, exponent 0, mantissa 16...
          0, 0, 0, 5],                                    //   ...but only 1
         .rembLengthInvalid),
        ([0x8F, 0xCE, 0x00, 0x03,                         // PSFB FMT 15
          0, 0, 0, 1, 0, 0, 0, 0,                         //   sender, media
          0x52, 0x45, 0x4D, 0x42],                        //   "REMB" and nothing more
         .rembLengthInvalid),
        ([0xA1, 0xCD, 0x00, 0x03,                         // NACK, P=1
          0, 0, 0, 1, 0, 0, 0, 2,                         //   sender, media
          0xAA, 0xAA, 0x00, 0x02],                        //   2 bytes of FCI, 2 of padding
         .transportFeedbackLengthInvalid),
    ] as [([UInt8], RTCPError)])
    func malformedBody(bytes: [UInt8], error: RTCPError) {
        #expect(throws: error) { try RTCPCompoundPacket(parsing: bytes, reducedSize: true) }
    }

    /// Types and formats this module does not decode are not errors: they pass through whole.
    @Test(arguments: [
        [0x80, 0xCF, 0x00, 0x02, 0, 0, 0, 1, 0x04, 0x00, 0x00, 0x00],       // XR (207)
        [0x9F, 0xC7, 0x00, 0x00],                                          // PT 199, count 31, empty
        [0x83, 0xCD, 0x00, 0x04, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4],  // RTPFB FMT 3 (TMMBR)
        [0x8F, 0xCE, 0x00, 0x03, 0, 0, 0, 1, 0, 0, 0, 0, 0x41, 0x42, 0x43, 0x44],  // PSFB FMT 15 "ABCD"
        [0x8F, 0xCE, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 0],                          // PSFB FMT 15, no FCI
    ] as [[UInt8]])
    func unknownPassesThrough(bytes: [UInt8]) throws {
        let report: [UInt8] = [0x80, 0xC9, 0x00, 0x01, 0, 0, 0, 1]  // an RR first, as compounds need
        let compound = try RTCPCompoundPacket(parsing: report + bytes)
        #expect(compound.packets.count == 2)
        #expect(compound.packets.last == .unknown(RTCPUnknownPacket(
            packetType: RTCPPacketType(rawValue: bytes[1]), count: bytes[0] & 0x1F, body: Array(bytes[4...]))))
        #expect(try PacketBytes.serialized(compound) == report + bytes)
    }
}

@Suite struct RTCPWritingTests {
    /// What a receive-only session sends: RR then SDES CNAME (RFC 3550 §6.1).
    @Test func receiverReportAndCNAME() throws {
        let compound = RTCPCompoundPacket([
            .receiverReport(ReceiverReport(ssrc: 0x0102_0304, reportBlocks: [
                ReportBlock(ssrc: 0x0A0B_0C0D, fractionLost: 64, cumulativeLost: -2, extendedHighestSequenceNumber: 0x0001_0005,
                            jitter: 90, lastSenderReport: 0xB705_2000, delaySinceLastSenderReport: 0x0005_4000),
            ])),
            .sourceDescription(SourceDescription(source: 0x0102_0304, cname: "me")),
        ])
        let expected: [UInt8] = [
            0x81, 0xC9, 0x00, 0x07,         // V=2, RC=1, RR, 8 words
            0x01, 0x02, 0x03, 0x04,         // SSRC of packet sender
            0x0A, 0x0B, 0x0C, 0x0D,         //   SSRC_1
            0x40,                           //   fraction lost 64/256
            0xFF, 0xFF, 0xFE,               //   cumulative lost -2, 24-bit two's complement
            0x00, 0x01, 0x00, 0x05,         //   extended highest sequence number: cycle 1, seq 5
            0x00, 0x00, 0x00, 0x5A,         //   jitter 90
            0xB7, 0x05, 0x20, 0x00,         //   LSR
            0x00, 0x05, 0x40, 0x00,         //   DLSR 5.25 s
            0x81, 0xCA, 0x00, 0x03,         // V=2, SC=1, SDES, 4 words
            0x01, 0x02, 0x03, 0x04,         //   SSRC
            0x01, 0x02, 0x6D, 0x65,         //   CNAME, 2 bytes, "me"
            0x00, 0x00, 0x00, 0x00,         //   end of items, padding to the word
        ]
        #expect(compound.marshalSize == expected.count)
        #expect(try PacketBytes.serialized(compound) == expected)
        #expect(try RTCPCompoundPacket(parsing: expected) == compound)
    }

    /// What a sending session sends: SR with a report block, then SDES with two items.
    @Test func senderReportAndSourceDescription() throws {
        let compound = RTCPCompoundPacket([
            .senderReport(SenderReport(ssrc: 7, ntpTimestamp: NTPTimestamp(seconds: 0xE000_0000, fraction: 0x8000_0000),
                                       rtpTimestamp: 90000, packetCount: 10, octetCount: 12000,
                                       reportBlocks: [ReportBlock(ssrc: 8, extendedHighestSequenceNumber: 99)])),
            .sourceDescription(SourceDescription(chunks: [SourceDescription.Chunk(source: 7, items: [
                SourceDescriptionItem(type: .cname, text: "abc"), SourceDescriptionItem(type: .tool, text: "Sluice"),
            ])])),
        ])
        let expected: [UInt8] = [
            0x81, 0xC8, 0x00, 0x0C,         // V=2, RC=1, SR, 13 words
            0x00, 0x00, 0x00, 0x07,         // SSRC of sender
            0xE0, 0x00, 0x00, 0x00,         // NTP timestamp, seconds
            0x80, 0x00, 0x00, 0x00,         //   and fraction (.5)
            0x00, 0x01, 0x5F, 0x90,         // RTP timestamp 90000
            0x00, 0x00, 0x00, 0x0A,         // sender's packet count
            0x00, 0x00, 0x2E, 0xE0,         // sender's octet count
            0x00, 0x00, 0x00, 0x08,         //   SSRC_1
            0x00, 0x00, 0x00, 0x00,         //   fraction and cumulative lost
            0x00, 0x00, 0x00, 0x63,         //   extended highest sequence number
            0x00, 0x00, 0x00, 0x00,         //   jitter
            0x00, 0x00, 0x00, 0x00,         //   LSR
            0x00, 0x00, 0x00, 0x00,         //   DLSR
            0x81, 0xCA, 0x00, 0x05,         // V=2, SC=1, SDES, 6 words
            0x00, 0x00, 0x00, 0x07,         //   SSRC
            0x01, 0x03, 0x61, 0x62, 0x63,   //   CNAME "abc"
            0x06, 0x06, 0x53, 0x6C, 0x75, 0x69, 0x63, 0x65,  // TOOL "Sluice"
            0x00, 0x00, 0x00,               //   end of items, padding
        ]
        #expect(try PacketBytes.serialized(compound) == expected)
        #expect(try RTCPCompoundPacket(parsing: expected) == compound)
    }

    @Test func goodbyeWithReasons() throws {
        // A 3-byte reason and its length byte fill one word; a 4-byte one needs padding.
        #expect(try PacketBytes.serialized(Goodbye(sources: [1], reasonText: "bye")) == [
            0x81, 0xCB, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x03, 0x62, 0x79, 0x65,
        ])
        let ciao = Goodbye(sources: [1, 2], reasonText: "ciao")
        let bytes = try PacketBytes.serialized(ciao)
        #expect(bytes == [
            0x82, 0xCB, 0x00, 0x04,         // SC=2, BYE, 5 words
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
            0x04, 0x63, 0x69, 0x61, 0x6F,   // length 4, "ciao"
            0x00, 0x00, 0x00,               // padding
        ])
        #expect(try RTCPCompoundPacket(parsing: bytes, reducedSize: true).packets == [.goodbye(ciao)])
        guard case .goodbye(let parsed) = try RTCPCompoundPacket(parsing: bytes, reducedSize: true).packets[0] else { return }
        #expect(parsed.reasonText == "ciao")
    }

    @Test func applicationDefined() throws {
        let app = ApplicationDefined(subtype: 3, ssrc: 9, name: "SLCE", data: [1, 2, 3, 4])
        #expect(try PacketBytes.serialized(app) == [
            0x83, 0xCC, 0x00, 0x03,         // subtype 3, APP, 4 words
            0x00, 0x00, 0x00, 0x09,         // SSRC
            0x53, 0x4C, 0x43, 0x45,         // "SLCE"
            0x01, 0x02, 0x03, 0x04,         // data
        ])
        #expect(app.name.description == "SLCE")
        #expect(ApplicationDefined.Name(ascii: "SLICE") == nil && ApplicationDefined.Name(ascii: "ÄBC") == nil)
    }

    @Test func feedbackPackets() throws {
        #expect(try PacketBytes.serialized(PictureLossIndication(senderSSRC: 1, mediaSSRC: 2)) == [
            0x81, 0xCE, 0x00, 0x02,         // FMT 1, PSFB, 3 words
            0x00, 0x00, 0x00, 0x01,         // sender
            0x00, 0x00, 0x00, 0x02,         // media source
        ])
        #expect(try PacketBytes.serialized(FullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 5, sequenceNumber: 200)])) == [
            0x84, 0xCE, 0x00, 0x04,         // FMT 4, PSFB, 5 words
            0x00, 0x00, 0x00, 0x01,         // sender
            0x00, 0x00, 0x00, 0x00,         // media source: 0 for FIR
            0x00, 0x00, 0x00, 0x05,         // FCI: SSRC
            0xC8, 0x00, 0x00, 0x00,         //   seq nr 200, reserved
        ])
        #expect(try PacketBytes.serialized(REMB(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [5, 6])) == [
            0x8F, 0xCE, 0x00, 0x06,         // FMT 15, PSFB, 7 words
            0x00, 0x00, 0x00, 0x01,         // sender
            0x00, 0x00, 0x00, 0x00,         // media source 0
            0x52, 0x45, 0x4D, 0x42,         // "REMB"
            0x02,                           // 2 SSRCs
            0x0B, 0xD0, 0x90,               // exponent 2, mantissa 250000: 1,000,000 bit/s
            0x00, 0x00, 0x00, 0x05,
            0x00, 0x00, 0x00, 0x06,
        ])
    }

    @Test func writeErrors() {
        let tooManyBlocks = ReceiverReport(ssrc: 1, reportBlocks: (0..<32).map { ReportBlock(ssrc: UInt32($0)) })
        let longItem = SourceDescription(source: 1, cname: String(repeating: "x", count: 256))
        let cases: [(any RTCPSerializable, RTCPError)] = [
            (tooManyBlocks, .countOutOfRange(32)),
            (Goodbye(sources: Array(0..<32)), .countOutOfRange(32)),
            (ApplicationDefined(subtype: 32, ssrc: 1, name: "NAME"), .countOutOfRange(32)),
            (REMB(senderSSRC: 1, bitrate: 1, ssrcs: Array(0..<256)), .countOutOfRange(256)),
            (longItem, .textTooLong(256)),
            (Goodbye(sources: [], reason: [UInt8](repeating: 0x61, count: 300)), .textTooLong(300)),
            (ApplicationDefined(ssrc: 1, name: "NAME", data: [1, 2, 3]), .notWordAligned(11)),
            (ReceiverReport(ssrc: 1, profileExtension: [1, 2]), .notWordAligned(6)),
            (RTCPUnknownPacket(packetType: .extendedReport, count: 0, body: [1]), .notWordAligned(1)),
            (GenericNACK(senderSSRC: 1, mediaSSRC: 2, pairs: Array(repeating: .init(packetID: 1), count: 70000)),
             .packetTooLong(280_012)),
        ]
        for (packet, error) in cases {
            #expect(throws: error) { try PacketBytes.serialized(packet) }
        }
        var small = [UInt8](repeating: 0, count: 11)
        small.withUnsafeMutableBytes { raw in
            #expect(throws: RTCPError.bufferTooSmall(needed: 12, available: 11)) {
                try PictureLossIndication(senderSSRC: 1, mediaSSRC: 2).write(into: raw)
            }
            #expect(throws: RTCPError.bufferTooSmall(needed: 20, available: 11)) {
                try RTCPCompoundPacket([.receiverReport(ReceiverReport(ssrc: 1)),
                                        .pictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: 2))]).write(into: raw)
            }
        }
    }
}
