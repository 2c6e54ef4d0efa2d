import TestSupport
import Testing

@testable import MediaSTUN

/// Malformed and unauthenticated datagrams, each with its named error, and seeded random mutations of
/// valid messages that must never trap.
@Suite struct STUNMalformedTests {
    /// A header with `length` and the RFC 5769 transaction ID, then `body`.
    static func message(type: UInt16 = 0x0001, length: Int? = nil, _ body: [UInt8] = []) -> [UInt8] {
        let length = length ?? body.count
        return [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
                0x21, 0x12, 0xA4, 0x42] + RFC5769.transactionID.bytes + body
    }

    /// The RFC 5769 §2.2 response with one byte changed.
    static func ipv4Response(setting offset: Int, to value: UInt8) -> [UInt8] {
        var bytes = RFC5769.ipv4Response
        bytes[offset] = value
        return bytes
    }

    static let cases: [(name: String, bytes: [UInt8], error: STUNError)] = [
        ("empty", [], .tooShort(count: 0)),
        ("19 bytes", Array(RFC5769.request.prefix(19)), .tooShort(count: 19)),
        ("first bits 0b10", [0x80] + Array(RFC5769.request.dropFirst()), .notSTUN),
        ("RTP-looking first byte", [0x40] + Array(RFC5769.request.dropFirst()), .notSTUN),
        ("bad magic cookie", ipv4Response(setting: 4, to: 0x22), .badMagicCookie),
        ("length not a multiple of 4", message(length: 2, [0, 0]), .badLength(declared: 2, available: 2)),
        ("length past the end", message(length: 8, [0, 0x24, 0, 0]), .badLength(declared: 8, available: 4)),
        ("length short of the end", message(length: 0, [0, 0x25, 0, 0]), .badLength(declared: 0, available: 4)),
        ("attribute past the end", message([0x00, 0x24, 0x00, 0x08, 0, 0, 0, 1]), .truncatedAttribute(type: 0x0024)),
        ("padding past the end", message([0x80, 0x22, 0x00, 0x05, 0x61, 0x62, 0x63, 0x64]), .truncatedAttribute(type: 0x8022)),
        ("PRIORITY of 3 bytes", message([0x00, 0x24, 0x00, 0x03, 1, 2, 3, 0]), .badAttributeLength(type: 0x0024, length: 3)),
        ("ICE-CONTROLLING of 4 bytes", message([0x80, 0x2A, 0x00, 0x04, 1, 2, 3, 4]), .badAttributeLength(type: 0x802A, length: 4)),
        ("USE-CANDIDATE with a value", message([0x00, 0x25, 0x00, 0x04, 1, 2, 3, 4]), .badAttributeLength(type: 0x0025, length: 4)),
        ("MESSAGE-INTEGRITY of 16 bytes", message([0x00, 0x08, 0x00, 0x10] + [UInt8](repeating: 0, count: 16)),
         .badAttributeLength(type: 0x0008, length: 16)),
        ("MESSAGE-INTEGRITY-SHA256 of 12 bytes", message([0x00, 0x1C, 0x00, 0x0C] + [UInt8](repeating: 0, count: 12)),
         .badAttributeLength(type: 0x001C, length: 12)),
        ("bad address family", ipv4Response(setting: 41, to: 0x03), .badAddressFamily(type: 0x0020, family: 3)),
        ("XOR-MAPPED-ADDRESS family 0", ipv4Response(setting: 41, to: 0x00), .badAddressFamily(type: 0x0020, family: 0)),
        ("truncated XOR-MAPPED-ADDRESS", message([0x00, 0x20, 0x00, 0x04, 0x00, 0x01, 0xA1, 0x47]),
         .badAttributeLength(type: 0x0020, length: 4)),
        ("XOR-MAPPED-ADDRESS IPv6 family, IPv4 length", message([0x00, 0x20, 0x00, 0x08, 0x00, 0x02, 0xA1, 0x47, 1, 2, 3, 4]),
         .badAttributeLength(type: 0x0020, length: 8)),
        ("MAPPED-ADDRESS of 2 bytes", message([0x00, 0x01, 0x00, 0x02, 0x00, 0x01, 0, 0]), .badAttributeLength(type: 0x0001, length: 2)),
        ("USERNAME not UTF-8", message([0x00, 0x06, 0x00, 0x02, 0xC3, 0x28, 0, 0]), .badAttributeValue(type: 0x0006)),
        ("USERNAME of 516 bytes", message([0x00, 0x06, 0x02, 0x04] + [UInt8](repeating: 0x61, count: 516)),
         .badAttributeLength(type: 0x0006, length: 516)),
        ("ERROR-CODE class 7", message([0x00, 0x09, 0x00, 0x04, 0, 0, 7, 0]), .badAttributeValue(type: 0x0009)),
        ("ERROR-CODE number 100", message([0x00, 0x09, 0x00, 0x04, 0, 0, 4, 100]), .badAttributeValue(type: 0x0009)),
        ("ERROR-CODE of 2 bytes", message([0x00, 0x09, 0x00, 0x02, 0, 0, 0, 0]), .badAttributeLength(type: 0x0009, length: 2)),
        ("UNKNOWN-ATTRIBUTES of odd length", message([0x00, 0x0A, 0x00, 0x03, 0, 1, 0, 0]), .badAttributeLength(type: 0x000A, length: 3)),
        ("PASSWORD-ALGORITHMS running past its value", message([0x80, 0x02, 0x00, 0x04, 0, 1, 0, 8]),
         .badAttributeLength(type: 0x8002, length: 4)),
        ("CHANNEL-NUMBER of 2 bytes", message([0x00, 0x0C, 0x00, 0x02, 0x40, 0x00, 0, 0]), .badAttributeLength(type: 0x000C, length: 2)),
        ("EVEN-PORT of 4 bytes", message([0x00, 0x18, 0x00, 0x04, 0x80, 0, 0, 0]), .badAttributeLength(type: 0x0018, length: 4)),
        ("RESERVATION-TOKEN of 4 bytes", message([0x00, 0x22, 0x00, 0x04, 1, 2, 3, 4]), .badAttributeLength(type: 0x0022, length: 4)),
        ("bad fingerprint", ipv4Response(setting: RFC5769.ipv4Response.count - 1, to: 0x97), .badFingerprint),
        ("changed byte under the fingerprint", ipv4Response(setting: 25, to: 0x66), .badFingerprint),
        ("FINGERPRINT of 2 bytes", message([0x80, 0x28, 0x00, 0x02, 0, 0, 0, 0]), .badAttributeLength(type: 0x8028, length: 2)),
        ("attribute after FINGERPRINT", Array(RFC5769.ipv4Response.prefix(2)) + [0x00, 0x40] + Array(RFC5769.ipv4Response[4...])
            + [0x00, 0x25, 0x00, 0x00], .attributeAfterFingerprint(type: 0x0025)),
    ]

    @Test(arguments: cases.indices)
    func malformedMessageGivesItsNamedError(index: Int) {
        let (name, bytes, error) = Self.cases[index]
        #expect(throws: error, "\(name)") { try STUNMessage(parsing: bytes) }
    }

    @Test func reasonsAreStableNames() {
        #expect(STUNError.tooShort(count: 3).reason == "too-short")
        #expect(STUNError.badMagicCookie.reason == "bad-magic-cookie")
        #expect(STUNError.badLength(declared: 1, available: 2).reason == "bad-length")
        #expect(STUNError.truncatedAttribute(type: 1).reason == "truncated-attribute")
        #expect(STUNError.badFingerprint.reason == "bad-fingerprint")
        #expect(STUNError.missingIntegrity.reason == "missing-integrity")
        #expect(STUNError.integrityMismatch.reason == "integrity-mismatch")
        #expect(STUNError.badAttributeValue(type: 1).reason == "bad-attribute-value")
        #expect(STUNError.badAddressFamily(type: 1, family: 9).description == "bad-address-family: attribute 0x1, family 9")
    }

    // MARK: Integrity

    static let key = STUNIntegrityKey.shortTerm(password: RFC5769.password)

    @Test func integrityMismatchWithWrongKey() {
        for vector in [RFC5769.request, RFC5769.ipv4Response, RFC5769.ipv6Response] {
            #expect(throws: STUNError.integrityMismatch) { try STUNMessage(parsing: vector, key: .shortTerm(password: "wrong")) }
        }
        let longTerm = STUNIntegrityKey.longTerm(username: "other", realm: RFC5769.longTermRealm, password: RFC5769.longTermPreparedPassword)
        #expect(throws: STUNError.integrityMismatch) { try STUNMessage.verifyIntegrity(of: RFC5769.longTermRequest, key: longTerm) }
    }

    @Test func integrityMismatchWhenACoveredByteChanges() {
        // SOFTWARE's padding space (offset 35) is covered by MESSAGE-INTEGRITY; FINGERPRINT is not
        // checked by verifyIntegrity, so the failure is the integrity's.
        #expect(throws: STUNError.integrityMismatch) {
            try STUNMessage.verifyIntegrity(of: Self.ipv4Response(setting: 35, to: 0x00), key: Self.key)
        }
        #expect(throws: STUNError.integrityMismatch) {
            try STUNMessage.verifyIntegrity(of: Self.ipv4Response(setting: 53, to: 0x00), key: Self.key)  // the HMAC itself
        }
    }

    @Test func missingIntegrity() {
        let plain = STUNMessage(method: .binding, messageClass: .request, attributes: [.priority(1)]).serialized(fingerprint: true)
        #expect(throws: STUNError.missingIntegrity) { try STUNMessage.verifyIntegrity(of: plain, key: Self.key) }
        #expect(throws: STUNError.missingIntegrity) { try STUNMessage(parsing: plain, key: Self.key) }
        // Malformed bytes fail as malformed before integrity is looked for.
        #expect(throws: STUNError.tooShort(count: 4)) { try STUNMessage.verifyIntegrity(of: [0, 1, 0, 0], key: Self.key) }
    }

    @Test func looksLikeSTUNRejectsOtherProtocols() {
        #expect(STUNMessage.looksLikeSTUN(RFC5769.ipv6Response))
        #expect(!STUNMessage.looksLikeSTUN(Self.ipv4Response(setting: 4, to: 0)))  // cookie
        #expect(!STUNMessage.looksLikeSTUN([0x80] + Array(RFC5769.request.dropFirst())))  // RTP
        #expect(!STUNMessage.looksLikeSTUN([0x16, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 30)))  // DTLS
        #expect(!STUNMessage.looksLikeSTUN(Array(RFC5769.request.dropLast(4))))  // length does not match
        #expect(!STUNMessage.looksLikeSTUN([]))
    }

    // MARK: Mutations

    /// Valid messages to mutate: the RFC 5769 vectors and one with every attribute kind.
    static let seeds: [[UInt8]] = [
        RFC5769.request, RFC5769.ipv4Response, RFC5769.ipv6Response, RFC5769.longTermRequest,
        STUNMessage(method: .allocate, messageClass: .successResponse, transactionID: RFC5769.transactionID,
                    attributes: STUNAttributeRoundTripTests.everyKind).serialized(integrity: key, sha256: true, fingerprint: true),
    ]

    /// `bytes` with 1 to 4 changes: bit flips, interesting byte values (at length fields more often),
    /// truncation, extension, deletion.
    static func mutated(_ bytes: [UInt8], using random: inout SplitMix64) -> [UInt8] {
        var out = bytes
        let interesting: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x08, 0x14, 0x20, 0x7F, 0x80, 0xFF]
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let position = out.isEmpty ? 0 : Int.random(in: 0..<out.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !out.isEmpty: out[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
            case 1 where !out.isEmpty: out[position] = interesting[Int.random(in: 0..<interesting.count, using: &random)]
            case 2 where !out.isEmpty: out[position] = UInt8.random(in: 0...255, using: &random)
            case 3: out = Array(out.prefix(Int.random(in: 0...out.count, using: &random)))
            case 4: out += (0..<Int.random(in: 1...8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            default: if !out.isEmpty { out.remove(at: position) }
            }
        }
        return out
    }

    @Test func mutationsNeverTrapAndFailOnlyByName() {
        var random = SplitMix64(seed: 0x5354_554E)
        var accepted = 0
        var reasons: [String: Int] = [:]
        for round in 0..<4000 {
            let bytes = Self.mutated(Self.seeds[round % Self.seeds.count], using: &random)
            do throws(STUNError) {
                let message = try STUNMessage(parsing: bytes)
                accepted += 1
                // What is accepted writes again into something that parses to the same attributes.
                let again = try STUNMessage(parsing: message.serialized())
                #expect(again.attributes == message.attributes.filter { !$0.isComputed })
            } catch {
                reasons[error.reason, default: 0] += 1
            }
            _ = STUNMessage.looksLikeSTUN(bytes)
            do throws(STUNError) { try STUNMessage.verifyIntegrity(of: bytes, key: Self.key) } catch { _ = error.reason }
            do throws(STUNError) { _ = try TURNChannelData(parsing: bytes) } catch { _ = error.reason }
        }
        // The mutations reach well past the header checks.
        #expect(accepted > 0)
        #expect(reasons["bad-fingerprint", default: 0] > 100)
        #expect(reasons["bad-length", default: 0] > 100)
        #expect(reasons.keys.count >= 6, "\(reasons)")
    }

    @Test func mutationsOfUnfingerprintedMessagesReachTheAttributeChecks() {
        // Without FINGERPRINT most value changes are not caught by the CRC, so the per-type checks run.
        let seed = STUNMessage(method: .allocate, messageClass: .request, transactionID: RFC5769.transactionID,
                               attributes: STUNAttributeRoundTripTests.everyKind).serialized()
        var random = SplitMix64(seed: 12)
        var reasons: Set<String> = []
        for _ in 0..<3000 {
            do throws(STUNError) { _ = try STUNMessage(parsing: Self.mutated(seed, using: &random)) } catch { reasons.insert(error.reason) }
        }
        #expect(reasons.isSuperset(of: ["bad-attribute-length", "bad-address-family", "truncated-attribute", "bad-length"]), "\(reasons)")
    }
}
