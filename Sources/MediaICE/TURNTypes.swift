// The values a TURN client (RFC 8656) takes and gives: its configuration, its events, its named errors,
// what it made of a received datagram and its counters.
import MediaCore
import MediaSTUN

/// How a `TURNClient` times its requests and its refreshes (RFC 8656 §7-§12, RFC 8489 §6.2.1).
public struct TURNConfiguration: Hashable, Sendable {
    /// LIFETIME asked for in Allocate and Refresh requests (RFC 8656 §7.1); nil leaves it to the server
    /// (600 s by default).
    public var requestedLifetime: UInt32?
    /// RFC 8489 §6.2.1 RTO: the first retransmission interval, doubled after each transmission.
    public var initialRTO: ClockTime
    /// RFC 8489 §6.2.1 Rc: how many times a request is sent at most.
    public var maxTransmissions: Int
    /// RFC 8489 §6.2.1 Rm: after the last transmission the client waits Rm × RTO for a response.
    public var finalWaitMultiplier: Int64
    /// How often a permission is renewed (RFC 8656 §9: permissions last 300 s).
    public var permissionRefreshInterval: ClockTime
    /// How often a channel binding is renewed (RFC 8656 §12: bindings last 600 s).
    public var channelRefreshInterval: ClockTime
    /// How many datagrams to one peer wait for its permission; more are dropped and counted.
    public var maxQueuedPerPeer: Int
    /// How many 438 Stale Nonce answers in a row one request may get before it fails.
    public var maxStaleNonceRetries: Int
    /// SOFTWARE attribute sent in requests (RFC 8489 §14.14); nil sends none.
    public var software: String?

    public init(requestedLifetime: UInt32? = nil, initialRTO: ClockTime = .milliseconds(500), maxTransmissions: Int = 7,
                finalWaitMultiplier: Int64 = 16, permissionRefreshInterval: ClockTime = .seconds(240),
                channelRefreshInterval: ClockTime = .seconds(540), maxQueuedPerPeer: Int = 32,
                maxStaleNonceRetries: Int = 3, software: String? = nil) {
        self.requestedLifetime = requestedLifetime
        self.initialRTO = initialRTO
        self.maxTransmissions = maxTransmissions
        self.finalWaitMultiplier = finalWaitMultiplier
        self.permissionRefreshInterval = permissionRefreshInterval
        self.channelRefreshInterval = channelRefreshInterval
        self.maxQueuedPerPeer = maxQueuedPerPeer
        self.maxStaleNonceRetries = maxStaleNonceRetries
        self.software = software
    }
}

/// Why a TURN request, and with it the allocation, a permission or a channel binding, failed.
/// `reason` is a stable name for counters and logs.
public enum TURNError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The server refused the credentials: a second 401 after the client sent them, or 441 (RFC 8656 §7.3).
    case wrongCredentials
    /// A 401 without the REALM and NONCE the long-term mechanism needs (RFC 8489 §9.2.4).
    case missingRealmOrNonce
    /// 437: the server has no such allocation, or another one on this 5-tuple (RFC 8656 §7.2, §7.3).
    case allocationMismatch
    /// 438 Stale Nonce again and again, more times than the configuration allows (RFC 8489 §9.2.5).
    case staleNonce
    /// No response after the RFC 8489 §6.2.1 retransmissions (39.5 s with the default timers).
    case timeout
    /// Any other error response, by its code (e.g. 403 forbidden peer, 486 allocation quota, 508 capacity).
    case serverError(code: Int)
    /// A success response to Allocate without XOR-RELAYED-ADDRESS (RFC 8656 §7.3).
    case missingRelayedAddress
    /// The allocation's lifetime ran out before a Refresh succeeded (RFC 8656 §7.2).
    case allocationExpired

    public var reason: String {
        switch self {
        case .wrongCredentials: "wrong-credentials"
        case .missingRealmOrNonce: "missing-realm-or-nonce"
        case .allocationMismatch: "allocation-mismatch"
        case .staleNonce: "stale-nonce"
        case .timeout: "timeout"
        case .serverError(let code): "server-error-\(code)"
        case .missingRelayedAddress: "missing-relayed-address"
        case .allocationExpired: "allocation-expired"
        }
    }

    public var description: String { reason }
}

/// Where a TURN client stands with its allocation (RFC 8656 §7).
public enum TURNState: Hashable, Sendable {
    /// Not started.
    case idle
    /// Allocate sent, no success yet.
    case allocating
    /// The server relays for us.
    case allocated
    /// Refresh with LIFETIME 0 sent (RFC 8656 §7.2).
    case closing
    /// Closed by `close`; nothing more is sent.
    case closed
    /// The allocation failed or was lost; nothing more is sent.
    case failed(TURNError)
}

/// What a `TURNClient` tells its owner.
public enum TURNEvent: Hashable, Sendable {
    /// The server allocated a relayed address (RFC 8656 §7.3); `mapped` is our server-reflexive address.
    case allocated(relayed: TransportAddress, mapped: TransportAddress?, lifetime: UInt32)
    /// A Refresh succeeded (RFC 8656 §7.2); the allocation now lasts `lifetime` seconds more.
    case refreshed(lifetime: UInt32)
    /// The server lets datagrams from and to this peer IP through the relay (RFC 8656 §9).
    case permissionCreated(IPAddress)
    /// CreatePermission for this peer IP failed; datagrams queued for it were dropped.
    case permissionFailed(IPAddress, TURNError)
    /// Datagrams to and from `peer` now go as ChannelData on `channel` (RFC 8656 §12).
    case channelBound(TransportAddress, channel: UInt16)
    /// ChannelBind for this peer failed; Send and Data indications are used instead.
    case channelBindFailed(TransportAddress, TURNError)
    /// The allocation failed or was lost.
    case failed(TURNError)
    /// `close` finished: the server answered the Refresh with LIFETIME 0 (or did not, in time).
    case closed
}

/// Why a datagram from the server was dropped. `reason` is a stable name for the counters.
public enum TURNDropReason: Hashable, Sendable, CustomStringConvertible {
    /// A STUN message or ChannelData that does not parse.
    case malformed(STUNError)
    /// A response whose transaction ID (and method) matches no request in flight (RFC 8489 §6.3).
    case unmatchedTransaction
    /// A response whose MESSAGE-INTEGRITY is missing or wrong (RFC 8489 §9.2.5).
    case badIntegrity
    /// A request from the server: a client serves none.
    case unexpectedRequest
    /// An indication other than Data (RFC 8656 §11.4).
    case unexpectedIndication
    /// A Data indication without XOR-PEER-ADDRESS or DATA (RFC 8656 §11.4).
    case incompleteDataIndication
    /// ChannelData on a channel we have not bound (RFC 8656 §12.6).
    case unknownChannel

    public var reason: String {
        switch self {
        case .malformed(let error): error.reason
        case .unmatchedTransaction: "unmatched-transaction"
        case .badIntegrity: "bad-integrity"
        case .unexpectedRequest: "unexpected-request"
        case .unexpectedIndication: "unexpected-indication"
        case .incompleteDataIndication: "incomplete-data-indication"
        case .unknownChannel: "unknown-channel"
        }
    }

    public var description: String { reason }
}

/// What `TURNClient.handleReceive` made of a datagram.
public enum TURNReceiveResult: Hashable, Sendable {
    /// A STUN message from the server, taken in (a response or an indication with nothing for the owner).
    case handled
    /// A peer's datagram, unwrapped from a Data indication or ChannelData (RFC 8656 §11.4, §12.6).
    case peerData([UInt8], from: TransportAddress)
    /// From the server but unusable; counted in `statistics.drops`.
    case dropped(TURNDropReason)
    /// Not from the server, or neither STUN nor ChannelData: for someone else (e.g. the ICE agent).
    case notTURN
}

/// A TURN client's counters.
public struct TURNStatistics: Hashable, Sendable {
    /// Requests sent (first transmissions).
    public var requestsSent = 0
    /// Retransmissions of requests (RFC 8489 §6.2.1).
    public var retransmissions = 0
    /// Responses matched to a request.
    public var responsesReceived = 0
    /// Datagrams sent to peers as Send indications (RFC 8656 §11).
    public var sendIndicationsSent = 0
    /// Datagrams sent to peers as ChannelData (RFC 8656 §12).
    public var channelDataSent = 0
    /// Peer datagrams received (Data indications and ChannelData).
    public var peerDataReceived = 0
    /// Datagrams dropped, by reason: received ones (`TURNDropReason.reason`) and outgoing ones
    /// ("queue-full", "permission-failed", "not-allocated").
    public var drops: [String: Int] = [:]

    public init() {}

    /// All drops, whatever their reason.
    public var dropCount: Int { drops.values.reduce(0, +) }
}
