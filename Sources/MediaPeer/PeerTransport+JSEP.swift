import MediaCore
import MediaDTLS
import MediaICE
import MediaNegotiation
import MediaSDP

/// The transport lines of a session description (JSEP, RFC 8829 §5.2.1, §5.3.1) to and from a
/// `PeerTransport`: its ICE credentials, certificate fingerprint and candidates out; the remote's in.
extension PeerTransport {
    /// What this transport puts in a local offer (`setup` actpass) or answer (the role it answers
    /// with), with the candidates gathered so far.
    public func localTransportDescription(setup: SDPSetup, candidates: [ICECandidate] = [],
                                          endOfCandidates: Bool = false) -> TransportDescription {
        let fingerprint = certificate.fingerprint
        return TransportDescription(
            iceUfrag: ice.localCredentials.ufrag, icePwd: ice.localCredentials.pwd,
            fingerprints: [SDPFingerprint(algorithm: fingerprint.algorithm, bytes: fingerprint.bytes)],
            // `TransportDescription.candidates` are `a=candidate:` values (RFC 8839 §5.1), which
            // `ICECandidate.attributeValue` prefixes with "candidate:" as RTCIceCandidate.candidate does.
            setup: setup, candidates: candidates.map { String($0.attributeValue.dropFirst("candidate:".count)) },
            endOfCandidates: endOfCandidates)
    }

    /// Takes a remote description read by `readRemoteDescription`: its ICE credentials, the
    /// fingerprint of its certificate (the strongest hash offered), its candidates, and the DTLS role
    /// its `a=setup` leaves this side (RFC 8842 §5). Candidates that do not parse are counted in
    /// `statistics.drops` ("candidate-…") and skipped, as trickled ones would be.
    public func setRemote(_ remote: RemoteDescription, now: ClockTime) throws(PeerTransportError) {
        let offered = remote.transport.fingerprints
        let strongestFirst = ["sha-512", "sha-384", "sha-256", "sha-1"]
        guard let chosen = strongestFirst.lazy.compactMap({ name in
            offered.first { $0.algorithm.lowercased() == name }
        }).first else { throw .unsupportedFingerprint(offered.map(\.algorithm)) }
        try setRemote(credentials: ICECredentials(ufrag: remote.transport.iceUfrag, pwd: remote.transport.icePwd),
                      fingerprint: DTLSFingerprint(algorithm: chosen.algorithm.lowercased(), bytes: chosen.bytes),
                      dtlsRole: remote.localSetup.isDTLSClient ? .client : .server, now: now)
        for line in remote.transport.candidates { addRemoteCandidate(line: line, now: now) }
        if remote.transport.endOfCandidates { endOfRemoteCandidates(now: now) }
    }

    /// A trickled candidate line (`candidate:…`, with or without `a=`); one that does not parse is
    /// counted ("candidate-<reason>") and skipped. Returns whether it was taken.
    @discardableResult
    public func addRemoteCandidate(line: String, now: ClockTime) -> Bool {
        do {
            addRemoteCandidate(try ICECandidate(parsing: line), now: now)
            return true
        } catch {
            countDrop("candidate-\(error.reason)")
            return false
        }
    }
}
