// The values an ICE agent takes and gives: configuration, roles, states, transmits, events, statistics.
import MediaCore
import MediaSTUN

/// The agent's role (RFC 8445 §6.1.1): the controlling agent nominates, the controlled one follows.
public enum ICERole: String, Hashable, Sendable {
    case controlling, controlled
}

/// The connection state, named as W3C `RTCIceConnectionState` (webrtc-pc §5.6.4).
public enum ICEConnectionState: String, Hashable, Sendable {
    /// No remote candidates or credentials yet.
    case new
    /// Checks are running and no pair is selected.
    case checking
    /// A nominated pair is selected; media can flow.
    case connected
    /// Connected, and nothing is left to check: no frozen, waiting or in-progress pair, remote end of candidates.
    case completed
    /// Every pair failed, the failure timeout passed without a selected pair, or consent was lost (RFC 7675).
    case failed
    /// Nothing heard on the selected pair for `disconnectedTimeout`; may come back to connected.
    case disconnected
    /// `close()` was called.
    case closed
}

/// A candidate pair's state in the checklist (RFC 8445 §6.1.2.6).
public enum ICECandidatePairState: String, Hashable, Sendable {
    case frozen, waiting, inProgress = "in-progress", succeeded, failed
}

/// A TURN server and its long-term credentials (W3C `RTCIceServer` with a `turn:` URL over UDP, RFC 8656).
public struct ICETURNServer: Hashable, Sendable {
    public var address: TransportAddress
    public var username: String
    public var credential: String

    public init(address: TransportAddress, username: String, credential: String) {
        self.address = address
        self.username = username
        self.credential = credential
    }
}

/// Which local candidates are offered and paired (W3C `RTCIceTransportPolicy`, webrtc-pc §4.2.1;
/// RFC 8445 §5.1.1).
public enum ICETransportPolicy: String, Hashable, Sendable {
    /// Host, server-reflexive and relayed candidates.
    case all
    /// Relayed candidates only: host and server-reflexive ones are neither signalled nor paired, so the
    /// peer never learns a local address.
    case relay
}

/// Settings of an agent. Times are spans in `ClockTime` nanoseconds.
public struct ICEConfiguration: Sendable {
    /// STUN servers for server-reflexive candidates (RFC 8445 §5.1.1.2).
    public var stunServers: [TransportAddress]
    /// TURN servers for relayed candidates: one allocation per (base, server) of the same family.
    public var turnServers: [ICETURNServer]
    /// `.relay` offers relayed candidates only (W3C `iceTransportPolicy`).
    public var transportPolicy: ICETransportPolicy
    /// Timers of the TURN clients (retransmissions, lifetime, permission and channel refreshes).
    public var turn: TURNConfiguration
    /// Pacing of new checks and gathering requests, Ta (RFC 8445 §14.2; 50 ms as browsers use).
    public var pacing: ClockTime
    /// First retransmission timeout of a check or a gathering request (RFC 8489 §6.2.1), doubled each time...
    public var initialRTO: ClockTime
    /// ...up to this cap.
    public var maximumRTO: ClockTime
    /// Transmissions of one request before it fails (RFC 8489's Rc is 7; this agent caps the wait at maximumRTO).
    public var maximumTransmissions: Int
    /// Consent checks are sent every `consentInterval` randomised by ±20 % (RFC 7675 §5.1: 4 to 6 s), each
    /// retransmitted on the check RTO schedule until the next is due, so that a lossy path keeps consent...
    public var consentInterval: ClockTime
    /// ...and consent is lost when no authenticated response came for this long (RFC 7675 §5.1: 30 s).
    public var consentTimeout: ClockTime
    /// Nothing received on the selected pair for this long → `.disconnected`. Longer than the 6 s maximum
    /// consent interval, so that an idle but alive path (only consent traffic) does not flap.
    public var disconnectedTimeout: ClockTime
    /// No pair selected this long after checks began → `.failed`.
    public var failureTimeout: ClockTime
    /// The controlling agent nominates its best valid pair once no better pair is still being checked, or
    /// this long after the first valid pair (regular nomination, RFC 8445 §8.1.1).
    public var nominationDelay: ClockTime
    /// Offer loopback bases (127.0.0.0/8, ::1) as host candidates; off by default, as browsers do.
    public var includeLoopback: Bool
    /// At most this many pairs in the checklist (RFC 8445 §6.1.2.5 suggests 100); the lowest priorities go.
    public var maximumPairs: Int

    public init(stunServers: [TransportAddress] = [], pacing: ClockTime = .milliseconds(50),
                initialRTO: ClockTime = .milliseconds(500), maximumRTO: ClockTime = .milliseconds(3000),
                maximumTransmissions: Int = 7, consentInterval: ClockTime = .milliseconds(5000),
                consentTimeout: ClockTime = .milliseconds(30_000), disconnectedTimeout: ClockTime = .milliseconds(7000),
                failureTimeout: ClockTime = .milliseconds(30_000), nominationDelay: ClockTime = .milliseconds(1000),
                includeLoopback: Bool = false, maximumPairs: Int = 100, turnServers: [ICETURNServer] = [],
                transportPolicy: ICETransportPolicy = .all, turn: TURNConfiguration = TURNConfiguration()) {
        self.stunServers = stunServers
        self.turnServers = turnServers
        self.transportPolicy = transportPolicy
        self.turn = turn
        self.pacing = pacing
        self.initialRTO = initialRTO
        self.maximumRTO = maximumRTO
        self.maximumTransmissions = maximumTransmissions
        self.consentInterval = consentInterval
        self.consentTimeout = consentTimeout
        self.disconnectedTimeout = disconnectedTimeout
        self.failureTimeout = failureTimeout
        self.nominationDelay = nominationDelay
        self.includeLoopback = includeLoopback
        self.maximumPairs = maximumPairs
    }
}

/// A datagram for the I/O adapter to send. `source` is the local base (a host socket); the traffic of the
/// agent's own TURN clients, relayed checks and data included, also leaves from the base (to the TURN
/// server). `relayed` is true only for an allocation made outside the agent (`addRelayedCandidate`):
/// `source` is then its relayed address and the adapter hands the bytes to that TURN client.
public struct ICETransmit: Hashable, Sendable {
    public var source: TransportAddress
    public var destination: TransportAddress
    public var bytes: [UInt8]
    public var relayed: Bool

    public init(source: TransportAddress, destination: TransportAddress, bytes: [UInt8], relayed: Bool = false) {
        self.source = source
        self.destination = destination
        self.bytes = bytes
        self.relayed = relayed
    }
}

/// How the media path sends application data now (`ICEAgent.sendPath(forSending:now:)`).
public enum ICESendPath: Hashable, Sendable {
    /// Straight from the caller's buffer on this route, counted as sent.
    case direct(ICERoute)
    /// Through the agent's own TURN client: the bytes go to `ICEAgent.send`, which wraps them.
    case ownRelay
}

/// Where application data goes: from a local base (or a relayed address) to the remote address of the
/// selected pair.
public struct ICERoute: Hashable, Sendable {
    public var source: TransportAddress
    public var destination: TransportAddress
    /// Through the TURN relay whose relayed address is `source`.
    public var relayed: Bool

    public init(source: TransportAddress, destination: TransportAddress, relayed: Bool = false) {
        self.source = source
        self.destination = destination
        self.relayed = relayed
    }
}

/// What became of a received datagram.
public enum ICEReceiveResult: Hashable, Sendable {
    /// A STUN message the agent consumed (a check, a response, a gathering answer).
    case handled
    /// Not STUN, from a known remote address: for the layer above (DTLS, SRTP; RFC 7983 demultiplexing).
    case application
    /// Not STUN, relayed by the agent's TURN client from a known remote address: these unwrapped bytes are
    /// for the layer above (the received datagram was their ChannelData or Data indication wrapper).
    case relayedApplication([UInt8])
    /// Dropped; the reason is also counted in `statistics.drops`.
    case dropped(reason: String)
}

/// Something the agent reports; drain with `pollEvent()`.
public enum ICEEvent: Hashable, Sendable {
    /// A local candidate to signal to the peer (trickle, RFC 8838).
    case localCandidate(ICECandidate)
    /// All local candidates are known (signal end-of-candidates).
    case gatheringComplete
    case stateChanged(ICEConnectionState)
    /// Media now goes over this pair.
    case selectedPairChanged(local: ICECandidate, remote: ICECandidate)
    /// The role changed after a role conflict (RFC 8445 §7.3.1.1, §7.2.5.1).
    case roleChanged(ICERole)
    /// A peer-reflexive remote candidate was learned from an incoming check (RFC 8445 §7.3.1.3).
    case peerReflexiveCandidate(ICECandidate)
    /// No consent for `consentTimeout` on the selected pair (RFC 7675 §5.1): sending stops.
    case consentLost
    /// A TURN allocation on `server` failed (`error.reason`: "wrong-credentials", "timeout", ...): no relayed
    /// candidate from it. Also counted in `statistics.turnFailures`.
    case turnFailed(server: TransportAddress, error: TURNError)
}

/// Figures of one candidate pair, as W3C `RTCIceCandidatePairStats` needs them.
public struct ICECandidatePairStatistics: Hashable, Sendable {
    public var local: ICECandidate
    public var remote: ICECandidate
    public var state: ICECandidatePairState
    public var priority: UInt64
    public var nominated: Bool
    public var selected: Bool
    public var packetsSent = 0
    public var packetsReceived = 0
    public var bytesSent = 0
    public var bytesReceived = 0
    public var requestsSent = 0
    public var requestsReceived = 0
    public var responsesSent = 0
    public var responsesReceived = 0
    public var consentRequestsSent = 0
    /// Round trip of the latest check or consent answered at its first transmission (Karn's rule).
    public var currentRoundTripTime: ClockTime?
    public var totalRoundTripTime: ClockTime = .zero
    public var lastPacketSentAt: ClockTime?
    public var lastPacketReceivedAt: ClockTime?

    init(local: ICECandidate, remote: ICECandidate) {
        self.local = local
        self.remote = remote
        self.state = .frozen
        self.priority = 0
        self.nominated = false
        self.selected = false
    }
}

/// Counters of an agent. `drops` maps a stable reason (a STUN parse error's `reason`, "unknown-username",
/// "integrity-mismatch", "missing-fingerprint", "unknown-transaction", "unknown-source", ...) to a count.
public struct ICEStatistics: Hashable, Sendable {
    public var checksSent = 0
    public var checksReceived = 0
    public var retransmissions = 0
    public var successResponsesReceived = 0
    public var errorResponsesReceived = 0
    public var responsesSent = 0
    public var errorResponsesSent = 0
    public var consentRequestsSent = 0
    public var gatheringRequestsSent = 0
    public var roleConflicts = 0
    /// Remote candidates not used: mDNS hostnames (unresolved) and TCP candidates.
    public var mdnsCandidatesIgnored = 0
    public var tcpCandidatesIgnored = 0
    /// `send` calls refused: no selected pair, or consent expired.
    public var sendsRefused = 0
    /// TURN allocations that failed, by `TURNError.reason`.
    public var turnFailures: [String: Int] = [:]
    public var drops: [String: Int] = [:]
    /// One entry per pair of the current checklist, highest priority first.
    public var pairs: [ICECandidatePairStatistics] = []

    mutating func drop(_ reason: String) { drops[reason, default: 0] += 1 }
}
