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
/// Relayed candidates: a TURN client per base (outside this type) calls `addRelayedCandidate`; transmits
/// whose `relayed` is true must go through the allocation whose relayed address is their `source`, and
/// what it receives from peers is fed to `handleReceive(…, to: relayedAddress)`.
public struct ICEAgent: Sendable {
    public private(set) var role: ICERole
    public private(set) var localCredentials: ICECredentials
    public private(set) var remoteCredentials: ICECredentials?
    public let configuration: ICEConfiguration
    /// The tie-breaker of role conflicts (RFC 8445 §7.3.1.1); also seeds the agent's own randomness.
    public let tieBreaker: UInt64
    public private(set) var state: ICEConnectionState = .new
    public private(set) var gatheringComplete = false
    public private(set) var remoteEndOfCandidates = false

    private var random: SplitMix64
    private var locals: [LocalCandidate] = []
    private var remotes: [RemoteCandidate] = []
    private var pairs: [CandidatePair] = []
    private var triggeredQueue: [Int] = []
    private var transactions: [STUNTransactionID: Transaction] = [:]
    private var transmits: [ICETransmit] = []
    private var events: [ICEEvent] = []
    private var counters = ICEStatistics()
    private var selected: SelectedPath?
    private var nominatingPair: Int?
    private var lastPacedAt: ClockTime?
    private var checkingStartedAt: ClockTime?
    private var firstValidAt: ClockTime?
    private var lastNow: ClockTime = .zero
    private var hasFailed = false
    private var gatheringStarted = false
    private var prflxCounter = 0

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
        transmits.isEmpty ? nil : transmits.removeFirst()
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

    /// Adds a local socket address: a host candidate, and Binding requests to each STUN server of the same
    /// family for a server-reflexive one (RFC 8445 §5.1.1). Loopback bases are skipped unless configured.
    public mutating func addLocalBase(_ base: TransportAddress, now: ClockTime) {
        addLocalBases([base], now: now)
    }

    /// Adds several bases at once; `.gatheringComplete` comes when all their STUN requests are answered
    /// or timed out.
    public mutating func addLocalBases(_ bases: [TransportAddress], now: ClockTime) {
        guard state != .closed else { return }
        lastNow = now
        gatheringStarted = true
        for base in bases {
            guard configuration.includeLoopback || !base.ip.isLoopback,
                  !locals.contains(where: { $0.address == base }) else { continue }
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
    /// TCP candidates and unresolved mDNS hostnames are counted and ignored.
    public mutating func addRemoteCandidate(_ candidate: ICECandidate, now: ClockTime) {
        guard state != .closed else { return }
        lastNow = now
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

    /// Stops the agent: nothing more is sent, received or scheduled.
    public mutating func close() {
        guard state != .closed else { return }
        transactions.removeAll()
        transmits.removeAll()
        state = .closed
        events.append(.stateChanged(.closed))
    }

    // MARK: Application data

    /// Application data (DTLS, SRTP) on the selected pair; nil, counted in `sendsRefused`, when there is no
    /// selected pair or consent has expired (RFC 7675 §5.1: media stops).
    public mutating func send(_ bytes: [UInt8], now: ClockTime) -> ICETransmit? {
        guard state != .closed, let path = selected, !path.consentLost else {
            counters.sendsRefused += 1
            return nil
        }
        if let index = path.pairIndex {
            pairs[index].figures.packetsSent += 1
            pairs[index].figures.bytesSent += bytes.count
            pairs[index].figures.lastPacketSentAt = now
        }
        return ICETransmit(source: path.base, destination: path.remoteAddress, bytes: bytes, relayed: path.relayed)
    }

    // MARK: Inputs

    /// A datagram received on `base` (a local socket, or a relayed address) from `source`. STUN is handled
    /// here; anything else from a known remote address is `.application`. Bad STUN is dropped and counted.
    public mutating func handleReceive(_ bytes: [UInt8], from source: TransportAddress, to base: TransportAddress,
                                       now: ClockTime) -> ICEReceiveResult {
        guard state != .closed else { return dropped("closed") }
        lastNow = now
        // RFC 7983: a first byte of 0-3 is STUN.
        guard let first = bytes.first else { return dropped("empty-datagram") }
        guard first <= 3 else { return receiveApplication(bytes, from: source, to: base, now: now) }
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
        updateState(now: now)
    }
}

// MARK: - Internals

extension ICEAgent {
    struct LocalCandidate: Sendable {
        var candidate: ICECandidate
        var address: TransportAddress
        /// Where datagrams of this candidate leave from: the host socket (for srflx and prflx too), or the
        /// relayed address for a relayed candidate.
        var base: TransportAddress
        var relayed: Bool
        /// Host and relayed candidates form pairs; reflexive ones are pruned to their base (RFC 8445 §6.1.2.4).
        var pairable: Bool
    }

    struct RemoteCandidate: Sendable {
        var candidate: ICECandidate
        var address: TransportAddress
    }

    struct CandidatePair: Sendable {
        var local: Int
        var remote: Int
        var foundation: String
        var state: ICECandidatePairState
        var nominated = false
        /// Controlling: the next check of this pair carries USE-CANDIDATE.
        var useCandidate = false
        /// Controlled: a USE-CANDIDATE check arrived before this pair succeeded (RFC 8445 §7.3.1.5).
        var nominateOnSuccess = false
        /// The valid pair this pair's check produced (RFC 8445 §7.2.5.3.2); may be itself.
        var validPair: Int?
        var figures: ICECandidatePairStatistics
    }

    enum TransactionKind: Sendable {
        case gather(server: TransportAddress)
        case check(pair: Int, useCandidate: Bool, priority: UInt32)
        case consent
    }

    struct Transaction: Sendable {
        var kind: TransactionKind
        var request: [UInt8]
        var source: TransportAddress
        var destination: TransportAddress
        var relayed: Bool
        /// The remote password's key, to check responses (nil for STUN servers).
        var key: STUNIntegrityKey?
        var roleWhenSent: ICERole = .controlling
        var firstSentAt: ClockTime = .zero
        var transmissions = 1
        var rto: ClockTime = .zero
        /// nil for consent requests, which are not retransmitted (RFC 7675 §5.1) and expire with consent.
        var nextRetransmitAt: ClockTime?
    }

    /// The pair media goes over, kept apart from the checklist so that it survives an ICE restart.
    struct SelectedPath: Sendable {
        var pairIndex: Int?
        var local: ICECandidate
        var remote: ICECandidate
        var base: TransportAddress
        var remoteAddress: TransportAddress
        var relayed: Bool
        var localCredentials: ICECredentials
        var remoteCredentials: ICECredentials
        var lastConsentAt: ClockTime
        var nextConsentAt: ClockTime
        var lastReceivedAt: ClockTime
        var consentLost = false
    }

    /// A small deterministic generator (SplitMix64) for transaction IDs and consent jitter.
    struct SplitMix64: RandomNumberGenerator, Sendable {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    // MARK: Candidates and pairs

    private mutating func addLocal(_ local: LocalCandidate) {
        locals.append(local)
        events.append(.localCandidate(local.candidate))
        guard local.pairable else { return }
        for remote in remotes.indices { addPair(local: locals.count - 1, remote: remote) }
    }

    /// Forms a pair of the same component and address family (RFC 8445 §6.1.2.2); the first pair of a
    /// foundation starts Waiting, later ones Frozen (§6.1.2.6). Returns the pair's index.
    @discardableResult
    private mutating func addPair(local: Int, remote: Int, state initial: ICECandidatePairState? = nil) -> Int? {
        if let existing = pairs.firstIndex(where: { $0.local == local && $0.remote == remote }) { return existing }
        let (localCandidate, remoteCandidate) = (locals[local], remotes[remote])
        guard localCandidate.candidate.component == remoteCandidate.candidate.component,
              localCandidate.address.ip.isIPv4 == remoteCandidate.address.ip.isIPv4,
              pairs.count < configuration.maximumPairs else { return nil }
        let foundation = localCandidate.candidate.foundation + ":" + remoteCandidate.candidate.foundation
        let busy = pairs.contains { $0.foundation == foundation && ($0.state == .waiting || $0.state == .inProgress) }
        pairs.append(CandidatePair(local: local, remote: remote, foundation: foundation,
                                   state: initial ?? (busy ? .frozen : .waiting),
                                   figures: ICECandidatePairStatistics(local: localCandidate.candidate,
                                                                       remote: remoteCandidate.candidate)))
        return pairs.count - 1
    }

    /// Pair priority (RFC 8445 §6.1.2.3): 2^32 × min(G, D) + 2 × max(G, D) + (G > D ? 1 : 0), G the
    /// controlling agent's candidate priority, D the controlled agent's.
    func pairPriority(_ index: Int) -> UInt64 {
        let localPriority = locals[pairs[index].local].candidate.priority
        let remotePriority = remotes[pairs[index].remote].candidate.priority
        return role == .controlling ? Self.pairPriority(controlling: localPriority, controlled: remotePriority)
            : Self.pairPriority(controlling: remotePriority, controlled: localPriority)
    }

    /// RFC 8445 §6.1.2.3 for the two candidate priorities.
    public static func pairPriority(controlling g: UInt32, controlled d: UInt32) -> UInt64 {
        (UInt64(min(g, d)) << 32) + 2 * UInt64(max(g, d)) + (g > d ? 1 : 0)
    }

    private mutating func resetChecklist() {
        pairs.removeAll()
        remotes.removeAll()
        triggeredQueue.removeAll()
        transactions = transactions.filter { if case .gather = $0.value.kind { true } else { false } }
        nominatingPair = nil
        firstValidAt = nil
        checkingStartedAt = nil
        lastPacedAt = nil
        remoteEndOfCandidates = false
        hasFailed = false
        selected?.pairIndex = nil
    }

    private mutating func checkGatheringComplete() {
        guard gatheringStarted, !gatheringComplete else { return }
        let pending = transactions.values.contains { if case .gather = $0.kind { true } else { false } }
        if !pending {
            gatheringComplete = true
            events.append(.gatheringComplete)
        }
    }

    // MARK: Checks

    /// Whether a paced check could be sent: credentials known, and a triggered check queued or, while no
    /// pair is selected, a Waiting or Frozen pair left.
    private var hasCheckWork: Bool {
        guard remoteCredentials != nil else { return false }
        if !triggeredQueue.isEmpty { return true }
        guard selected?.pairIndex == nil else { return false }
        return pairs.contains { $0.state == .waiting || $0.state == .frozen }
    }

    /// The triggered-check queue first (RFC 8445 §7.3.1.4), then the highest-priority Waiting pair, then a
    /// Frozen one (§6.1.4.2).
    private mutating func nextPairToCheck() -> Int? {
        while !triggeredQueue.isEmpty {
            let index = triggeredQueue.removeFirst()
            if pairs[index].state == .waiting || (pairs[index].state == .succeeded && pairs[index].useCandidate) {
                return index
            }
        }
        guard selected?.pairIndex == nil else { return nil }
        let byPriority = pairs.indices.sorted { pairPriority($0) > pairPriority($1) }
        if let waiting = byPriority.first(where: { pairs[$0].state == .waiting }) { return waiting }
        return byPriority.first { pairs[$0].state == .frozen }
    }

    private mutating func enqueueTriggered(_ index: Int, first: Bool = false) {
        guard !triggeredQueue.contains(index) else { return }
        if first { triggeredQueue.insert(index, at: 0) } else { triggeredQueue.append(index) }
    }

    /// A connectivity check (RFC 8445 §7.2.2): USERNAME, PRIORITY of a would-be peer-reflexive candidate,
    /// ICE-CONTROLLING or ICE-CONTROLLED, USE-CANDIDATE when nominating, MESSAGE-INTEGRITY, FINGERPRINT.
    private mutating func sendCheck(pair index: Int, now: ClockTime) {
        guard let remoteCredentials else { return }
        let local = locals[pairs[index].local]
        let useCandidate = role == .controlling && pairs[index].useCandidate
        let priority = ICECandidate.priority(type: .prflx, localPreference: UInt16((local.candidate.priority >> 8) & 0xFFFF),
                                             component: local.candidate.component)
        let (request, key) = bindingRequest(local: localCredentials, remote: remoteCredentials, priority: priority,
                                            useCandidate: useCandidate)
        if pairs[index].state != .succeeded { pairs[index].state = .inProgress }
        pairs[index].figures.requestsSent += 1
        pairs[index].figures.lastPacketSentAt = now
        counters.checksSent += 1
        startTransaction(Transaction(kind: .check(pair: index, useCandidate: useCandidate, priority: priority),
                                     request: request, source: local.base,
                                     destination: remotes[pairs[index].remote].address, relayed: local.relayed,
                                     key: key, roleWhenSent: role), now: now)
    }

    private mutating func bindingRequest(local: ICECredentials, remote: ICECredentials, priority: UInt32,
                                         useCandidate: Bool) -> ([UInt8], STUNIntegrityKey) {
        var attributes: [STUNAttribute] = [.username("\(remote.ufrag):\(local.ufrag)"), .priority(priority),
                                           role == .controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker)]
        if useCandidate { attributes.append(.useCandidate) }
        let message = STUNMessage(method: .binding, messageClass: .request, transactionID: newTransactionID(),
                                  attributes: attributes)
        let key = STUNIntegrityKey.shortTerm(password: remote.pwd)
        return (message.serialized(integrity: key, fingerprint: true), key)
    }

    private mutating func startTransaction(_ transaction: Transaction, now: ClockTime) {
        var transaction = transaction
        transaction.firstSentAt = now
        transaction.rto = configuration.initialRTO
        if case .consent = transaction.kind {} else { transaction.nextRetransmitAt = now + configuration.initialRTO }
        guard let id = try? STUNMessage(parsing: transaction.request).transactionID else { return }
        transactions[id] = transaction
        transmits.append(ICETransmit(source: transaction.source, destination: transaction.destination,
                                     bytes: transaction.request, relayed: transaction.relayed))
    }

    /// Retransmits requests whose timer fired (RFC 8489 §6.2.1, doubling up to `maximumRTO`); after
    /// `maximumTransmissions` the transaction fails: the pair fails, a STUN server is given up.
    private mutating func retransmitDue(now: ClockTime) {
        for (id, transaction) in transactions {
            if case .consent = transaction.kind, now >= transaction.firstSentAt + configuration.consentTimeout {
                transactions[id] = nil
                continue
            }
            guard let due = transaction.nextRetransmitAt, now >= due else { continue }
            if transaction.transmissions < configuration.maximumTransmissions {
                var next = transaction
                next.transmissions += 1
                next.rto = min(next.rto + next.rto, configuration.maximumRTO)
                next.nextRetransmitAt = now + next.rto
                transactions[id] = next
                counters.retransmissions += 1
                transmits.append(ICETransmit(source: transaction.source, destination: transaction.destination,
                                             bytes: transaction.request, relayed: transaction.relayed))
                if case .check(let pair, _, _) = transaction.kind {
                    pairs[pair].figures.requestsSent += 1
                    counters.checksSent += 1
                }
            } else {
                transactions[id] = nil
                switch transaction.kind {
                case .gather: checkGatheringComplete()
                case .check(let pair, _, _): checkFailed(pair: pair)
                case .consent: break
                }
            }
        }
    }

    private mutating func checkFailed(pair index: Int) {
        if pairs[index].state != .succeeded { pairs[index].state = .failed }
        pairs[index].useCandidate = false
        if nominatingPair == index {
            nominatingPair = nil
            pairs[index].state = .failed
        }
    }

    /// Regular nomination (RFC 8445 §8.1.1): the controlling agent picks its best valid pair once no
    /// higher-priority pair is still being checked, or `nominationDelay` after the first valid pair, and
    /// checks it again with USE-CANDIDATE.
    private mutating func nominateIfReady(now: ClockTime) {
        guard role == .controlling, nominatingPair == nil, selected?.pairIndex == nil, remoteCredentials != nil,
              let best = pairs.indices.filter({ pairs[$0].validPair == $0 && pairs[$0].state == .succeeded })
                  .max(by: { pairPriority($0) < pairPriority($1) }) else { return }
        let bestPriority = pairPriority(best)
        let betterPending = pairs.indices.contains { index in
            [.frozen, .waiting, .inProgress].contains(pairs[index].state) && pairPriority(index) > bestPriority
        }
        guard !betterPending || now >= (firstValidAt ?? now) + configuration.nominationDelay else { return }
        nominatingPair = best
        pairs[best].useCandidate = true
        enqueueTriggered(best, first: true)
    }

    // MARK: Answering checks

    /// An incoming Binding request (RFC 8445 §7.3): authenticate (RFC 8489 §9.1.3, 400/401), repair role
    /// conflicts (§7.3.1.1, 487), answer with XOR-MAPPED-ADDRESS, learn peer-reflexive candidates (§7.3.1.3),
    /// queue a triggered check (§7.3.1.4) and note nominations (§7.3.1.5).
    private mutating func handleRequest(_ message: STUNMessage, bytes: [UInt8], from source: TransportAddress,
                                        to base: TransportAddress, now: ClockTime) -> ICEReceiveResult {
        let local = locals.firstIndex { $0.address == base && $0.pairable }
        let relayed = local.map { locals[$0].relayed } ?? false
        let reply = { (attributes: [STUNAttribute], key: STUNIntegrityKey?, error: Bool) -> ICETransmit in
            let response = STUNMessage(method: message.method, messageClass: error ? .errorResponse : .successResponse,
                                       transactionID: message.transactionID, attributes: attributes)
            return ICETransmit(source: base, destination: source,
                               bytes: response.serialized(integrity: key, fingerprint: true), relayed: relayed)
        }
        guard message.method == .binding else { return dropped("unsupported-method") }
        guard message.hasFingerprint else { return dropped("missing-fingerprint") }
        let hasIntegrity = message.hasIntegrity
        guard let username = message.username, hasIntegrity else {
            transmits.append(reply([.errorCode(.badRequest)], nil, true))
            counters.errorResponsesSent += 1
            return dropped(hasIntegrity ? "missing-username" : "missing-integrity")
        }
        let ufrag = username.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        let previous = selected.map(\.localCredentials).flatMap { $0 != localCredentials ? $0 : nil }
        guard let credentials = [localCredentials, previous].compactMap({ $0 }).first(where: { $0.ufrag == ufrag }) else {
            transmits.append(reply([.errorCode(.unauthorized)], nil, true))
            counters.errorResponsesSent += 1
            return dropped("unknown-username")
        }
        let key = STUNIntegrityKey.shortTerm(password: credentials.pwd)
        do {
            try STUNMessage.verifyIntegrity(of: bytes, key: key)
        } catch {
            transmits.append(reply([.errorCode(.unauthorized)], nil, true))
            counters.errorResponsesSent += 1
            return dropped(error.reason)
        }
        let unknown = message.unknownComprehensionRequired
        guard unknown.isEmpty else {
            transmits.append(reply([.errorCode(.unknownAttribute), .unknownAttributes(unknown)], key, true))
            counters.errorResponsesSent += 1
            return dropped("unknown-attribute")
        }
        counters.checksReceived += 1

        // A check of the previous generation (after a restart): answer it, it is consent for the old path.
        if credentials != localCredentials {
            transmits.append(reply([.xorMappedAddress(source)], key, false))
            counters.responsesSent += 1
            return .handled
        }
        // Role conflict (RFC 8445 §7.3.1.1).
        if role == .controlling, let theirs = message.iceControlling {
            if tieBreaker >= theirs {
                transmits.append(reply([.errorCode(.roleConflict)], key, true))
                counters.errorResponsesSent += 1
                counters.roleConflicts += 1
                return .handled
            }
            switchRole(to: .controlled)
        } else if role == .controlled, let theirs = message.iceControlled {
            if tieBreaker >= theirs {
                switchRole(to: .controlling)
            } else {
                transmits.append(reply([.errorCode(.roleConflict)], key, true))
                counters.errorResponsesSent += 1
                counters.roleConflicts += 1
                return .handled
            }
        }
        transmits.append(reply([.xorMappedAddress(source)], key, false))
        counters.responsesSent += 1
        guard let local else { return .handled }

        // Peer-reflexive remote candidate (RFC 8445 §7.3.1.3).
        let remote: Int
        if let known = remotes.firstIndex(where: { $0.address == source && $0.candidate.component == locals[local].candidate.component }) {
            remote = known
        } else {
            prflxCounter += 1
            let candidate = ICECandidate(foundation: "prflx\(prflxCounter)", component: locals[local].candidate.component,
                                         priority: message.priority ?? 0, connectionAddress: source.ip.description,
                                         port: source.port, type: .prflx)
            remotes.append(RemoteCandidate(candidate: candidate, address: source))
            remote = remotes.count - 1
            events.append(.peerReflexiveCandidate(candidate))
            for other in locals.indices where other != local && locals[other].pairable {
                addPair(local: other, remote: remote)
            }
            if checkingStartedAt == nil { checkingStartedAt = now }
        }
        guard let index = addPair(local: local, remote: remote) else { return .handled }
        pairs[index].figures.requestsReceived += 1
        pairs[index].figures.responsesSent += 1
        pairs[index].figures.lastPacketReceivedAt = now

        // Triggered check (RFC 8445 §7.3.1.4). An in-progress check keeps running (its retransmissions go on).
        switch pairs[index].state {
        case .succeeded, .inProgress: break
        case .frozen, .waiting, .failed:
            pairs[index].state = .waiting
            enqueueTriggered(index)
        }
        // Nomination seen by the controlled agent (RFC 8445 §7.3.1.5).
        if message.useCandidate, role == .controlled {
            if pairs[index].state == .succeeded, let valid = pairs[index].validPair {
                nominate(valid, now: now)
            } else {
                pairs[index].nominateOnSuccess = true
            }
        }
        return .handled
    }

    private mutating func switchRole(to newRole: ICERole) {
        role = newRole
        counters.roleConflicts += 1
        events.append(.roleChanged(newRole))
        if newRole == .controlled {
            for index in pairs.indices { pairs[index].useCandidate = false }
            nominatingPair = nil
        }
    }

    // MARK: Responses

    /// A response to one of our requests: a STUN server's answer (server-reflexive candidate), a check's
    /// (RFC 8445 §7.2.5) or a consent request's (RFC 7675).
    private mutating func handleResponse(_ message: STUNMessage, bytes: [UInt8], from source: TransportAddress,
                                         to base: TransportAddress, now: ClockTime) -> ICEReceiveResult {
        guard let transaction = transactions[message.transactionID] else { return dropped("unknown-transaction") }
        if case .gather(let server) = transaction.kind {
            guard source == transaction.destination, base == transaction.source else { return dropped("asymmetric-response") }
            transactions[message.transactionID] = nil
            if message.messageClass == .successResponse, let mapped = message.xorMappedAddress ?? message.mappedAddress,
               mapped != base, !locals.contains(where: { $0.address == mapped && $0.base == base }),
               let host = locals.first(where: { $0.address == base }) {
                let candidate = ICECandidate(type: .srflx, address: mapped, related: base,
                                             foundation: ICECandidate.foundation(type: .srflx, baseIP: base.ip,
                                                                                 serverIP: server.ip),
                                             localPreference: UInt16((host.candidate.priority >> 8) & 0xFFFF))
                addLocal(LocalCandidate(candidate: candidate, address: mapped, base: base, relayed: false, pairable: false))
            }
            checkGatheringComplete()
            return .handled
        }
        // Checks and consent: authenticated with the peer's password, except 400/401 which cannot be.
        let code = message.errorCode?.code
        if !(message.messageClass == .errorResponse && (code == 400 || code == 401)) {
            guard let key = transaction.key else { return dropped("missing-integrity") }
            do {
                try STUNMessage.verifyIntegrity(of: bytes, key: key)
            } catch {
                return dropped(error.reason)
            }
        }
        transactions[message.transactionID] = nil
        let symmetric = source == transaction.destination && base == transaction.source
        let roundTrip: ClockTime? = transaction.transmissions == 1 ? now - transaction.firstSentAt : nil
        if message.messageClass == .successResponse { counters.successResponsesReceived += 1 } else { counters.errorResponsesReceived += 1 }

        switch transaction.kind {
        case .gather:
            return .handled
        case .consent:
            guard symmetric else { return dropped("asymmetric-response") }
            if message.messageClass == .successResponse, var path = selected {
                path.lastConsentAt = now
                selected = path
                if let index = path.pairIndex { record(roundTrip: roundTrip, pair: index, now: now) }
            }
            return .handled
        case .check(let index, let useCandidate, let priority):
            record(roundTrip: roundTrip, pair: index, now: now)
            // Symmetric transport addresses (RFC 8445 §7.2.5.2.1).
            guard symmetric else {
                checkFailed(pair: index)
                return dropped("asymmetric-response")
            }
            if message.messageClass == .errorResponse {
                if code == 487 {
                    // Role conflict (RFC 8445 §7.2.5.1): switch if we still have the role we sent, check again.
                    if transaction.roleWhenSent == role { switchRole(to: role == .controlling ? .controlled : .controlling) }
                    pairs[index].state = .waiting
                    if nominatingPair == index { nominatingPair = nil }
                    enqueueTriggered(index)
                } else {
                    checkFailed(pair: index)
                }
                return .handled
            }
            guard let mapped = message.xorMappedAddress ?? message.mappedAddress else {
                checkFailed(pair: index)
                return dropped("missing-mapped-address")
            }
            checkSucceeded(pair: index, mapped: mapped, priority: priority, useCandidate: useCandidate, now: now)
            return .handled
        }
    }

    /// A successful check (RFC 8445 §7.2.5.3): the valid pair is made of the local candidate at the mapped
    /// address (a new peer-reflexive one if none, §7.2.5.3.1) and the pair's remote candidate; pairs of the
    /// same foundation unfreeze (§7.2.5.3.3); nominations complete (§7.2.5.3.4, §7.3.1.5).
    private mutating func checkSucceeded(pair index: Int, mapped: TransportAddress, priority: UInt32,
                                         useCandidate: Bool, now: ClockTime) {
        let base = locals[pairs[index].local].base
        let localIndex: Int
        if let known = locals.firstIndex(where: { $0.address == mapped && $0.base == base }) {
            localIndex = known
        } else {
            let candidate = ICECandidate(foundation: ICECandidate.foundation(type: .prflx, baseIP: base.ip),
                                         component: locals[pairs[index].local].candidate.component, priority: priority,
                                         connectionAddress: mapped.ip.description, port: mapped.port, type: .prflx,
                                         relatedAddress: base.ip.description, relatedPort: base.port)
            locals.append(LocalCandidate(candidate: candidate, address: mapped, base: base,
                                         relayed: locals[pairs[index].local].relayed, pairable: false))
            localIndex = locals.count - 1
        }
        pairs[index].state = .succeeded
        guard let valid = addPair(local: localIndex, remote: pairs[index].remote, state: .succeeded) else { return }
        pairs[valid].state = .succeeded
        pairs[valid].validPair = valid
        pairs[index].validPair = valid
        if firstValidAt == nil { firstValidAt = now }
        let foundation = pairs[index].foundation
        for other in pairs.indices where pairs[other].state == .frozen && pairs[other].foundation == foundation {
            pairs[other].state = .waiting
        }
        if useCandidate && role == .controlling {
            pairs[index].useCandidate = false
            nominatingPair = nil
            nominate(valid, now: now)
        } else if pairs[index].nominateOnSuccess && role == .controlled {
            nominate(valid, now: now)
        }
    }

    /// Marks a valid pair nominated and selects the best nominated pair (RFC 8445 §8.1.1).
    private mutating func nominate(_ index: Int, now: ClockTime) {
        pairs[index].nominated = true
        guard let best = pairs.indices.filter({ pairs[$0].nominated }).max(by: { pairPriority($0) < pairPriority($1) }),
              selected?.pairIndex != best, let remoteCredentials else { return }
        let local = locals[pairs[best].local]
        let remote = remotes[pairs[best].remote]
        selected = SelectedPath(pairIndex: best, local: local.candidate, remote: remote.candidate, base: local.base,
                                remoteAddress: remote.address, relayed: local.relayed,
                                localCredentials: localCredentials, remoteCredentials: remoteCredentials,
                                lastConsentAt: now, nextConsentAt: now + consentInterval(),
                                lastReceivedAt: now)
        events.append(.selectedPairChanged(local: local.candidate, remote: remote.candidate))
    }

    private mutating func record(roundTrip: ClockTime?, pair index: Int, now: ClockTime) {
        pairs[index].figures.responsesReceived += 1
        pairs[index].figures.lastPacketReceivedAt = now
        if let roundTrip {
            pairs[index].figures.currentRoundTripTime = roundTrip
            pairs[index].figures.totalRoundTripTime = pairs[index].figures.totalRoundTripTime + roundTrip
        }
    }

    // MARK: Consent and state

    /// The consent interval randomised to 0.8–1.2 of the configured one (RFC 7675 §5.1).
    private mutating func consentInterval() -> ClockTime {
        let base = configuration.consentInterval.nanoseconds
        let jitter = Int64(random.next() % UInt64(max(1, base / 5 * 2))) - base / 5
        return ClockTime(nanoseconds: base + jitter)
    }

    /// Consent freshness (RFC 7675 §5.1): a Binding request on the selected pair every interval; consent is
    /// lost when none was answered for `consentTimeout`.
    private mutating func refreshConsent(now: ClockTime) {
        guard var path = selected, !path.consentLost else { return }
        if now >= path.lastConsentAt + configuration.consentTimeout {
            path.consentLost = true
            selected = path
            events.append(.consentLost)
            return
        }
        guard now >= path.nextConsentAt else { return }
        let local = locals.first { $0.base == path.base }
        let preference = UInt16(((local?.candidate.priority ?? path.local.priority) >> 8) & 0xFFFF)
        let (request, key) = bindingRequest(local: path.localCredentials, remote: path.remoteCredentials,
                                            priority: ICECandidate.priority(type: .prflx, localPreference: preference,
                                                                            component: path.local.component),
                                            useCandidate: false)
        startTransaction(Transaction(kind: .consent, request: request, source: path.base,
                                     destination: path.remoteAddress, relayed: path.relayed, key: key,
                                     roleWhenSent: role), now: now)
        path.nextConsentAt = now + consentInterval()
        selected = path
        counters.consentRequestsSent += 1
        if let index = path.pairIndex { pairs[index].figures.consentRequestsSent += 1 }
    }

    private mutating func heard(from source: TransportAddress, on base: TransportAddress, now: ClockTime) {
        guard var path = selected, path.remoteAddress == source, path.base == base else { return }
        path.lastReceivedAt = now
        selected = path
    }

    private mutating func receiveApplication(_ bytes: [UInt8], from source: TransportAddress, to base: TransportAddress,
                                             now: ClockTime) -> ICEReceiveResult {
        let index: Int?
        if let path = selected, path.remoteAddress == source, path.base == base {
            heard(from: source, on: base, now: now)
            index = path.pairIndex
            updateState(now: now)
        } else if let known = pairs.firstIndex(where: { locals[$0.local].base == base && remotes[$0.remote].address == source }) {
            index = known
        } else {
            return dropped("unknown-source")
        }
        if let index {
            pairs[index].figures.packetsReceived += 1
            pairs[index].figures.bytesReceived += bytes.count
            pairs[index].figures.lastPacketReceivedAt = now
        }
        return .application
    }

    /// The W3C connection state from the agent's facts (webrtc-pc §5.6.4).
    private mutating func updateState(now: ClockTime) {
        guard state != .closed else { return }
        var next: ICEConnectionState
        if let path = selected {
            if path.consentLost {
                next = .failed
            } else if now >= path.lastReceivedAt + configuration.disconnectedTimeout {
                next = .disconnected
            } else {
                next = remoteEndOfCandidates && gatheringComplete && path.pairIndex != nil ? .completed : .connected
            }
        } else if hasFailed {
            next = .failed
        } else if let checkingStartedAt, remoteCredentials != nil || !remotes.isEmpty {
            let allFailed = !pairs.isEmpty && pairs.allSatisfy { $0.state == .failed } && triggeredQueue.isEmpty
            if (allFailed && remoteEndOfCandidates && gatheringComplete) || now >= checkingStartedAt + configuration.failureTimeout {
                hasFailed = true
                next = .failed
            } else {
                next = .checking
            }
        } else {
            next = .new
        }
        if next != state {
            state = next
            events.append(.stateChanged(next))
        }
    }

    private mutating func dropped(_ reason: String) -> ICEReceiveResult {
        counters.drop(reason)
        return .dropped(reason: reason)
    }

    private mutating func newTransactionID() -> STUNTransactionID {
        var bytes: [UInt8] = []
        for _ in 0..<2 { withUnsafeBytes(of: random.next().littleEndian) { bytes.append(contentsOf: $0) } }
        return STUNTransactionID(bytes: Array(bytes.prefix(12)))
    }
}
