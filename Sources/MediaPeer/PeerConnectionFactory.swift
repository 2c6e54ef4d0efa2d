import MediaCodecs
import MediaCore
import MediaICE
import MediaNegotiation
import MediaSTUN
import MediaTransport

/// Makes peer connections that share one codec registry and one codec preference (libwebrtc's
/// `PeerConnectionFactory`): what is offered and accepted over RTP, and which encoders and
/// decoders make and take it.
public final class PeerConnectionFactory: Sendable {
    public let registry: CodecRegistry
    /// The RTP formats offered and accepted, most preferred first.
    public let capabilities: [CodecCapability]

    /// `capabilities` (what `registry`'s codecs can send and receive over RTP), with the formats of
    /// `preferredCodecs` moved to the front in that order, the rest keeping theirs.
    public init(registry: CodecRegistry, capabilities: [CodecCapability], preferredCodecs: [CodecName] = []) {
        self.registry = registry
        let rank = { (codec: CodecName) in preferredCodecs.firstIndex(of: codec) ?? preferredCodecs.count }
        self.capabilities = capabilities.enumerated()
            .sorted { (rank($0.element.codec), $0.offset) < (rank($1.element.codec), $1.offset) }
            .map(\.element)
    }

    public func makePeerConnection(_ configuration: PeerConnection.Configuration = PeerConnection.Configuration()) throws
        -> PeerConnection
    {
        try PeerConnection(factory: self, configuration: configuration)
    }
}

/// A STUN or TURN server as `RTCIceServer` gives it (webrtc-pc §4.2.2): `stun:HOST[:PORT]` and
/// `turn:HOST[:PORT][?transport=udp]` URLs (RFC 7064, RFC 7065), with long-term credentials for TURN.
public struct ICEServer: Sendable, Hashable {
    public var urls: [String]
    public var username: String?
    public var credential: String?

    public init(urls: [String], username: String? = nil, credential: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }

    public init(url: String, username: String? = nil, credential: String? = nil) {
        self.init(urls: [url], username: username, credential: credential)
    }

    /// Adds this server's STUN and TURN addresses to `ice`. A URL Sluice cannot use (TCP or TLS
    /// TURN, a name that does not resolve, TURN without credentials) throws, naming it.
    func add(to ice: inout ICEConfiguration) throws(PeerConnectionError) {
        for url in urls {
            let (scheme, address) = try Self.parse(url)
            switch scheme {
            case "stun": ice.stunServers.append(address)
            default:
                guard let username, let credential else { throw .iceServer(url, "a TURN server needs a username and a credential") }
                ice.turnServers.append(ICETURNServer(address: address, username: username, credential: credential))
            }
        }
    }

    static func parse(_ url: String) throws(PeerConnectionError) -> (scheme: String, address: TransportAddress) {
        let parts = url.split(separator: "?", maxSplits: 1)
        guard let colon = parts.first?.firstIndex(of: ":") else { throw .iceServer(url, "not a stun: or turn: URL") }
        let scheme = parts[0][..<colon].lowercased()
        guard scheme == "stun" || scheme == "turn" else {
            throw .iceServer(url, scheme == "turns" || scheme == "stuns" ? "TLS is not supported; use stun: or turn: over UDP"
                                                                          : "not a stun: or turn: URL")
        }
        if parts.count > 1, parts[1].lowercased() != "transport=udp" {
            throw .iceServer(url, "only UDP is supported (transport=udp)")
        }
        var hostPort = String(parts[0][parts[0].index(after: colon)...])
        var port: UInt16 = 3478
        if let last = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]"), hostPort.filter({ $0 == ":" }).count == 1 || hostPort.hasPrefix("[") {
            guard let number = UInt16(hostPort[hostPort.index(after: last)...]) else { throw .iceServer(url, "bad port") }
            port = number
            hostPort = String(hostPort[..<last])
        }
        let host = hostPort.trimmingBrackets
        guard !host.isEmpty else { throw .iceServer(url, "no host") }
        if let address = TransportAddress(host: host, port: port) { return (scheme, address) }
        guard let resolved = try? SocketAddress(host: host, port: port),
              let address = TransportAddress(host: resolved.host, port: port)
        else { throw .iceServer(url, "\(host) does not resolve") }
        return (scheme, address)
    }
}

extension String {
    fileprivate var trimmingBrackets: String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
