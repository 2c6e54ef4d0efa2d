import Foundation
import MediaCodecs
import MediaCore
import MediaDTLS
import MediaICE
import MediaNegotiation
import MediaNodes
import MediaSCTP
import MediaSDP
import MediaSRTP
import MediaSTUN
import MediaTransport

/// A WebRTC peer connection (webrtc-pc §4.4, JSEP RFC 8829) in the shape libwebrtc's users know:
/// tracks added, offer and answer as SDP text, trickled candidates, state events, statistics.
///
/// It is built from the engine's pieces: one bundled transport (`PeerTransport` on a
/// `PeerTransportLoop`: ICE, DTLS-SRTP, RFC 7983 demultiplexing) carries every stream; each
/// negotiated section is a transceiver with at most one sending and one receiving path:
///
/// ```
///  LocalTrack source ─▶ enabled gate ─▶ encoder ─▶ RTPSendStream ─▶ BundledRTPTransport ─┐
///                                                                                          ├─ PeerTransportLoop ─ UDP
///  RemoteTrack: sink ◀─ decoder ◀─ RTPReceiveStream ◀─ BundledRTPTransport ◀─ demultiplexer ┘
/// ```
///
/// A sending pipeline starts when DTLS-SRTP has keyed the transport (so its first keyframe is not
/// refused), and runs on the shared workers, as the remote tracks do; remote tracks are announced
/// when the remote description says the peer sends (`Event.track`), and run when the app gives
/// them an output.
/// One audio and one video track are sent at most (one section of each kind).
public final class PeerConnection: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var iceServers: [ICEServer]
        /// `relay` gathers and uses only TURN candidates (webrtc-pc §4.2.5).
        public var iceTransportPolicy: ICETransportPolicy
        /// Local addresses to gather host candidates on, one socket each (port 0: the kernel's
        /// choice); nil: every interface's address.
        public var localAddresses: [String]?
        /// With `localAddresses` nil: 127.0.0.1 and ::1 too (calls on one machine, tests).
        public var includeLoopback: Bool
        /// The DTLS certificate; nil: a new self-signed ECDSA P-256 one.
        public var certificate: DTLSCertificate?
        /// The kinds this side receives, as `offerToReceiveAudio/Video` (and what an answer accepts).
        public var receive: Set<MediaKind>
        /// RTP header extensions offered, feedback added to each video codec.
        public var headerExtensions: [String]
        public var videoFeedback: [RTCPFeedbackType]
        /// Encoding of sent video.
        public var videoBitrate: Int
        public var keyframeInterval: Int?
        public var audioBitrate: Int
        /// Jitter-buffer bounds of remote tracks.
        public var minimumDelay: ClockTime
        public var maximumDelay: ClockTime
        /// The rest of the ICE agent's settings (pacing, timeouts, consent); servers and policy come
        /// from the fields above.
        public var ice: ICEConfiguration

        public init(iceServers: [ICEServer] = [], iceTransportPolicy: ICETransportPolicy = .all,
                    localAddresses: [String]? = nil, includeLoopback: Bool = false, certificate: DTLSCertificate? = nil,
                    receive: Set<MediaKind> = [.audio, .video],
                    // Sluice sends no REMB or transport-wide feedback yet: offering them would make a
                    // browser wait for it to raise its bitrate.
                    headerExtensions: [String] = [RTPHeaderExtensionURI.mid, RTPHeaderExtensionURI.absSendTime],
                    videoFeedback: [RTCPFeedbackType] = [.nack, .pli, .fir],
                    videoBitrate: Int = 1_000_000, keyframeInterval: Int? = nil, audioBitrate: Int = 32_000,
                    minimumDelay: ClockTime = .milliseconds(10), maximumDelay: ClockTime = .milliseconds(500),
                    ice: ICEConfiguration = ICEConfiguration()) {
            self.iceServers = iceServers
            self.iceTransportPolicy = iceTransportPolicy
            self.localAddresses = localAddresses
            self.includeLoopback = includeLoopback
            self.certificate = certificate
            self.receive = receive
            self.headerExtensions = headerExtensions
            self.videoFeedback = videoFeedback
            self.videoBitrate = videoBitrate
            self.keyframeInterval = keyframeInterval
            self.audioBitrate = audioBitrate
            self.minimumDelay = minimumDelay
            self.maximumDelay = maximumDelay
            self.ice = ice
        }
    }

    public enum Event: Sendable {
        /// A local candidate for the peer (`a=candidate:` value, trickle ICE, RFC 8838).
        case iceCandidate(String)
        case iceGatheringComplete
        case iceConnectionStateChanged(ICEConnectionState)
        case dtlsStateChanged(DTLSAssociation.State)
        case connectionStateChanged(PeerTransport.State)
        /// The remote description says the peer sends this track.
        case track(RemoteTrack)
        /// The peer opened a data channel (DCEP, RFC 8832).
        case dataChannel(PeerDataChannel)
        /// Why the connection failed; `connectionStateChanged(.failed)` comes with it.
        case failed(PeerTransportError)
        case turnFailed(server: TransportAddress, reason: String)
    }

    /// What the connection reports, in order. Ends when the connection is closed.
    public let events: AsyncStream<Event>
    public let factory: PeerConnectionFactory
    public let configuration: Configuration
    public let certificate: DTLSCertificate

    private let eventSink: AsyncStream<Event>.Continuation
    private let state = Locked(Negotiation())
    private let dataChannelObserver = ObserverSlot<PeerDataChannel>()
    private let demultiplexer = BundledRTPDemultiplexer()
    private let streamID = UUID().uuidString.lowercased()
    /// The `o=` session id, the same in every description of this connection (RFC 3264 §8).
    private let sessionID = UInt64.random(in: 1...UInt64(Int64.max))
    private let cname = UUID().uuidString.lowercased()
    /// The ICE configuration with servers and policy; checked at init.
    private let ice: ICEConfiguration

    /// What the signalling has settled so far.
    private struct Negotiation: @unchecked Sendable {
        var loop: PeerTransportLoop?
        var senders: [PeerSender] = []
        var receivers: [RemoteTrack] = []
        /// Every data channel, ours and the peer's; ours wait for `channels` to get their stream.
        var dataChannels: [PeerDataChannel] = []
        var channels: PeerDataChannelLoop?
        var localCandidates: [ICECandidate] = []
        var gatheringComplete = false
        var local: SessionDescription?
        /// The offer received, waiting for `createAnswer`.
        var remoteOffer: (description: SessionDescription, remote: RemoteDescription)?
        var sessionVersion: UInt64 = 1
        var signaling = SignalingState.stable
        /// The sections ("type mid") the first completed offer/answer settled; later rounds must keep them.
        var settledSections: [String]?
        /// `restartIce()` was called: the next offer carries new ICE credentials.
        var iceRestartPending = false
        /// The peer's last offer or answer, as it sent it.
        var remoteDescription: String?
        var connectionState = PeerTransport.State.new
        var iceState = ICEConnectionState.new
        var srtpReady = false
        var failure: PeerTransportError?
        var closed = false
    }

    init(factory: PeerConnectionFactory, configuration: Configuration) throws {
        self.factory = factory
        self.configuration = configuration
        certificate = try configuration.certificate ?? DTLSCertificate()
        var ice = configuration.ice
        ice.transportPolicy = configuration.iceTransportPolicy
        ice.includeLoopback = ice.includeLoopback || configuration.includeLoopback
        for server in configuration.iceServers { try server.add(to: &ice) }
        self.ice = ice
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
    }

    deinit { close() }

    // MARK: Tracks

    /// Sends `track` in the section of its kind. Before the offer or answer that carries it.
    @discardableResult
    public func addTrack(_ track: LocalTrack) throws(PeerConnectionError) -> PeerSender {
        try state.withLock { (state) throws(PeerConnectionError) -> PeerSender in
            guard !state.closed else { throw .closed }
            guard state.local == nil else { throw .invalidState("addTrack after the description was made: renegotiation is not supported yet") }
            guard !state.senders.contains(where: { $0.kind == track.kind }) else {
                throw .invalidState("a \(track.kind.rawValue) track is sent already (one track of each kind)")
            }
            let sender = PeerSender(track: track, connection: self)
            state.senders.append(sender)
            return sender
        }
    }

    public var senders: [PeerSender] { state.withLock { $0.senders } }

    /// A data channel (W3C `createDataChannel`, RFC 8831). Made before the offer, it puts a data
    /// channel section in it (RFC 8841); it opens once the SCTP association is up.
    public func createDataChannel(_ label: String, options: DataChannelOptions = DataChannelOptions())
        throws(PeerConnectionError) -> PeerDataChannel
    {
        let channel = PeerDataChannel(label: label, options: options)
        let channels = try state.withLock { (state) throws(PeerConnectionError) -> PeerDataChannelLoop? in
            guard !state.closed else { throw .closed }
            guard state.channels != nil || state.local == nil else {
                throw .invalidState("the description has no data channel section: make channels before the offer")
            }
            state.dataChannels.append(channel)
            return state.channels
        }
        if let channels { try open(channel, on: channels) }
        return channel
    }

    public var dataChannels: [PeerDataChannel] { state.withLock { $0.dataChannels } }

    /// Called with each channel the peer opens, on the thread that read its DCEP open (the reactor's:
    /// keep it short, never block), before any of
    /// its messages is delivered, so a handler set here (`onEvent`) misses nothing; libwebrtc's
    /// `OnDataChannel`. `Event.dataChannel` reports the same channel later.
    public var onDataChannel: (@Sendable (PeerDataChannel) -> Void)? {
        get { dataChannelObserver.callback }
        set { dataChannelObserver.callback = newValue }
    }
    public var remoteTracks: [RemoteTrack] { state.withLock { $0.receivers } }

    // MARK: Offer and answer

    /// An offer (JSEP §5.2.1) with a section per track and per kind received, and the candidates
    /// gathered so far (more follow as `Event.iceCandidate`); it is this side's local description
    /// from now on, as `setLocalDescription()` makes it.
    ///
    /// After the first negotiation an offer keeps the same sections (a re-offer; with `restartIce()`
    /// it restarts ICE); adding or removing media is not supported yet and is refused by name.
    public func createOffer() throws(PeerConnectionError) -> String {
        let loop = try transportLoop(role: .controlling)
        let restart = try state.withLock { (state) throws(PeerConnectionError) -> Bool in
            guard !state.closed else { throw .closed }
            guard state.signaling != .haveRemoteOffer else { throw .invalidState("an offer was received: answer it") }
            defer { state.iceRestartPending = false }
            return state.iceRestartPending && state.settledSections != nil
        }
        if restart { restartICE(loop) }
        let setup = currentSetup(loop) ?? .actpass
        return try state.withLock { (state) throws(PeerConnectionError) -> String in
            let kinds = Set(state.senders.map(\.kind)).union(configuration.receive)
            var options = descriptionOptions(&state)
            options.media = [MediaKind.audio, .video].filter(kinds.contains)
            options.dataChannel = !state.dataChannels.isEmpty
            let transport = transportDescription(loop, setup: setup, state)
            let offer = makeWebRTCOffer(capabilities: factory.capabilities, transport: transport, options: options)
            if let settled = state.settledSections, Self.sections(of: offer) != settled {
                throw .invalidState("a re-offer must keep the sections \(settled) (the first offer was the peer's, or media changed): renegotiation is not supported yet")
            }
            state.local = offer
            state.signaling = .haveLocalOffer
            return offer.serialized()
        }
    }

    /// Restarts ICE at the next offer (W3C `restartIce()`, RFC 8445 §9, JSEP §4.1.16): it carries
    /// new credentials, and checks start again once the answer comes; media keeps to the pair in
    /// use until a new one is selected. Before the first negotiation it does nothing.
    public func restartIce() {
        state.withLock { $0.iceRestartPending = true }
    }

    /// The peer's last offer or answer as it sent it (W3C `remoteDescription`).
    public var remoteDescription: String? { state.withLock { $0.remoteDescription } }

    /// Where the offer/answer exchange stands (W3C `RTCSignalingState`).
    public var signalingState: SignalingState { state.withLock { $0.closed ? .closed : $0.signaling } }

    /// The peer's offer or answer. An answer completes negotiation: media starts once connected.
    /// An offer waits for `createAnswer()`.
    public func setRemoteDescription(_ sdp: String, type: SDPType) throws(PeerConnectionError) {
        let description: SessionDescription
        do { description = try SessionDescription(parsing: sdp) } catch { throw .malformedDescription("\(error)") }
        let remote: RemoteDescription
        do {
            remote = try readRemoteDescription(description, type: type, capabilities: factory.capabilities)
        } catch { throw .unacceptableDescription("\(error)") }
        switch type {
        case .offer:
            _ = try transportLoop(role: .controlled)
            try state.withLock { (state) throws(PeerConnectionError) in
                guard !state.closed else { throw .closed }
                guard state.signaling != .haveLocalOffer else { throw .invalidState("an offer was made: expecting an answer") }
                try Self.checkKeeps(state.settledSections, Self.sections(of: remote))
                state.remoteOffer = (description, remote)
                state.remoteDescription = sdp
                state.signaling = .haveRemoteOffer
            }
        case .answer:
            let (loop, local, settled) = try state.withLock {
                (state) throws(PeerConnectionError) -> (PeerTransportLoop, SessionDescription, [String]?) in
                guard let loop = state.loop, let local = state.local, state.signaling == .haveLocalOffer else {
                    throw .invalidState("an answer without an offer of this side")
                }
                try Self.checkKeeps(state.settledSections, Self.sections(of: remote))
                state.remoteDescription = sdp
                return (loop, local, state.settledSections)
            }
            if settled != nil {
                // A later round (a re-offer, an ICE restart): the transceivers stand; the transport takes it.
                try applyTransport(remote, loop: loop)
                state.withLock { $0.signaling = .stable }
                return
            }
            if local.media.contains(where: { $0.type == "application" }) { try setUpDataChannels(remote, loop: loop) }
            try applyTransport(remote, loop: loop)
            state.withLock { state in
                state.signaling = .stable
                state.settledSections = Self.sections(of: local)
            }
            let results = remote.media.map { media in
                MediaNegotiationResult(mid: media.mid, type: media.type,
                                       outcome: media.rejected ? .rejected(reason: "rejected by the answer")
                                                               : .accepted(codecs: media.codecs, direction: media.direction.reversed))
            }
            try setUpTransceivers(local: local, results: results, remote: remote)
        }
    }

    /// The answer to the offer given to `setRemoteDescription` (JSEP §5.3.1), with the candidates
    /// gathered so far; it is this side's local description from now on.
    ///
    /// An offer in a later round keeps the sections; when it restarts ICE (new credentials), the
    /// answer does too (RFC 8445 §9).
    public func createAnswer() throws(PeerConnectionError) -> String {
        let pending = state.withLock { state in
            state.remoteOffer.map { (loop: state.loop, offer: $0.remote, later: state.settledSections != nil) }
        }
        if let pending, pending.later, let loop = pending.loop {
            let current = loop.withTransport { core, _ in core.ice.remoteCredentials }
            let offered = pending.offer.transport
            if let current, current.ufrag != offered.iceUfrag || current.pwd != offered.icePwd { restartICE(loop) }
        }
        let setup = pending?.later == true ? pending?.loop.flatMap(currentSetup) : nil
        let (loop, offer, answer, later) = try state.withLock { (state) throws(PeerConnectionError) in
            guard let loop = state.loop, var offer = state.remoteOffer else { throw .invalidState("no offer to answer") }
            if let setup, offer.remote.localSetup != setup {
                // The peer's actpass in a later offer: this side keeps the role its association has.
                guard offer.remote.transport.setup == .actpass else {
                    throw .unacceptableDescription("the offer's a=setup:\(offer.remote.transport.setup.rawValue) would change the DTLS role of the running association")
                }
                offer.remote.localSetup = setup
            }
            let transport = transportDescription(loop, setup: offer.remote.localSetup, state)
            let answer: WebRTCAnswer
            do {
                var options = descriptionOptions(&state)
                options.dataChannel = true
                answer = try makeWebRTCAnswer(to: offer.description, capabilities: factory.capabilities, transport: transport,
                                              options: options)
            } catch { throw .unacceptableDescription("\(error)") }
            state.local = answer.description
            state.remoteOffer = nil
            state.signaling = .stable
            let later = state.settledSections != nil
            if !later { state.settledSections = Self.sections(of: answer.description) }
            return (loop, offer, answer, later)
        }
        if later {
            try applyTransport(offer.remote, loop: loop)
            return answer.description.serialized()
        }
        if answer.description.media.contains(where: { $0.type == "application" && $0.port != 0 }) {
            try setUpDataChannels(offer.remote, loop: loop)
        }
        try applyTransport(offer.remote, loop: loop)
        try setUpTransceivers(local: answer.description, results: answer.results, remote: offer.remote)
        return answer.description.serialized()
    }

    /// A trickled remote candidate (`candidate:…`, with or without `a=`); an empty string or
    /// `end-of-candidates` says no more are coming (RFC 8838 §4.4). A line that does not parse is
    /// counted in the transport's drops and skipped.
    public func addIceCandidate(_ line: String) throws(PeerConnectionError) {
        guard let loop = state.withLock({ $0.loop }) else { throw .invalidState("no remote description yet") }
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        loop.withTransport { core, now in
            if trimmed.isEmpty || trimmed.hasSuffix("end-of-candidates") {
                core.endOfRemoteCandidates(now: now)
            } else {
                core.addRemoteCandidate(line: trimmed, now: now)
            }
        }
    }

    /// Local candidates gathered so far, as `a=candidate:` values.
    public var localCandidates: [String] {
        state.withLock { $0.localCandidates.map { String($0.attributeValue.dropFirst("candidate:".count)) } }
    }

    public var connectionState: PeerTransport.State { state.withLock { $0.connectionState } }
    /// Why the connection failed, once it has (also `Event.failed`).
    public var failure: PeerTransportError? { state.withLock { $0.failure } }
    /// Whether every local candidate is gathered (server-reflexive and relayed ones included).
    public var isGatheringComplete: Bool { state.withLock { $0.gatheringComplete } }
    public var iceConnectionState: ICEConnectionState { state.withLock { $0.iceState } }

    // MARK: Statistics and close

    /// W3C `getStats()` (webrtc-stats): the transport, its candidate pairs, and every RTP stream.
    public func stats() -> PeerConnectionStats {
        let (loop, senders, receivers, connection) = state.withLock { ($0.loop, $0.senders, $0.receivers, $0.connectionState) }
        var report = PeerConnectionStats(connectionState: connection)
        if let loop {
            loop.withTransport { core, _ in
                report.transport = core.statistics
                report.ice = core.ice.statistics
                report.iceState = core.ice.state
                report.selectedPair = core.ice.selectedPair.map { pair in
                    [pair.local, pair.remote].map { "\($0.type.rawValue) \($0.connectionAddress):\($0.port)" }.joined(separator: " -> ")
                }
                report.srtpProfile = core.srtpProfile
            }
        }
        report.demultiplexer = demultiplexer.statistics
        report.outbound = senders.compactMap { $0.stats() }
        report.inbound = receivers.map { $0.stats() }
        report.dataChannels = state.withLock { $0.dataChannels }.compactMap { $0.stats() }
        return report
    }

    /// Ends the call: the sending pipelines stop and say BYE, the remote tracks end, DTLS sends
    /// close_notify, the sockets and the loop's reactor watches are released, `events` finishes.
    public func close() {
        let (loop, senders, receivers, channels, dataChannels, wasClosed) = state.withLock { state in
            defer { state.closed = true; state.connectionState = .closed }
            return (state.loop, state.senders, state.receivers, state.channels, state.dataChannels, state.closed)
        }
        guard !wasClosed else { return }
        for sender in senders { sender.stop() }
        for receiver in receivers { receiver.stop() }
        channels?.close()
        for channel in dataChannels where channel.readyState != .closed { channel.finish() }
        loop?.close()
        eventSink.yield(.connectionStateChanged(.closed))
        eventSink.finish()
    }

    // MARK: Inside

    /// The loop, made on first use with the ICE role of the side that offers (controlling) or
    /// answers (RFC 8445 §6.1.1); its host candidates are gathered when this returns.
    private func transportLoop(role: ICERole) throws(PeerConnectionError) -> PeerTransportLoop {
        if let loop = state.withLock({ $0.loop }) { return loop }
        let addresses: [SocketAddress]
        do {
            if let given = configuration.localAddresses {
                addresses = try given.map { try SocketAddress(parsing: $0) }
            } else {
                addresses = try NetworkInterfaces.addresses(includeLoopback: ice.includeLoopback)
                    .map { try SocketAddress(host: $0.address.host, port: 0) }
            }
        } catch { throw .socket("\(error)") }
        guard !addresses.isEmpty else { throw .socket("no local address to gather candidates on") }
        let transport = PeerTransport(iceRole: role, certificate: certificate,
                                      configuration: PeerTransport.Configuration(ice: ice))
        let loop: PeerTransportLoop
        do {
            loop = try PeerTransportLoop(transport: transport, bindingTo: addresses,
                                         handlers: demultiplexer.handlers { [weak self] event in self?.handle(event) })
        } catch { throw .socket("\(error)") }
        let closed = state.withLock { state in
            if state.loop == nil && !state.closed { state.loop = loop }
            return state.closed
        }
        guard !closed else { loop.close(); throw .closed }
        loop.start()
        return loop
    }

    private func descriptionOptions(_ state: inout Negotiation) -> WebRTCOptions {
        var senders: [MediaKind: WebRTCSender] = [:]
        for sender in state.senders {
            senders[sender.kind] = WebRTCSender(streamID: streamID, trackID: sender.track.id,
                                                source: SendingSource(ssrc: sender.ssrc, retransmissionSSRC: sender.rtxSSRC, cname: cname))
        }
        state.sessionVersion += 1
        return WebRTCOptions(origin: SDPOrigin(sessionID: sessionID, sessionVersion: state.sessionVersion),
                             senders: senders, receives: configuration.receive,
                             headerExtensions: configuration.headerExtensions, videoFeedback: configuration.videoFeedback)
    }

    /// The `a=setup` that keeps the DTLS role of a running association in later offers and answers
    /// (JSEP §5.2.2, §5.3.2); nil before the first negotiation.
    private func currentSetup(_ loop: PeerTransportLoop) -> SDPSetup? {
        loop.withTransport { core, _ in core.dtlsRole.map { $0 == .client ? .active : .passive } }
    }

    /// Starts ICE again with new local credentials; the candidates are signalled anew.
    private func restartICE(_ loop: PeerTransportLoop) {
        state.withLock { state in
            state.localCandidates.removeAll()
            state.gatheringComplete = false
        }
        loop.withTransport { core, now in core.restartICE(now: now) }
    }

    /// A description's sections as "type mid", which later offers and answers must keep.
    static func sections(of description: SessionDescription) -> [String] {
        description.media.map { "\($0.type) \($0.mid ?? "")" }
    }

    static func sections(of remote: RemoteDescription) -> [String] {
        remote.media.map { "\($0.type) \($0.mid ?? "")" }
    }

    static func checkKeeps(_ settled: [String]?, _ sections: [String]) throws(PeerConnectionError) {
        guard let settled, settled != sections else { return }
        throw .unacceptableDescription("the sections \(sections) differ from the negotiated \(settled): adding or removing media (renegotiation) is not supported yet")
    }

    private func transportDescription(_ loop: PeerTransportLoop, setup: SDPSetup, _ state: Negotiation) -> TransportDescription {
        loop.withTransport { core, _ in
            core.localTransportDescription(setup: setup, candidates: state.localCandidates, endOfCandidates: state.gatheringComplete)
        }
    }

    private func applyTransport(_ remote: RemoteDescription, loop: PeerTransportLoop) throws(PeerConnectionError) {
        let outcome = loop.withTransport { core, now in
            Result { () throws(PeerTransportError) in try core.setRemote(remote, now: now) }
        }
        if case .failure(let error) = outcome { throw .transport(error) }
    }

    /// The transceivers the negotiation settled: a sending path for each local track whose section
    /// sends, a remote track for each section the peer sends in.
    private func setUpTransceivers(local: SessionDescription, results: [MediaNegotiationResult],
                                   remote: RemoteDescription) throws(PeerConnectionError) {
        let (loop, senders) = state.withLock { ($0.loop!, $0.senders) }
        var tracks: [RemoteTrack] = []
        for (index, result) in results.enumerated() {
            guard case .accepted(let codecs, let direction) = result.outcome, let first = codecs.first,
                  let kind = MediaKind(rawValue: result.type), index < remote.media.count
            else { continue }
            let mid = result.mid ?? String(index)
            if direction.sends, let sender = senders.first(where: { $0.kind == kind }) {
                try sender.negotiated(codec: first, mid: mid, loop: loop, demultiplexer: demultiplexer)
            }
            if direction.receives, configuration.receive.contains(kind) {
                let peer = remote.media[index].senders.first
                let track = try RemoteTrack(kind: kind, mid: mid, id: peer?.trackID ?? mid, codec: first, remoteSSRC: peer?.ssrc,
                                            remoteRTXSSRC: peer?.retransmissionSSRC, loop: loop, demultiplexer: demultiplexer,
                                            connection: self)
                tracks.append(track)
            }
        }
        let ready = state.withLock { state in
            state.receivers += tracks
            return state.srtpReady
        }
        for track in tracks { eventSink.yield(.track(track)) }
        if ready { startSending() }
    }

    /// The transport's events, on the reactor thread (the loop's handlers) or an app thread that
    /// drove the transport.
    private func handle(_ event: PeerTransport.Event) {
        state.withLock { $0.channels }?.handle(event)
        switch event {
        case .localCandidate(let candidate):
            state.withLock { $0.localCandidates.append(candidate) }
            eventSink.yield(.iceCandidate(String(candidate.attributeValue.dropFirst("candidate:".count))))
        case .gatheringComplete:
            state.withLock { $0.gatheringComplete = true }
            eventSink.yield(.iceGatheringComplete)
        case .iceStateChanged(let ice):
            state.withLock { $0.iceState = ice }
            eventSink.yield(.iceConnectionStateChanged(ice))
        case .dtlsStateChanged(let dtls):
            eventSink.yield(.dtlsStateChanged(dtls))
        case .stateChanged(let connection):
            state.withLock { if !$0.closed { $0.connectionState = connection } }
            eventSink.yield(.connectionStateChanged(connection))
        case .srtpReady:
            state.withLock { $0.srtpReady = true }
            startSending()
        case .failed(let error):
            state.withLock { $0.failure = error }
            eventSink.yield(.failed(error))
        case .turnFailed(let server, let reason):
            eventSink.yield(.turnFailed(server: server, reason: reason))
        case .applicationData:
            break   // SCTP's (RFC 8261), handed to the data channels above
        }
    }

    /// Data channels over the transport (SCTP over DTLS, RFC 8261), made before the transport takes
    /// the remote description so that none of DTLS's events is missed; the channels made so far get
    /// their streams.
    private func setUpDataChannels(_ remote: RemoteDescription, loop: PeerTransportLoop) throws(PeerConnectionError) {
        guard let section = remote.media.first(where: { $0.type == "application" && !$0.rejected }) else { return }
        let configuration = DataChannels.Configuration(isDTLSClient: remote.localSetup.isDTLSClient,
                                                       remoteMaxMessageSize: section.maxMessageSize ?? 65_536)
        let channels: PeerDataChannelLoop
        do {
            channels = try PeerDataChannelLoop(loop: loop, configuration: configuration) { [weak self] event in
                self?.handle(event)
            }
        } catch { throw .media("data channels: \(error)") }
        let waiting = state.withLock { state in
            state.channels = channels
            return state.dataChannels
        }
        for channel in waiting { try open(channel, on: channels) }
    }

    private func open(_ channel: PeerDataChannel, on channels: PeerDataChannelLoop) throws(PeerConnectionError) {
        let outcome = channels.withChannels { channels, now in
            Result { () throws(DataChannelError) in try channels.open(label: channel.label, options: channel.options, now: now) }
        }
        switch outcome {
        case .success(let id): channel.attach(id: id, to: channels, open: false)
        case .failure(let error): throw .media("data channel \(channel.label): \(error)")
        }
    }

    /// The data channels' events, on whichever thread drove them.
    private func handle(_ event: DataChannelEvent) {
        let (channels, loop) = state.withLock { ($0.dataChannels, $0.channels) }
        switch event {
        case .remoteOpened(let info):
            guard let loop else { return }
            let channel = PeerDataChannel(label: info.label, options: info.options)
            channel.attach(id: info.id, to: loop, open: true)
            state.withLock { $0.dataChannels.append(channel) }
            dataChannelObserver(channel)
            eventSink.yield(.dataChannel(channel))
        case .opened(let id), .message(let id, _), .bufferedAmountLow(let id), .closed(let id), .error(let id, _):
            channels.first { $0.id == id && $0.readyState != .closed }?.handle(event)
        case .associationClosed:
            for channel in channels where channel.readyState != .closed { channel.finish() }
        case .associationEstablished:
            break
        }
    }

    /// Starts every negotiated sending path that is not running yet.
    private func startSending() {
        let senders = state.withLock { $0.closed ? [] : $0.senders }
        for sender in senders { sender.startIfNegotiated() }
    }
}

/// Why a peer connection call failed.
/// W3C `RTCSignalingState` (JSEP §3.2).
public enum SignalingState: String, Sendable, Hashable {
    case stable, haveLocalOffer = "have-local-offer", haveRemoteOffer = "have-remote-offer", closed
}

public enum PeerConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call does not fit the signalling state (e.g. an answer without an offer).
    case invalidState(String)
    /// The SDP text does not parse (RFC 8866).
    case malformedDescription(String)
    /// The description parses but cannot be used (no ICE credentials or fingerprint, no common codec, ...).
    case unacceptableDescription(String)
    case transport(PeerTransportError)
    /// A local socket could not be opened.
    case socket(String)
    case iceServer(String, String)
    /// A track's source or codec could not be set up.
    case media(String)
    case closed

    public var description: String {
        switch self {
        case .invalidState(let why): "invalid state: \(why)"
        case .malformedDescription(let why): "malformed session description: \(why)"
        case .unacceptableDescription(let why): "unacceptable session description: \(why)"
        case .transport(let error): "transport: \(error)"
        case .socket(let why): "socket: \(why)"
        case .iceServer(let url, let why): "ICE server \(url): \(why)"
        case .media(let why): "media: \(why)"
        case .closed: "the peer connection is closed"
        }
    }
}

/// What `PeerConnection.stats()` reports (W3C webrtc-stats: transport, candidate-pair,
/// outbound-rtp, inbound-rtp).
public struct PeerConnectionStats: Sendable {
    public var connectionState: PeerTransport.State
    public var iceState: ICEConnectionState = .new
    public var transport = PeerTransportStatistics()
    public var ice: ICEStatistics?
    /// "type address -> type address" of the selected candidate pair.
    public var selectedPair: String?
    public var srtpProfile: SRTPProfile?
    public var demultiplexer = BundledDemultiplexerStatistics()
    public var outbound: [OutboundRTPStreamStatistics] = []
    public var inbound: [InboundRTPStreamStatistics] = []
    /// W3C `data-channel`: messages and bytes each way.
    public var dataChannels: [DataChannelStats] = []
}
