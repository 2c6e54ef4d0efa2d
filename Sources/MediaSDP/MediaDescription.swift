/// One media section (RFC 8866 §5.14): `m=<media> <port>[/<count>] <proto> <fmt> ...` and its lines.
public struct MediaDescription: SDPAttributeContainer, Sendable, Hashable {
    /// "audio", "video", "text", "application", "message".
    public var type: String
    /// The transport port; 0 rejects the stream (RFC 3264 §6), 9 is the WebRTC discard placeholder.
    public var port: Int
    /// The `/<number of ports>` suffix, nil when absent.
    public var portCount: Int?
    /// "RTP/AVP", "RTP/SAVP", "RTP/AVPF", "UDP/TLS/RTP/SAVPF", "UDP/DTLS/SCTP", ...
    public var proto: String
    /// Payload type numbers for RTP protocols, other tokens otherwise.
    public var formats: [String]
    /// `i=` (RFC 8866 §5.4).
    public var information: String?
    /// `c=` lines of this section (RFC 8866 §5.7); several for layered multicast.
    public var connections: [SDPConnection]
    public var bandwidths: [SDPBandwidth]
    /// `k=` as text (obsolete).
    public var encryptionKey: String?
    public var attributes: [SDPAttribute]

    public init(type: String, port: Int, portCount: Int? = nil, proto: String = "RTP/AVP", formats: [String],
                information: String? = nil, connections: [SDPConnection] = [], bandwidths: [SDPBandwidth] = [],
                encryptionKey: String? = nil, attributes: [SDPAttribute] = [])
    {
        self.type = type
        self.port = port
        self.portCount = portCount
        self.proto = proto
        self.formats = formats
        self.information = information
        self.connections = connections
        self.bandwidths = bandwidths
        self.encryptionKey = encryptionKey
        self.attributes = attributes
    }

    /// The `m=` line's value.
    var mediaLine: String {
        ([type, portCount.map { "\(port)/\($0)" } ?? "\(port)", proto] + formats).joined(separator: " ")
    }

    func appendLines(to lines: inout [String]) {
        lines.append("m=\(mediaLine)")
        if let information { lines.append("i=\(information)") }
        lines += connections.map { "c=\($0)" } + bandwidths.map { "b=\($0)" }
        if let encryptionKey { lines.append("k=\(encryptionKey)") }
        lines += attributes.map(\.description)
    }

    /// The formats that are RTP payload types (0-127), in order of preference (RFC 3264 §5.1).
    public var payloadTypes: [UInt8] { formats.compactMap { UInt8($0) }.filter { $0 < 128 } }

    /// The mapping for `payloadType`: its `a=rtpmap` (RFC 8866 §6.6), else the static assignment of
    /// RFC 3551 §6 for payload types below 96 (e.g. 0 is PCMU/8000), else nil.
    public func rtpMap(for payloadType: UInt8) throws(SDPError) -> SDPRTPMap? {
        try firstValue(SDPRTPMap.self) { $0.payloadType == payloadType } ?? SDPRTPMap.staticMapping(payloadType)
    }

    /// The `a=fmtp` line for `payloadType` (RFC 8866 §6.15), nil when there is none.
    public func formatParameterLine(for payloadType: UInt8) throws(SDPError) -> SDPFormatParameters? {
        try firstValue(SDPFormatParameters.self) { $0.format == String(payloadType) }
    }

    /// The format parameters of `payloadType` as a dictionary (empty when there is no `a=fmtp`).
    public func formatParameters(for payloadType: UInt8) throws(SDPError) -> [String: String] {
        try formatParameterLine(for: payloadType)?.parameters ?? [:]
    }

    /// The `a=rtcp-fb` lines that apply to `payloadType`: its own and the `*` ones (RFC 4585 §4.2).
    public func feedback(for payloadType: UInt8) throws(SDPError) -> [SDPRTCPFeedback] {
        try values(SDPRTCPFeedback.self).filter { $0.payloadType == nil || $0.payloadType == payloadType }
    }

    /// The payload type that retransmits `payloadType`: an `rtx` mapping whose fmtp says `apt=<payloadType>`
    /// (RFC 4588 §8.1), nil when there is none.
    public func retransmissionPayloadType(for payloadType: UInt8) throws(SDPError) -> UInt8? {
        for candidate in payloadTypes where try rtpMap(for: candidate)?.encodingName.lowercased() == "rtx" {
            if try formatParameters(for: candidate)["apt"] == String(payloadType) { return candidate }
        }
        return nil
    }

    /// The header extensions this section uses: its own `a=extmap` lines, then the session-level ones
    /// whose ids it does not map itself (RFC 8285 §5).
    public func extensionMaps(in session: SessionDescription) throws(SDPError) -> [SDPExtensionMap] {
        let own = try extensionMaps()
        return try own + session.extensionMaps().filter { shared in !own.contains { $0.id == shared.id } }
    }

    /// Where to send: this section's first `c=`, else the session's (RFC 8866 §5.7).
    public func connection(in session: SessionDescription) -> SDPConnection? { connections.first ?? session.connection }

    /// `a=rtcp-mux`: RTP and RTCP share the port (RFC 5761 §5.1.1).
    public var rtcpMux: Bool { hasAttribute("rtcp-mux") }

    /// `a=rtcp-rsize`: reduced-size RTCP is accepted (RFC 5506 §5).
    public var rtcpReducedSize: Bool { hasAttribute("rtcp-rsize") }

    /// The `a=rtcp` line (RFC 3605 §2.1), nil when there is none.
    public func rtcpAttribute() throws(SDPError) -> SDPRTCPAddress? { try value(SDPRTCPAddress.self) }

    /// The RTCP port: `a=rtcp` (RFC 3605), else the RTP port under `a=rtcp-mux` (RFC 5761), else the
    /// next port up (RFC 3550 §11).
    public func rtcpPort() throws(SDPError) -> Int {
        if let rtcp = try rtcpAttribute() { return rtcp.port }
        return rtcpMux ? port : port + 1
    }

    /// The RTCP address: the one `a=rtcp` names (RFC 3605 §2.1), else the stream's `connection(in:)`.
    public func rtcpAddress(in session: SessionDescription) throws(SDPError) -> String? {
        try rtcpAttribute()?.connection?.address ?? connection(in: session)?.address
    }

    /// The direction of this stream: its own flag, else the session's, else sendrecv (RFC 8866 §6.7).
    public func direction(in session: SessionDescription) -> SDPDirection {
        explicitDirection ?? session.direction
    }

    /// `a=ssrc` lines (RFC 5576 §4.1).
    public func sourceAttributes() throws(SDPError) -> [SDPSourceAttribute] { try values(SDPSourceAttribute.self) }

    /// `a=ssrc-group` lines (RFC 5576 §4.2), e.g. FID pairing a stream with its RTX stream.
    public func sourceGroups() throws(SDPError) -> [SDPSourceGroup] { try values(SDPSourceGroup.self) }

    /// `a=ptime` in milliseconds (RFC 8866 §6.4).
    public func packetTime() throws(SDPError) -> Double? { try value(SDPPacketTime.self)?.value }

    /// `a=maxptime` in milliseconds (RFC 8866 §6.5).
    public func maximumPacketTime() throws(SDPError) -> Double? { try value(SDPMaximumPacketTime.self)?.value }

    /// `a=framerate` in frames per second (RFC 8866 §6.10).
    public func frameRate() throws(SDPError) -> Double? { try value(SDPFrameRate.self)?.value }
}
