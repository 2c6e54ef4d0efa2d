/// The RTP attributes with literal lines: rtpmap (RFC 8866 §6.6), fmtp (§6.15), rtcp-fb (RFC 4585 §4.2),
/// rtcp (RFC 3605), extmap (RFC 8285 §5); good values and the named error of each malformed one.
import MediaSDP
import Testing

@Suite struct RTPMapTests {
    @Test(arguments: [
        ("96 H264/90000", SDPRTPMap(payloadType: 96, encodingName: "H264", clockRate: 90000)),
        ("111 opus/48000/2", SDPRTPMap(payloadType: 111, encodingName: "opus", clockRate: 48000, channels: 2)),
        ("0 PCMU/8000", SDPRTPMap(payloadType: 0, encodingName: "PCMU", clockRate: 8000)),
        ("97 rtx/90000", SDPRTPMap(payloadType: 97, encodingName: "rtx", clockRate: 90000)),
        ("127 red/48000/2", SDPRTPMap(payloadType: 127, encodingName: "red", clockRate: 48000, channels: 2)),
        ("99 h263-1998/90000", SDPRTPMap(payloadType: 99, encodingName: "h263-1998", clockRate: 90000)),
    ])
    func parses(value: String, expected: SDPRTPMap) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("", "payload type is not a number from 0 to 127"),
        ("abc H264/90000", "payload type is not a number from 0 to 127"),
        ("128 H264/90000", "payload type is not a number from 0 to 127"),
        ("96H264/90000", "expected a space after the payload type"),
        ("96 H264", "expected <encoding name>/<clock rate>"),
        ("96 /90000", "expected <encoding name>/<clock rate>"),
        ("96 H264/0", "clock rate is not a positive number"),
        ("96 H264/abc", "clock rate is not a positive number"),
        ("96 H264/99999999999", "clock rate is not a positive number"),
        ("111 opus/48000/x", "encoding parameters are not a channel count"),
        ("111 opus/48000/0", "encoding parameters are not a channel count"),
        ("111 opus/48000/2 extra", "unexpected text after the rtpmap"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPRTPMap.self, value, reason) }

    /// RFC 3551 §6: static payload types need no rtpmap; an rtpmap for them wins.
    @Test func staticPayloadTypes() throws {
        let session = try SessionDescription(parsing: "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=-\nt=0 0\n"
            + "m=audio 5004 RTP/AVP 0 8 9 96 18\na=rtpmap:18 G729/8000/1\n")
        let audio = session.media[0]
        #expect(try audio.rtpMap(for: 0) == SDPRTPMap(payloadType: 0, encodingName: "PCMU", clockRate: 8000, channels: 1))
        #expect(try audio.rtpMap(for: 8) == SDPRTPMap(payloadType: 8, encodingName: "PCMA", clockRate: 8000, channels: 1))
        #expect(try audio.rtpMap(for: 9)?.clockRate == 8000)  // G.722's RTP clock, though it samples at 16 kHz
        #expect(try audio.rtpMap(for: 18) == SDPRTPMap(payloadType: 18, encodingName: "G729", clockRate: 8000, channels: 1))
        #expect(try audio.rtpMap(for: 96) == nil)
        #expect(audio.payloadTypes == [0, 8, 9, 96, 18])
    }
}

@Suite struct FormatParameterTests {
    @Test func ffmpegH264WithSpaces() throws {
        let value = "96 packetization-mode=1; sprop-parameter-sets=Z0LADdkBQfsBEAAAAwAQAAADA8DxQqSA,aMuDyyA=; profile-level-id=42C00D"
        let fmtp = try SDPFormatParameters(attributeValue: value)
        #expect(fmtp.format == "96" && fmtp.payloadType == 96)
        #expect(fmtp.parameters == ["packetization-mode": "1",
                                    "sprop-parameter-sets": "Z0LADdkBQfsBEAAAAwAQAAADA8DxQqSA,aMuDyyA=",
                                    "profile-level-id": "42C00D"])
        #expect(fmtp.attributeValue == value)
    }

    @Test(arguments: [
        ("111 minptime=10;useinbandfec=1", ["minptime": "10", "useinbandfec": "1"]),
        ("102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f",
         ["level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": "42001f"]),
        ("97 apt=96", ["apt": "96"]),
        ("101 0-15", ["0-15": ""]),                            // telephone-event events (RFC 4733 §7.1.1)
        ("63 111/111", ["111/111": ""]),                       // RED's redundant payload types
        ("96  a = 1 ;; b=2;c", ["a": "1", "b": "2", "c": ""]),  // lenient: spaces, empty pairs, bare keys
        ("100 level-id=93;profile-id=1;tier-flag=0;tx-mode=SRST",
         ["level-id": "93", "profile-id": "1", "tier-flag": "0", "tx-mode": "SRST"]),
    ])
    func parameters(value: String, expected: [String: String]) throws {
        let fmtp = try SDPFormatParameters(attributeValue: value)
        #expect(fmtp.parameters == expected)
        #expect(fmtp.attributeValue == value.replacingFirstDoubleSpace)
    }

    @Test(arguments: ["", "96", " 96 apt=1"])
    func malformed(value: String) { expectMalformed(SDPFormatParameters.self, value, "expected <format> <parameters>") }

    @Test func fromDictionaryAndNonRTPFormats() throws {
        let fmtp = SDPFormatParameters(payloadType: 111, parameters: ["useinbandfec": "1", "minptime": "10"])
        #expect(fmtp.attribute.description == "a=fmtp:111 minptime=10;useinbandfec=1")
        #expect(try SDPFormatParameters(attributeValue: "webrtc-datachannel max-message-size=1").payloadType == nil)
        #expect(try SDPFormatParameters(attributeValue: "200 x=1").payloadType == nil)
    }
}

extension String {
    /// fmtp drops spaces between the format and the parameters.
    var replacingFirstDoubleSpace: String {
        guard let range = range(of: "  ") else { return self }
        return replacingCharacters(in: range, with: " ")
    }
}

@Suite struct RTCPFeedbackTests {
    @Test(arguments: [
        ("96 nack", SDPRTCPFeedback(payloadType: 96, type: "nack")),
        ("96 nack pli", SDPRTCPFeedback(payloadType: 96, type: "nack", parameter: "pli")),
        ("* ccm fir", SDPRTCPFeedback(payloadType: nil, type: "ccm", parameter: "fir")),
        ("96 trr-int 100", SDPRTCPFeedback(payloadType: 96, type: "trr-int", parameter: "100")),
        ("111 transport-cc", SDPRTCPFeedback(payloadType: 111, type: "transport-cc")),
        ("96 goog-remb", SDPRTCPFeedback(payloadType: 96, type: "goog-remb")),
        ("98 ack app foo", SDPRTCPFeedback(payloadType: 98, type: "ack", parameter: "app foo")),
    ])
    func parses(value: String, expected: SDPRTCPFeedback) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("96", "expected a feedback type"),
        ("96 ", "expected a feedback type"),
        ("x nack", "payload type is not * or a number from 0 to 127"),
        ("200 nack", "payload type is not * or a number from 0 to 127"),
        ("", "payload type is not * or a number from 0 to 127"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPRTCPFeedback.self, value, reason) }

    /// RFC 4585 §4.2: `*` lines apply to every payload type.
    @Test func feedbackForPayloadTypeIncludesWildcard() throws {
        let session = try SessionDescription(parsing: "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=-\nt=0 0\n"
            + "m=video 5004 RTP/AVPF 96 97\na=rtcp-fb:* nack\na=rtcp-fb:96 nack pli\na=rtcp-fb:97 ccm fir\n")
        #expect(try session.media[0].feedback(for: 96) == [SDPRTCPFeedback(payloadType: nil, type: "nack"),
                                                          SDPRTCPFeedback(payloadType: 96, type: "nack", parameter: "pli")])
        #expect(try session.media[0].feedback(for: 97).map(\.type) == ["nack", "ccm"])
        #expect(try session.media[0].feedback(for: 98).map(\.type) == ["nack"])
    }
}

@Suite struct RTCPAddressTests {
    @Test(arguments: [
        ("9 IN IP4 0.0.0.0", SDPRTCPAddress(port: 9, connection: SDPConnection(address: "0.0.0.0"))),
        ("53020", SDPRTCPAddress(port: 53020)),
        ("53020 IN IP6 2001:db8::1", SDPRTCPAddress(port: 53020, connection: SDPConnection(addressType: "IP6", address: "2001:db8::1"))),
    ])
    func parses(value: String, expected: SDPRTCPAddress) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("", "port is not a number"),
        ("x", "port is not a number"),
        ("70000", "port is not a number"),
        ("9 IN IP4", "expected <port> <nettype> <addrtype> <address>"),
        ("9 IN IP4 0.0.0.0 extra", "expected <port> <nettype> <addrtype> <address>"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPRTCPAddress.self, value, reason) }
}

@Suite struct ExtensionMapTests {
    @Test(arguments: [
        ("1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", SDPExtensionMap(id: 1, uri: "urn:ietf:params:rtp-hdrext:ssrc-audio-level")),
        ("2/recvonly urn:ietf:params:rtp-hdrext:csrc-audio-level",
         SDPExtensionMap(id: 2, direction: .recvonly, uri: "urn:ietf:params:rtp-hdrext:csrc-audio-level")),
        ("14 urn:ietf:params:rtp-hdrext:toffset", SDPExtensionMap(id: 14, uri: "urn:ietf:params:rtp-hdrext:toffset")),
        ("255 urn:x", SDPExtensionMap(id: 255, uri: "urn:x")),
        ("4096/sendonly urn:x", SDPExtensionMap(id: 4096, direction: .sendonly, uri: "urn:x")),
        // RFC 8285 §7: extension attributes follow the URI.
        ("3 urn:ietf:params:rtp-hdrext:encrypt urn:ietf:params:rtp-hdrext:smpte-tc 25@600/24",
         SDPExtensionMap(id: 3, uri: "urn:ietf:params:rtp-hdrext:encrypt",
                         extensionAttributes: "urn:ietf:params:rtp-hdrext:smpte-tc 25@600/24")),
    ])
    func parses(value: String, expected: SDPExtensionMap) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("0 urn:x", "id is not a number from 1 to 255 or 4096 to 4351"),
        ("256 urn:x", "id is not a number from 1 to 255 or 4096 to 4351"),
        ("4352 urn:x", "id is not a number from 1 to 255 or 4096 to 4351"),
        ("x urn:x", "id is not a number from 1 to 255 or 4096 to 4351"),
        ("1/sideways urn:x", "direction is not sendrecv, sendonly, recvonly or inactive"),
        ("1", "expected a URI"),
        ("1urn:x", "expected a URI"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPExtensionMap.self, value, reason) }
}
