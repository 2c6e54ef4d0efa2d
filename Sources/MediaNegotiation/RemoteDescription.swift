import MediaSDP

/// A stream the remote side sends in a section: its SSRCs (RFC 5576 §4), with the RTX one paired by
/// `a=ssrc-group:FID` (RFC 4588 §8.3), and its MediaStream and track ids (RFC 8830 §2).
public struct RemoteSender: Sendable, Hashable {
    public var ssrc: UInt32
    public var retransmissionSSRC: UInt32?
    /// `a=ssrc:<ssrc> cname:` (RFC 5576 §6.1).
    public var cname: String?
    /// From the section's `a=msid`, else the source's `a=ssrc:<ssrc> msid:`; "-" means no stream.
    public var streamID: String?
    public var trackID: String?

    public init(ssrc: UInt32, retransmissionSSRC: UInt32? = nil, cname: String? = nil, streamID: String? = nil,
                trackID: String? = nil)
    {
        self.ssrc = ssrc
        self.retransmissionSSRC = retransmissionSSRC
        self.cname = cname
        self.streamID = streamID
        self.trackID = trackID
    }
}

/// One section of a remote description as the peer layer needs it.
public struct RemoteMedia: Sendable, Hashable {
    public var mid: String?
    /// The `m=` media type: "audio", "video", "application".
    public var type: String
    public var proto: String
    /// Port 0 without `a=bundle-only` (RFC 3264 §6, RFC 9143 §6).
    public var rejected: Bool
    /// `a=bundle-only`: port 0 but carried by the BUNDLE transport (RFC 9143 §6).
    public var bundleOnly: Bool
    /// The direction as the remote side wrote it (RFC 8866 §6.7).
    public var direction: SDPDirection
    /// The remote formats this side's capabilities take, in the remote's order, with payload types,
    /// feedback both support and RTX (RFC 4588 §8.1).
    public var codecs: [NegotiatedCodec]
    /// The streams the remote sends here; empty when its direction does not send.
    public var senders: [RemoteSender]
    /// The ids of the WebRTC header extensions (RFC 8285 §5), section's then session's.
    public var headerExtensions: RTPHeaderExtensionIDs
    public var rtcpMux: Bool
    public var rtcpReducedSize: Bool
    /// `a=sctp-port` and `a=max-message-size` of a data channel section (RFC 8841).
    public var sctpPort: Int?
    public var maxMessageSize: Int?
}

/// What a remote WebRTC offer or answer says (JSEP, RFC 8829 §5.7, §5.8).
public struct RemoteDescription: Sendable, Hashable {
    public var type: SDPType
    /// The BUNDLE transport (RFC 9143 §7): the first section of the BUNDLE group that is not rejected,
    /// else the first section that is not; session-level attributes fill in what it lacks.
    public var transport: TransportDescription
    /// The mid of the section the transport was read from.
    public var transportMid: String?
    /// `a=ice-lite` (RFC 8839 §5.3).
    public var iceLite: Bool
    /// The mids of the first BUNDLE group, in order; empty without one.
    public var bundleMids: [String]
    public var media: [RemoteMedia]
    /// This side's DTLS role: for an offer, the one to answer with; for an answer, the opposite of its
    /// (RFC 8842 §5.3).
    public var localSetup: SDPSetup
}

/// Reads a remote description: the BUNDLE transport's ICE credentials, fingerprints, setup,
/// candidates and end-of-candidates, each section's mid, direction, codecs that `capabilities` take,
/// remote senders and header extension ids. A transport without ICE credentials or fingerprint, an
/// answer saying actpass, holdconn, or a BUNDLE group naming an unknown mid throw.
public func readRemoteDescription(_ remote: SessionDescription, type: SDPType,
                                  capabilities: [CodecCapability]) throws(JSEPError) -> RemoteDescription
{
    do {
        return try readRemote(remote, type: type, capabilities: capabilities)
    } catch let error as JSEPError {
        throw error
    } catch let error as SDPError {
        throw .malformed(error)
    } catch {
        throw .noTransport  // not reached: readRemote throws only the two above
    }
}

private func readRemote(_ remote: SessionDescription, type: SDPType, capabilities: [CodecCapability]) throws -> RemoteDescription {
    let bundleMids = try remote.groups().first { $0.semantics == "BUNDLE" }?.mids ?? []
    for mid in bundleMids where remote.media(mid: mid) == nil { throw JSEPError.unknownBundleMid(mid) }
    var media: [RemoteMedia] = []
    for section in remote.media {
        _ = try section.mediaIdentifier()
        media.append(try readRemoteMedia(section, in: remote, capabilities: capabilities))
    }
    let carrier = bundleMids.lazy.compactMap { mid in remote.media.firstIndex { $0.mid == mid } }.first { !media[$0].rejected }
        ?? media.firstIndex { !$0.rejected }
    guard let carrier else { throw JSEPError.noTransport }
    let section = remote.media[carrier], mid = section.mid
    guard let ufrag = try section.iceUsernameFragment(in: remote) else { throw JSEPError.missingICEUfrag(mid: mid) }
    guard let pwd = try section.icePassword(in: remote) else { throw JSEPError.missingICEPwd(mid: mid) }
    let fingerprints = try section.fingerprints(in: remote)
    guard !fingerprints.isEmpty else { throw JSEPError.missingFingerprint(mid: mid) }
    // RFC 4145 §4: without a=setup an offer is active and an answer passive.
    let setup = try section.setupRole(in: remote) ?? (type == .offer ? .active : .passive)
    let localSetup = switch type {
    case .offer: try SDPSetup.answering(setup, mid: mid)
    case .answer: try SDPSetup.offererRole(answered: setup, mid: mid)
    }
    let transport = TransportDescription(iceUfrag: ufrag, icePwd: pwd, iceOptions: try section.iceOptions(in: remote),
                                         fingerprints: fingerprints, setup: setup, candidates: try section.candidates(),
                                         endOfCandidates: section.endOfCandidates(in: remote))
    return RemoteDescription(type: type, transport: transport, transportMid: mid, iceLite: remote.iceLite,
                             bundleMids: bundleMids, media: media, localSetup: localSetup)
}

private func readRemoteMedia(_ section: MediaDescription, in remote: SessionDescription,
                             capabilities: [CodecCapability]) throws(SDPError) -> RemoteMedia
{
    let bundleOnly = section.hasAttribute("bundle-only")
    let direction = section.direction(in: remote)
    var codecs: [NegotiatedCodec] = []
    let kind = MediaKind(rawValue: section.type)
    if let kind, section.proto.uppercased().contains("RTP/") {
        let local = capabilities.filter { $0.kind == kind }
        for payloadType in section.payloadTypes {
            guard let map = try section.rtpMap(for: payloadType) else { continue }
            let format = OfferedFormat(payloadType: payloadType, map: map, parameters: try section.formatParameters(for: payloadType))
            guard !format.isRetransmission, case .success(let choice) = format.choose(from: local) else { continue }
            codecs.append(try NegotiatedCodec(format, choice: choice, in: section))
        }
    }
    return RemoteMedia(mid: section.mid, type: section.type, proto: section.proto, rejected: section.port == 0 && !bundleOnly,
                       bundleOnly: bundleOnly, direction: direction, codecs: codecs,
                       senders: direction.sends ? try remoteSenders(section) : [],
                       headerExtensions: RTPHeaderExtensionIDs(try section.extensionMaps(in: remote)),
                       rtcpMux: section.rtcpMux, rtcpReducedSize: section.rtcpReducedSize,
                       sctpPort: try section.sctpPort(), maxMessageSize: try section.maxMessageSize())
}

/// The senders of a section from its `a=ssrc`, `a=ssrc-group:FID` and `a=msid` lines: one per SSRC
/// that is not the second of a FID pair (RFC 4588 §8.3), in order of first appearance.
private func remoteSenders(_ section: MediaDescription) throws(SDPError) -> [RemoteSender] {
    let sources = try section.sourceAttributes()
    let pairs = try section.sourceGroups().filter { $0.semantics == "FID" && $0.ssrcs.count == 2 }
    let repairs = Set(pairs.map { $0.ssrcs[1] })
    let sectionStream = try section.mediaStreamIDs().first
    var order: [UInt32] = []
    for source in sources where !repairs.contains(source.ssrc) && !order.contains(source.ssrc) { order.append(source.ssrc) }
    return order.map { ssrc in
        let own = sources.filter { $0.ssrc == ssrc }
        let msid = own.first { $0.name == "msid" }?.value.map { fields(of: $0) } ?? []
        return RemoteSender(ssrc: ssrc, retransmissionSSRC: pairs.first { $0.ssrcs[0] == ssrc }?.ssrcs[1],
                            cname: own.first { $0.name == "cname" }?.value,
                            streamID: sectionStream?.streamID ?? msid.first, trackID: sectionStream?.trackID ?? msid.dropFirst().first)
    }
}

private func fields(of text: String) -> [String] { text.split(separator: " ").map(String.init) }
