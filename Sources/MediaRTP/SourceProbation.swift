/// Chooses the one RTP source a receiver follows when nothing named it in advance, as RFC 3550
/// §A.1's probation does: a source is valid once `minimumSequential` of its packets (MIN_SEQUENTIAL,
/// 2) have come in sequence. Until then its packets are only candidates; the first source to prove
/// itself is chosen for good, and every other one is foreign from then on. So a stray datagram that
/// happens to parse as RTP (random bytes, a packet of another stream) cannot capture the receiver:
/// it would have to be followed by its successor before the real stream's second packet.
///
/// A pure value over a fixed table of `capacity` candidates, allocated once: a flood of packets with
/// ever new SSRCs evicts the candidate heard least recently and grows nothing. Each candidate keeps
/// the index of a slot where the caller may hold its last packet, so that the packet before the one
/// that proves a source is not lost (the caller inserts it first).
public struct SourceProbation: Sendable {
    /// RFC 3550 §A.1's MIN_SEQUENTIAL.
    public static let minimumSequential = 2

    private struct Candidate: Sendable {
        var ssrc: UInt32 = 0
        var lastSequence: UInt16 = 0
        var inSequence = 0
        var lastHeard: UInt64 = 0
        var used = false
    }

    /// What became of a packet.
    public enum Outcome: Sendable, Equatable {
        /// Of the chosen source. `releasing`: the packet just proved its source, and the candidate's
        /// previous packet (held in that slot, if the caller held it) comes first.
        case chosen(releasing: Int?)
        /// On probation: the caller may hold it in `slot`, replacing what the slot held (`dropping`
        /// says whether that was a packet of this source, now given up).
        case probation(slot: Int, dropping: Bool)
        /// Of another source than the chosen one.
        case foreign
    }

    public let capacity: Int
    /// The source chosen, once one has proved itself (or was named).
    public private(set) var chosen: UInt32?
    private var candidates: [Candidate]
    private var tick: UInt64 = 0

    /// A probation of `capacity` candidates at a time; `chosen` names the source in advance (an SDP
    /// `a=ssrc`, RFC 5576 §4.1), skipping probation.
    public init(capacity: Int = 8, chosen: UInt32? = nil) {
        self.capacity = max(1, capacity)
        self.chosen = chosen
        candidates = [Candidate](repeating: Candidate(), count: self.capacity)
    }

    /// Sorts a packet of `ssrc` with `sequenceNumber`.
    public mutating func admit(ssrc: UInt32, sequenceNumber: UInt16) -> Outcome {
        if let chosen { return chosen == ssrc ? .chosen(releasing: nil) : .foreign }
        tick &+= 1
        var slot = 0
        if let found = candidates.firstIndex(where: { $0.used && $0.ssrc == ssrc }) {
            slot = found
        } else {
            // A new candidate takes a free slot, else the one heard least recently.
            for index in candidates.indices where !candidates[index].used || candidates[index].lastHeard < candidates[slot].lastHeard {
                slot = index
                if !candidates[index].used { break }
            }
            let evicted = candidates[slot].used
            candidates[slot] = Candidate(ssrc: ssrc, lastSequence: sequenceNumber, inSequence: 1, lastHeard: tick, used: true)
            return .probation(slot: slot, dropping: evicted)
        }
        var candidate = candidates[slot]
        candidate.lastHeard = tick
        let follows = sequenceNumber == candidate.lastSequence &+ 1
        candidate.inSequence = follows ? candidate.inSequence + 1 : 1
        candidate.lastSequence = sequenceNumber
        candidates[slot] = candidate
        guard candidate.inSequence >= Self.minimumSequential else { return .probation(slot: slot, dropping: true) }
        chosen = ssrc
        for index in candidates.indices { candidates[index].used = false }
        return .chosen(releasing: slot)
    }

    /// Candidates still on probation (each may have a packet held).
    public var candidatesOnProbation: Int { chosen == nil ? candidates.count(where: \.used) : 0 }
}
