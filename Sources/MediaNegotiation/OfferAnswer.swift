import MediaCore
import MediaSDP

/// The SSRCs and CNAME of a stream this side sends (RFC 5576 §4): `a=ssrc` lines, and with RTX the
/// `a=ssrc-group:FID` pairing (RFC 4588 §8.3).
public struct SendingSource: Sendable, Hashable {
    public var ssrc: UInt32
    public var retransmissionSSRC: UInt32?
    public var cname: String

    public init(ssrc: UInt32, retransmissionSSRC: UInt32? = nil, cname: String) {
        self.ssrc = ssrc
        self.retransmissionSSRC = retransmissionSSRC
        self.cname = cname
    }
}

/// What this side puts in an offer or answer besides its codecs.
public struct NegotiationOptions: Sendable {
    /// `o=`; raise `sessionVersion` with each new offer or answer (RFC 3264 §8).
    public var origin: SDPOrigin
    /// The session-level `c=` address.
    public var connectionAddress: String
    /// The `m=` port of each kind (9, the discard port, when transport is negotiated elsewhere, e.g. ICE).
    public var ports: [MediaKind: Int]
    /// The offer's transport protocol; an answer keeps the offer's (RFC 3264 §6.1).
    public var proto: String
    /// Offer only: the sections offered, in order.
    public var media: [MediaKind]
    /// What this side wants: an answer narrows it to what the offer allows (RFC 3264 §6.1).
    public var direction: SDPDirection
    /// `a=group:BUNDLE` (RFC 9143): offered over every section, answered over the accepted ones.
    public var bundle: Bool
    /// `a=rtcp-mux` (RFC 5761 §5.1.1): offered, and answered when offered.
    public var rtcpMux: Bool
    /// The streams this side sends, by kind; written when the direction sends.
    public var sources: [MediaKind: SendingSource]
    /// Offer only: list this codec's formats first (RFC 3264 §5.1: formats are in preference order).
    public var preferring: CodecName?

    public init(origin: SDPOrigin = SDPOrigin(sessionID: 0, sessionVersion: 1), connectionAddress: String = "0.0.0.0",
                ports: [MediaKind: Int] = [.audio: 9, .video: 9], proto: String = "RTP/AVPF",
                media: [MediaKind] = [.audio, .video], direction: SDPDirection = .sendrecv, bundle: Bool = true,
                rtcpMux: Bool = true, sources: [MediaKind: SendingSource] = [:], preferring: CodecName? = nil)
    {
        self.origin = origin
        self.connectionAddress = connectionAddress
        self.ports = ports
        self.proto = proto
        self.media = media
        self.direction = direction
        self.bundle = bundle
        self.rtcpMux = rtcpMux
        self.sources = sources
        self.preferring = preferring
    }

    func port(_ kind: MediaKind) -> Int { ports[kind] ?? 9 }

    func emptySession() -> SessionDescription {
        let addressType = connectionAddress.contains(":") ? "IP6" : "IP4"
        return SessionDescription(origin: origin, connection: SDPConnection(addressType: addressType, address: connectionAddress))
    }
}

/// A format both sides use, as an answer settled it.
public struct NegotiatedCodec: Sendable, Hashable {
    /// The offerer's payload type, which the answer reuses (RFC 3264 §6.1).
    public var payloadType: UInt8
    /// This side's capability that took the format.
    public var capability: CodecCapability
    /// The `a=fmtp` parameters the answer states (what this side receives).
    public var localParameters: [String: String]
    /// The offerer's parameters: its receive limits, which what this side sends must respect.
    public var remoteParameters: [String: String]
    /// The RTCP feedback both support (RFC 4585 §4.2).
    public var feedback: [RTCPFeedbackType]
    /// The RTX payload type paired with it by `apt` (RFC 4588 §8.1), when both want RTX.
    public var retransmissionPayloadType: UInt8?
    /// For video, what the other side receives (its max-fs, level, imageattr, framerate): the
    /// `remote` of `chooseVideoFormat`.
    public var remoteVideoLimits: RemoteVideoLimits?
}

extension NegotiatedCodec {
    /// `format` of the other side's `section` as `choice` takes it: the feedback both support
    /// (RFC 4585 §4.2), its RTX payload type when the capability wants RTX (RFC 4588 §8.1), and for
    /// video the other side's receive limits.
    init(_ format: OfferedFormat, choice: FormatChoice, in section: MediaDescription) throws(SDPError) {
        let capability = choice.capability, payloadType = format.payloadType
        self.init(payloadType: payloadType, capability: capability, localParameters: choice.parameters,
                  remoteParameters: format.parameters, feedback: capability.commonFeedback(try section.feedback(for: payloadType)),
                  retransmissionPayloadType: capability.retransmission ? try section.retransmissionPayloadType(for: payloadType) : nil,
                  remoteVideoLimits: capability.kind == .video ? try RemoteVideoLimits(media: section, payloadType: payloadType) : nil)
    }
}

/// What became of one offered media section.
public struct MediaNegotiationResult: Sendable, Hashable {
    public var mid: String?
    /// The `m=` media type, e.g. "video" or "application".
    public var type: String
    public var outcome: Outcome
    /// The offered formats this side does not take, in the offer's order, each with why (whether
    /// or not the section is accepted); empty when the section is refused as a whole before its
    /// formats are looked at (port 0, not RTP, a media type without codecs).
    public var refusedFormats: [RefusedFormat] = []

    public init(mid: String?, type: String, outcome: Outcome, refusedFormats: [RefusedFormat] = []) {
        self.mid = mid
        self.type = type
        self.outcome = outcome
        self.refusedFormats = refusedFormats
    }

    /// An offered payload type this side does not take.
    public struct RefusedFormat: Sendable, Hashable {
        public var payloadType: UInt8
        /// The format as offered: `AV1/90000`, `H264 profile 64001f (High 3.1) packetization-mode 1`.
        public var format: String
        /// Why not: `not supported`, `no High profile here`, `RTX of payload type 98, which is not taken`.
        public var reason: String
    }

    public enum Outcome: Sendable, Hashable {
        /// The codecs in the offer's order, and the answer's direction.
        case accepted(codecs: [NegotiatedCodec], direction: SDPDirection)
        /// Answered with port 0 (RFC 3264 §6), and why.
        case rejected(reason: String)
    }

    /// The negotiated codecs; empty when rejected.
    public var codecs: [NegotiatedCodec] {
        if case .accepted(let codecs, _) = outcome { return codecs }
        return []
    }

    /// Why the section was rejected; nil when accepted.
    public var rejectionReason: String? {
        if case .rejected(let reason) = outcome { return reason }
        return nil
    }
}

/// An offer (RFC 3264 §5) of `capabilities`: one section per kind in `options.media` that has a
/// codec, payload types from 96 in preference order with RTX right after each codec that wants it
/// (`apt`, RFC 4588 §8.1), its `a=rtcp-fb` lines (RFC 4585 §4.2), `a=mid` (RFC 5888 §4), and
/// `a=ssrc`/`a=ssrc-group:FID` when sending.
public func makeOffer(capabilities: [CodecCapability], options: NegotiationOptions = NegotiationOptions()) -> SessionDescription {
    let ordered = options.preferring.map { capabilities.preferring($0) } ?? capabilities
    var session = options.emptySession()
    var payloadTypes = PayloadTypeAllocator()
    for kind in options.media {
        let codecs = ordered.filter { $0.kind == kind }
        guard !codecs.isEmpty else { continue }
        var section = MediaDescription(type: kind.rawValue, port: options.port(kind), proto: options.proto, formats: [])
        section.appendAttribute("mid", value: String(session.media.count))
        section.setDirection(options.direction)
        if options.rtcpMux { section.appendAttribute("rtcp-mux") }
        var withRetransmission = false
        for codec in codecs {
            guard let payloadType = payloadTypes.next() else { break }
            let rtx = codec.retransmission ? payloadTypes.next() : nil
            withRetransmission = withRetransmission || rtx != nil
            section.appendFormat(codec, payloadType: payloadType, parameters: codec.parameters, feedback: codec.feedback, rtx: rtx)
        }
        if options.direction.sends, let source = options.sources[kind] {
            section.appendSources(source, withRetransmission: withRetransmission)
        }
        session.media.append(section)
    }
    if options.bundle, !session.media.isEmpty {
        session.append(SDPGroup(semantics: "BUNDLE", mids: session.media.compactMap(\.mid)))
    }
    return session
}

/// The answer (RFC 3264 §6) to `offer`: for each offered section, the offered formats this side
/// takes, in the offer's order and with the offer's payload types (§6.1); RTX where both want it,
/// mapped by `apt`; the feedback both support; the direction reversed and narrowed to
/// `options.direction`; `a=mid` and `a=rtcp-mux` kept; BUNDLE answered over the accepted sections.
/// A section with nothing in common is answered with port 0 (§6) and the reason in its result.
public func makeAnswer(to offer: SessionDescription, capabilities: [CodecCapability],
                       options: NegotiationOptions = NegotiationOptions()) -> (SessionDescription, [MediaNegotiationResult])
{
    var answer = options.emptySession()
    var results: [MediaNegotiationResult] = []
    for offered in offer.media {
        var section: MediaDescription?
        var outcome: MediaNegotiationResult.Outcome
        var refused: [MediaNegotiationResult.RefusedFormat] = []
        do {
            (section, outcome, refused) = try answerSection(offered, in: offer, capabilities: capabilities, options: options)
        } catch {
            (section, outcome) = (nil, .rejected(reason: "malformed offer: \(error)"))
        }
        answer.media.append(section ?? rejection(of: offered))
        results.append(MediaNegotiationResult(mid: offered.mid, type: offered.type, outcome: outcome, refusedFormats: refused))
    }
    let offeredBundle = (try? offer.groups())?.first { $0.semantics == "BUNDLE" }
    if options.bundle, let offeredBundle {
        let accepted = Set(results.filter { $0.rejectionReason == nil }.compactMap(\.mid))
        let mids = offeredBundle.mids.filter(accepted.contains)
        if !mids.isEmpty { answer.attributes.insert(SDPGroup(semantics: "BUNDLE", mids: mids).attribute, at: 0) }
    }
    return (answer, results)
}

/// RFC 3264 §6: a rejected section keeps its media type and formats, with port 0; its mid still names it.
private func rejection(of offered: MediaDescription) -> MediaDescription {
    var section = MediaDescription(type: offered.type, port: 0, proto: offered.proto, formats: offered.formats)
    if let mid = offered.mid { section.appendAttribute("mid", value: mid) }
    return section
}

/// The answer's section for `offered`, nil when rejected, the outcome, and the formats not taken.
private func answerSection(_ offered: MediaDescription, in offer: SessionDescription, capabilities: [CodecCapability],
                           options: NegotiationOptions) throws(SDPError)
    -> (MediaDescription?, MediaNegotiationResult.Outcome, [MediaNegotiationResult.RefusedFormat])
{
    guard offered.port != 0 else { return (nil, .rejected(reason: "the offer disabled it (port 0)"), []) }
    guard let kind = MediaKind(rawValue: offered.type) else {
        return (nil, .rejected(reason: "\(offered.type) media is not supported"), [])
    }
    guard offered.proto.uppercased().contains("RTP/") else {
        return (nil, .rejected(reason: "transport \(offered.proto) is not RTP"), [])
    }
    let local = capabilities.filter { $0.kind == kind }
    var codecs: [NegotiatedCodec] = []
    var refused: [MediaNegotiationResult.RefusedFormat] = []
    var retransmissions: [OfferedFormat] = []
    var unmatched: [String] = []
    for payloadType in offered.payloadTypes {
        guard let map = try offered.rtpMap(for: payloadType) else {
            // A dynamic type without a mapping (a static one has RFC 3551's).
            refused.append(.init(payloadType: payloadType, format: "payload type \(payloadType)", reason: "no a=rtpmap names it"))
            continue
        }
        let format = OfferedFormat(payloadType: payloadType, map: map, parameters: try offered.formatParameters(for: payloadType))
        guard !format.isRetransmission else {
            retransmissions.append(format)
            continue
        }
        switch format.choose(from: local) {
        case .success(let choice): codecs.append(try NegotiatedCodec(format, choice: choice, in: offered))
        case .failure(let refusal):
            refused.append(.init(payloadType: payloadType, format: format.summary, reason: refusal.reason))
            unmatched.append("\(format.summary) (\(refusal.reason))")
        }
    }
    let repaired = Set(codecs.compactMap(\.retransmissionPayloadType))
    for format in retransmissions where !repaired.contains(format.payloadType) {
        let apt = format.parameters["apt"].map { "RTX of payload type \($0), which is not taken" } ?? "RTX without apt"
        refused.append(.init(payloadType: format.payloadType, format: format.summary, reason: apt))
    }
    guard !codecs.isEmpty else {
        let offeredText = unmatched.isEmpty ? "no RTP formats" : unmatched.joined(separator: "; ")
        return (nil, .rejected(reason: "no common codec: offered \(offeredText)"), refused)
    }
    let direction = answerDirection(offered: offered.direction(in: offer), local: options.direction)
    let used = Set(codecs.flatMap { [$0.payloadType] + ($0.retransmissionPayloadType.map { [$0] } ?? []) })
    var section = MediaDescription(type: offered.type, port: options.port(kind), proto: offered.proto,
                                   formats: offered.payloadTypes.filter(used.contains).map(String.init))
    if let mid = offered.mid { section.appendAttribute("mid", value: mid) }
    section.setDirection(direction)
    if offered.rtcpMux && options.rtcpMux { section.appendAttribute("rtcp-mux") }
    for codec in codecs {
        section.appendFormat(codec.capability, payloadType: codec.payloadType, parameters: codec.localParameters,
                             feedback: codec.feedback, rtx: codec.retransmissionPayloadType)
    }
    if direction.sends, let source = options.sources[kind] {
        section.appendSources(source, withRetransmission: codecs.contains { $0.retransmissionPayloadType != nil })
    }
    return (section, .accepted(codecs: codecs, direction: direction), refused)
}

/// RFC 3264 §6.1: this side sends only if the offerer receives, and receives only if it sends.
func answerDirection(offered: SDPDirection, local: SDPDirection) -> SDPDirection {
    local.restricted(sends: offered.receives, receives: offered.sends)
}

extension SDPDirection {
    /// Whether the side with this direction sends (RFC 3264 §5.1).
    public var sends: Bool { self == .sendrecv || self == .sendonly }
    public var receives: Bool { self == .sendrecv || self == .recvonly }

    /// This direction without sending unless `sends`, without receiving unless `receives`.
    func restricted(sends: Bool, receives: Bool) -> SDPDirection {
        switch (self.sends && sends, self.receives && receives) {
        case (true, true): .sendrecv
        case (true, false): .sendonly
        case (false, true): .recvonly
        case (false, false): .inactive
        }
    }
}

/// Dynamic payload types (RFC 3551 §3): 96-127, then 35-63 (RFC 8866 §6.6 leaves them free for
/// dynamic use when 96-127 run out).
struct PayloadTypeAllocator {
    private var remaining: [UInt8] = Array(96...127) + Array(35...63)

    mutating func next() -> UInt8? { remaining.isEmpty ? nil : remaining.removeFirst() }
}

extension MediaDescription {
    /// Adds one format: its payload type to `m=`, `a=rtpmap`, `a=fmtp` when it has parameters,
    /// `a=rtcp-fb` lines, and with `rtx` the RTX format that repairs it (RFC 4588 §8.1).
    mutating func appendFormat(_ codec: CodecCapability, payloadType: UInt8, parameters: [String: String],
                               feedback: [RTCPFeedbackType], rtx: UInt8?) {
        if !formats.contains(String(payloadType)) { formats.append(String(payloadType)) }
        append(SDPRTPMap(payloadType: payloadType, encodingName: codec.encodingName, clockRate: codec.clockRate,
                         channels: codec.channels))
        if !parameters.isEmpty { append(SDPFormatParameters(payloadType: payloadType, parameters: parameters)) }
        for type in feedback { append(SDPRTCPFeedback(payloadType: payloadType, type: type.type, parameter: type.parameter)) }
        guard let rtx else { return }
        if !formats.contains(String(rtx)) { formats.append(String(rtx)) }
        append(SDPRTPMap(payloadType: rtx, encodingName: "rtx", clockRate: codec.clockRate))
        append(SDPFormatParameters(payloadType: rtx, parameters: ["apt": String(payloadType)]))
    }

    /// Adds `a=ssrc-group:FID` (with RTX) and `a=ssrc:<id> cname:` lines (RFC 5576 §4).
    mutating func appendSources(_ source: SendingSource, withRetransmission: Bool) {
        var ssrcs = [source.ssrc]
        if withRetransmission, let rtx = source.retransmissionSSRC {
            ssrcs.append(rtx)
            append(SDPSourceGroup(semantics: "FID", ssrcs: ssrcs))
        }
        for ssrc in ssrcs { append(SDPSourceAttribute(ssrc: ssrc, name: "cname", value: source.cname)) }
    }
}
