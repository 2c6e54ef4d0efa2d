// Test support: an in-memory network between ICE agents, with delay, seeded loss and reordering, NATs with
// endpoint-independent mapping, an in-memory STUN server, and candidate signalling. Manual clock.
import MediaCore
import MediaICE
import MediaSTUN
import Testing
import TestSupport

/// A NAT with endpoint-independent mapping and filtering (RFC 4787): every private address gets one public
/// port on `publicIP`, whatever the destination.
struct NAT {
    var privateIP: IPAddress
    var publicIP: IPAddress
    var nextPort: UInt16 = 40000
    var outbound: [TransportAddress: TransportAddress] = [:]
    var inbound: [TransportAddress: TransportAddress] = [:]

    mutating func translateOutbound(_ source: TransportAddress) -> TransportAddress {
        if let mapped = outbound[source] { return mapped }
        let mapped = TransportAddress(ip: publicIP, port: nextPort)
        nextPort += 1
        outbound[source] = mapped
        inbound[mapped] = source
        return mapped
    }
}

/// One agent on the network, with what it reported and received.
struct Peer {
    var name: String
    var agent: ICEAgent
    var bases: [TransportAddress]
    var events: [ICEEvent] = []
    var received: [[UInt8]] = []
    /// Candidates and end-of-candidates of this peer reach the other peer (signalling).
    var signalsCandidates = true
    /// Gone: nothing it sends is delivered, nothing reaches it.
    var vanished = false

    var states: [ICEConnectionState] {
        events.compactMap { if case .stateChanged(let state) = $0 { state } else { nil } }
    }
}

/// Datagrams in flight between agents, delivered after `delay` plus up to `jitter` (reordering), lost
/// with probability `loss`. Two peers, indices 0 and 1; each peer's signalled candidates go to the other.
struct InMemoryNetwork {
    var now: ClockTime = .zero
    var peers: [Peer] = []
    var nats: [NAT] = []
    var stunServer = TransportAddress(host: "198.51.100.1", port: 3478)!
    var delay: ClockTime = .milliseconds(10)
    var jitter: ClockTime = .zero
    var loss = 0.0
    var random = SplitMix64(seed: 1)
    var delivered = 0
    var lost = 0
    /// An in-memory TURN server: datagrams to its address go to it, datagrams to its relayed addresses go
    /// to the allocation's client through it.
    var turnServer: TURNTestServer?
    /// Peer datagrams the TURN server relayed to its clients (Data indications or ChannelData).
    var turnRelayedToClients = 0
    private var turnForwarded = 0
    private var inFlight: [(at: ClockTime, order: Int, from: TransportAddress, to: TransportAddress, bytes: [UInt8])] = []
    private var sequence = 0

    init(seed: UInt64 = 1) { random = SplitMix64(seed: seed) }

    /// Adds an agent with its bases (added to the agent at once) and returns its index.
    @discardableResult
    mutating func add(_ name: String, _ agent: ICEAgent, bases: [String]) -> Int {
        var agent = agent
        let addresses = bases.compactMap { TransportAddress($0) }
        agent.addLocalBases(addresses, now: now)
        peers.append(Peer(name: name, agent: agent, bases: addresses))
        return peers.count - 1
    }

    /// Exchanges credentials between the two peers (what the SDP offer/answer carries).
    mutating func exchangeCredentials() {
        let (first, second) = (peers[0].agent.localCredentials, peers[1].agent.localCredentials)
        peers[0].agent.setRemoteCredentials(second, now: now)
        peers[1].agent.setRemoteCredentials(first, now: now)
    }

    /// Runs the network until `condition` holds or `limit` of manual time passes; returns whether it held.
    @discardableResult
    mutating func run(for limit: ClockTime, until condition: (InMemoryNetwork) -> Bool = { _ in false }) -> Bool {
        let end = now + limit
        var stepsWithoutProgress = 0
        while true {
            drainOutputs()
            if condition(self) { return true }
            let timers = peers.filter { !$0.vanished }.compactMap(\.agent.nextTimeout)
            guard let next = (timers + inFlight.map(\.at)).min(), next <= end else {
                now = end
                return condition(self)
            }
            // An agent whose timer stays in the past after handleTimeout would spin its adapter forever.
            stepsWithoutProgress = next <= now ? stepsWithoutProgress + 1 : 0
            if stepsWithoutProgress > 1000 {
                Issue.record("an agent's nextTimeout does not advance at \(now)")
                return false
            }
            now = max(now, next)
            deliverDue()
            for index in peers.indices where !peers[index].vanished {
                if let due = peers[index].agent.nextTimeout, due <= now { peers[index].agent.handleTimeout(now: now) }
            }
        }
    }

    /// Application data from a peer on its selected pair; false when the agent refused.
    mutating func sendApplication(from index: Int, _ bytes: [UInt8]) -> Bool {
        guard let transmit = peers[index].agent.send(bytes, now: now) else { return false }
        route(transmit)
        return true
    }

    private mutating func drainOutputs() {
        for index in peers.indices {
            while let transmit = peers[index].agent.pollTransmit() {
                if !peers[index].vanished { route(transmit) }
            }
            while let event = peers[index].agent.pollEvent() {
                peers[index].events.append(event)
                guard peers[index].signalsCandidates, peers.count == 2 else { continue }
                let other = 1 - index
                switch event {
                case .localCandidate(let candidate): peers[other].agent.addRemoteCandidate(candidate, now: now)
                case .gatheringComplete: peers[other].agent.endOfRemoteCandidates(now: now)
                default: break
                }
            }
        }
    }

    mutating func route(_ transmit: ICETransmit) {
        var source = transmit.source
        if let nat = nats.firstIndex(where: { $0.privateIP == source.ip }) { source = nats[nat].translateOutbound(source) }
        if var server = turnServer, transmit.destination == server.address {
            for reply in server.receive(transmit.bytes, from: source, now: now) {
                enqueue(from: server.address, to: source, bytes: reply)
            }
            for relayed in server.deliveredToPeers.dropFirst(turnForwarded) {
                enqueue(from: relayed.relayed, to: relayed.peer, bytes: relayed.bytes)
            }
            turnForwarded = server.deliveredToPeers.count
            turnServer = server
            return
        }
        if transmit.destination == stunServer {
            answerBinding(transmit.bytes, from: source)
            return
        }
        enqueue(from: source, to: transmit.destination, bytes: transmit.bytes)
    }

    /// The in-memory STUN server (RFC 8489 §6.3.1): a Binding success with XOR-MAPPED-ADDRESS = source.
    private mutating func answerBinding(_ bytes: [UInt8], from source: TransportAddress) {
        guard let request = try? STUNMessage(parsing: bytes), request.method == .binding,
              request.messageClass == .request else { return }
        let response = STUNMessage(method: .binding, messageClass: .successResponse,
                                   transactionID: request.transactionID, attributes: [.xorMappedAddress(source)])
        enqueue(from: stunServer, to: source, bytes: response.serialized(fingerprint: true))
    }

    private mutating func enqueue(from: TransportAddress, to: TransportAddress, bytes: [UInt8]) {
        if loss > 0, Double(random.next() % 1_000_000) / 1_000_000 < loss {
            lost += 1
            return
        }
        let spread = jitter.nanoseconds > 0 ? Int64(random.next() % UInt64(jitter.nanoseconds)) : 0
        sequence += 1
        inFlight.append((now + delay + ClockTime(nanoseconds: spread), sequence, from, to, bytes))
    }

    private mutating func deliverDue() {
        let due = inFlight.filter { $0.at <= now }.sorted { ($0.at, $0.order) < ($1.at, $1.order) }
        inFlight.removeAll { $0.at <= now }
        for datagram in due {
            var destination = datagram.to
            if relayToClient(datagram.bytes, from: datagram.from, to: destination) { continue }
            if let nat = nats.firstIndex(where: { $0.publicIP == destination.ip }) {
                guard let inside = nats[nat].inbound[destination] else { continue }
                destination = inside
            } else if nats.contains(where: { $0.privateIP == destination.ip }) {
                continue  // a private address behind a NAT is not reachable from outside
            }
            guard let index = peers.firstIndex(where: { $0.bases.contains(destination) }), !peers[index].vanished else {
                continue
            }
            delivered += 1
            let result = peers[index].agent.handleReceive(datagram.bytes, from: datagram.from, to: destination, now: now)
            switch result {
            case .application: peers[index].received.append(datagram.bytes)
            case .relayedApplication(let bytes): peers[index].received.append(bytes)
            case .handled, .dropped: break
            }
        }
    }

    /// A datagram to one of the TURN server's relayed addresses: wrapped for the allocation's client.
    private mutating func relayToClient(_ bytes: [UInt8], from peer: TransportAddress, to relayed: TransportAddress) -> Bool {
        guard var server = turnServer else { return false }
        let clients = peers.flatMap(\.bases)
        guard let client = clients.first(where: { server.allocation(of: $0, at: now)?.relayed == relayed }) else {
            turnServer = server
            return false
        }
        if let wrapped = server.peerSends(bytes, from: peer, to: relayed, now: now) {
            turnRelayedToClients += 1
            enqueue(from: server.address, to: client, bytes: wrapped)
        }
        turnServer = server
        return true
    }
}

extension ICEConnectionState {
    var isConnected: Bool { self == .connected || self == .completed }
}

/// The next datagram an agent sends, which must exist (a mutating call cannot sit inside `#require`).
func requireTransmit(_ agent: inout ICEAgent, sourceLocation: SourceLocation = #_sourceLocation) throws -> ICETransmit {
    let transmit = agent.pollTransmit()
    return try #require(transmit, sourceLocation: sourceLocation)
}
