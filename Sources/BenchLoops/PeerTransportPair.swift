// Two PeerTransports connected in memory with a manual clock, for measuring the bundled transport's
// media path (DTLS-SRTP keys, ICE route, RFC 7983 demultiplexing) without sockets.
import MediaCore
import MediaDTLS
import MediaICE
import MediaPeer
import MediaSRTP
import MediaSTUN

/// An offerer (ICE controlling, DTLS server) and an answerer (controlled, DTLS client) that have
/// connected over an in-memory network.
public struct PeerTransportPair {
    public let offerer: PeerTransport
    public let answerer: PeerTransport
    public private(set) var now = ClockTime.zero

    /// Connects two transports agreeing on `profile`; throws if they are not connected within 10 s of
    /// manual time.
    public init(profile: SRTPProfile) throws {
        let configuration = PeerTransport.Configuration(srtpProfiles: [profile])
        offerer = PeerTransport(iceRole: .controlling, certificate: try DTLSCertificate(), configuration: configuration)
        answerer = PeerTransport(iceRole: .controlled, certificate: try DTLSCertificate(), configuration: configuration)
        let bases = [TransportAddress(host: "10.0.0.1", port: 5000)!, TransportAddress(host: "10.0.0.2", port: 6000)!]
        offerer.addLocalBases([bases[0]], now: now)
        answerer.addLocalBases([bases[1]], now: now)
        try answerer.setRemote(credentials: offerer.ice.localCredentials, fingerprint: offerer.certificate.fingerprint,
                               dtlsRole: .client, now: now)
        try offerer.setRemote(credentials: answerer.ice.localCredentials, fingerprint: answerer.certificate.fingerprint,
                              dtlsRole: .server, now: now)
        let sides = [offerer, answerer]
        while !(offerer.state == .connected && answerer.state == .connected) {
            guard now < .seconds(10) else { throw PeerTransportError.iceFailed }
            var moved = true
            while moved {
                moved = false
                for (index, side) in sides.enumerated() {
                    let other = sides[1 - index]
                    while let event = side.pollEvent() {
                        if case .localCandidate(let candidate) = event { other.addRemoteCandidate(candidate, now: now) }
                        moved = true
                    }
                    while let transmit = side.pollTransmit() {
                        var bytes = transmit.bytes
                        _ = bytes.withUnsafeMutableBytes {
                            other.handleReceive($0, length: transmit.bytes.count, from: transmit.source,
                                                to: transmit.destination, now: now)
                        }
                        moved = true
                    }
                }
            }
            now = now + .milliseconds(10)
            for side in sides where (side.nextTimeout ?? .max) <= now { side.handleTimeout(now: now) }
        }
    }

    /// Sends the packet in `buffer[0..<length]` from the offerer and receives it on the answerer, in
    /// place: protect, route, demultiplex, unprotect. Returns the RTP length received (0 if refused).
    public func carry(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Int {
        guard case .direct(let sent, let route)? = try? offerer.sendRTP(buffer, length: length, now: now) else { return 0 }
        let received = answerer.handleReceive(buffer, length: sent, from: route.source, to: route.destination, now: now)
        guard case .rtp(let plain) = received else { return 0 }
        return plain
    }
}
