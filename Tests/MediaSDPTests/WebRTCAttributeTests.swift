/// WebRTC transport attributes with literal values: ICE credentials and options (RFC 8839 §5.4, §5.6),
/// fingerprint (RFC 8122 §5), setup (RFC 4145 §4), mid (RFC 5888 §4), msid (RFC 8830 §2), sctp-port
/// and max-message-size (RFC 8841), candidate (RFC 8839 §5.1), and the accessors with their session fallback.
import MediaSDP
import Testing

@Suite struct ICEAttributeTests {
    @Test(arguments: ["Fk3w", "xm7qF+GYqGloG+lFcbadHCgXxFL2q3nS", "a/b+", String(repeating: "z", count: 256)])
    func usernameFragmentParses(value: String) throws { try expectParses(value, to: SDPICEUsernameFragment(value)) }

    @Test(arguments: [
        ("abc", "length is not 4 to 256"),  // 3 ice-chars
        (String(repeating: "z", count: 257), "length is not 4 to 256"),
        ("", "length is not 4 to 256"),
        ("ab-cd", "not ice-chars (letters, digits, + and /)"),  // '-' is not an ice-char
        ("abc d", "not ice-chars (letters, digits, + and /)"),
        ("abcé", "not ice-chars (letters, digits, + and /)"),
    ])
    func usernameFragmentMalformed(value: String, reason: String) { expectMalformed(SDPICEUsernameFragment.self, value, reason) }

    @Test(arguments: ["8n4YqZ2m0Lr7tVx1cB9dE6hJ", "yrZmhTgMqiQejCNGtlP3oi", "wPI85fDbnXF1o1z3rfjC8mtMb1/k6sCq"])
    func passwordParses(value: String) throws { try expectParses(value, to: SDPICEPassword(value)) }

    @Test(arguments: [
        ("yrZmhTgMqiQejCNGtlP3o", "length is not 22 to 256"),  // 21 ice-chars
        (String(repeating: "p", count: 257), "length is not 22 to 256"),
        ("yrZmhTgMqiQejCNGtlP3o=", "not ice-chars (letters, digits, + and /)"),
    ])
    func passwordMalformed(value: String, reason: String) { expectMalformed(SDPICEPassword.self, value, reason) }

    @Test func options() throws {
        try expectParses("trickle", to: SDPICEOptions(["trickle"]))
        try expectParses("trickle ice2", to: SDPICEOptions(["trickle", "ice2"]))
        expectMalformed(SDPICEOptions.self, "", "expected at least one option tag")
        expectMalformed(SDPICEOptions.self, "trickle ice-2", "an option tag is not ice-chars")
    }
}

@Suite struct FingerprintTests {
    @Test func parses() throws {
        try expectParses("sha-256 7B:8B:F0:65:5F:78:E2:51:3B:AC:6F:F3:3F:46:1B:35:DC:B8:5F:64:1A:24:C2:43:F0:A1:58:D0:A1:2C:19:08",
                         to: SDPFingerprint(algorithm: "sha-256", bytes: [
                             0x7B, 0x8B, 0xF0, 0x65, 0x5F, 0x78, 0xE2, 0x51, 0x3B, 0xAC, 0x6F, 0xF3, 0x3F, 0x46, 0x1B, 0x35,
                             0xDC, 0xB8, 0x5F, 0x64, 0x1A, 0x24, 0xC2, 0x43, 0xF0, 0xA1, 0x58, 0xD0, 0xA1, 0x2C, 0x19, 0x08,
                         ]))
        try expectParses("sha-1 " + Array(repeating: "AB", count: 20).joined(separator: ":"),
                         to: SDPFingerprint(algorithm: "sha-1", bytes: Array(repeating: 0xAB, count: 20)))
        // An unknown hash function (a token) is kept at any length.
        try expectParses("sha3-256 01:02", to: SDPFingerprint(algorithm: "sha3-256", bytes: [1, 2]))
        // Lowercase hex and an uppercase function name are read; the hex is written back uppercase.
        let lower = try SDPFingerprint(attributeValue: "SHA-256 " + Array(repeating: "ab", count: 32).joined(separator: ":"))
        #expect(lower.bytes == Array(repeating: 0xAB, count: 32) && lower.algorithm == "SHA-256")
        #expect(lower.matches(SDPFingerprint(algorithm: "sha-256", bytes: Array(repeating: 0xAB, count: 32))))
        #expect(!lower.matches(SDPFingerprint(algorithm: "sha-384", bytes: Array(repeating: 0xAB, count: 32))))
        #expect(lower.hexText.hasPrefix("AB:AB:"))
    }

    @Test(arguments: [
        ("", "expected <hash-func> <fingerprint>"),
        ("sha-256", "expected <hash-func> <fingerprint>"),
        ("sha-256 AB CD", "expected <hash-func> <fingerprint>"),
        ("sha-256 ABCD", "fingerprint is not colon-separated hex pairs"),
        ("sha-256 AB:C", "fingerprint is not colon-separated hex pairs"),
        ("sha-256 AB::CD", "fingerprint is not colon-separated hex pairs"),
        ("sha-256 AB:GZ", "fingerprint is not colon-separated hex pairs"),
        ("sha-256 AB:", "fingerprint is not colon-separated hex pairs"),
        ("sha-256 AB:CD", "sha-256 fingerprint has 2 bytes, not 32"),
        ("md5 AB", "md5 fingerprint has 1 bytes, not 16"),
        ("sha(256) AB", "hash function is not a token"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPFingerprint.self, value, reason) }
}

@Suite struct SetupMidAndMsidTests {
    @Test(arguments: SDPSetup.allCases)
    func setupParses(role: SDPSetup) throws { try expectParses(role.rawValue, to: role) }

    @Test(arguments: ["", "Active", "actpass ", "passiv"])
    func setupMalformed(value: String) {
        expectMalformed(SDPSetup.self, value, "role is not active, passive, actpass or holdconn")
    }

    @Test(arguments: ["0", "audio2", "video-1", "{a}"])
    func midParses(value: String) throws { try expectParses(value, to: SDPMediaIdentifier(value)) }

    @Test(arguments: [
        ("", "identification tag is not a token"),
        ("a b", "identification tag is not a token"),
        ("a:b", "identification tag is not a token"),
        (String(repeating: "m", count: 256), "identification tag is longer than 255 bytes"),
    ])
    func midMalformed(value: String, reason: String) { expectMalformed(SDPMediaIdentifier.self, value, reason) }

    @Test func msid() throws {
        try expectParses("3a8b1c9e-7d2f-4c5a-9e1b-2f6d8a4c7e31 9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f",
                         to: SDPMediaStreamID(streamID: "3a8b1c9e-7d2f-4c5a-9e1b-2f6d8a4c7e31",
                                              trackID: "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f"))
        try expectParses("{6f2c0b7e} {a1b2c3d4}", to: SDPMediaStreamID(streamID: "{6f2c0b7e}", trackID: "{a1b2c3d4}"))  // Firefox
        try expectParses("- track", to: SDPMediaStreamID(streamID: "-", trackID: "track"))
        try expectParses("stream", to: SDPMediaStreamID(streamID: "stream"))
        for value in ["", "a b c"] { expectMalformed(SDPMediaStreamID.self, value, "expected <stream id> [<track id>]") }
        for value in [String(repeating: "s", count: 65), "a/b", "s t:u"] {
            expectMalformed(SDPMediaStreamID.self, value, "an id is not 1 to 64 token characters")
        }
    }
}

@Suite struct DataChannelAndCandidateTests {
    @Test func sctpPortAndMaxMessageSize() throws {
        try expectParses("5000", to: SDPSCTPPort(5000))
        try expectParses("0", to: SDPSCTPPort(0))
        try expectParses("262144", to: SDPMaxMessageSize(262_144))
        try expectParses("0", to: SDPMaxMessageSize(0))  // no limit (RFC 8841 §6)
        for value in ["", "65536", "-1", "50 00", "5000 "] { expectMalformed(SDPSCTPPort.self, value, "not a number from 0 to 65535") }
        for value in ["", "4294967296", "1k"] { expectMalformed(SDPMaxMessageSize.self, value, "not a number from 0 to 4294967295") }
    }

    @Test func candidateIsKeptAsText() throws {
        let text = "842163049 1 udp 1677729535 203.0.113.7 61665 typ srflx raddr 0.0.0.0 rport 0 generation 0 network-cost 999"
        try expectParses(text, to: SDPCandidate(text))
        expectMalformed(SDPCandidate.self, "", "empty candidate")
        expectMalformed(SDPCandidate.self, "  ", "empty candidate")
    }
}

@Suite struct WebRTCAccessorTests {
    @Test func chromeMediaLevel() throws {
        let session = try Fixtures.parsed("chrome-offer.sdp")
        let audio = session.media[0]
        #expect(try audio.iceUsernameFragment(in: session) == "Fk3w" && audio.icePassword(in: session) == "8n4YqZ2m0Lr7tVx1cB9dE6hJ")
        #expect(try audio.iceOptions(in: session) == ["trickle"] && audio.setupRole(in: session) == .actpass)
        #expect(try audio.fingerprints(in: session).map(\.bytes.count) == [32])
        #expect(try session.iceUsernameFragment() == nil && !session.iceLite)
        #expect(try audio.mediaStreamIDs() == [SDPMediaStreamID(streamID: "3a8b1c9e-7d2f-4c5a-9e1b-2f6d8a4c7e31",
                                                                trackID: "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f")])
        #expect(try session.media.map { try $0.mediaIdentifier() } == ["0", "1", "2"])
        #expect(try session.media[2].sctpPort() == 5000 && session.media[2].maxMessageSize() == 262_144)
        #expect(try audio.sctpPort() == nil)
    }

    @Test func firefoxSessionLevelFallback() throws {
        let session = try Fixtures.parsed("firefox-offer.sdp")
        let video = session.media[1]
        #expect(try video.fingerprints().isEmpty)  // only at session level
        #expect(try video.fingerprints(in: session) == session.fingerprints() && !session.fingerprints().isEmpty)
        #expect(try video.setupRole(in: session) == .actpass)
        #expect(try video.iceUsernameFragment(in: session) != nil && video.icePassword(in: session) != nil)
    }

    @Test func candidatesEndOfCandidatesAndFlags() throws {
        let safari = try Fixtures.parsed("safari-offer.sdp")
        #expect(try safari.media[0].candidates().count == 2 && safari.media[0].endOfCandidates(in: safari))
        #expect(!safari.media[1].endOfCandidates(in: safari))
        let gstreamer = try Fixtures.parsed("gstreamer-webrtcbin.sdp")
        #expect(gstreamer.media.allSatisfy { $0.rtcpMuxOnly })
        let aiortc = try Fixtures.parsed("aiortc-offer.sdp")
        #expect(try aiortc.media.map { try $0.candidates().count } == [1, 1, 1])
        #expect(try aiortc.media[0].fingerprints().map(\.algorithm) == ["sha-256", "sha-384", "sha-512"])
        #expect(try aiortc.media[0].fingerprints().map(\.bytes.count) == [32, 48, 64])
    }

    @Test func sessionLevelFlags() throws {
        let text = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=ice-lite\r\na=end-of-candidates\r\na=ice-ufrag:sess\r\n"
            + "a=ice-options:trickle\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=ice-ufrag:mine\r\n"
        let session = try SessionDescription(parsing: text)
        #expect(session.iceLite && session.media[0].endOfCandidates(in: session) && !session.media[0].endOfCandidates)
        #expect(try session.media[0].iceUsernameFragment(in: session) == "mine")  // the section's wins
        #expect(try session.media[0].iceOptions(in: session) == ["trickle"])
        #expect(try session.media[0].icePassword(in: session) == nil)
    }

    @Test func malformedValueNamesItsLine() throws {
        let session = try SessionDescription(parsing: sessionWithMediaAttribute("a=setup:both"))
        #expect(throws: SDPError.malformedAttribute(line: 6, text: "a=setup:both",
                                                    reason: "role is not active, passive, actpass or holdconn")) {
            try session.media[0].setupRole(in: session)
        }
    }
}
