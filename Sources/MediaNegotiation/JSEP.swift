import MediaCore
import MediaSDP

/// A track this side sends in a section: its `a=msid` (RFC 8830 §2) and SSRCs (RFC 5576 §4).
public struct WebRTCSender: Sendable, Hashable {
    /// The MediaStream id ("-" for none).
    public var streamID: String
    public var trackID: String
    public var source: SendingSource

    public init(streamID: String, trackID: String, source: SendingSource) {
        self.streamID = streamID
        self.trackID = trackID
        self.source = source
    }
}

/// What this side puts in a WebRTC offer or answer besides its codecs and transport (JSEP, RFC 8829 §5.2, §5.3).
public struct WebRTCOptions: Sendable {
    /// `o=`; raise `sessionVersion` with each new description (RFC 3264 §8).
    public var origin: SDPOrigin
    /// Offer only: the RTP sections offered, in order; their mids are "0", "1", ...
    public var media: [MediaKind]
    /// The track sent in the first section of each kind; a kind without one is not sent (JSEP §5.2.2).
    public var senders: [MediaKind: WebRTCSender]
    /// The kinds this side receives.
    public var receives: Set<MediaKind>
    /// The header extensions offered (ids 1, 2, ... in this order) and kept from an offer (with its ids).
    public var headerExtensions: [String]
    /// Feedback added to every video codec's own (the messages browsers offer, RFC 4585 §4.2).
    public var videoFeedback: [RTCPFeedbackType]
    /// Whether data channels are offered, and accepted in an answer (RFC 8841); rejected with port 0 otherwise.
    public var dataChannel: Bool
    /// `a=sctp-port` of the data channel section (RFC 8841 §5).
    public var sctpPort: Int
    /// `a=max-message-size` of the data channel section (RFC 8841 §6).
    public var maxMessageSize: Int
    /// The `c=` address of every section: 0.0.0.0 until a default candidate is known (JSEP §5.2.1).
    public var address: String
    /// The `m=` port: 9, the discard placeholder, or the default candidate's port (JSEP §5.2.1).
    public var port: Int
    /// Offer only: list this codec's formats first.
    public var preferring: CodecName?

    public init(origin: SDPOrigin = SDPOrigin(sessionID: 0, sessionVersion: 1), media: [MediaKind] = [.audio, .video],
                senders: [MediaKind: WebRTCSender] = [:], receives: Set<MediaKind> = [.audio, .video],
                headerExtensions: [String] = [RTPHeaderExtensionURI.mid, RTPHeaderExtensionURI.absSendTime,
                                              RTPHeaderExtensionURI.transportWideCC],
                videoFeedback: [RTCPFeedbackType] = [.nack, .pli, .fir, .remb, .transportCC], dataChannel: Bool = false,
                sctpPort: Int = 5000, maxMessageSize: Int = 262_144, address: String = "0.0.0.0", port: Int = 9,
                preferring: CodecName? = nil)
    {
        self.origin = origin
        self.media = media
        self.senders = senders
        self.receives = receives
        self.headerExtensions = headerExtensions
        self.videoFeedback = videoFeedback
        self.dataChannel = dataChannel
        self.sctpPort = sctpPort
        self.maxMessageSize = maxMessageSize
        self.address = address
        self.port = port
        self.preferring = preferring
    }

    /// What this side wants for a section of `kind`, `sending` if it has the sender for it.
    func direction(_ kind: MediaKind, sending: Bool) -> SDPDirection {
        SDPDirection.sendrecv.restricted(sends: sending, receives: receives.contains(kind))
    }

    /// `capabilities` with `videoFeedback` added to each video codec's feedback.
    func withVideoFeedback(_ capabilities: [CodecCapability]) -> [CodecCapability] {
        capabilities.map { capability in
            guard capability.kind == .video else { return capability }
            var extended = capability
            for type in videoFeedback where !extended.feedback.contains(where: type.matches) { extended.feedback.append(type) }
            return extended
        }
    }

    func negotiationOptions(direction: SDPDirection = .sendrecv) -> NegotiationOptions {
        NegotiationOptions(origin: origin, connectionAddress: address, ports: [.audio: port, .video: port],
                           proto: "UDP/TLS/RTP/SAVPF", media: media, direction: direction, bundle: true, rtcpMux: true,
                           preferring: preferring)
    }

    var connection: SDPConnection { SDPConnection(addressType: address.contains(":") ? "IP6" : "IP4", address: address) }

    /// The data channel section (RFC 8841 §4): `m=application <port> UDP/DTLS/SCTP webrtc-datachannel`.
    func dataChannelSection(mid: String, transport: TransportDescription, setup: SDPSetup) -> MediaDescription {
        var section = MediaDescription(type: "application", port: port, proto: "UDP/DTLS/SCTP", formats: ["webrtc-datachannel"],
                                       connections: [connection])
        section.attributes = transport.attributes(setup: setup) + [SDPMediaIdentifier(mid).attribute]
        section.append(SDPSCTPPort(sctpPort))
        section.append(SDPMaxMessageSize(maxMessageSize))
        return section
    }
}

extension MediaDescription {
    /// Rewrites an RTP section made by `makeOffer`/`makeAnswer` as WebRTC writes it (JSEP §5.2.1):
    /// `c=`, the transport lines, mid, extmaps, direction, msid, rtcp-mux and rtcp-rsize, then the
    /// codecs, then the sender's SSRCs with cname and msid.
    mutating func makeWebRTC(transport: TransportDescription, setup: SDPSetup, extensions: [SDPExtensionMap],
                             direction: SDPDirection, sender: WebRTCSender?, reducedSize: Bool, connection: SDPConnection)
    {
        let mid = self.mid, mux = rtcpMux
        let codecLines = attributes.filter { ["rtpmap", "fmtp", "rtcp-fb"].contains($0.name) }
        connections = [connection]
        attributes = transport.attributes(setup: setup)
        if let mid { append(SDPMediaIdentifier(mid)) }
        for map in extensions { append(map) }
        setDirection(direction)
        let sending = direction.sends ? sender : nil
        if let sending { append(SDPMediaStreamID(streamID: sending.streamID, trackID: sending.trackID)) }
        if mux { appendAttribute("rtcp-mux") }
        if reducedSize { appendAttribute("rtcp-rsize") }
        attributes += codecLines
        guard let sending else { return }
        let withRetransmission = attributes.contains { $0.name == "rtpmap" && ($0.value ?? "").lowercased().contains(" rtx/") }
        appendSources(sending.source, withRetransmission: withRetransmission)
        for ssrc in [sending.source.ssrc] + (withRetransmission ? sending.source.retransmissionSSRC.map { [$0] } ?? [] : []) {
            append(SDPSourceAttribute(ssrc: ssrc, name: "msid", value: "\(sending.streamID) \(sending.trackID)"))
        }
    }
}

/// A WebRTC offer (JSEP, RFC 8829 §5.2.1): one `UDP/TLS/RTP/SAVPF` section per kind in
/// `options.media` with codecs (mids "0", "1", ...), then a data channel section when
/// `options.dataChannel`; every section carries the same transport (RFC 9143 §7.1: an offerer does not
/// know yet whether BUNDLE is accepted) with `transport.setup` (`actpass` in a first offer, RFC 8842 §5.2;
/// the running DTLS role in a later one, JSEP §5.2.2), `a=rtcp-mux`,
/// `a=rtcp-rsize`, the header extensions with ids from 1, the codecs with their feedback and RTX,
/// and for each sender its `a=msid` and `a=ssrc` lines; `a=group:BUNDLE` over all sections.
public func makeWebRTCOffer(capabilities: [CodecCapability], transport: TransportDescription,
                            options: WebRTCOptions = WebRTCOptions()) -> SessionDescription
{
    var session = makeOffer(capabilities: options.withVideoFeedback(capabilities), options: options.negotiationOptions())
    session.connection = nil
    session.attributes = []
    let extensions = options.headerExtensions.enumerated().map { SDPExtensionMap(id: $0.offset + 1, uri: $0.element) }
    var sent: Set<MediaKind> = []
    for index in session.media.indices {
        guard let kind = MediaKind(rawValue: session.media[index].type) else { continue }
        let sender = sent.contains(kind) ? nil : options.senders[kind]
        if sender != nil { sent.insert(kind) }
        session.media[index].makeWebRTC(transport: transport, setup: transport.setup, extensions: extensions,
                                        direction: options.direction(kind, sending: sender != nil), sender: sender,
                                        reducedSize: true, connection: options.connection)
    }
    if options.dataChannel {
        session.media.append(options.dataChannelSection(mid: String(session.media.count), transport: transport, setup: transport.setup))
    }
    if !session.media.isEmpty { session.append(SDPGroup(semantics: "BUNDLE", mids: session.media.compactMap(\.mid))) }
    return session
}

/// A WebRTC answer: the description, what became of each offered section, and what to know about it.
public struct WebRTCAnswer: Sendable {
    public var description: SessionDescription
    /// One per offered section, in order (data channel sections accepted with no codecs).
    public var results: [MediaNegotiationResult]
    /// The role this side took (RFC 8842 §5.3): active answers actpass and passive, passive answers active.
    public var setup: SDPSetup
    /// What the offer did that JSEP allows but Sluice does not expect, e.g. no rtcp-mux.
    public var notes: [String]
}

/// The answer to a WebRTC offer (JSEP, RFC 8829 §5.3.1) from a browser, aiortc or GStreamer:
/// audio and video sections negotiated as `makeAnswer` does (offer's payload types and order), the
/// offer's mids, `a=setup` answering the offer's (RFC 8842 §5.3), the same transport lines in every
/// accepted section (as Chrome's and aiortc's answers write them), the offered header extensions this side supports with the offer's ids (RFC 8285 §6),
/// rtcp-mux and rtcp-rsize when offered, a direction per RFC 3264 §6.1 from what this side sends and
/// receives, and `a=group:BUNDLE` of the accepted sections in the offer's group order (RFC 9143
/// §7.3). A data channel section is answered when `options.dataChannel`, else rejected with port 0
/// like any section this side cannot take. `bundle-only` sections (port 0 in the offer, RFC 9143
/// §7.3.3) are answered as bundled ones. The offer's transport is checked first: no ICE credentials,
/// no fingerprint or `holdconn` throw.
public func makeWebRTCAnswer(to offer: SessionDescription, capabilities: [CodecCapability], transport: TransportDescription,
                             options: WebRTCOptions = WebRTCOptions()) throws(JSEPError) -> WebRTCAnswer
{
    let remote = try readRemoteDescription(offer, type: .offer, capabilities: [])
    let setup = try SDPSetup.answering(remote.transport.setup)
    var offered = offer
    for index in offered.media.indices where offered.media[index].port == 0 && remote.media[index].bundleOnly {
        offered.media[index].port = options.port
    }
    var (answer, results) = makeAnswer(to: offered, capabilities: options.withVideoFeedback(capabilities),
                                       options: options.negotiationOptions())
    answer.connection = nil
    answer.attributes = []
    var notes: [String] = []
    var sent: Set<MediaKind> = []
    for (index, section) in offered.media.enumerated() {
        let name = section.mid.map { "section \($0)" } ?? "section \(index)"
        if section.type == "application" {
            guard options.dataChannel, section.port != 0, section.proto.uppercased().hasSuffix("DTLS/SCTP"),
                  section.formats == ["webrtc-datachannel"], let mid = section.mid
            else { continue }
            answer.media[index] = options.dataChannelSection(mid: mid, transport: transport, setup: setup)
            results[index].outcome = .accepted(codecs: [], direction: .sendrecv)
            continue
        }
        guard case .accepted(let codecs, _) = results[index].outcome, let kind = MediaKind(rawValue: section.type) else { continue }
        let sender = sent.contains(kind) ? nil : options.senders[kind]
        let direction = answerDirection(offered: section.direction(in: offered),
                                        local: options.direction(kind, sending: sender != nil))
        if direction.sends, sender != nil { sent.insert(kind) }
        results[index].outcome = .accepted(codecs: codecs, direction: direction)
        if !section.rtcpMux { notes.append("\(name) offers no rtcp-mux: answered without it, RTCP on its own port") }
        let extensions = ((try? section.extensionMaps(in: offered)) ?? []).filter { options.headerExtensions.contains($0.uri) }
            .map { SDPExtensionMap(id: $0.id, direction: $0.direction?.reversed, uri: $0.uri) }
        answer.media[index].makeWebRTC(transport: transport, setup: setup, extensions: extensions, direction: direction,
                                       sender: sender, reducedSize: section.rtcpReducedSize, connection: options.connection)
    }
    let accepted = Set(results.indices.filter { results[$0].rejectionReason == nil }.compactMap { results[$0].mid })
    let bundle = remote.bundleMids.filter(accepted.contains)
    if !bundle.isEmpty {
        answer.append(SDPGroup(semantics: "BUNDLE", mids: bundle))
    } else if !accepted.isEmpty, remote.bundleMids.isEmpty {
        notes.append("the offer has no BUNDLE group: every section is its own transport")
    }
    return WebRTCAnswer(description: answer, results: results, setup: setup, notes: notes)
}
