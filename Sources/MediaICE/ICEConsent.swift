// Consent freshness (RFC 7675), application data bookkeeping and the connection state.
import MediaCore
import MediaSTUN

extension ICEAgent {
    // MARK: Consent and state

    /// The consent interval randomised to 0.8–1.2 of the configured one (RFC 7675 §5.1).
    mutating func consentInterval() -> ClockTime {
        let base = configuration.consentInterval.nanoseconds
        let jitter = Int64(random.next() % UInt64(max(1, base / 5 * 2))) - base / 5
        return ClockTime(nanoseconds: base + jitter)
    }

    /// Consent freshness (RFC 7675 §5.1): a Binding request on the selected pair every interval; consent is
    /// lost when none was answered for `consentTimeout`.
    mutating func refreshConsent(now: ClockTime) {
        guard var path = selected, !path.consentLost else { return }
        if now >= path.lastConsentAt + configuration.consentTimeout {
            path.consentLost = true
            selected = path
            transactions = transactions.filter { if case .consent = $0.value.kind { false } else { true } }
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

    mutating func heard(from source: TransportAddress, on base: TransportAddress, now: ClockTime) {
        guard var path = selected, path.remoteAddress == source, path.base == base else { return }
        path.lastReceivedAt = now
        selected = path
    }

    mutating func receiveApplication(length: Int, from source: TransportAddress, to base: TransportAddress,
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
            pairs[index].figures.bytesReceived += length
            pairs[index].figures.lastPacketReceivedAt = now
        }
        return .application
    }

    /// The W3C connection state from the agent's facts (webrtc-pc §5.6.4).
    mutating func updateState(now: ClockTime) {
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
            // Relay only, and every allocation failed: no candidate can ever be paired.
            let nothingToOffer = configuration.transportPolicy == .relay && gatheringComplete
                && !locals.contains { $0.pairable }
            if (allFailed && remoteEndOfCandidates && gatheringComplete) || nothingToOffer
                || now >= checkingStartedAt + configuration.failureTimeout {
                hasFailed = true
                next = .failed
            } else {
                next = .checking
            }
        } else {
            next = .new
        }
        // W3C goes through connected on the way to completed.
        if next == .completed, state == .new || state == .checking {
            state = .connected
            events.append(.stateChanged(.connected))
        }
        if next != state {
            state = next
            events.append(.stateChanged(next))
        }
    }

    mutating func dropped(_ reason: String) -> ICEReceiveResult {
        counters.drop(reason)
        return .dropped(reason: reason)
    }

    mutating func newTransactionID() -> STUNTransactionID {
        var bytes: [UInt8] = []
        for _ in 0..<2 { withUnsafeBytes(of: random.next().littleEndian) { bytes.append(contentsOf: $0) } }
        return STUNTransactionID(bytes: Array(bytes.prefix(12)))
    }
}
