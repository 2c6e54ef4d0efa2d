import Testing

@testable import MediaSTUN

/// Every attribute kind written and parsed back, with its wire bytes where the layout matters; the
/// computed attributes (integrity, fingerprint); requests and responses.
@Suite struct STUNAttributeRoundTripTests {
    static let transactionID = STUNTransactionID(bytes: Array(1...12))
    static let v4 = TransportAddress(ip: .ipv4(192, 0, 2, 1), port: 32853)
    static let v6 = TransportAddress("[2001:db8::42]:3478")!

    /// Every non-computed attribute kind, with IPv4 and IPv6 for the address ones.
    static let everyKind: [STUNAttribute] = [
        .mappedAddress(v4), .mappedAddress(v6),
        .username("alice:bob"), .username(""),
        .errorCode(.roleConflict), .errorCode(STUNErrorCode(code: 699, reason: "")),
        .unknownAttributes([0x0003, 0x7FFF]), .unknownAttributes([]),
        .realm("example.org"), .nonce("f//499k954d6OL34oL9FSTvy64sA"),
        .passwordAlgorithm(.sha256), .passwordAlgorithms([.md5, .sha256, STUNPasswordAlgorithm(algorithm: 9, parameters: [1, 2, 3])]),
        .userhash([UInt8](repeating: 0xAB, count: 32)), .alternateDomain("turn.example.org"),
        .xorMappedAddress(v4), .xorMappedAddress(v6),
        .software("Sluice"), .alternateServer(v4), .alternateServer(v6),
        .priority(0x6E00_01FF), .useCandidate, .iceControlled(0x0123_4567_89AB_CDEF), .iceControlling(.max),
        .channelNumber(0x4001), .lifetime(600),
        .xorPeerAddress(v4), .xorPeerAddress(v6), .xorRelayedAddress(v4), .xorRelayedAddress(v6),
        .data([]), .data([1]), .data([1, 2, 3, 4, 5]),
        .requestedAddressFamily(0x02), .additionalAddressFamily(0x02), .evenPort(true), .evenPort(false),
        .requestedTransport(17), .dontFragment, .reservationToken([1, 2, 3, 4, 5, 6, 7, 8]),
        .other(type: 0x802B, value: [9, 9, 9]), .other(type: 0x7001, value: []),
    ]

    @Test(arguments: everyKind)
    func attributeRoundTrips(attribute: STUNAttribute) throws {
        let message = STUNMessage(method: .binding, messageClass: .request, transactionID: Self.transactionID, attributes: [attribute])
        let bytes = message.serialized()
        #expect(bytes.count % 4 == 0)
        #expect(Int(bytes[2]) << 8 | Int(bytes[3]) == bytes.count - 20)
        #expect(Int(bytes[20]) << 8 | Int(bytes[21]) == Int(attribute.type))
        #expect(try STUNMessage(parsing: bytes) == message)
    }

    @Test func allKindsTogetherWithIntegrityAndFingerprint() throws {
        let key = STUNIntegrityKey.shortTerm(password: "secret")
        for sha256 in [false, true] {
            let message = STUNMessage(method: .allocate, messageClass: .request, transactionID: Self.transactionID, attributes: Self.everyKind)
            let bytes = message.serialized(integrity: key, sha256: sha256, fingerprint: true)
            let parsed = try STUNMessage(parsing: bytes, key: key)
            #expect(Array(parsed.attributes.dropLast(2)) == Self.everyKind)
            if case .fingerprint = parsed.attributes.last {} else { Issue.record("no FINGERPRINT last") }
            let integrity = parsed.attributes[parsed.attributes.count - 2]
            #expect(integrity.type == (sha256 ? 0x001C : 0x0008))
            // Written again, with the computed attributes skipped and recomputed: the same bytes.
            #expect(parsed.serialized(integrity: key, sha256: sha256, fingerprint: true) == bytes)
        }
    }

    // MARK: Wire layout

    @Test func xorMappedAddressIPv4Bytes() {
        let message = STUNMessage(method: .binding, messageClass: .successResponse, transactionID: Self.transactionID,
                                  attributes: [.xorMappedAddress(Self.v4)])
        #expect(Array(message.serialized()[20...]) == [
            0x00, 0x20, 0x00, 0x08,  // XOR-MAPPED-ADDRESS, 8 bytes
            0x00, 0x01, 0xA1, 0x47,  // family IPv4, port 32853 ^ 0x2112
            0xE1, 0x12, 0xA6, 0x43,  // 192.0.2.1 ^ 0x2112A442
        ])
    }

    @Test func xorMappedAddressIPv6XorsWithCookieAndTransactionID() {
        let message = STUNMessage(method: .binding, messageClass: .successResponse, transactionID: Self.transactionID,
                                  attributes: [.xorMappedAddress(Self.v6)])
        let address: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [0x42]
        let mask: [UInt8] = [0x21, 0x12, 0xA4, 0x42] + Array(1...12)
        #expect(Array(message.serialized()[20...]) == [
            0x00, 0x20, 0x00, 0x14,  // XOR-MAPPED-ADDRESS, 20 bytes
            0x00, 0x02, 0x2C, 0x84,  // family IPv6, port 3478 (0x0D96) ^ 0x2112
        ] + zip(address, mask).map { $0 ^ $1 })
    }

    @Test func errorCodeClassAndNumber() {
        let message = STUNMessage(method: .binding, messageClass: .errorResponse, transactionID: Self.transactionID,
                                  attributes: [.errorCode(.roleConflict)])
        #expect(Array(message.serialized()[20...]) == [
            0x00, 0x09, 0x00, 0x11,  // ERROR-CODE, 17 bytes
            0x00, 0x00, 0x04, 0x57,  // class 4, number 87
        ] + Array("Role Conflict".utf8) + [0, 0, 0])  // 13 bytes of reason, 3 of padding
    }

    @Test func channelNumberLifetimeAndTransportHaveReservedBytes() {
        let message = STUNMessage(method: .channelBind, messageClass: .request, transactionID: Self.transactionID,
                                  attributes: [.channelNumber(0x4000), .lifetime(600), .requestedTransport(17), .evenPort(true)])
        #expect(Array(message.serialized()[20...]) == [
            0x00, 0x0C, 0x00, 0x04, 0x40, 0x00, 0x00, 0x00,  // CHANNEL-NUMBER 0x4000, RFFU
            0x00, 0x0D, 0x00, 0x04, 0x00, 0x00, 0x02, 0x58,  // LIFETIME 600
            0x00, 0x19, 0x00, 0x04, 0x11, 0x00, 0x00, 0x00,  // REQUESTED-TRANSPORT UDP, RFFU
            0x00, 0x18, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00,  // EVEN-PORT R=1, padding
        ])
    }

    @Test func computedAttributesInTheListAreNotWritten() throws {
        let message = STUNMessage(method: .binding, messageClass: .request, transactionID: Self.transactionID,
                                  attributes: [.messageIntegrity([UInt8](repeating: 0, count: 20)), .fingerprint(7), .priority(1)])
        let bytes = message.serialized()
        #expect(bytes.count == 28)
        #expect(try STUNMessage(parsing: bytes).attributes == [.priority(1)])
    }

    @Test func attributesPastTheLengthFieldAreLeftOut() throws {
        // The header's 16-bit length bounds a message: the attribute that would cross it, and those after,
        // are not written; what is written still parses and checks.
        let key = STUNIntegrityKey.shortTerm(password: "pw")
        let big = [UInt8](repeating: 7, count: 40_000)
        let message = STUNMessage(method: .send, messageClass: .indication, transactionID: Self.transactionID,
                                  attributes: [.data(big), .data(big), .priority(1)])
        let bytes = message.serialized(integrity: key, sha256: true, fingerprint: true)
        let parsed = try STUNMessage(parsing: bytes, key: key)
        #expect(parsed.data == big)
        #expect(parsed.priority == nil)
        let huge = STUNMessage(method: .send, messageClass: .indication, attributes: [.data([UInt8](repeating: 1, count: 70_000))])
        #expect(try STUNMessage(parsing: huge.serialized()).attributes.isEmpty)
    }

    @Test func integrityLengthFieldCoversOnlyUpToIntegrity() throws {
        // RFC 8489 §14.5/§14.7: MESSAGE-INTEGRITY is computed with the length counting up to itself, then
        // FINGERPRINT with the length counting it too.
        let key = STUNIntegrityKey.shortTerm(password: "pw")
        let message = STUNMessage(method: .binding, messageClass: .request, transactionID: Self.transactionID, attributes: [.priority(5)])
        let withFingerprint = message.serialized(integrity: key, fingerprint: true)
        let without = message.serialized(integrity: key)
        #expect(withFingerprint.count == without.count + 8)
        #expect(Array(withFingerprint[4..<(without.count)]) == Array(without[4...]))  // same HMAC bytes
        #expect(without[3] == 8 + 24)
        #expect(withFingerprint[3] == 8 + 24 + 8)
    }

    @Test func messageIntegritySHA256IsCheckedWhenBothArePresent() throws {
        // A message with MESSAGE-INTEGRITY and then MESSAGE-INTEGRITY-SHA256: the SHA-256 one is checked.
        let key = STUNIntegrityKey.shortTerm(password: "pw")
        let base = STUNMessage(method: .binding, messageClass: .request, transactionID: Self.transactionID, attributes: [.priority(5)])
        var withSHA1 = base.serialized(integrity: key)  // header + PRIORITY + MESSAGE-INTEGRITY
        withSHA1.setBigEndian(UInt16(withSHA1.count - 20 + 36), at: 2)
        let mac = Crypto.hmac(.sha256, key: key.bytes, data: withSHA1)
        let both = withSHA1 + [0x00, 0x1C, 0x00, 0x20] + mac
        try STUNMessage.verifyIntegrity(of: both, key: key)
        var brokenSHA256 = both
        brokenSHA256[brokenSHA256.count - 1] ^= 1
        #expect(throws: STUNError.integrityMismatch) { try STUNMessage.verifyIntegrity(of: brokenSHA256, key: key) }
    }

    @Test func attributesAfterIntegrityAreIgnored() throws {
        // RFC 8489 §14.5: what follows MESSAGE-INTEGRITY, other than -SHA256 and FINGERPRINT, is dropped.
        let key = STUNIntegrityKey.shortTerm(password: "pw")
        let base = STUNMessage(method: .binding, messageClass: .request, transactionID: Self.transactionID, attributes: [.priority(5)])
        var bytes = base.serialized(integrity: key) + [0x00, 0x25, 0x00, 0x00]  // USE-CANDIDATE, unauthenticated
        bytes[3] += 4
        let parsed = try STUNMessage(parsing: bytes, key: key)
        #expect(!parsed.useCandidate)
        #expect(parsed.priority == 5)
    }

    // MARK: Requests and responses

    @Test func bindingExchange() throws {
        let request = STUNMessage.bindingRequest(attributes: [.username("R:L"), .priority(100), .iceControlling(42), .useCandidate])
        let received = try STUNMessage(parsing: request.serialized(integrity: .shortTerm(password: "pw"), fingerprint: true),
                                       key: .shortTerm(password: "pw"))
        #expect(received.useCandidate)
        #expect(received.iceControlling == 42)
        let response = received.bindingSuccessResponse(source: Self.v6)
        let parsedResponse = try STUNMessage(parsing: response.serialized(integrity: .shortTerm(password: "pw")))
        #expect(parsedResponse.messageClass == .successResponse)
        #expect(parsedResponse.transactionID == request.transactionID)
        #expect(parsedResponse.xorMappedAddress == Self.v6)
        let conflict = received.errorResponse(.roleConflict)
        #expect(try STUNMessage(parsing: conflict.serialized()).errorCode == .roleConflict)
    }

    @Test func unknownComprehensionRequiredAttributesAreListed() throws {
        let message = STUNMessage(method: .binding, messageClass: .request, attributes: [
            .other(type: 0x0003, value: [0, 0, 0, 0]),  // CHANGE-REQUEST (RFC 5780): not known here
            .other(type: 0x8030, value: [1]),           // comprehension-optional: not listed
            .other(type: 0x0003, value: []),
            .other(type: 0x7FFF, value: []),
        ])
        let parsed = try STUNMessage(parsing: message.serialized())
        #expect(parsed.unknownComprehensionRequired == [0x0003, 0x7FFF])
        let reply = parsed.errorResponse(.unknownAttribute, attributes: [.unknownAttributes(parsed.unknownComprehensionRequired)])
        let parsedReply = try STUNMessage(parsing: reply.serialized())
        #expect(parsedReply.errorCode?.code == 420)
        #expect(parsedReply.unknownAttributes == [0x0003, 0x7FFF])
    }

    @Test func randomTransactionIDsDiffer() {
        #expect(STUNTransactionID.random() != STUNTransactionID.random())
        #expect(STUNTransactionID.random().bytes.count == 12)
        #expect(STUNTransactionID(bytes: [1, 2]).bytes == [1, 2] + [UInt8](repeating: 0, count: 10))
    }
}
