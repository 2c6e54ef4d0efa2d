import MediaCore
import MediaSTUN

/// Just enough of a TURN server over UDP (RFC 8656) to be a real counterpart for `TURNClient` in memory:
/// the long-term credential challenge (401 with REALM and NONCE, RFC 8489 §9.2), a stale nonce on
/// demand, allocations with a relayed address and a lifetime that runs out, permissions (300 s),
/// channel bindings (600 s), Send/Data indications and ChannelData relayed to and from in-memory peers.
/// Time is whatever the test says it is.
struct TURNTestServer {
    let address: TransportAddress
    let realm = "sluice.test"
    /// Username → password.
    var users: [String: String]
    /// The nonce the server currently accepts.
    private(set) var nonce = "nonce-1"
    /// When set, the next authenticated request gets 438 Stale Nonce and the nonce changes (once).
    var staleNonceOnce = false
    /// When set, the server answers nothing (it still records what it gets).
    var silent = false
    var defaultLifetime: UInt32 = 600
    var maxLifetime: UInt32 = 3600

    /// Every STUN request received, in order.
    private(set) var requests: [STUNMessage] = []
    /// Datagrams relayed to peers: from the relayed address, to the peer, the payload.
    private(set) var deliveredToPeers: [(relayed: TransportAddress, peer: TransportAddress, bytes: [UInt8])] = []
    /// What the server refused to relay, by reason ("no-permission", "no-allocation", "unknown-channel").
    private(set) var relayDrops: [String: Int] = [:]

    private var allocations: [TransportAddress: Allocation] = [:]
    private var nextRelayPort: UInt16 = 49152
    private let relayIP = IPAddress("203.0.113.1")!
    private var nonceCounter = 1

    struct Allocation {
        var relayed: TransportAddress
        var expiresAt: ClockTime
        var permissions: [IPAddress: ClockTime] = [:]
        var channels: [UInt16: (peer: TransportAddress, expiresAt: ClockTime)] = [:]
    }

    init(address: TransportAddress, users: [String: String]) {
        self.address = address
        self.users = users
    }

    /// The live allocation of `client` at `now`, if any.
    mutating func allocation(of client: TransportAddress, at now: ClockTime) -> Allocation? {
        expire(now: now)
        return allocations[client]
    }

    /// A datagram from `client`; returns the datagrams the server sends back to it.
    mutating func receive(_ bytes: [UInt8], from client: TransportAddress, now: ClockTime) -> [[UInt8]] {
        expire(now: now)
        if bytes.first.map({ (0x40...0x4F).contains($0) }) == true {
            relayChannelData(bytes, from: client, now: now)
            return []
        }
        guard let message = try? STUNMessage(parsing: bytes) else { return [] }
        switch message.messageClass {
        case .indication:
            if message.method == .send { relaySendIndication(message, from: client, now: now) }
            return []
        case .request:
            requests.append(message)
            guard !silent else { return [] }
            return [answer(message, bytes: bytes, from: client, now: now)]
        case .successResponse, .errorResponse:
            return []
        }
    }

    /// A peer sends `bytes` to `relayed`; returns the datagram the server sends the client (a Data
    /// indication, or ChannelData when a channel is bound to the peer), nil when it refuses (no permission).
    mutating func peerSends(_ bytes: [UInt8], from peer: TransportAddress, to relayed: TransportAddress,
                            now: ClockTime) -> [UInt8]? {
        expire(now: now)
        guard let allocation = allocations.values.first(where: { $0.relayed == relayed }) else {
            relayDrops["no-allocation", default: 0] += 1
            return nil
        }
        guard allocation.permissions[peer.ip] != nil else {
            relayDrops["no-permission", default: 0] += 1
            return nil
        }
        if let channel = allocation.channels.first(where: { $0.value.peer == peer })?.key {
            return TURNChannelData(channel: channel, data: bytes).serialized()
        }
        return STUNMessage(method: .data, messageClass: .indication,
                           attributes: [.xorPeerAddress(peer), .data(bytes)]).serialized()
    }

    // MARK: Requests

    private mutating func answer(_ request: STUNMessage, bytes: [UInt8], from client: TransportAddress,
                                 now: ClockTime) -> [UInt8] {
        let challenge: [STUNAttribute] = [.realm(realm), .nonce(nonce)]
        guard let username = request.username, let password = users[username] else {
            return error(request, .unauthorized, challenge)
        }
        let key = STUNIntegrityKey.longTerm(username: username, realm: realm, password: password)
        guard (try? STUNMessage.verifyIntegrity(of: bytes, key: key)) != nil, request.realm == realm else {
            return error(request, .unauthorized, challenge)
        }
        if staleNonceOnce {
            staleNonceOnce = false
            nonceCounter += 1
            nonce = "nonce-\(nonceCounter)"
            return error(request, .staleNonce, [.realm(realm), .nonce(nonce)])
        }
        guard request.nonce == nonce else { return error(request, .staleNonce, [.realm(realm), .nonce(nonce)]) }

        switch request.method {
        case .allocate:
            guard allocations[client] == nil else { return error(request, .allocationMismatch, [], key: key) }
            guard request.attributes.contains(.requestedTransport(17)) else {
                return error(request, .unsupportedTransportProtocol, [], key: key)
            }
            let lifetime = min(request.lifetime ?? defaultLifetime, maxLifetime)
            let relayed = TransportAddress(ip: relayIP, port: nextRelayPort)
            nextRelayPort += 1
            allocations[client] = Allocation(relayed: relayed, expiresAt: now + .seconds(Double(lifetime)))
            return success(request, [.xorRelayedAddress(relayed), .xorMappedAddress(client), .lifetime(lifetime)], key: key)
        case .refresh:
            guard allocations[client] != nil else { return error(request, .allocationMismatch, [], key: key) }
            let lifetime = min(request.lifetime ?? defaultLifetime, maxLifetime)
            if lifetime == 0 {
                allocations[client] = nil
            } else {
                allocations[client]?.expiresAt = now + .seconds(Double(lifetime))
            }
            return success(request, [.lifetime(lifetime)], key: key)
        case .createPermission:
            guard allocations[client] != nil else { return error(request, .allocationMismatch, [], key: key) }
            let peers = request.attributes.compactMap { attribute -> IPAddress? in
                if case .xorPeerAddress(let peer) = attribute { peer.ip } else { nil }
            }
            guard !peers.isEmpty else { return error(request, .badRequest, [], key: key) }
            for ip in peers { allocations[client]?.permissions[ip] = now + .seconds(300) }
            return success(request, [], key: key)
        case .channelBind:
            guard allocations[client] != nil else { return error(request, .allocationMismatch, [], key: key) }
            guard let channel = request.channelNumber, (0x4000...0x4FFF).contains(channel),
                  let peer = request.xorPeerAddress,
                  allocations[client]?.channels[channel].map({ $0.peer == peer }) ?? true
            else { return error(request, .badRequest, [], key: key) }
            allocations[client]?.channels[channel] = (peer, now + .seconds(600))
            allocations[client]?.permissions[peer.ip] = now + .seconds(300)
            return success(request, [], key: key)
        default:
            return error(request, .badRequest, [], key: key)
        }
    }

    private func success(_ request: STUNMessage, _ attributes: [STUNAttribute], key: STUNIntegrityKey) -> [UInt8] {
        STUNMessage(method: request.method, messageClass: .successResponse, transactionID: request.transactionID,
                    attributes: attributes).serialized(integrity: key)
    }

    private func error(_ request: STUNMessage, _ code: STUNErrorCode, _ attributes: [STUNAttribute],
                       key: STUNIntegrityKey? = nil) -> [UInt8] {
        STUNMessage(method: request.method, messageClass: .errorResponse, transactionID: request.transactionID,
                    attributes: [.errorCode(code)] + attributes).serialized(integrity: key)
    }

    // MARK: Relay

    private mutating func relaySendIndication(_ message: STUNMessage, from client: TransportAddress, now: ClockTime) {
        guard let peer = message.xorPeerAddress, let data = message.data else { return }
        relay(data, from: client, to: peer)
    }

    private mutating func relayChannelData(_ bytes: [UInt8], from client: TransportAddress, now: ClockTime) {
        guard let channelData = bytes.withUnsafeBytes({ try? TURNChannelData(parsing: $0) }),
              let peer = allocations[client]?.channels[channelData.channel]?.peer
        else {
            relayDrops["unknown-channel", default: 0] += 1
            return
        }
        relay(channelData.data, from: client, to: peer)
    }

    private mutating func relay(_ data: [UInt8], from client: TransportAddress, to peer: TransportAddress) {
        guard let allocation = allocations[client] else {
            relayDrops["no-allocation", default: 0] += 1
            return
        }
        guard allocation.permissions[peer.ip] != nil else {
            relayDrops["no-permission", default: 0] += 1
            return
        }
        deliveredToPeers.append((allocation.relayed, peer, data))
    }

    /// Drops allocations, permissions and channels whose time ran out (RFC 8656 §7, §9, §12).
    private mutating func expire(now: ClockTime) {
        allocations = allocations.filter { $0.value.expiresAt > now }.mapValues { allocation in
            var live = allocation
            live.permissions = allocation.permissions.filter { $0.value > now }
            live.channels = allocation.channels.filter { $0.value.expiresAt > now }
            return live
        }
    }
}
