// The agent's inner bookkeeping: local and remote candidates, pairs, transactions, the selected path.
import MediaCore
import MediaSTUN

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
        /// nil once no retransmission is left (a consent request still waits for a late answer).
        var nextRetransmitAt: ClockTime?
        /// Order of first transmission, to retransmit in a repeatable order.
        var sequence = 0
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
}
