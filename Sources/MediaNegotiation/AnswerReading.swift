import MediaSDP

/// What the `answer` to this side's `offer` settled, section by section (RFC 3264 §7): the formats
/// the answer lists (with the offer's payload types) and the capabilities that offered them, the
/// feedback and RTX both use, and this side's direction (the answer's, reversed). A section the
/// answer rejects (port 0, RFC 3264 §6) or lacks is rejected with the reason.
public func readAnswer(_ answer: SessionDescription, to offer: SessionDescription,
                       capabilities: [CodecCapability]) -> [MediaNegotiationResult] {
    offer.media.enumerated().map { index, offered in
        let outcome: MediaNegotiationResult.Outcome
        if index >= answer.media.count {
            outcome = .rejected(reason: "the answer has no section for it (RFC 3264 §6 wants one per offered section)")
        } else {
            do {
                outcome = try readAnsweredSection(answer.media[index], in: answer, offered: offered, capabilities: capabilities)
            } catch {
                outcome = .rejected(reason: "malformed answer: \(error)")
            }
        }
        return MediaNegotiationResult(mid: offered.mid, type: offered.type, outcome: outcome)
    }
}

private func readAnsweredSection(_ answered: MediaDescription, in answer: SessionDescription, offered: MediaDescription,
                                 capabilities: [CodecCapability]) throws(SDPError) -> MediaNegotiationResult.Outcome {
    guard answered.port != 0 else { return .rejected(reason: "the answer rejected it (port 0)") }
    let local = capabilities.filter { $0.kind.rawValue == offered.type }
    var codecs: [NegotiatedCodec] = []
    for payloadType in answered.payloadTypes where offered.payloadTypes.contains(payloadType) {
        let answeredMap = try answered.rtpMap(for: payloadType), offeredMap = try offered.rtpMap(for: payloadType)
        guard let map = answeredMap ?? offeredMap else { continue }
        let format = OfferedFormat(payloadType: payloadType, map: map, parameters: try answered.formatParameters(for: payloadType))
        guard !format.isRetransmission, case .success(let choice) = format.choose(from: local) else { continue }
        let capability = choice.capability
        let rtx = capability.retransmission ? try answered.retransmissionPayloadType(for: payloadType) : nil
        codecs.append(NegotiatedCodec(payloadType: payloadType, capability: capability,
                                      localParameters: try offered.formatParameters(for: payloadType),
                                      remoteParameters: format.parameters,
                                      feedback: capability.commonFeedback(try answered.feedback(for: payloadType)),
                                      retransmissionPayloadType: rtx,
                                      remoteVideoLimits: capability.kind == .video
                                          ? try RemoteVideoLimits(media: answered, payloadType: payloadType) : nil))
    }
    guard !codecs.isEmpty else {
        return .rejected(reason: "the answer lists none of the offered formats (\(answered.formats.joined(separator: " ")))")
    }
    return .accepted(codecs: codecs, direction: answered.direction(in: answer).reversed)
}
