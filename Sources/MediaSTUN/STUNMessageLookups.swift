// Convenience on STUN messages: the first attribute of each kind, what a receiver does not understand,
// and building binding requests and responses (RFC 8489 §6.3).

extension STUNMessage {
    /// The value of the first attribute `extract` accepts.
    private func first<Value>(_ extract: (STUNAttribute) -> Value?) -> Value? {
        for attribute in attributes { if let value = extract(attribute) { return value } }
        return nil
    }

    public var username: String? { first { if case .username(let v) = $0 { v } else { nil } } }
    public var realm: String? { first { if case .realm(let v) = $0 { v } else { nil } } }
    public var nonce: String? { first { if case .nonce(let v) = $0 { v } else { nil } } }
    public var software: String? { first { if case .software(let v) = $0 { v } else { nil } } }
    public var mappedAddress: TransportAddress? { first { if case .mappedAddress(let v) = $0 { v } else { nil } } }
    public var xorMappedAddress: TransportAddress? { first { if case .xorMappedAddress(let v) = $0 { v } else { nil } } }
    public var alternateServer: TransportAddress? { first { if case .alternateServer(let v) = $0 { v } else { nil } } }
    public var priority: UInt32? { first { if case .priority(let v) = $0 { v } else { nil } } }
    public var useCandidate: Bool { first { if case .useCandidate = $0 { true } else { nil } } ?? false }
    public var iceControlling: UInt64? { first { if case .iceControlling(let v) = $0 { v } else { nil } } }
    public var iceControlled: UInt64? { first { if case .iceControlled(let v) = $0 { v } else { nil } } }
    public var errorCode: STUNErrorCode? { first { if case .errorCode(let v) = $0 { v } else { nil } } }
    public var unknownAttributes: [UInt16]? { first { if case .unknownAttributes(let v) = $0 { v } else { nil } } }
    public var lifetime: UInt32? { first { if case .lifetime(let v) = $0 { v } else { nil } } }
    public var xorRelayedAddress: TransportAddress? { first { if case .xorRelayedAddress(let v) = $0 { v } else { nil } } }
    public var xorPeerAddress: TransportAddress? { first { if case .xorPeerAddress(let v) = $0 { v } else { nil } } }
    public var data: [UInt8]? { first { if case .data(let v) = $0 { v } else { nil } } }
    public var channelNumber: UInt16? { first { if case .channelNumber(let v) = $0 { v } else { nil } } }
    public var reservationToken: [UInt8]? { first { if case .reservationToken(let v) = $0 { v } else { nil } } }
    public var passwordAlgorithms: [STUNPasswordAlgorithm]? {
        first { if case .passwordAlgorithms(let v) = $0 { v } else { nil } }
    }
    /// Whether the message carries MESSAGE-INTEGRITY or MESSAGE-INTEGRITY-SHA256.
    public var hasIntegrity: Bool {
        attributes.contains { if case .messageIntegrity = $0 { true } else if case .messageIntegritySHA256 = $0 { true } else { false } }
    }
    public var hasFingerprint: Bool { attributes.contains { if case .fingerprint = $0 { true } else { false } } }

    /// The comprehension-required types (0x0000-0x7FFF) this module does not know, in order, each once:
    /// a request carrying any gets a 420 with them in UNKNOWN-ATTRIBUTES (RFC 8489 §7.3.1); a response
    /// carrying any is a failed transaction (§7.3.3).
    public var unknownComprehensionRequired: [UInt16] {
        var types: [UInt16] = []
        for case .other(let type, _) in attributes where STUNAttributeType.isComprehensionRequired(type) && !types.contains(type) {
            types.append(type)
        }
        return types
    }

    // MARK: Requests and responses

    /// A Binding request (RFC 8489 §6.1; as an ICE check, RFC 8445 §7.1.1, with USERNAME, PRIORITY,
    /// ICE-CONTROLLING/ED and maybe USE-CANDIDATE among `attributes`).
    public static func bindingRequest(transactionID: STUNTransactionID = .random(), attributes: [STUNAttribute] = []) -> STUNMessage {
        STUNMessage(method: .binding, messageClass: .request, transactionID: transactionID, attributes: attributes)
    }

    /// A success response to this request: same method and transaction ID (RFC 8489 §6.3.1).
    public func successResponse(attributes: [STUNAttribute] = []) -> STUNMessage {
        STUNMessage(method: method, messageClass: .successResponse, transactionID: transactionID, attributes: attributes)
    }

    /// A Binding success response carrying XOR-MAPPED-ADDRESS of `source` (RFC 8489 §6.3.1.1).
    public func bindingSuccessResponse(source: TransportAddress, attributes: [STUNAttribute] = []) -> STUNMessage {
        successResponse(attributes: [.xorMappedAddress(source)] + attributes)
    }

    /// An error response to this request (RFC 8489 §6.3.1.1): ERROR-CODE first, then `attributes`; for
    /// 420 give the types in UNKNOWN-ATTRIBUTES (§14.13), e.g. `unknownComprehensionRequired`.
    public func errorResponse(_ code: STUNErrorCode, attributes: [STUNAttribute] = []) -> STUNMessage {
        STUNMessage(method: method, messageClass: .errorResponse, transactionID: transactionID,
                    attributes: [.errorCode(code)] + attributes)
    }
}
