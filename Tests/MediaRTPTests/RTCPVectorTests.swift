/// RTCP vectors of Tests/Vectors (aiortc, pion): each decoded packet checked against the fields the
/// README lists, every negative case with its named error, and re-serialization to identical bytes.
import MediaRTP
import TestSupport
import Testing

/// The bytes of a vector file and the compound packet they parse to.
private func parsedVector(_ name: String, reducedSize: Bool = false) throws -> ([UInt8], [RTCPPacket]) {
    let bytes = try TestSupport.vector(name)
    return (bytes, try RTCPCompoundPacket(parsing: bytes, reducedSize: reducedSize).packets)
}

/// The views `RTCPPacketIterator` finds in `bytes`.
private func views(_ bytes: [UInt8]) throws -> [RTCPPacketView] {
    try bytes.withUnsafeBytes { raw in
        var iterator = RTCPPacketIterator(raw)
        var views: [RTCPPacketView] = []
        while let view = try iterator.next() { views.append(view) }
        return views
    }
}

@Suite struct RTCPAiortcVectorTests {
    static let senderReport = SenderReport(
        ssrc: 1_831_097_322, ntpTimestamp: NTPTimestamp(rawValue: 16_016_567_581_311_369_308),
        rtpTimestamp: 1_722_342_718, packetCount: 269, octetCount: 13557,
        reportBlocks: [ReportBlock(ssrc: 2_398_654_957, fractionLost: 0, cumulativeLost: 0,
                                   extendedHighestSequenceNumber: 246, jitter: 127, lastSenderReport: 0,
                                   delaySinceLastSenderReport: 0)])
    static let sourceDescription = SourceDescription(source: 1_831_097_322,
                                                     cname: "{63f459ea-41fe-4474-9d33-9707c9ee79d1}")

    @Test func senderReport() throws {
        let (bytes, packets) = try parsedVector("aiortc/rtcp_sr.bin")
        #expect(packets == [.senderReport(Self.senderReport)])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
    }

    @Test func senderReportThenSourceDescription() throws {
        let bytes = try TestSupport.vector("aiortc/rtcp_sr.bin") + TestSupport.vector("aiortc/rtcp_sdes.bin")
        let compound = try RTCPCompoundPacket(parsing: bytes)
        #expect(compound.packets == [.senderReport(Self.senderReport), .sourceDescription(Self.sourceDescription)])
        #expect(try PacketBytes.serialized(compound) == bytes)
    }

    @Test func receiverReport() throws {
        let (bytes, packets) = try parsedVector("aiortc/rtcp_rr.bin")
        #expect(packets == [.receiverReport(ReceiverReport(ssrc: 817_267_719, reportBlocks: [
            ReportBlock(ssrc: 1_200_895_919, fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 630,
                        jitter: 1906, lastSenderReport: 0, delaySinceLastSenderReport: 0),
        ]))])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
        for length in 1...3 {
            #expect(throws: RTCPError.headerTruncated) { try RTCPCompoundPacket(parsing: Array(bytes[..<length])) }
        }
        for length in 4...31 {
            #expect(throws: RTCPError.packetTruncated) { try RTCPCompoundPacket(parsing: Array(bytes[..<length])) }
        }
    }

    @Test func sourceDescription() throws {
        let (bytes, packets) = try parsedVector("aiortc/rtcp_sdes.bin", reducedSize: true)
        #expect(packets == [.sourceDescription(Self.sourceDescription)])
        guard case .sourceDescription(let description) = packets.first else { return }
        #expect(description.chunks.first?.cname == "{63f459ea-41fe-4474-9d33-9707c9ee79d1}")
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
        // Alone it is not a valid compound packet: those start with SR or RR.
        #expect(throws: RTCPError.firstPacketNotReport(.sourceDescription)) { try RTCPCompoundPacket(parsing: bytes) }
    }

    @Test(arguments: [
        ("aiortc/rtcp_bye.bin", [2_924_645_187]),
        ("aiortc/rtcp_bye_no_sources.bin", []),
    ] as [(String, [UInt32])])
    func goodbye(file: String, sources: [UInt32]) throws {
        let (bytes, packets) = try parsedVector(file, reducedSize: true)
        #expect(packets == [.goodbye(Goodbye(sources: sources))])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
    }

    @Test func goodbyeWithPadding() throws {
        let (bytes, packets) = try parsedVector("aiortc/rtcp_bye_padding.bin", reducedSize: true)
        #expect(try views(bytes).map(\.paddingLength) == [4])
        #expect(packets == [.goodbye(Goodbye(sources: []))])
        // Written again without the padding.
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == [0x80, 0xCB, 0x00, 0x00])
    }

    @Test func pictureLossIndication() throws {
        let (bytes, packets) = try parsedVector("aiortc/rtcp_psfb_pli.bin", reducedSize: true)
        #expect(packets == [.pictureLossIndication(PictureLossIndication(senderSSRC: 1_414_554_213, mediaSSRC: 587_284_409))])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
    }

    @Test func genericNACK() throws {
        let (bytes, packets) = try parsedVector("aiortc/rtcp_rtpfb.bin", reducedSize: true)
        guard case .genericNACK(let nack) = try #require(packets.first) else {
            Issue.record("not a NACK: \(packets)")
            return
        }
        #expect(nack.senderSSRC == 2_336_520_123 && nack.mediaSSRC == 4_145_934_052)
        #expect(nack.lostSequenceNumbers == [12, 32, 39, 54, 76, 110, 123, 142, 183, 187, 223, 236, 271, 292])
        #expect(try PacketBytes.serialized(nack) == bytes)
    }

    @Test(arguments: [
        ("aiortc/rtcp_sr_invalid.bin", .senderReportLengthInvalid),
        ("aiortc/rtcp_rr_invalid.bin", .receiverReportLengthInvalid),
        ("aiortc/rtcp_bye_invalid.bin", .goodbyeLengthInvalid),
        ("aiortc/rtcp_psfb_invalid.bin", .payloadSpecificFeedbackLengthInvalid),
        ("aiortc/rtcp_rtpfb_invalid.bin", .transportFeedbackLengthInvalid),
        ("aiortc/rtcp_sdes_item_truncated.bin", .sourceDescriptionItemTruncated),
        ("aiortc/rtcp_sdes_source_truncated.bin", .sourceDescriptionSourceTruncated),
    ] as [(String, RTCPError)])
    func rejected(file: String, error: RTCPError) throws {
        let bytes = try TestSupport.vector(file)
        #expect(throws: error) { try RTCPCompoundPacket(parsing: bytes, reducedSize: true) }
    }
}

@Suite struct RTCPPionVectorTests {
    static let ssrc: UInt32 = 0x902F_9E2E
    static let receiverReport = ReceiverReport(ssrc: ssrc, reportBlocks: [
        ReportBlock(ssrc: 0xBC5E_9A40, fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 0x46E1,
                    jitter: 273, lastSenderReport: 0x09F3_6432, delaySinceLastSenderReport: 150_137),
    ])

    @Test func compoundFromAPacketDump() throws {
        let (bytes, packets) = try parsedVector("pion/rtcp_compound_rr_sdes_bye_pli_rrr_app.bin")
        #expect(packets == [
            .receiverReport(Self.receiverReport),
            .sourceDescription(SourceDescription(source: Self.ssrc, cname: "{9c00eb92-1afb-9d49-a47d-91f64eee69f5}")),
            .goodbye(Goodbye(sources: [Self.ssrc])),
            .pictureLossIndication(PictureLossIndication(senderSSRC: Self.ssrc, mediaSSRC: Self.ssrc)),
            // RTPFB FMT 5, Rapid Resynchronisation Request (RFC 6051): not decoded, passed through.
            .unknown(RTCPUnknownPacket(packetType: .transportFeedback, count: 5,
                                       body: [0x90, 0x2F, 0x9E, 0x2E, 0x90, 0x2F, 0x9E, 0x2E])),
            .applicationDefined(ApplicationDefined(subtype: 0, ssrc: 0x4BAA_E1AB, name: "NAME", data: Array("ABCD".utf8))),
        ])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
        #expect(try views(bytes).map(\.range) == [0..<32, 32..<84, 84..<92, 92..<104, 104..<116, 116..<132])
    }

    @Test func goodbyeAndPLIAloneAreNotACompound() throws {
        let bytes = Array(try TestSupport.vector("pion/rtcp_compound_rr_sdes_bye_pli_rrr_app.bin")[84..<104])
        #expect(try views(bytes).map(\.header.packetType) == [.goodbye, .payloadSpecificFeedback])
        try bytes.withUnsafeBytes { raw throws in
            #expect(throws: RTCPError.firstPacketNotReport(.goodbye)) { try RTCPCompoundPacket.validate(raw) }
            #expect(try RTCPCompoundPacket.validate(raw, reducedSize: true) == 2)
        }
    }

    @Test func receiverReports() throws {
        let (plain, plainPackets) = try parsedVector("pion/rtcp_rr.bin")
        #expect(plainPackets == [.receiverReport(Self.receiverReport)])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(plainPackets)) == plain)

        let (extended, extendedPackets) = try parsedVector("pion/rtcp_rr_profile_ext.bin")
        var withExtension = Self.receiverReport
        withExtension.profileExtension = Array("TESTDATA".utf8)
        #expect(extendedPackets == [.receiverReport(withExtension)])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(extendedPackets)) == extended)
    }

    @Test func genericNACK() throws {
        let (bytes, packets) = try parsedVector("pion/rtcp_nack.bin", reducedSize: true)
        let nack = GenericNACK(senderSSRC: Self.ssrc, mediaSSRC: Self.ssrc,
                               pairs: [GenericNACK.Pair(packetID: 0xAAAA, lostBitmask: 0x5555)])
        #expect(packets == [.genericNACK(nack)])
        #expect(nack.lostSequenceNumbers == [43690, 43691, 43693, 43695, 43697, 43699, 43701, 43703, 43705])
        #expect(try PacketBytes.serialized(nack) == bytes)
    }

    @Test func pictureLossIndication() throws {
        let (bytes, packets) = try parsedVector("pion/rtcp_pli.bin", reducedSize: true)
        #expect(packets == [.pictureLossIndication(PictureLossIndication(senderSSRC: 0, mediaSSRC: 0x4BC4_FCB4))])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
    }

    @Test(arguments: [
        ("pion/rtcp_fir_1entry.bin", [FullIntraRequest.Entry(ssrc: 0x1234_5678, sequenceNumber: 0x42)]),
        ("pion/rtcp_fir_2entries.bin", [FullIntraRequest.Entry(ssrc: 0x1234_5678, sequenceNumber: 0x42),
                                        FullIntraRequest.Entry(ssrc: 0x9876_5432, sequenceNumber: 0x57)]),
    ])
    func fullIntraRequest(file: String, entries: [FullIntraRequest.Entry]) throws {
        let (bytes, packets) = try parsedVector(file, reducedSize: true)
        #expect(packets == [.fullIntraRequest(FullIntraRequest(senderSSRC: 0, mediaSSRC: 0x4BC4_FCB4, entries: entries))])
        #expect(try PacketBytes.serialized(RTCPCompoundPacket(packets)) == bytes)
    }

    @Test func rembFromChrome() throws {
        let (bytes, packets) = try parsedVector("pion/rtcp_remb_chrome.bin", reducedSize: true)
        let remb = REMB(senderSSRC: 1, mediaSSRC: 0, bitrate: 8_927_168, ssrcs: [1_215_622_422])
        #expect(packets == [.remb(remb)])
        #expect(remb.exponentAndMantissa == (6, 139_487))
        #expect(try PacketBytes.serialized(remb) == bytes)
    }

    /// Transport-wide congestion control feedback is not decoded here: it passes through whole.
    @Test func transportWideFeedbackPassesThrough() throws {
        let (bytes, packets) = try parsedVector("pion/rtcp_twcc_example1.bin", reducedSize: true)
        let view = try #require(try views(bytes).first)
        #expect(view.header == RTCPHeader(padding: true, count: 15, packetType: .transportFeedback, length: 5))
        #expect(view.paddingLength == 1 && view.bodyRange == 4..<23)
        guard case .unknown(let packet) = try #require(packets.first) else {
            Issue.record("decoded as \(packets)")
            return
        }
        #expect(packet.packetType == .transportFeedback && packet.count == 15)
        let body = packet.body
        func field(_ range: Range<Int>) -> Int { body[range].reduce(0) { $0 << 8 | Int($1) } }
        #expect(field(0..<4) == 4_195_875_351)      // sender SSRC
        #expect(field(4..<8) == 1_124_282_272)      // media SSRC
        #expect(field(8..<10) == 153)               // base sequence number
        #expect(field(10..<12) == 1)                // packet status count
        #expect(field(12..<15) == 4_057_090)        // reference time
        #expect(field(15..<16) == 23)               // feedback packet count
        #expect(field(16..<18) == 0x2001)           // run-length chunk: received, small delta, run 1
        #expect(field(18..<19) * 250 == 37_000)     // receive delta in 250 µs units
    }
}
