/// Candidate lines as browsers and libraries write them (RFC 8839 §5.1), priorities (RFC 8445 §5.1.2.1,
/// §6.1.2.3), foundations (§5.1.1.3) and credentials (§5.3).
import MediaICE
import MediaSTUN
import Testing
import TestSupport

@Suite struct ICECandidateTests {
    struct Line: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        /// What `attributeValue` writes back (nil: the text itself, without any `a=` prefix).
        var written: String? = nil
        var type: ICECandidateType
        var transport: ICETransportProtocol = .udp
        var address: String?  // nil: not numeric (mDNS)
        var port: UInt16
        var related: String? = nil
        var extensions: [String: String] = [:]
        var testDescription: String { name }
    }

    static let lines: [Line] = [
        Line(name: "Chrome host",
             text: "candidate:842163049 1 udp 2122260223 192.168.1.5 56143 typ host generation 0 ufrag sXJ3 network-id 1 network-cost 10",
             type: .host, address: "192.168.1.5:56143", port: 56143,
             extensions: ["generation": "0", "ufrag": "sXJ3", "network-id": "1", "network-cost": "10"]),
        Line(name: "Chrome srflx with raddr/rport",
             text: "candidate:1467250027 1 udp 1686052607 203.0.113.7 56143 typ srflx raddr 192.168.1.5 rport 56143 generation 0 ufrag sXJ3",
             type: .srflx, address: "203.0.113.7:56143", port: 56143, related: "192.168.1.5:56143",
             extensions: ["generation": "0", "ufrag": "sXJ3"]),
        Line(name: "Chrome mDNS host (unresolved)",
             text: "candidate:3442447574 1 udp 2122260223 4f1c6ae1-5cfc-4b3b-a2c6-fb1bbed8c1a2.local 54400 typ host generation 0",
             type: .host, address: nil, port: 54400, extensions: ["generation": "0"]),
        Line(name: "Chrome tcp (parsed, not used)",
             text: "candidate:1051390934 1 tcp 1518280447 192.168.1.5 9 typ host tcptype active generation 0",
             type: .host, transport: .tcp, address: "192.168.1.5:9", port: 9,
             extensions: ["tcptype": "active", "generation": "0"]),
        Line(name: "Firefox host, upper-case UDP, a= line",
             text: "a=candidate:0 1 UDP 2122252543 10.0.0.2 49203 typ host",
             written: "candidate:0 1 udp 2122252543 10.0.0.2 49203 typ host",
             type: .host, address: "10.0.0.2:49203", port: 49203),
        Line(name: "Firefox relay",
             text: "candidate:4 1 UDP 8331263 198.51.100.9 61022 typ relay raddr 203.0.113.7 rport 61022",
             written: "candidate:4 1 udp 8331263 198.51.100.9 61022 typ relay raddr 203.0.113.7 rport 61022",
             type: .relay, address: "198.51.100.9:61022", port: 61022, related: "203.0.113.7:61022"),
        Line(name: "aiortc without the candidate: prefix",
             text: "6815297761cb8ac5e0ed3bbfd2b0a2fb 1 udp 2130706431 172.17.0.2 38405 typ host",
             written: "candidate:6815297761cb8ac5e0ed3bbfd2b0a2fb 1 udp 2130706431 172.17.0.2 38405 typ host",
             type: .host, address: "172.17.0.2:38405", port: 38405),
        Line(name: "IPv6 host",
             text: "candidate:2999745851 1 udp 2122194687 2001:db8::1 50000 typ host generation 0",
             type: .host, address: "[2001:db8::1]:50000", port: 50000, extensions: ["generation": "0"]),
        Line(name: "prflx",
             text: "candidate:prflx1 1 udp 1853824767 203.0.113.8 3478 typ prflx raddr 0.0.0.0 rport 0",
             type: .prflx, address: "203.0.113.8:3478", port: 3478, related: "0.0.0.0:0"),
    ]

    @Test(arguments: lines)
    func parsesAndWritesBack(line: Line) throws {
        let candidate = try ICECandidate(parsing: line.text)
        #expect(candidate.type == line.type)
        #expect(candidate.transport == line.transport)
        #expect(candidate.address?.description == line.address)
        #expect(candidate.isMDNS == (line.address == nil))
        #expect(candidate.port == line.port)
        #expect(candidate.component == 1)
        if let related = line.related {
            #expect("\(candidate.relatedAddress ?? "")" == TransportAddress(related)?.ip.description)
            #expect(candidate.relatedPort == TransportAddress(related)?.port)
        } else {
            #expect(candidate.relatedAddress == nil && candidate.relatedPort == nil)
        }
        for (name, value) in line.extensions { #expect(candidate.extensionValue(name) == value) }
        #expect(candidate.extensions.count == line.extensions.count)
        let expected = line.written ?? line.text
        #expect(candidate.attributeValue == expected)
        #expect(try ICECandidate(parsing: candidate.attributeValue) == candidate)
    }

    @Test func fieldsOfAChromeLine() throws {
        let candidate = try ICECandidate(parsing: Self.lines[1].text)
        #expect(candidate.foundation == "1467250027")
        #expect(candidate.priority == 1_686_052_607)
        #expect(candidate.relatedAddress == "192.168.1.5" && candidate.relatedPort == 56143)
    }

    static let badLines: [(String, ICECandidateParseError)] = [
        ("candidate:1 1 udp 2122260223 192.168.1.5 56143 typ", .tooFewFields(7)),
        ("", .tooFewFields(0)),
        ("candidate:abc-def 1 udp 1 192.168.1.5 1 typ host", .badFoundation("abc-def")),
        ("candidate:\(String(repeating: "a", count: 33)) 1 udp 1 192.168.1.5 1 typ host",
         .badFoundation(String(repeating: "a", count: 33))),
        ("candidate:1 0 udp 1 192.168.1.5 1 typ host", .badComponent("0")),
        ("candidate:1 x udp 1 192.168.1.5 1 typ host", .badComponent("x")),
        ("candidate:1 1 sctp 1 192.168.1.5 1 typ host", .unsupportedTransport("sctp")),
        ("candidate:1 1 udp 99999999999 192.168.1.5 1 typ host", .badPriority("99999999999")),
        ("candidate:1 1 udp 0 192.168.1.5 1 typ host", .badPriority("0")),
        ("candidate:1 1 udp 2147483648 192.168.1.5 1 typ host", .badPriority("2147483648")),
        ("candidate:1 1 udp 1 192.168.1.256 1 typ host", .badAddress("192.168.1.256")),
        ("candidate:1 1 udp 1 bad_host! 1 typ host", .badAddress("bad_host!")),
        ("candidate:1 1 udp 1 192.168.1.5 70000 typ host", .badPort("70000")),
        ("candidate:1 1 udp 1 192.168.1.5 1 type host", .missingType),
        ("candidate:1 1 udp 1 192.168.1.5 1 typ nat", .badType("nat")),
        ("candidate:1 1 udp 1 192.168.1.5 1 typ srflx raddr ::g rport 1", .badRelatedAddress("::g")),
        ("candidate:1 1 udp 1 192.168.1.5 1 typ srflx raddr 10.0.0.1 rport x", .badRelatedPort("x")),
        ("candidate:1 1 udp 1 192.168.1.5 1 typ host generation", .danglingExtension("generation")),
    ]

    @Test(arguments: badLines)
    func refusesBadLines(text: String, error: ICECandidateParseError) {
        #expect(throws: error) { try ICECandidate(parsing: text) }
    }

    @Test func errorReasonsAreStable() {
        #expect(ICECandidateParseError.tooFewFields(3).reason == "too-few-fields")
        #expect(ICECandidateParseError.missingType.reason == "missing-type")
        #expect(ICECandidateParseError.unsupportedTransport("x").reason == "unsupported-transport")
    }

    /// RFC 8445 §5.1.2.1 with the recommended type preferences and local preference 65535.
    @Test func candidatePriorities() {
        #expect(ICECandidate.priority(type: .host, localPreference: 65535, component: 1) == 2_130_706_431)
        #expect(ICECandidate.priority(type: .prflx, localPreference: 65535, component: 1) == 1_862_270_975)
        #expect(ICECandidate.priority(type: .srflx, localPreference: 65535, component: 1) == 1_694_498_815)
        #expect(ICECandidate.priority(type: .relay, localPreference: 65535, component: 1) == 16_777_215)
        #expect(ICECandidate.priority(type: .host, localPreference: 65535, component: 2) == 2_130_706_430)
        #expect(ICECandidate.priority(type: .host, localPreference: 0, component: 1) == 2_113_929_471)
    }

    /// RFC 8445 §6.1.2.3: 2^32·min(G,D) + 2·max(G,D) + (G>D ? 1 : 0).
    @Test func pairPriorities() {
        #expect(ICEAgent.pairPriority(controlling: 2_130_706_431, controlled: 1_694_498_815) == 7_277_816_997_797_167_103)
        #expect(ICEAgent.pairPriority(controlling: 1_694_498_815, controlled: 2_130_706_431) == 7_277_816_997_797_167_102)
        #expect(ICEAgent.pairPriority(controlling: 5, controlled: 5) == (5 << 32) + 10)
        #expect(ICEAgent.pairPriority(controlling: .max, controlled: .max) > 0, "out-of-range input does not trap")
    }

    /// RFC 8445 §5.1.1.3: same type, base IP, server and transport → same foundation; any difference → another.
    @Test func foundations() throws {
        let base = try #require(IPAddress("192.168.1.5"))
        let other = try #require(IPAddress("192.168.1.6"))
        let server = try #require(IPAddress("198.51.100.1"))
        let host = ICECandidate.foundation(type: .host, baseIP: base)
        #expect(host == ICECandidate.foundation(type: .host, baseIP: base))
        #expect(host != ICECandidate.foundation(type: .host, baseIP: other))
        #expect(host != ICECandidate.foundation(type: .srflx, baseIP: base, serverIP: server))
        let otherServer = try #require(IPAddress("198.51.100.2"))
        #expect(ICECandidate.foundation(type: .srflx, baseIP: base, serverIP: server)
            != ICECandidate.foundation(type: .srflx, baseIP: base, serverIP: otherServer))
        #expect(host != ICECandidate.foundation(type: .host, baseIP: base, transport: .tcp))
        #expect(host.utf8.count <= 32 && host.allSatisfy { $0.isNumber })
    }

    /// RFC 8445 §5.3 / RFC 8839 §5.4: ufrag ≥ 4 and pwd ≥ 22 ice-chars, fresh each time.
    @Test func randomCredentials() {
        var generator = SplitMix64(seed: 7)
        let first = ICECredentials.random(using: &generator)
        let second = ICECredentials.random(using: &generator)
        #expect(first.isValid && second.isValid)
        #expect(first.ufrag.count >= 4 && first.pwd.count >= 22)
        #expect(first != second)
        #expect(ICECredentials.random() != ICECredentials.random())
        #expect(!ICECredentials(ufrag: "abc", pwd: String(repeating: "p", count: 22)).isValid)
        #expect(!ICECredentials(ufrag: "abcd", pwd: String(repeating: "p", count: 21)).isValid)
        #expect(!ICECredentials(ufrag: "ab:d", pwd: String(repeating: "p", count: 22)).isValid)
    }

    // Found by tools/fuzz (target ICECandidate): an extension value starting with a combining mark
    // (U+0591 after vertical tabs here) was split off as a field, but written back after a space it
    // joined that space into one Character, and the candidate read back differently.
    @Test func aValueStartingWithACombiningMarkReadsBack() throws {
        // The input as the fuzzer wrote it (valid UTF-8).
        let input = "can1ida43 1 udp 074917 20.0.11.61 63765 typ srflx raddr 0.0.0.0 rport 0 genon\u{0}70"
            + String(repeating: "\u{B}", count: 73) + "\u{591}rr0p  tysrf'0 rport 9900H rport 0 gr /0 0"
        let candidate = try ICECandidate(parsing: input)
        #expect(try ICECandidate(parsing: candidate.attributeValue) == candidate)
        let short = try ICECandidate(parsing: "candidate:1 1 udp 1 192.0.2.1 5 typ host name\t\u{0591}value")
        #expect(short.extensions == [ICECandidateExtension(name: "name", value: "\u{0591}value")])
        #expect(try ICECandidate(parsing: short.attributeValue) == short)
    }
}
