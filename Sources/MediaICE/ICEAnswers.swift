// Incoming checks (RFC 8445 §7.3) and answers to our requests (§7.2.5, RFC 7675).
import MediaCore
import MediaSTUN

extension ICEAgent {
    // MARK: Answering checks

    /// An incoming Binding request (RFC 8445 §7.3): authenticate (RFC 8489 §9.1.3, 400/401), repair role
    /// conflicts (§7.3.1.1, 487), answer with XOR-MAPPED-ADDRESS, learn peer-reflexive candidates (§7.3.1.3),
    /// queue a triggered check (§7.3.1.4) and note nominations (§7.3.1.5).
    mutating func handleRequest(_ message: STUNMessage, bytes: [UInt8], from source: TransportAddress,
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
                                         priority: min(message.priority ?? 0, 0x7FFF_FFFF), connectionAddress: source.ip.description,
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

    mutating func switchRole(to newRole: ICERole) {
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
    mutating func handleResponse(_ message: STUNMessage, bytes: [UInt8], from source: TransportAddress,
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
    mutating func checkSucceeded(pair index: Int, mapped: TransportAddress, priority: UInt32,
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
    mutating func nominate(_ index: Int, now: ClockTime) {
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

    mutating func record(roundTrip: ClockTime?, pair index: Int, now: ClockTime) {
        pairs[index].figures.responsesReceived += 1
        pairs[index].figures.lastPacketReceivedAt = now
        if let roundTrip {
            pairs[index].figures.currentRoundTripTime = roundTrip
            pairs[index].figures.totalRoundTripTime = pairs[index].figures.totalRoundTripTime + roundTrip
        }
    }
}
