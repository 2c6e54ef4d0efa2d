/// Stream-level attributes with literal lines: group and mid (RFC 5888), ssrc and ssrc-group (RFC 5576),
/// ptime/maxptime/framerate (RFC 8866 §6.4, §6.5, §6.10), direction (RFC 8866 §6.7), rtcp-mux
/// (RFC 5761) and the RTCP port.
import MediaSDP
import Testing

@Suite struct GroupTests {
    @Test(arguments: [
        ("BUNDLE 0 1", SDPGroup(semantics: "BUNDLE", mids: ["0", "1"])),
        ("LS audio video", SDPGroup(semantics: "LS", mids: ["audio", "video"])),
        ("BUNDLE", SDPGroup(semantics: "BUNDLE", mids: [])),
    ])
    func parses(value: String, expected: SDPGroup) throws { try expectParses(value, to: expected) }

    @Test func malformed() { expectMalformed(SDPGroup.self, "", "expected a semantics") }
}

@Suite struct SourceAttributeTests {
    @Test(arguments: [
        ("2857166718 cname:kZ4r8y1FhM2x7QpT", SDPSourceAttribute(ssrc: 2_857_166_718, name: "cname", value: "kZ4r8y1FhM2x7QpT")),
        ("1 msid:stream track", SDPSourceAttribute(ssrc: 1, name: "msid", value: "stream track")),
        ("4294967295 label", SDPSourceAttribute(ssrc: 4_294_967_295, name: "label")),
        ("3 fmtp:96 apt=97", SDPSourceAttribute(ssrc: 3, name: "fmtp", value: "96 apt=97")),
    ])
    func parses(value: String, expected: SDPSourceAttribute) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("4294967296 cname:x", "ssrc is not a 32-bit number"),
        ("abc cname:x", "ssrc is not a 32-bit number"),
        ("", "ssrc is not a 32-bit number"),
        ("1", "expected an attribute after the ssrc"),
        ("1 ", "expected an attribute after the ssrc"),
        ("1 :x", "expected an attribute after the ssrc"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPSourceAttribute.self, value, reason) }

    @Test(arguments: [
        ("FID 1467803563 3409812240", SDPSourceGroup(semantics: "FID", ssrcs: [1_467_803_563, 3_409_812_240])),
        ("SIM 1 2 3", SDPSourceGroup(semantics: "SIM", ssrcs: [1, 2, 3])),
    ])
    func groupParses(value: String, expected: SDPSourceGroup) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("", "expected a semantics"),
        ("FID 1 x", "ssrc x is not a 32-bit number"),
        ("FID 1 4294967296", "ssrc 4294967296 is not a 32-bit number"),
    ])
    func groupMalformed(value: String, reason: String) { expectMalformed(SDPSourceGroup.self, value, reason) }
}

@Suite struct DecimalAttributeTests {
    @Test func parses() throws {
        try expectParses("20", to: SDPPacketTime(20))
        try expectParses("2.5", to: SDPPacketTime(2.5))
        try expectParses("120", to: SDPMaximumPacketTime(120))
        try expectParses("29.97", to: SDPFrameRate(29.97))
        try expectParses("23.976", to: SDPFrameRate(23.976))
        try expectParses("30", to: SDPFrameRate(30))
        #expect(try SDPFrameRate(attributeValue: " 25 ") == SDPFrameRate(25))
    }

    @Test(arguments: ["", "0", "abc", "20ms", "1.2.3", "-5", "1e3", "0.00001", "1234567890"])
    func malformed(value: String) {
        expectMalformed(SDPPacketTime.self, value, "not a positive number")
        expectMalformed(SDPMaximumPacketTime.self, value, "not a positive number")
        expectMalformed(SDPFrameRate.self, value, "not a positive number")
    }

    @Test func mediaAccessors() throws {
        let session = try Fixtures.parsed("sdes-crypto.sdp")
        #expect(try session.media[0].packetTime() == 20)
        #expect(try session.media[0].maximumPacketTime() == 40)
        #expect(try session.media[0].frameRate() == nil)
        #expect(try Fixtures.parsed("gstreamer-rtsp.sdp").media[0].frameRate() == 30)
    }
}

@Suite struct DirectionAndRTCPTests {
    static let head = "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=-\nc=IN IP4 192.0.2.1\nt=0 0\n"

    /// RFC 8866 §6.7: a media-level flag overrides the session's; neither means sendrecv.
    @Test(arguments: [
        ("", "", SDPDirection.sendrecv, SDPDirection.sendrecv),
        ("a=recvonly\n", "", .recvonly, .recvonly),
        ("a=recvonly\n", "a=sendonly\n", .recvonly, .sendonly),
        ("", "a=inactive\n", .sendrecv, .inactive),
        ("a=sendonly\n", "a=sendrecv\n", .sendonly, .sendrecv),
        ("", "a=recvonly:x\n", .sendrecv, .sendrecv),  // with a value it is not the flag
    ])
    func direction(sessionLines: String, mediaLines: String, session: SDPDirection, media: SDPDirection) throws {
        let parsed = try SessionDescription(parsing: Self.head + sessionLines + "m=audio 5004 RTP/AVP 0\n" + mediaLines)
        #expect(parsed.direction == session)
        #expect(parsed.media[0].direction(in: parsed) == media)
    }

    @Test func setDirectionReplacesFlags() throws {
        var parsed = try SessionDescription(parsing: Self.head + "m=audio 5004 RTP/AVP 0\na=sendonly\na=rtcp-mux\na=inactive\n")
        parsed.media[0].setDirection(.recvonly)
        #expect(parsed.media[0].attributes == [SDPAttribute(name: "rtcp-mux"), SDPAttribute(name: "recvonly")])
        #expect(parsed.media[0].direction(in: parsed) == .recvonly)
    }

    @Test func reversedDirection() {
        #expect(SDPDirection.allCases.map(\.reversed) == [.sendrecv, .recvonly, .sendonly, .inactive])
    }

    /// RFC 3605 a=rtcp, else RFC 5761 rtcp-mux, else RFC 3550 §11 port + 1.
    @Test(arguments: [
        ("", 5005, false),
        ("a=rtcp-mux\n", 5004, true),
        ("a=rtcp:6000\n", 6000, false),
        ("a=rtcp:9 IN IP4 0.0.0.0\na=rtcp-mux\n", 9, true),
    ])
    func rtcpPort(mediaLines: String, port: Int, mux: Bool) throws {
        let parsed = try SessionDescription(parsing: Self.head + "m=audio 5004 RTP/AVP 0\n" + mediaLines)
        #expect(try parsed.media[0].rtcpPort() == port)
        #expect(parsed.media[0].rtcpMux == mux)
    }

    @Test func malformedRTCPPortNamesItsLine() throws {
        let parsed = try SessionDescription(parsing: Self.head + "m=audio 5004 RTP/AVP 0\na=rtcp:x\n")
        #expect(throws: SDPError.malformedAttribute(line: 7, text: "a=rtcp:x", reason: "port is not a number")) {
            try parsed.media[0].rtcpPort()
        }
    }

    @Test func rtcpAddress() throws {
        let parsed = try SessionDescription(parsing: Self.head + "m=audio 5004 RTP/AVP 0\nm=audio 5006 RTP/AVP 0\n"
            + "a=rtcp:5007 IN IP4 192.0.2.9\n")
        #expect(try parsed.media[0].rtcpAddress(in: parsed) == "192.0.2.1")
        #expect(try parsed.media[1].rtcpAddress(in: parsed) == "192.0.2.9")
    }

    /// RFC 8285 §5: session-level mappings apply where a section does not map the id itself.
    @Test func sessionLevelExtensionMaps() throws {
        let parsed = try SessionDescription(parsing: Self.head + "a=extmap:1 urn:a\na=extmap:2 urn:b\n"
            + "m=audio 5004 RTP/AVP 0\na=extmap:2 urn:c\na=extmap:3/sendonly urn:d\n")
        #expect(try parsed.media[0].extensionMaps(in: parsed).map(\.uri) == ["urn:c", "urn:d", "urn:a"])
    }

    @Test func connectionFallsBackToSession() throws {
        let parsed = try SessionDescription(parsing: Self.head + "m=audio 5004 RTP/AVP 0\nm=video 5006 RTP/AVP 96\n"
            + "c=IN IP4 224.2.1.1/127/3\n")
        #expect(parsed.media[0].connection(in: parsed) == SDPConnection(address: "192.0.2.1"))
        #expect(parsed.media[1].connection(in: parsed) == SDPConnection(address: "224.2.1.1", ttl: 127, addressCount: 3))
    }
}
