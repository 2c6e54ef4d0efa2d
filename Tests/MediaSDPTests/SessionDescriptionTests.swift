/// Session descriptions (RFC 8866 §5): every line type parsed into the model, the named error with line
/// number and text of each malformed line, the documented leniencies, and serialization.
import MediaSDP
import Testing

@Suite struct SessionDescriptionParsingTests {
    /// Every session-level line type, two media sections with their own lines.
    static let full = """
        v=0
        o=jdoe 3724394400 3724394405 IN IP4 198.51.100.1
        s=Call to John Smith
        i=SDP Offer #1
        u=http://www.jdoe.example.com/home.html
        e=Jane Doe <jane@jdoe.example.com>
        e=john@example.com
        p=+1 617 555-6011
        c=IN IP4 224.2.36.42/127
        b=CT:1024
        t=3724394400 3724398000
        r=604800 3600 0 90000
        t=0 0
        z=2882844526 -1h 2898848070 0
        k=prompt
        a=recvonly
        a=tool:sluice
        m=audio 49170/2 RTP/AVP 0 96
        i=voice
        c=IN IP6 ff15::101/3
        b=AS:64
        b=TIAS:64000
        k=clear:secret
        a=rtpmap:96 opus/48000/2
        a=rtcp-mux
        m=video 51372 RTP/AVP 99
        a=rtpmap:99 h263-1998/90000

        """

    @Test func everyLineType() throws {
        let session = try SessionDescription(parsing: Self.full)
        #expect(session.version == 0)
        #expect(session.origin == SDPOrigin(username: "jdoe", sessionID: 3_724_394_400, sessionVersion: 3_724_394_405,
                                            address: "198.51.100.1"))
        #expect(session.sessionName == "Call to John Smith")
        #expect(session.information == "SDP Offer #1")
        #expect(session.uri == "http://www.jdoe.example.com/home.html")
        #expect(session.emails == ["Jane Doe <jane@jdoe.example.com>", "john@example.com"])
        #expect(session.phones == ["+1 617 555-6011"])
        #expect(session.connection == SDPConnection(address: "224.2.36.42", ttl: 127))
        #expect(session.bandwidths == [SDPBandwidth(type: "CT", value: 1024)])
        #expect(session.timings == [SDPTiming(start: 3_724_394_400, stop: 3_724_398_000, repeats: ["604800 3600 0 90000"]),
                                    SDPTiming()])
        #expect(session.timeZones == "2882844526 -1h 2898848070 0")
        #expect(session.encryptionKey == "prompt")
        #expect(session.attributes == [SDPAttribute(name: "recvonly"), SDPAttribute(name: "tool", value: "sluice")])
        #expect(session.attributes.map(\.line) == [16, 17])
        #expect(session.media.count == 2)
        let audio = session.media[0]
        #expect(audio.type == "audio" && audio.port == 49170 && audio.portCount == 2 && audio.proto == "RTP/AVP")
        #expect(audio.formats == ["0", "96"])
        #expect(audio.information == "voice")
        #expect(audio.connections == [SDPConnection(addressType: "IP6", address: "ff15::101", addressCount: 3)])
        #expect(audio.bandwidths == [SDPBandwidth(type: "AS", value: 64), SDPBandwidth(type: "TIAS", value: 64000)])
        #expect(audio.encryptionKey == "clear:secret")
        #expect(audio.attributes == [SDPAttribute(name: "rtpmap", value: "96 opus/48000/2"), SDPAttribute(name: "rtcp-mux")])
        #expect(session.media[1].mediaLineFields == ["video", "51372", "RTP/AVP", "99"])
        #expect(session.serialized() == Self.full.replacingOccurrences(of: "\n", with: "\r\n"))
    }

    /// Malformed lines: (text, 1-based line, that line, reason).
    @Test(arguments: [
        ("v=1\n", 1, "v=1", "version must be 0"),
        ("o=- 0 0 IN IP4 127.0.0.1\n", 1, "o=- 0 0 IN IP4 127.0.0.1", "the first line must be v="),
        ("V=0\n", 1, "V=0", "expected <type>=<value>"),
        ("garbage\n", 1, "garbage", "expected <type>=<value>"),
        ("v\n", 1, "v", "expected <type>=<value>"),
        ("v=0\nv=0\n", 2, "v=0", "v= may appear only once"),
        ("v=0\no=- x 0 IN IP4 127.0.0.1\n", 2, "o=- x 0 IN IP4 127.0.0.1", "session id is not a number"),
        ("v=0\no=- 0 -1 IN IP4 127.0.0.1\n", 2, "o=- 0 -1 IN IP4 127.0.0.1", "session version is not a number"),
        ("v=0\no=- 0 0 IN IP4\n", 2, "o=- 0 0 IN IP4", "origin needs 6 fields, has 5"),
        ("v=0\no=- 0 0 IN IP4 a\no=- 0 0 IN IP4 a\n", 3, "o=- 0 0 IN IP4 a", "o= may appear only once here"),
        ("v=0\ns=-\ns=again\n", 3, "s=again", "s= may appear only once here"),
        ("v=0\nc=IN IP4\n", 2, "c=IN IP4", "connection needs 3 fields, has 2"),
        ("v=0\nc=IN IP4 224.2.1.1/ttl\n", 2, "c=IN IP4 224.2.1.1/ttl", "connection address suffix is not a number"),
        ("v=0\nc=IN IP4 224.2.1.1/1/2/3\n", 2, "c=IN IP4 224.2.1.1/1/2/3", "connection address is malformed"),
        ("v=0\nc=IN IP6 ff15::1/1/2\n", 2, "c=IN IP6 ff15::1/1/2", "connection address is malformed"),
        ("v=0\nc=IN IP4 /1\n", 2, "c=IN IP4 /1", "connection address is malformed"),
        ("v=0\nb=AS\n", 2, "b=AS", "bandwidth needs <type>:<value>"),
        ("v=0\nb=:64\n", 2, "b=:64", "bandwidth needs <type>:<value>"),
        ("v=0\nb=AS:fast\n", 2, "b=AS:fast", "bandwidth is not a number"),
        ("v=0\nt=0\n", 2, "t=0", "timing needs 2 fields, has 1"),
        ("v=0\nt=now 0\n", 2, "t=now 0", "time is not a number"),
        ("v=0\nr=604800 3600 0\n", 2, "r=604800 3600 0", "r= must follow a t= line"),
        ("v=0\nx=unknown\n", 2, "x=unknown", "unknown line type x="),
        ("v=0\na=:value\n", 2, "a=:value", "attribute has no name"),
        ("v=0\na=\n", 2, "a=", "attribute has no name"),
        ("v=0\no=- 0 0 IN IP4 127.0.0.1\ns=-\nc=IN IP4 127.0.0.1\nt=0 0\na=tool:x\nm=video abc RTP/AVP 96\n",
         7, "m=video abc RTP/AVP 96", "port is not a number"),
        ("v=0\nm=video 70000 RTP/AVP 96\n", 2, "m=video 70000 RTP/AVP 96", "port is not a number"),
        ("v=0\nm=video 5004/0 RTP/AVP 96\n", 2, "m=video 5004/0 RTP/AVP 96", "port count is not a number"),
        ("v=0\nm=video 5004/2/2 RTP/AVP 96\n", 2, "m=video 5004/2/2 RTP/AVP 96", "port is not a number"),
        ("v=0\nm=video 5004\n", 2, "m=video 5004", "media needs <media> <port> <proto> <fmt>..."),
        ("v=0\nm=video 5004 RTP/AVP 96\nt=0 0\n", 3, "t=0 0", "t= is not allowed in a media section"),
        ("v=0\nm=video 5004 RTP/AVP 96\ni=a\ni=b\n", 4, "i=b", "i= may appear only once here"),
        ("v=0\nm=video 5004 RTP/AVP 96\nc=IN\n", 3, "c=IN", "connection needs 3 fields, has 1"),
        ("v=0\nm=video 5004 RTP/AVP 96\nq=1\n", 3, "q=1", "unknown line type q="),
        ("v=0\r\n\r\nb=AS:x\r\n", 3, "b=AS:x", "bandwidth is not a number"),  // empty line 2 still counts
    ])
    func malformedLine(text: String, line: Int, lineText: String, reason: String) {
        #expect(throws: SDPError.malformedLine(line: line, text: lineText, reason: reason)) {
            try SessionDescription(parsing: text)
        }
    }

    @Test(arguments: [
        ("", "v"),
        ("\r\n", "v"),
        ("v=0\ns=-\nt=0 0\n", "o"),
        ("v=0\no=- 0 0 IN IP4 127.0.0.1\nt=0 0\n", "s"),
    ])
    func missingLine(text: String, type: String) {
        #expect(throws: SDPError.missingLine(type: type)) { try SessionDescription(parsing: text) }
    }

    @Test func errorDescriptionsNameLineAndText() {
        #expect(SDPError.malformedLine(line: 7, text: "m=video abc RTP/AVP 96", reason: "port is not a number").description
            == "SDP line 7 \"m=video abc RTP/AVP 96\": port is not a number")
        #expect(SDPError.malformedAttribute(line: 9, text: "a=rtcp:x", reason: "port is not a number").description
            == "SDP line 9 attribute \"a=rtcp:x\": port is not a number")
        #expect(SDPError.missingLine(type: "o").description == "SDP has no o= line")
    }
}

@Suite struct SessionDescriptionLeniencyTests {
    static let crlf = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 5004 RTP/AVP 97\r\na=rtpmap:97 opus/48000/2\r\n"

    @Test func lfEqualsCRLF() throws {
        let lf = Self.crlf.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(try SessionDescription(parsing: lf) == SessionDescription(parsing: Self.crlf))
        #expect(try SessionDescription(parsing: String(lf.dropLast())) == SessionDescription(parsing: Self.crlf))
    }

    /// RFC 8866 §5.9 requires t=; some RTSP servers leave it out. It reads as `t=0 0` and is written.
    @Test func missingTimingReadsAsUnbounded() throws {
        let session = try SessionDescription(parsing: Self.crlf.replacingOccurrences(of: "t=0 0\r\n", with: ""))
        #expect(session.timings == [SDPTiming(start: 0, stop: 0)])
        #expect(session.serialized() == Self.crlf)
    }

    @Test func sessionLinesInAnyOrderAndExtraSpaces() throws {
        let shuffled = "v=0\nt=0 0\nc=IN IP4 127.0.0.1\ns=-\no=-  1 2 IN IP4 127.0.0.1\n\nm=audio  5004 RTP/AVP  97\na=rtpmap:97 opus/48000/2\n"
        #expect(try SessionDescription(parsing: shuffled).serialized() == Self.crlf)
    }

    @Test func attributeValuesAreVerbatim() throws {
        let text = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns= \r\nt=0 0\r\na=msid-semantic: WMS *\r\na=x-odd:a:b: \r\na=flag\r\n"
        let session = try SessionDescription(parsing: text)
        #expect(session.sessionName == " ")
        #expect(session.attributes == [SDPAttribute(name: "msid-semantic", value: " WMS *"),
                                       SDPAttribute(name: "x-odd", value: "a:b: "), SDPAttribute(name: "flag")])
        #expect(session.serialized() == text)
    }

    @Test func mediaWithoutFormats() throws {
        let session = try SessionDescription(parsing: "v=0\no=- 1 2 IN IP4 127.0.0.1\ns=-\nt=0 0\nm=audio 0 RTP/AVP\n")
        #expect(session.media[0].formats.isEmpty && session.media[0].port == 0)
    }
}

@Suite struct SessionDescriptionWritingTests {
    /// What `sluice send` would write for one H.264 stream, in the form ffmpeg writes and reads.
    @Test func buildAndSerialize() throws {
        var video = MediaDescription(type: "video", port: 5004, formats: ["96"])
        video.append(SDPRTPMap(payloadType: 96, encodingName: "H264", clockRate: 90000))
        video.append(SDPFormatParameters(payloadType: 96, parameters: ["packetization-mode": "1", "profile-level-id": "42e01f"]))
        video.appendAttribute("sendonly")
        var session = SessionDescription(origin: SDPOrigin(sessionID: 1, sessionVersion: 1), sessionName: "Sluice",
                                         connection: SDPConnection(address: "127.0.0.1"), media: [video])
        session.appendAttribute("tool", value: "sluice")
        let text = session.serialized()
        #expect(text == """
            v=0\r
            o=- 1 1 IN IP4 127.0.0.1\r
            s=Sluice\r
            c=IN IP4 127.0.0.1\r
            t=0 0\r
            a=tool:sluice\r
            m=video 5004 RTP/AVP 96\r
            a=rtpmap:96 H264/90000\r
            a=fmtp:96 packetization-mode=1;profile-level-id=42e01f\r
            a=sendonly\r

            """)
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed == session)
        #expect(parsed.description == text)
        #expect(parsed.media[0].direction(in: parsed) == .sendonly)
        #expect(try parsed.media[0].formatParameters(for: 96)["profile-level-id"] == "42e01f")
    }

    @Test func emptyTimingsWriteUnbounded() {
        let session = SessionDescription(origin: SDPOrigin(sessionID: 0, sessionVersion: 0), timings: [])
        #expect(session.serialized() == "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n")
    }

    @Test func connectionAndOriginText() {
        #expect(SDPConnection(address: "224.2.1.1", ttl: 127, addressCount: 3).description == "IN IP4 224.2.1.1/127/3")
        #expect(SDPConnection(addressType: "IP6", address: "ff15::101", addressCount: 3).description == "IN IP6 ff15::101/3")
        #expect(SDPOrigin(sessionID: 4_611_731_400_430_051_336, sessionVersion: 2).description
            == "- 4611731400430051336 2 IN IP4 127.0.0.1")
    }
}

extension MediaDescription {
    var mediaLineFields: [String] { [type, String(port), proto] + formats }
}
