// Relayed candidates through TURN clients the agent owns (RFC 8445 §5.1.1.2, RFC 8656): one client per
// (base, TURN server); its datagrams leave from the base to the server, what the server relays comes back
// into the agent as if received on the relayed address.
import MediaCore
import MediaSTUN

extension ICEAgent {
    /// One TURN allocation the agent drives: the client, the base (local socket) it talks from.
    struct Relay: Sendable {
        var base: TransportAddress
        var client: TURNClient
        /// The client reported `.allocated` (a relay candidate exists) or `.failed`.
        var settled = false
    }

    /// Starts one TURN client per TURN server of the base's address family (RFC 8656 §7.1).
    mutating func startRelays(on base: TransportAddress, now: ClockTime) {
        for server in configuration.turnServers where server.address.ip.isIPv4 == base.ip.isIPv4 {
            guard !relays.contains(where: { $0.base == base && $0.client.server == server.address }) else { continue }
            var client = TURNClient(server: server.address, username: server.username, password: server.credential,
                                    configuration: configuration.turn)
            client.start(now: now)
            relays.append(Relay(base: base, client: client))
        }
    }

    /// Whether some TURN client has neither allocated nor failed yet (gathering is not complete).
    var relaysPending: Bool { relays.contains { !$0.settled } }

    /// The relay that owns the allocation at `relayed`, if this agent drives it.
    @inline(__always)  // called for every datagram: a call that is not inlined copies the whole agent
    func relayIndex(relayedAddress relayed: TransportAddress) -> Int? {
        relays.firstIndex { $0.client.relayedAddress == relayed }
    }

    /// The relay whose server is `source` and whose socket is `base`.
    @inline(__always)  // called for every datagram: a call that is not inlined copies the whole agent
    func relayIndex(server source: TransportAddress, base: TransportAddress) -> Int? {
        relays.firstIndex { $0.base == base && $0.client.server == source }
    }

    /// Whether the selected path goes through a TURN allocation this agent drives: then `route(forSending:)`
    /// is nil and `send` wraps the bytes (ChannelData, RFC 8656 §12.5).
    public var selectedPathIsRelayed: Bool {
        guard let path = selected, path.relayed else { return false }
        return relayIndex(relayedAddress: path.base) != nil
    }

    /// A datagram from a TURN server on one of its relays' bases: the client takes responses; relayed peer
    /// data is handled as if received on the relayed address from the peer. Nil when the client does not
    /// claim it (an unmatched transaction may be a STUN server's answer at the same address).
    mutating func receiveFromRelay(_ index: Int, _ bytes: [UInt8], now: ClockTime) -> ICEReceiveResult? {
        let result = relays[index].client.handleReceive(bytes, from: relays[index].client.server, at: now)
        let outcome: ICEReceiveResult?
        switch result {
        case .handled:
            outcome = .handled
        case .notTURN, .dropped(.unmatchedTransaction):
            outcome = nil
        case .dropped(let reason):
            outcome = dropped("turn-" + reason.reason)
        case .peerData(let data, let peer):
            guard let relayed = relays[index].client.relayedAddress else {
                outcome = dropped("turn-not-allocated")
                break
            }
            switch handleReceive(data, from: peer, to: relayed, now: now) {
            case .application: outcome = .relayedApplication(data)
            case let other: outcome = other
            }
        }
        drainRelays(now: now)
        updateState(now: now)
        return outcome
    }

    /// Moves what the agent's own relays produced into the agent's outputs: relayed transmits of the agent
    /// are handed to their client's `send` (permission, channel, Send indication or ChannelData), the
    /// clients' datagrams go out from their base to their server, their events become candidates,
    /// failures and gathering completion. Binds a channel to the selected relayed pair's peer.
    mutating func drainRelays(now: ClockTime) {
        guard !relays.isEmpty else { return }
        if let path = selected, path.relayed, let index = relayIndex(relayedAddress: path.base) {
            relays[index].client.bindChannel(to: path.remoteAddress, now: now)
        }
        var outgoing: [ICETransmit] = []
        for transmit in transmits {
            guard transmit.relayed, let index = relayIndex(relayedAddress: transmit.source) else {
                outgoing.append(transmit)
                continue
            }
            if let datagram = relays[index].client.send(transmit.bytes, to: transmit.destination, now: now) {
                outgoing.append(toServer(datagram, relay: index))
            }
        }
        transmits = outgoing
        for index in relays.indices {
            while let datagram = relays[index].client.pollTransmit() {
                transmits.append(toServer(datagram, relay: index))
            }
            while let event = relays[index].client.pollEvent() { handleRelayEvent(event, relay: index, now: now) }
        }
        checkGatheringComplete()
    }

    private mutating func handleRelayEvent(_ event: TURNEvent, relay index: Int, now: ClockTime) {
        switch event {
        case .allocated(let relayed, let mapped, _):
            relays[index].settled = true
            addRelayedCandidate(relayed: relayed, mapped: mapped, server: relays[index].client.server, now: now)
        case .failed(let error):
            relays[index].settled = true
            counters.turnFailures[error.reason, default: 0] += 1
            events.append(.turnFailed(server: relays[index].client.server, error: error))
            updateState(now: now)
        case .refreshed, .permissionCreated, .permissionFailed, .channelBound, .channelBindFailed, .closed:
            break
        }
    }

    /// Application data through the selected pair's allocation: ChannelData once the channel is bound, a
    /// Send indication before (RFC 8656 §12.5, §11.1), from the base to the TURN server.
    mutating func sendRelayed(_ bytes: [UInt8], path: SelectedPath, relay index: Int, now: ClockTime) -> ICETransmit? {
        countSent(bytes.count, path: path, now: now)
        relays[index].client.bindChannel(to: path.remoteAddress, now: now)
        let datagram = relays[index].client.send(bytes, to: path.remoteAddress, now: now)
        drainRelays(now: now)
        return datagram.map { toServer($0, relay: index) }
    }

    /// A TURN client's datagram: straight from the base's socket to the TURN server.
    func toServer(_ datagram: [UInt8], relay index: Int) -> ICETransmit {
        ICETransmit(source: relays[index].base, destination: relays[index].client.server, bytes: datagram)
    }

    /// Ends every allocation (Refresh with LIFETIME 0, RFC 8656 §7.2) and queues those requests.
    mutating func closeRelays(now: ClockTime) {
        for index in relays.indices {
            relays[index].client.close(now: now)
            while let datagram = relays[index].client.pollTransmit() {
                transmits.append(toServer(datagram, relay: index))
            }
        }
    }
}
