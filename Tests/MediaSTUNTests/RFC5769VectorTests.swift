import Testing

@testable import MediaSTUN

/// RFC 5769's vectors both ways: parsed (attributes, integrity, fingerprint) and written again from the
/// same attributes in the same order, byte for byte.
@Suite struct RFC5769VectorTests {
    let shortTermKey = STUNIntegrityKey.shortTerm(password: RFC5769.password)

    // MARK: §2.1 sample request

    @Test func sampleRequestParses() throws {
        let message = try STUNMessage(parsing: RFC5769.request)
        #expect(message.method == .binding)
        #expect(message.messageClass == .request)
        #expect(message.transactionID == RFC5769.transactionID)
        #expect(message.software == "STUN test client")
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.iceControlling == nil)
        #expect(message.username == "evtj:h6vY")
        #expect(message.hasIntegrity)
        #expect(message.hasFingerprint)
        #expect(message.attributes.last == .fingerprint(0xE57A_3BCF))
        #expect(message.unknownComprehensionRequired.isEmpty)
        #expect(STUNMessage.looksLikeSTUN(RFC5769.request))
    }

    @Test func sampleRequestIntegrityChecksWithThePasswordOnly() throws {
        try STUNMessage.verifyIntegrity(of: RFC5769.request, key: shortTermKey)
        _ = try STUNMessage(parsing: RFC5769.request, key: shortTermKey)
        #expect(throws: STUNError.integrityMismatch) {
            try STUNMessage.verifyIntegrity(of: RFC5769.request, key: .shortTerm(password: "VOkJxbRl1RmTxUk/WvJxBu"))
        }
    }

    @Test func sampleRequestIsWrittenAgainByteForByte() {
        let message = STUNMessage(method: .binding, messageClass: .request, transactionID: RFC5769.transactionID, attributes: [
            .software("STUN test client"),
            .priority(0x6E00_01FF),
            .iceControlled(0x932F_F9B1_5126_3B36),
            .username("evtj:h6vY"),
        ])
        // The RFC pads USERNAME with spaces, which MESSAGE-INTEGRITY covers.
        #expect(message.serialized(integrity: shortTermKey, fingerprint: true, paddingByte: 0x20) == RFC5769.request)
    }

    @Test func parsedSampleRequestReserializes() throws {
        let parsed = try STUNMessage(parsing: RFC5769.request)
        #expect(parsed.serialized(integrity: shortTermKey, fingerprint: true, paddingByte: 0x20) == RFC5769.request)
        // Zero padding is what the module writes by default; integrity and fingerprint still check.
        let zeroPadded = parsed.serialized(integrity: shortTermKey, fingerprint: true)
        #expect(zeroPadded != RFC5769.request)
        try STUNMessage.verifyIntegrity(of: zeroPadded, key: shortTermKey)
        #expect(try STUNMessage(parsing: zeroPadded).attributes.dropLast(2) == parsed.attributes.dropLast(2))
    }

    // MARK: §2.2 and §2.3 responses

    @Test(arguments: [
        (RFC5769.ipv4Response, "192.0.2.1:32853"),
        (RFC5769.ipv6Response, "[2001:db8:1234:5678:11:2233:4455:6677]:32853"),
    ])
    func sampleResponseParsesAndChecks(bytes: [UInt8], mapped: String) throws {
        let message = try STUNMessage(parsing: bytes, key: shortTermKey)
        #expect(message.method == .binding)
        #expect(message.messageClass == .successResponse)
        #expect(message.transactionID == RFC5769.transactionID)
        #expect(message.software == "test vector")
        #expect(message.xorMappedAddress?.description == mapped)
        #expect(message.xorMappedAddress == TransportAddress(mapped))
        #expect(message.hasFingerprint)
    }

    @Test(arguments: [
        (RFC5769.ipv4Response, "192.0.2.1:32853"),
        (RFC5769.ipv6Response, "[2001:db8:1234:5678:11:2233:4455:6677]:32853"),
    ])
    func sampleResponseIsWrittenAgainByteForByte(bytes: [UInt8], mapped: String) throws {
        let address = try #require(TransportAddress(mapped))
        let response = STUNMessage(method: .binding, messageClass: .successResponse, transactionID: RFC5769.transactionID,
                                   attributes: [.software("test vector"), .xorMappedAddress(address)])
        #expect(response.serialized(integrity: shortTermKey, fingerprint: true, paddingByte: 0x20) == bytes)
    }

    // MARK: §2.4 long-term credentials

    @Test func longTermRequestParsesAndChecksWithTheMD5Key() throws {
        // RFC 5769 §2.4 gives the password before and after SASLprep; this module does not do SASLprep
        // (RFC 8489 replaced it with OpaqueString), so the key is made from the prepared form.
        let key = STUNIntegrityKey.longTerm(username: RFC5769.longTermUsername, realm: RFC5769.longTermRealm,
                                            password: RFC5769.longTermPreparedPassword)
        let message = try STUNMessage(parsing: RFC5769.longTermRequest, key: key)
        #expect(message.transactionID == RFC5769.longTermTransactionID)
        #expect(message.username == RFC5769.longTermUsername)
        #expect(message.nonce == RFC5769.longTermNonce)
        #expect(message.realm == RFC5769.longTermRealm)
        #expect(!message.hasFingerprint)
        // Unprepared, the password gives another key.
        let raw = STUNIntegrityKey.longTerm(username: RFC5769.longTermUsername, realm: RFC5769.longTermRealm,
                                            password: RFC5769.longTermRawPassword)
        #expect(throws: STUNError.integrityMismatch) { try STUNMessage.verifyIntegrity(of: RFC5769.longTermRequest, key: raw) }
    }

    @Test func longTermRequestIsWrittenAgainByteForByte() {
        let key = STUNIntegrityKey.longTerm(username: RFC5769.longTermUsername, realm: RFC5769.longTermRealm,
                                            password: RFC5769.longTermPreparedPassword)
        let message = STUNMessage(method: .binding, messageClass: .request, transactionID: RFC5769.longTermTransactionID,
                                  attributes: [.username(RFC5769.longTermUsername), .nonce(RFC5769.longTermNonce),
                                               .realm(RFC5769.longTermRealm)])
        #expect(message.serialized(integrity: key) == RFC5769.longTermRequest)
    }

    @Test func longTermKeyIsMD5OfUsernameRealmPassword() {
        // RFC 8489 §9.2.2's example: MD5("user:realm:pass") = 0x8493fbc53ba582fb4c044c456bdc40eb.
        let key = STUNIntegrityKey.longTerm(username: "user", realm: "realm", password: "pass")
        #expect(key.bytes == [0x84, 0x93, 0xFB, 0xC5, 0x3B, 0xA5, 0x82, 0xFB, 0x4C, 0x04, 0x4C, 0x45, 0x6B, 0xDC, 0x40, 0xEB])
    }
}
