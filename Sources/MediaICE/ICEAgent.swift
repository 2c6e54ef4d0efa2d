// The ICE agent (RFC 8445, full implementation, both roles) with consent freshness (RFC 7675), as a value:
// datagrams and a time in, datagrams, a timer and events out. No sockets, no threads, no clock.
import MediaCore
import MediaSTUN

/// An ICE agent for one data stream with one component (BUNDLE and rtcp-mux, as WebRTC uses it).
///
/// The I/O adapter owns the sockets and the clock. It tells the agent its local bases (`addLocalBase`),
/// the peer's credentials and candidates (`setRemoteCredentials`, `addRemoteCandidate`), every datagram it
/// receives (`handleReceive`) and the time when `nextTimeout` comes (`handleTimeout`); it drains
/// `pollTransmit()` and `pollEvent()` after each call. Application data goes out with `send` on the
/// selected pair; received datagrams that are not STUN come back as `.application` for DTLS/SRTP.
///
/// Relayed candidates (RFC 8656): for each TURN server of the configuration the agent runs one `TURNClient`
/// per base. Their datagrams come out of `pollTransmit()` from the base to the server (`relayed` false),
/// and datagrams the server sends to the base are given to `handleReceive` like any other. Relayed
/// application data comes back as `.relayedApplication(bytes)` (the caller's datagram is only the TURN
/// wrapper). On a relayed selected pair `route(forSending:)` is nil and `send` wraps the bytes.
/// A TURN client outside the agent may still use the `addRelayedCandidate` seam: then transmits whose
/// `relayed` is true must go through that allocation and what it receives is fed to
/// `handleReceive(…, to: relayedAddress)`.
public struct ICEAgent: Sendable {
    public internal(set) var role: ICERole
    public internal(set) var localCredentials: ICECredentials
    public internal(set) var remoteCredentials: ICECredentials?
    public let configuration: ICEConfiguration
    /// The tie-breaker of role conflicts (RFC 8445 §7.3.1.1); also seeds the agent's own randomness.
    public let tieBreaker: UInt64
    public internal(set) var state: ICEConnectionState = .new
    public internal(set) var gatheringComplete = false
    public internal(set) var remoteEndOfCandidates = false

    var random: SplitMix64
    var locals: [LocalCandidate] = []
    var remotes: [RemoteCandidate] = []
    var pairs: [CandidatePair] = []
    var triggeredQueue: [Int] = []
    var transactions: [STUNTransactionID: Transaction] = [:]
    var transmits: [ICETransmit] = []
    var events: [ICEEvent] = []
    var counters = ICEStatistics()
    var selected: SelectedPath?
    var nominatingPair: Int?
    var lastPacedAt: ClockTime?
    var checkingStartedAt: ClockTime?
    var firstValidAt: ClockTime?
    var lastNow: ClockTime = .zero
    var hasFailed = false
    var gatheringStarted = false
    var prflxCounter = 0
    var transactionCount = 0
    var relays: [Relay] = []

    public init(role: ICERole, local: ICECredentials, configuration: ICEConfiguration = ICEConfiguration(),
                tieBreaker: UInt64 = UInt64.random(in: .min ... .max)) {
        self.role = role
        self.localCredentials = local
        self.configuration = configuration
        self.tieBreaker = tieBreaker
        self.random = SplitMix64(seed: tieBreaker ^ 0x1CE_A6E7)
    }

    // MARK: Outputs

    /// The next datagram to send, or nil.
    public mutating func pollTransmit() -> ICETransmit? {
        if transmits.first?.relayed == true { drainRelays(now: lastNow) }
        return transmits.isEmpty ? nil : transmits.removeFirst()
    }

    /// The next event, or nil.
    public mutating func pollEvent() -> ICEEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }

    /// When to call `handleTimeout` next; nil when nothing is scheduled (closed, or nothing to do).
    public var nextTimeout: ClockTime? {
        guard state != .closed else { return nil }
        var deadlines: [ClockTime] = transactions.values.compactMap(\.nextRetransmitAt)
        if hasCheckWork { deadlines.append(lastPacedAt.map { $0 + configuration.pacing } ?? lastNow) }
        if role == .controlling, nominatingPair == nil, selected?.pairIndex == nil, let firstValidAt {
            deadlines.append(firstValidAt + configuration.nominationDelay)
        }
        if let path = selected, !path.consentLost {
            deadlines.append(path.nextConsentAt)
            deadlines.append(path.lastConsentAt + configuration.consentTimeout)
            if state != .disconnected { deadlines.append(path.lastReceivedAt + configuration.disconnectedTimeout) }
        } else if selected == nil, !hasFailed, let checkingStartedAt {
            deadlines.append(checkingStartedAt + configuration.failureTimeout)
        }
        deadlines += relays.compactMap(\.client.nextTimeout)
        return deadlines.min()
    }

    /// Counters and per-pair figures (W3C `RTCIceCandidatePairStats`).
    public var statistics: ICEStatistics {
        var result = counters
        result.pairs = pairs.indices.sorted { pairPriority($0) > pairPriority($1) }.map { index in
            var figures = pairs[index].figures
            figures.local = locals[pairs[index].local].candidate
            figures.remote = remotes[pairs[index].remote].candidate
            figures.state = pairs[index].state
            figures.priority = pairPriority(index)
            figures.nominated = pairs[index].nominated
            figures.selected = selected?.pairIndex == index
            return figures
        }
        return result
    }

    /// The pair media goes over, if any.
    public var selectedPair: (local: ICECandidate, remote: ICECandidate)? {
        selected.map { ($0.local, $0.remote) }
    }

    /// Local candidates known so far (host, server-reflexive, relayed, and peer-reflexive ones learned).
    public var localCandidates: [ICECandidate] { locals.map(\.candidate) }
    /// Remote candidates: signalled ones and peer-reflexive ones learned from checks.
    public var remoteCandidates: [ICECandidate] { remotes.map(\.candidate) }

    // MARK: Local side

    /// Adds a local socket address: a host candidate, Binding requests to each STUN server of the same
    /// family for a server-reflexive one (RFC 8445 §5.1.1) and an Allocate to each TURN server for a relayed
    /// one. With `transportPolicy == .relay` only the allocations are made (webrtc-pc §4.2.1). Loopback
    /// bases are skipped unless configured.
    public mutating func addLocalBase(_ base: TransportAddress, now: ClockTime) {
        addLocalBases([base], now: now)
    }

    /// Adds several bases at once; `.gatheringComplete` comes when all their STUN requests are answered
    /// or timed out and all their TURN clients allocated or failed.
    public mutating func addLocalBases(_ bases: [TransportAddress], now: ClockTime) {
        guard state != .closed else { return }
        lastNow = now
        gatheringStarted = true
        for base in bases {
            guard configuration.includeLoopback || !base.ip.isLoopback,
                  !locals.contains(where: { $0.address == base }) else { continue }
            startRelays(on: base, now: now)
            guard configuration.transportPolicy == .all else { continue }
            let hostCount = locals.filter { $0.candidate.type == .host }.count
            let preference = UInt16(clamping: 65535 - hostCount)
            let candidate = ICECandidate(type: .host, address: base,
                                         foundation: ICECandidate.foundation(type: .host, baseIP: base.ip),
                                         localPreference: preference)
            addLocal(LocalCandidate(candidate: candidate, address: base, base: base, relayed: false, pairable: true))
            for server in configuration.stunServers where server.ip.isIPv4 == base.ip.isIPv4 {
                let request = STUNMessage(method: .binding, messageClass: .request,
                                          transactionID: newTransactionID())
                startTransaction(Transaction(kind: .gather(server: server), request: request.serialized(),
                                             source: base, destination: server, relayed: false, key: nil),
                                 now: now)
                counters.gatheringRequestsSent += 1
            }
        }
        drainRelays(now: now)
        checkGatheringComplete()
        updateState(now: now)
    }

    /// Adds a relayed candidate obtained by a TURN client (RFC 8445 §5.1.1.2, RFC 8656): `relayed` is the
    /// allocation's relayed address, `mapped` its server-reflexive address (the candidate's related address).
    public mutating func addRelayedCandidate(relayed: TransportAddress, mapped: TransportAddress?,
                                             server: TransportAddress, now: ClockTime) {
        guard state != .closed, !locals.contains(where: { $0.address == relayed }) else { return }
        lastNow = now
        let candidate = ICECandidate(type: .relay, address: relayed, related: mapped,
                                     foundation: ICECandidate.foundation(type: .relay, baseIP: relayed.ip,
                                                                         serverIP: server.ip))
        addLocal(LocalCandidate(candidate: candidate, address: relayed, base: relayed, relayed: true, pairable: true))
        updateState(now: now)
    }

    // MARK: Remote side

    /// The peer's ufrag and password (from its SDP). New ones on a running session mean the peer restarted
    /// ICE (RFC 8445 §9): the checklist starts again, the selected pair keeps sending until a new one is chosen.
    public mutating func setRemoteCredentials(_ credentials: ICECredentials, now: ClockTime) {
        guard state != .closed else { return }
        lastNow = now
        if let remoteCredentials, remoteCredentials != credentials { resetChecklist() }
        remoteCredentials = credentials
        if checkingStartedAt == nil { checkingStartedAt = now }
        updateState(now: now)
    }

    /// Adds a remote candidate (trickle ICE, RFC 8838) and pairs it with the local ones (RFC 8445 §6.1.2).
    /// TCP candidates and unresolved mDNS hostnames are counted and ignored, and so is a candidate whose
    /// `ufrag` extension names another generation than the current remote credentials (a late trickle
    /// from before an ICE restart).
    public mutating func addRemoteCandidate(_ candidate: ICECandidate, now: ClockTime) {
        guard state != .closed else { return }
        lastNow = now
        if let ufrag = candidate.extensionValue("ufrag"), let remoteCredentials, ufrag != remoteCredentials.ufrag {
            counters.drop("stale-candidate-generation")
            return
        }
        guard candidate.transport == .udp else { counters.tcpCandidatesIgnored += 1; return }
        guard let address = candidate.address else {
            if candidate.isMDNS { counters.mdnsCandidatesIgnored += 1 } else { counters.drop("unresolved-candidate") }
            return
        }
        if let existing = remotes.firstIndex(where: { $0.address == address && $0.candidate.component == candidate.component }) {
            // A signalled candidate replaces a peer-reflexive one learned earlier at the same address.
            if remotes[existing].candidate.type == .prflx { remotes[existing].candidate = candidate }
            return
        }
        remotes.append(RemoteCandidate(candidate: candidate, address: address))
        for local in locals.indices where locals[local].pairable { addPair(local: local, remote: remotes.count - 1) }
        if checkingStartedAt == nil { checkingStartedAt = now }
        updateState(now: now)
    }

    /// The peer has no more candidates (RFC 8838 §4.4): once every pair has failed, the agent fails.
    public mutating func endOfRemoteCandidates(now: ClockTime) {
        lastNow = now
        remoteEndOfCandidates = true
        updateState(now: now)
    }

    /// ICE restart (RFC 8445 §9): new local credentials, a new checklist once the peer's new credentials and
    /// candidates arrive; the selected pair keeps carrying media (and consent) until a new one is selected.
    /// Local candidates are signalled again.
    public mutating func restart(_ credentials: ICECredentials, now: ClockTime) {
        guard state != .closed else { return }
        lastNow = now
        resetChecklist()
        localCredentials = credentials
        remoteCredentials = nil
        if selected?.consentLost == true { selected = nil }
        for local in locals where local.candidate.type != .prflx { events.append(.localCandidate(local.candidate)) }
        locals.removeAll { $0.candidate.type == .prflx }
        if gatheringComplete { events.append(.gatheringComplete) }
        updateState(now: now)
    }

    /// Stops the agent: nothing more is received or scheduled. Allocations are released with one Refresh of
    /// LIFETIME 0 each (RFC 8656 §7.2), left in `pollTransmit()` (not retransmitted; the server's
    /// allocation expires anyway).
    public mutating func close() {
        guard state != .closed else { return }
        transactions.removeAll()
        transmits.removeAll()
        closeRelays(now: lastNow)
        state = .closed
        events.append(.stateChanged(.closed))
    }

    // MARK: Application data

    /// Application data (DTLS, SRTP) on the selected pair; nil, counted in `sendsRefused`, when there is no
    /// selected pair or consent has expired (RFC 7675 §5.1: media stops). On a pair relayed by the agent's
    /// own TURN client the transmit goes from the base to the TURN server, the bytes wrapped in ChannelData
    /// (a Send indication until the channel is bound); nil while the peer's permission is being created
    /// (the bytes then wait in the client and come out of `pollTransmit()`).
    public mutating func send(_ bytes: [UInt8], now: ClockTime) -> ICETransmit? {
        if state != .closed, let path = selected, !path.consentLost, path.relayed,
           let relay = relayIndex(relayedAddress: path.base) {
            return sendRelayed(bytes, path: path, relay: relay, now: now)
        }
        guard let route = route(forSending: bytes.count, now: now) else { return nil }
        return ICETransmit(source: route.source, destination: route.destination, bytes: bytes, relayed: route.relayed)
    }

    /// Where to send `length` bytes of application data now, counted as sent on the selected pair: the
    /// caller sends from its own buffer, nothing is copied (the media path). Nil, counted in
    /// `sendsRefused`, as for `send`. Nil too, not counted, when the selected pair is relayed through the
    /// agent's own TURN client (`selectedPathIsRelayed`): the bytes need a ChannelData header, so use `send`.
    public mutating func route(forSending length: Int, now: ClockTime) -> ICERoute? {
        guard state != .closed, let path = selected, !path.consentLost else {
            counters.sendsRefused += 1
            return nil
        }
        if path.relayed, relayIndex(relayedAddress: path.base) != nil { return nil }
        countSent(length, path: path, now: now)
        return ICERoute(source: path.base, destination: path.remoteAddress, relayed: path.relayed)
    }

    /// `route(forSending:now:)`, or `.ownRelay` where that is nil because the selected pair is relayed
    /// through the agent's own TURN client (`selectedPathIsRelayed`); nil when nothing can be sent
    /// (counted in `sendsRefused`). One mutating call for the media path: a caller that keeps the agent
    /// in a class reads a property such as `selectedPathIsRelayed` on a copy of the whole agent.
    public mutating func sendPath(forSending length: Int, now: ClockTime) -> ICESendPath? {
        if let path = selected, path.relayed, relayIndex(relayedAddress: path.base) != nil { return .ownRelay }
        return route(forSending: length, now: now).map { .direct($0) }
    }

    // MARK: Inputs

    /// A datagram received on `base` (a local socket, or a relayed address) from `source`. STUN is handled
    /// here; anything else from a known remote address is `.application`. Bad STUN is dropped and counted.
    /// As `handleReceive(_: [UInt8], ...)` without copying what is not STUN (the media path): only STUN,
    /// which the agent parses, and datagrams from an own TURN server (to unwrap) are copied.
    public mutating func handleReceive(_ bytes: UnsafeRawBufferPointer, from source: TransportAddress,
                                       to base: TransportAddress, now: ClockTime) -> ICEReceiveResult {
        guard state != .closed else { return dropped("closed") }
        guard let first = bytes.first else { return dropped("empty-datagram") }
        guard first <= 3 || relayIndex(server: source, base: base) != nil else {
            lastNow = now
            return receiveApplication(length: bytes.count, from: source, to: base, now: now)
        }
        return handleReceive(Array(bytes), from: source, to: base, now: now)
    }

    /// A datagram received on `base` from `source` (see above). From a TURN server the agent uses on that
    /// base it goes to the TURN client; peer data it relays is handled as received on the relayed address,
    /// and non-STUN peer data comes back as `.relayedApplication(unwrapped bytes)`.
    public mutating func handleReceive(_ bytes: [UInt8], from source: TransportAddress, to base: TransportAddress,
                                       now: ClockTime) -> ICEReceiveResult {
        guard state != .closed else { return dropped("closed") }
        lastNow = now
        if let relay = relayIndex(server: source, base: base), let result = receiveFromRelay(relay, bytes, now: now) {
            return result
        }
        // RFC 7983: a first byte of 0-3 is STUN.
        guard let first = bytes.first else { return dropped("empty-datagram") }
        guard first <= 3 else { return receiveApplication(length: bytes.count, from: source, to: base, now: now) }
        let message: STUNMessage
        do {
            message = try STUNMessage(parsing: bytes)
        } catch {
            return dropped(error.reason)
        }
        let result: ICEReceiveResult
        switch message.messageClass {
        case .request:
            result = handleRequest(message, bytes: bytes, from: source, to: base, now: now)
        case .successResponse, .errorResponse:
            result = handleResponse(message, bytes: bytes, from: source, to: base, now: now)
        case .indication:
            result = .handled
        }
        if result == .handled { heard(from: source, on: base, now: now) }
        nominateIfReady(now: now)
        drainRelays(now: now)
        updateState(now: now)
        return result
    }

    /// Runs what is due at `now`: retransmissions and their timeouts, nomination, the next paced check,
    /// consent checks and state timeouts.
    public mutating func handleTimeout(now: ClockTime) {
        guard state != .closed else { return }
        lastNow = now
        retransmitDue(now: now)
        nominateIfReady(now: now)
        if hasCheckWork, lastPacedAt.map({ now >= $0 + configuration.pacing }) ?? true,
           let index = nextPairToCheck() {
            sendCheck(pair: index, now: now)
            lastPacedAt = now
        }
        refreshConsent(now: now)
        for index in relays.indices where relays[index].client.nextTimeout.map({ $0 <= now }) ?? false {
            relays[index].client.handleTimeout(now: now)
        }
        drainRelays(now: now)
        updateState(now: now)
    }

    /// Counts application data sent on the selected pair.
    mutating func countSent(_ length: Int, path: SelectedPath, now: ClockTime) {
        guard let index = path.pairIndex else { return }
        pairs[index].figures.packetsSent += 1
        pairs[index].figures.bytesSent += length
        pairs[index].figures.lastPacketSentAt = now
    }
}
