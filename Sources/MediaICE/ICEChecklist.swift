// The checklist (RFC 8445 §6.1.2): pairs, pacing, checks and their retransmissions, nomination.
import MediaCore
import MediaSTUN

extension ICEAgent {
    // MARK: Candidates and pairs

    mutating func addLocal(_ local: LocalCandidate) {
        locals.append(local)
        events.append(.localCandidate(local.candidate))
        guard local.pairable else { return }
        for remote in remotes.indices { addPair(local: locals.count - 1, remote: remote) }
    }

    /// Forms a pair of the same component and address family (RFC 8445 §6.1.2.2); the first pair of a
    /// foundation starts Waiting, later ones Frozen (§6.1.2.6). Returns the pair's index.
    @discardableResult
    mutating func addPair(local: Int, remote: Int, state initial: ICECandidatePairState? = nil) -> Int? {
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

    /// RFC 8445 §6.1.2.3 for the two candidate priorities. Exact for priorities up to 2^31 − 1 as the RFC
    /// allows; larger ones wrap instead of trapping.
    public static func pairPriority(controlling g: UInt32, controlled d: UInt32) -> UInt64 {
        (UInt64(min(g, d)) << 32) &+ 2 &* UInt64(max(g, d)) &+ (g > d ? 1 : 0)
    }

    mutating func resetChecklist() {
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

    mutating func checkGatheringComplete() {
        guard gatheringStarted, !gatheringComplete else { return }
        let pending = transactions.values.contains { if case .gather = $0.kind { true } else { false } }
        if !pending, !relaysPending {
            gatheringComplete = true
            events.append(.gatheringComplete)
        }
    }

    // MARK: Checks

    /// Whether a paced check could be sent: credentials known, and a triggered check queued or, while no
    /// pair is selected, a Waiting or Frozen pair left.
    var hasCheckWork: Bool {
        guard remoteCredentials != nil else { return false }
        if !triggeredQueue.isEmpty { return true }
        guard selected?.pairIndex == nil else { return false }
        return pairs.contains { $0.state == .waiting || $0.state == .frozen }
    }

    /// The triggered-check queue first (RFC 8445 §7.3.1.4), then the highest-priority Waiting pair, then a
    /// Frozen one (§6.1.4.2).
    mutating func nextPairToCheck() -> Int? {
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

    mutating func enqueueTriggered(_ index: Int, first: Bool = false) {
        guard !triggeredQueue.contains(index) else { return }
        if first { triggeredQueue.insert(index, at: 0) } else { triggeredQueue.append(index) }
    }

    /// A connectivity check (RFC 8445 §7.2.2): USERNAME, PRIORITY of a would-be peer-reflexive candidate,
    /// ICE-CONTROLLING or ICE-CONTROLLED, USE-CANDIDATE when nominating, MESSAGE-INTEGRITY, FINGERPRINT.
    mutating func sendCheck(pair index: Int, now: ClockTime) {
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

    mutating func bindingRequest(local: ICECredentials, remote: ICECredentials, priority: UInt32,
                                 useCandidate: Bool) -> ([UInt8], STUNIntegrityKey) {
        var attributes: [STUNAttribute] = [.username("\(remote.ufrag):\(local.ufrag)"), .priority(priority),
                                           role == .controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker)]
        if useCandidate { attributes.append(.useCandidate) }
        let message = STUNMessage(method: .binding, messageClass: .request, transactionID: newTransactionID(),
                                  attributes: attributes)
        let key = STUNIntegrityKey.shortTerm(password: remote.pwd)
        return (message.serialized(integrity: key, fingerprint: true), key)
    }

    mutating func startTransaction(_ transaction: Transaction, now: ClockTime) {
        var transaction = transaction
        transaction.firstSentAt = now
        transaction.rto = configuration.initialRTO
        transaction.nextRetransmitAt = now + configuration.initialRTO
        transactionCount += 1
        transaction.sequence = transactionCount
        guard let id = try? STUNMessage(parsing: transaction.request).transactionID else { return }
        transactions[id] = transaction
        transmits.append(ICETransmit(source: transaction.source, destination: transaction.destination,
                                     bytes: transaction.request, relayed: transaction.relayed))
    }

    /// Retransmits requests whose timer fired (RFC 8489 §6.2.1, doubling up to `maximumRTO`); after
    /// `maximumTransmissions` the transaction fails: the pair fails, a STUN server is given up. A consent
    /// request is retransmitted only until the next one is due, so that one lost datagram does not cost a
    /// whole consent interval. In the order the requests were first sent, so that runs repeat.
    mutating func retransmitDue(now: ClockTime) {
        for (id, transaction) in transactions.sorted(by: { $0.value.sequence < $1.value.sequence }) {
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
                if case .consent = next.kind, now + next.rto >= selected?.nextConsentAt ?? .max { next.nextRetransmitAt = nil }
                transactions[id] = next
                counters.retransmissions += 1
                transmits.append(ICETransmit(source: transaction.source, destination: transaction.destination,
                                             bytes: transaction.request, relayed: transaction.relayed))
                switch transaction.kind {
                case .check(let pair, _, _):
                    pairs[pair].figures.requestsSent += 1
                    counters.checksSent += 1
                case .consent:
                    if let pair = selected?.pairIndex { pairs[pair].figures.requestsSent += 1 }
                case .gather: break
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

    mutating func checkFailed(pair index: Int) {
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
    mutating func nominateIfReady(now: ClockTime) {
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
}
