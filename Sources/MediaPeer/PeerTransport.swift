import DequeModule
import MediaCore
import MediaDTLS
import MediaICE
import MediaSRTP
import MediaSTUN

/// The one transport a WebRTC peer connection bundles everything on (RFC 9143, RFC 8829 §4.1.1's
/// max-bundle, rtcp-mux): an ICE agent finds and keeps the path, a DTLS association on that path agrees
/// on SRTP keys (RFC 5764), and two SRTP sessions protect what is sent and unprotect what arrives.
/// Datagrams are told apart by their first byte (RFC 7983, `BundledPacketKind`).
///
/// Sans-I/O like its parts: it owns no socket, thread or clock. The caller feeds it datagrams and the
/// time, and drains what it has to send, its events and its next timeout:
///
/// ```
///  socket ─▶ handleReceive(buffer, from, to, now) ─▶ .rtp(length) / .rtcp(length): unprotected in place
///  timer ──▶ handleTimeout(now)
///  pollTransmit() ─▶ socket        pollEvent() ─▶ app        nextTimeout ─▶ timer
///  sendRTP(buffer, length, now) ─▶ protected in place, the route to send it on
/// ```
///
/// It is a class because the DTLS association and the SRTP sessions own C handles; use it from one
/// thread at a time.
public final class PeerTransport {
    public struct Configuration: Sendable {
        public var ice: ICEConfiguration
        /// SRTP profiles for DTLS-SRTP, most preferred first (RFC 5764 §4.1.2).
        public var srtpProfiles: [SRTPProfile]
        /// The DTLS handshake's first retransmission timeout (OpenSSL doubles it).
        public var dtlsInitialRetransmissionTimeout: ClockTime
        /// How long the DTLS handshake may take once started.
        public var dtlsHandshakeTimeout: ClockTime
        /// The largest DTLS datagram, in bytes.
        public var mtu: Int

        public init(ice: ICEConfiguration = ICEConfiguration(),
                    srtpProfiles: [SRTPProfile] = DTLSAssociation.defaultSRTPProfiles,
                    dtlsInitialRetransmissionTimeout: ClockTime = .seconds(1),
                    dtlsHandshakeTimeout: ClockTime = .seconds(30), mtu: Int = 1200) {
            self.ice = ice
            self.srtpProfiles = srtpProfiles
            self.dtlsInitialRetransmissionTimeout = dtlsInitialRetransmissionTimeout
            self.dtlsHandshakeTimeout = dtlsHandshakeTimeout
            self.mtu = mtu
        }
    }

    /// The transport's overall state, named as W3C `RTCPeerConnectionState` (webrtc-pc §4.4.3).
    public enum State: String, Sendable, Hashable {
        case new, connecting, connected, disconnected, failed, closed
    }

    public enum Event: Sendable {
        /// A local candidate to signal to the peer (trickle ICE, RFC 8838).
        case localCandidate(ICECandidate)
        case gatheringComplete
        case iceStateChanged(ICEConnectionState)
        case dtlsStateChanged(DTLSAssociation.State)
        case stateChanged(State)
        /// The SRTP sessions are keyed: media can flow.
        case srtpReady(SRTPProfile)
        /// Application data from the DTLS association (SCTP, RFC 8261).
        case applicationData([UInt8])
        /// Why the transport failed; `stateChanged(.failed)` follows.
        case failed(PeerTransportError)
        /// A TURN server refused or lost the allocation (`reason` as `TURNError.reason`, e.g.
        /// "wrong-credentials"); with `iceTransportPolicy` relay, ICE fails next.
        case turnFailed(server: TransportAddress, reason: String)
    }

    /// What a received datagram turned out to be.
    public enum Received: Sendable, Hashable {
        /// An RTP packet, unprotected in place: the first `length` bytes of the buffer.
        case rtp(length: Int)
        /// An RTCP compound packet, unprotected in place.
        case rtcp(length: Int)
        /// Taken by the transport itself (STUN, DTLS), or dropped and counted in `statistics.drops`.
        case consumed
    }

    public let certificate: DTLSCertificate
    public let configuration: Configuration
    public private(set) var ice: ICEAgent
    public private(set) var state = State.new
    public private(set) var statistics = PeerTransportStatistics()
    /// The DTLS role, known once the remote description says who is active (RFC 8842 §5).
    public private(set) var dtlsRole: DTLSRole?
    public private(set) var srtpProfile: SRTPProfile?

    private var dtls: DTLSAssociation?
    private var outbound: SRTPSession?
    private var inbound: SRTPSession?
    private var transmits = Deque<ICETransmit>()
    private var events = Deque<Event>()
    /// DTLS datagrams that came before the remote description made an association (at most a flight).
    private var earlyDTLS: [[UInt8]] = []
    private static let earlyDTLSLimit = 8
    /// DTLS datagrams to send once ICE has selected a pair (at most a flight or two).
    private var heldDTLS: [[UInt8]] = []
    private static let heldDTLSLimit = 16
    private var dtlsState = DTLSAssociation.State.new

    /// A transport playing `iceRole` (the offerer controls, RFC 8445 §6.1.1) with `certificate`, whose
    /// fingerprint goes into the local description.
    public init(iceRole: ICERole, localCredentials: ICECredentials = .random(),
                certificate: DTLSCertificate, configuration: Configuration = Configuration()) {
        self.certificate = certificate
        self.configuration = configuration
        ice = ICEAgent(role: iceRole, local: localCredentials, configuration: configuration.ice)
    }

    // MARK: Signalling

    /// The local sockets' addresses: host candidates, and server-reflexive gathering from each.
    public func addLocalBases(_ bases: [TransportAddress], now: ClockTime) {
        ice.addLocalBases(bases, now: now)
        pump(now: now)
    }

    /// The remote description's transport: its ICE credentials, its certificate's fingerprint, and the
    /// DTLS role this side plays (from `a=setup`, RFC 8842 §5). Checks start; a DTLS server starts
    /// waiting for the ClientHello.
    public func setRemote(credentials: ICECredentials, fingerprint: DTLSFingerprint, dtlsRole: DTLSRole,
                          now: ClockTime) throws(PeerTransportError) {
        if let dtls {
            guard dtlsRole == self.dtlsRole else { throw .dtlsRoleChanged }
            dtls.setRemoteFingerprint(fingerprint)
        } else {
            do {
                dtls = try DTLSAssociation(
                    role: dtlsRole, certificate: certificate, remoteFingerprint: fingerprint,
                    srtpProfiles: configuration.srtpProfiles, mtu: configuration.mtu,
                    initialRetransmissionTimeout: configuration.dtlsInitialRetransmissionTimeout,
                    handshakeTimeout: configuration.dtlsHandshakeTimeout)
            } catch {
                throw .dtls(error)
            }
            self.dtlsRole = dtlsRole
        }
        if ice.remoteCredentials == nil {
            ice.setRemoteCredentials(credentials, now: now)
        } else if ice.remoteCredentials != credentials {
            ice.restart(ice.localCredentials, now: now)
            ice.setRemoteCredentials(credentials, now: now)
        }
        if dtlsRole == .server { dtls?.start(at: now) }
        for datagram in earlyDTLS { dtls?.handleDatagram(datagram, at: now) }
        earlyDTLS.removeAll()
        pump(now: now)
    }

    /// ICE restart (RFC 8445 §9) started by this side, or answering the peer's: new local credentials;
    /// checks start again when the peer's new credentials come (`setRemote`). DTLS and SRTP go on.
    public func restartICE(now: ClockTime) {
        ice.restart(.random(), now: now)
        pump(now: now)
    }

    /// A remote candidate (trickled, or from the description).
    public func addRemoteCandidate(_ candidate: ICECandidate, now: ClockTime) {
        ice.addRemoteCandidate(candidate, now: now)
        pump(now: now)
    }

    public func endOfRemoteCandidates(now: ClockTime) {
        ice.endOfRemoteCandidates(now: now)
        pump(now: now)
    }

    // MARK: Inputs

    /// A datagram that arrived on the local base `to` from `from`, in `buffer[0..<length]`. SRTP and SRTCP
    /// are unprotected in place; everything else is taken here or dropped with a counted reason.
    public func handleReceive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from source: TransportAddress,
                              to base: TransportAddress, now: ClockTime) -> Received {
        let bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<length])
        let kind = BundledPacketKind(classifying: bytes)
        guard kind != .unknown else { return drop("unknown-first-byte") }
        let iceStateBefore = ice.state
        let result = ice.handleReceive(bytes, from: source, to: base, now: now)
        switch result {
        case .handled:
            pump(now: now)
            return .consumed
        case .dropped(let reason):
            pump(now: now)   // an error response may be queued
            return drop("ice-\(reason)")
        case .application:
            // The media path: the agent only noted the packet, and has something to say only when it
            // brought a disconnected path back.
            if ice.state != iceStateBefore { pump(now: now) }
            return receiveApplication(kind, in: buffer, length: length, now: now)
        case .relayedApplication(let unwrapped):
            // Through the agent's TURN relay: the datagram held ChannelData or a Data indication around
            // the peer's, which is shorter and goes back into the caller's buffer to be unprotected there.
            pump(now: now)
            let inner = BundledPacketKind(classifying: unwrapped)
            guard inner != .unknown, inner != .stun, inner != .turnChannelData, unwrapped.count <= buffer.count else {
                return drop("relayed-unexpected")
            }
            unwrapped.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return receiveApplication(inner, in: buffer, length: unwrapped.count, now: now)
        }
    }

    /// DTLS, RTP or RTCP in `buffer[0..<length]` that came on the selected path.
    private func receiveApplication(_ kind: BundledPacketKind, in buffer: UnsafeMutableRawBufferPointer, length: Int,
                                    now: ClockTime) -> Received {
        switch kind {
        case .dtls:
            let bytes = Array(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<length]))
            if let dtls {
                dtls.handleDatagram(bytes, at: now)
            } else if earlyDTLS.count < Self.earlyDTLSLimit {
                earlyDTLS.append(bytes)
            } else {
                return drop("dtls-before-remote-description")
            }
            pump(now: now)
            return .consumed
        case .rtp, .rtcp:
            guard let inbound else { return drop("srtp-before-keys") }
            do {
                if kind == .rtp {
                    let plain = try inbound.unprotect(buffer, length: length)
                    statistics.rtpPacketsReceived += 1
                    return .rtp(length: plain)
                }
                let plain = try inbound.unprotectRTCP(buffer, length: length)
                statistics.rtcpPacketsReceived += 1
                return .rtcp(length: plain)
            } catch {
                return drop("srtp-\(error.reason)")
            }
        case .stun, .turnChannelData, .unknown:
            return drop("unexpected-\(kind)")
        }
    }

    /// Runs the timers due at `now` (ICE pacing, retransmissions, consent; DTLS retransmissions).
    public func handleTimeout(now: ClockTime) {
        ice.handleTimeout(now: now)
        dtls?.handleTimeout(at: now)
        pump(now: now)
    }

    // MARK: Outputs

    /// The next datagram to send, with the local base to send it from.
    public func pollTransmit() -> ICETransmit? { transmits.popFirst() }

    public func pollEvent() -> Event? { events.popFirst() }

    /// When `handleTimeout` wants to be called next.
    public var nextTimeout: ClockTime? {
        [ice.nextTimeout, dtls?.nextTimeout].compactMap { $0 }.min()
    }

    /// Bytes `sendRTP` adds to a packet (the SRTP tag), or nil before the keys are agreed.
    public var rtpOverhead: Int? { outbound?.rtpOverhead }
    public var rtcpOverhead: Int? { outbound?.rtcpOverhead }

    /// Where a packet given to `sendRTP` or `sendRTCP` went.
    public enum Sent: Sendable, Hashable {
        /// Protected in place: send `buffer[0..<length]` from `route.source` to `route.destination`.
        /// Nothing is copied (the direct media path).
        case direct(length: Int, route: ICERoute)
        /// Protected and wrapped for the agent's TURN relay (ChannelData): the datagram to send is
        /// queued, take it with `pollTransmit()`.
        case relayed
    }

    /// Protects the RTP packet in `buffer[0..<length]` in place (`buffer` needs `rtpOverhead` bytes spare)
    /// and says how to send it. Nil, counted, before the keys are agreed or when ICE has no path or has
    /// lost consent (RFC 7675 §5.1: media stops).
    /// With a `tail` (a frame's bytes, elsewhere), the packet is `buffer[0..<length]` and then the
    /// tail, which SRTP encrypts from where it is into `buffer` after the head
    /// (`SRTPSession.protect(_:length:followedBy:)`); `buffer` then needs room for it too.
    public func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int,
                        followedBy tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                        now: ClockTime) throws(PeerTransportError) -> Sent? {
        try sendProtected(buffer, length: length, followedBy: tail, now: now, rtcp: false)
    }

    /// As `sendRTP`, for an RTCP compound packet (SRTCP, RFC 3711 §3.4).
    public func sendRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, now: ClockTime) throws(PeerTransportError)
        -> Sent?
    {
        try sendProtected(buffer, length: length, now: now, rtcp: true)
    }

    /// Application data over DTLS (SCTP for data channels, RFC 8261).
    public func sendApplicationData(_ bytes: [UInt8], now: ClockTime) throws(PeerTransportError) {
        guard let dtls else { throw .dtls(.notConnected) }
        do {
            try dtls.send(applicationData: bytes)
        } catch {
            throw .dtls(error)
        }
        pump(now: now)
    }

    /// Sends close_notify and closes the ICE agent; the transport takes nothing more.
    public func close(now: ClockTime) {
        guard state != .closed else { return }
        dtls?.close()
        pump(now: now)
        ice.close()
        outbound = nil
        inbound = nil
        setState(.closed)
    }

    // MARK: Inside

    /// `tail`: RTP only.
    private func sendProtected(_ buffer: UnsafeMutableRawBufferPointer, length: Int,
                               followedBy tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                               now: ClockTime, rtcp: Bool) throws(PeerTransportError) -> Sent? {
        guard state != .closed, let outbound else {
            statistics.sendsRefused += 1
            return nil
        }
        let overhead = rtcp ? outbound.rtcpOverhead : outbound.rtpOverhead
        // Ask for the route first: a packet that cannot go is not protected, so its SRTP index is not spent.
        guard let path = ice.sendPath(forSending: length + tail.count + overhead, now: now) else {
            statistics.sendsRefused += 1
            return nil
        }
        let protected: Int
        do {
            protected = rtcp ? try outbound.protectRTCP(buffer, length: length)
                             : try outbound.protect(buffer, length: length, followedBy: tail)
        } catch {
            throw .srtp(error)
        }
        if case .direct(let route) = path {
            if rtcp { statistics.rtcpPacketsSent += 1 } else { statistics.rtpPacketsSent += 1 }
            return .direct(length: protected, route: route)
        }
        // Through the relay: the agent wraps a copy for its TURN client.
        guard let transmit = ice.send(Array(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<protected])),
                                      now: now) else {
            statistics.sendsRefused += 1
            return nil
        }
        transmits.append(transmit)
        if rtcp { statistics.rtcpPacketsSent += 1 } else { statistics.rtpPacketsSent += 1 }
        return .relayed
    }

    private func drop(_ reason: String) -> Received {
        countDrop(reason)
        return .consumed
    }

    func countDrop(_ reason: String) {
        statistics.drops[reason, default: 0] += 1
    }

    /// Moves what the parts produced to the queues, and steps the parts on each other's events: ICE
    /// connected starts the DTLS client; DTLS connected keys SRTP.
    private func pump(now: ClockTime) {
        var moved = true
        while moved {
            moved = false
            while let transmit = ice.pollTransmit() {
                transmits.append(transmit)
                moved = true
            }
            while let event = ice.pollEvent() {
                moved = true
                handle(event, now: now)
            }
            guard let dtls else { continue }
            while let datagram = dtls.pollTransmit() {
                moved = true
                heldDTLS.append(datagram)
            }
            // The controlled side may answer a nomination and start DTLS before this side has seen the
            // nomination succeed: hold DTLS until a pair is selected, rather than lose a flight to a
            // retransmission timer.
            if ice.selectedPair != nil {
                for datagram in heldDTLS {
                    if let transmit = ice.send(datagram, now: now) { transmits.append(transmit) }
                }
                heldDTLS.removeAll()
            } else if heldDTLS.count > Self.heldDTLSLimit {
                statistics.drops["dtls-without-path", default: 0] += heldDTLS.count - Self.heldDTLSLimit
                heldDTLS.removeFirst(heldDTLS.count - Self.heldDTLSLimit)
            }
            while let event = dtls.pollEvent() {
                moved = true
                handle(event)
            }
            if dtls.state != dtlsState {
                dtlsState = dtls.state
                events.append(.dtlsStateChanged(dtlsState))
                moved = true
            }
        }
        updateState()
    }

    private func handle(_ event: ICEEvent, now: ClockTime) {
        switch event {
        case .localCandidate(let candidate): events.append(.localCandidate(candidate))
        case .gatheringComplete: events.append(.gatheringComplete)
        case .stateChanged(let iceState):
            events.append(.iceStateChanged(iceState))
            if iceState == .connected || iceState == .completed, dtlsRole == .client { dtls?.start(at: now) }
            if iceState == .failed { fail(.iceFailed) }
        case .consentLost: fail(.consentLost)
        case .turnFailed(let server, let error): events.append(.turnFailed(server: server, reason: error.reason))
        case .selectedPairChanged, .roleChanged, .peerReflexiveCandidate: break
        }
    }

    private func handle(_ event: DTLSEvent) {
        switch event {
        case .connected(let keys):
            do {
                outbound = try SRTPSession(profile: keys.profile, key: keys.local, direction: .sender)
                inbound = try SRTPSession(profile: keys.profile, key: keys.remote, direction: .receiver)
                srtpProfile = keys.profile
                events.append(.srtpReady(keys.profile))
            } catch {
                fail(.srtp(error))
            }
        case .applicationData(let bytes): events.append(.applicationData(bytes))
        case .closed: break
        case .failed(let error): fail(.dtls(error))
        }
    }

    private var failure: PeerTransportError?

    private func fail(_ error: PeerTransportError) {
        guard failure == nil else { return }
        failure = error
        events.append(.failed(error))
    }

    /// The W3C peer connection state from the ICE and DTLS states (webrtc-pc §4.4.3).
    private func updateState() {
        guard state != .closed else { return }
        let next: State
        if failure != nil || ice.state == .failed || dtlsState == .failed {
            next = .failed
        } else if dtlsState == .closed || ice.state == .closed {
            next = .closed
        } else if ice.state == .disconnected {
            next = .disconnected
        } else if (ice.state == .connected || ice.state == .completed) && dtlsState == .connected && outbound != nil {
            next = .connected
        } else if ice.state == .new && dtlsState == .new {
            next = .new
        } else {
            next = .connecting
        }
        setState(next)
    }

    private func setState(_ next: State) {
        guard next != state else { return }
        state = next
        events.append(.stateChanged(next))
    }
}

/// Why a transport failed.
public enum PeerTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Every candidate pair failed, or no pair was selected in time (RFC 8445 §8.1.2... §7.2.5.3.3).
    case iceFailed
    /// The peer stopped answering consent checks (RFC 7675 §5.1).
    case consentLost
    case dtls(DTLSError)
    case srtp(SRTPError)
    /// A new remote description asked for the other DTLS role on a running association.
    case dtlsRoleChanged
    /// The remote description's fingerprints use no hash this side checks (sha-1/256/384/512).
    case unsupportedFingerprint([String])

    public var reason: String {
        switch self {
        case .iceFailed: "ice-failed"
        case .consentLost: "consent-lost"
        case .dtls(let error): "dtls-\(error.reason)"
        case .srtp(let error): "srtp-\(error.reason)"
        case .dtlsRoleChanged: "dtls-role-changed"
        case .unsupportedFingerprint: "unsupported-fingerprint"
        }
    }

    public var description: String {
        switch self {
        case .iceFailed: "ICE failed: no candidate pair works"
        case .consentLost: "ICE consent expired: the peer stopped answering (RFC 7675)"
        case .dtls(let error): "DTLS failed: \(error)"
        case .srtp(let error): "SRTP failed: \(error)"
        case .dtlsRoleChanged: "the remote description changed the DTLS role of a running association"
        case .unsupportedFingerprint(let algorithms):
            "the remote fingerprints use \(algorithms.joined(separator: ", ")), none of sha-1/256/384/512"
        }
    }
}

/// What a transport carried and dropped.
public struct PeerTransportStatistics: Sendable, Hashable {
    public var rtpPacketsSent = 0
    public var rtcpPacketsSent = 0
    public var rtpPacketsReceived = 0
    public var rtcpPacketsReceived = 0
    /// Sends refused: no keys yet, no path, consent lost, or closed.
    public var sendsRefused = 0
    /// Datagrams dropped, by reason (`ice-…` from the agent, `srtp-…` from unprotect, …).
    public var drops: [String: Int] = [:]

    public init() {}
}
