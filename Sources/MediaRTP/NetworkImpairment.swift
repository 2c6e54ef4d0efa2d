import MediaCore

/// A seeded network emulator between a sender and a receiver: packets go in with `submit`, and come
/// out of `deliver` when the caller's clock reaches their delivery time, impaired as its
/// `ImpairmentProfile` says. It keeps no clock of its own and starts no timer: the caller passes
/// the time and waits for `nextDelivery`.
///
/// A packet's fate is decided when it is submitted, in this order:
///
/// ```
/// submit ─► loss (Gilbert) ─► duplication ─┬► bottleneck queue ─► delay ± jitter ─► reorder hold ─► deliver
///              │ lost                        └► (the copy, on its own through the same stages)
///              ▼                                     │ tail drop
///           dropped                                  ▼ dropped
/// ```
///
/// Each decision draws from its own seeded stream, so for a given profile and the same sequence of
/// `submit` calls (packets, sizes and times) the fates are the same, and the loss pattern does not
/// change when, say, the jitter does. Delivery is in order of delivery time, and packets due at
/// the same time come out in the order they were submitted.
///
/// `Packet` is whatever the caller moves: its own buffer type, an index into a pool, a value. A
/// duplicated packet is the same `Packet` value handed out twice. In-flight packets live in a binary
/// min-heap in storage reserved up front (and grown by doubling if ever too small), so once warm
/// neither `submit` nor `deliver` allocates.
public struct NetworkImpairment<Packet> {
    public let profile: ImpairmentProfile
    public private(set) var statistics = ImpairmentStatistics()

    private var lossModel: GilbertLoss
    private var lossRandom: ImpairmentRandom
    private var duplicateRandom: ImpairmentRandom
    private var reorderRandom: ImpairmentRandom
    private var jitterRandom: ImpairmentRandom
    private var bottleneck: Bottleneck?
    private var inFlight: DeliveryHeap<Packet>
    private var lastSubmit = ClockTime(nanoseconds: .min)

    /// The largest packet `submit` takes, 16 MiB (bounds the bottleneck's arithmetic).
    public static var maximumPacketBytes: Int { 1 << 24 }

    /// `capacity` is how many packets in flight the storage holds before it must grow; about the
    /// offered packet rate times the longest delay (delay + jitter + reorder delay + queue) will do.
    /// Traps on a profile that `validate()` rejects.
    public init(profile: ImpairmentProfile, capacity: Int = 1024) {
        do { try profile.validate() } catch { preconditionFailure("invalid impairment profile: \(error)") }
        self.profile = profile
        lossModel = GilbertLoss(rate: profile.lossPercent / 100, meanBurst: profile.meanBurstLength)
        lossRandom = ImpairmentRandom(seed: profile.seed, stream: 1)
        duplicateRandom = ImpairmentRandom(seed: profile.seed, stream: 2)
        reorderRandom = ImpairmentRandom(seed: profile.seed, stream: 3)
        jitterRandom = ImpairmentRandom(seed: profile.seed, stream: 4)
        bottleneck = profile.rateBitsPerSecond.map { Bottleneck(rate: $0, queueLimit: profile.queueLimit) }
        inFlight = DeliveryHeap(capacity: capacity)
    }

    /// Decides `packet`'s fate and, unless it is dropped, schedules its delivery. `bytes` (what the
    /// packet weighs on the bottleneck, 0 to `maximumPacketBytes`) matters only with a rate limit.
    /// `now` may not go back from one call to the next.
    @discardableResult
    public mutating func submit(_ packet: Packet, bytes: Int, at now: ClockTime) -> ImpairmentFate {
        precondition(now >= lastSubmit, "NetworkImpairment.submit: time went back from \(lastSubmit) to \(now)")
        precondition((0...Self.maximumPacketBytes).contains(bytes), "NetworkImpairment.submit: \(bytes) bytes")
        lastSubmit = now
        statistics.submitted += 1
        if lossModel.nextIsLost(&lossRandom) {
            statistics.droppedByLoss += 1
            return ImpairmentFate(original: .lost, duplicate: nil)
        }
        let original = send(packet, bytes: bytes, at: now)
        guard profile.duplicatePercent > 0, duplicateRandom.chance(profile.duplicatePercent / 100) else {
            return ImpairmentFate(original: original, duplicate: nil)
        }
        statistics.duplicated += 1
        return ImpairmentFate(original: original, duplicate: send(packet, bytes: bytes, at: now))
    }

    /// One copy through the bottleneck, delay, jitter and reordering.
    private mutating func send(_ packet: Packet, bytes: Int, at now: ClockTime) -> ImpairmentFate.Copy {
        var due = now
        if bottleneck != nil {
            guard let departure = bottleneck!.accept(bytes: bytes, at: now) else {
                statistics.droppedByQueue += 1
                return .droppedByQueue
            }
            due = departure
        }
        due = due + profile.delay
        if profile.jitter > .zero {
            due = due + ClockTime(nanoseconds: jitterRandom.offset(within: profile.jitter.nanoseconds))
        }
        let held = profile.reorderPercent > 0 && reorderRandom.chance(profile.reorderPercent / 100)
        if held {
            due = due + profile.reorderDelay
            statistics.reordered += 1
        }
        inFlight.insert(packet, bytes: bytes, due: due)
        return .scheduled(at: due, reordered: held)
    }

    /// When the next packet is due, or nil when none is in flight.
    public var nextDelivery: ClockTime? { inFlight.earliestDue }

    /// How many packets are scheduled and not yet delivered.
    public var inFlightCount: Int { inFlight.count }

    /// Hands every packet due at or before `now` to `body`, earliest first.
    public mutating func deliver(until now: ClockTime, _ body: (Packet) throws -> Void) rethrows {
        while let packet = deliverNext(until: now) { try body(packet) }
    }

    /// The earliest packet due at or before `now`, or nil when none is.
    public mutating func deliverNext(until now: ClockTime) -> Packet? {
        guard let due = inFlight.earliestDue, due <= now else { return nil }
        let (packet, bytes) = inFlight.removeEarliest()
        statistics.delivered += 1
        statistics.deliveredBytes += bytes
        return packet
    }

    /// How many in-flight packets the storage holds before it must grow (for tests of the no-growth rule).
    var storageCapacity: Int { inFlight.capacity }
}

extension NetworkImpairment: Sendable where Packet: Sendable {}

/// What `submit` did with a packet: the original's fate and, when it was duplicated, the copy's.
public struct ImpairmentFate: Hashable, Sendable {
    public enum Copy: Hashable, Sendable {
        /// Dropped by the loss model (the original only; a lost packet is never duplicated).
        case lost
        /// Tail-dropped by the bottleneck's full queue.
        case droppedByQueue
        /// To be delivered at `at`; `reordered` when held back by the reorder delay.
        case scheduled(at: ClockTime, reordered: Bool)
    }

    public var original: Copy
    /// nil unless the packet was duplicated.
    public var duplicate: Copy?

    public init(original: Copy, duplicate: Copy?) {
        self.original = original
        self.duplicate = duplicate
    }
}

/// Counts kept by a `NetworkImpairment`. At any time
/// `submitted + duplicated == delivered + droppedByLoss + droppedByQueue + in flight`.
public struct ImpairmentStatistics: Hashable, Sendable {
    public var submitted = 0
    /// Packets handed out by `deliver`, copies included.
    public var delivered = 0
    public var deliveredBytes = 0
    public var droppedByLoss = 0
    /// Copies tail-dropped at the bottleneck.
    public var droppedByQueue = 0
    /// Packets sent twice.
    public var duplicated = 0
    /// Copies held back by the reorder delay (whether or not a later packet then overtook them).
    public var reordered = 0

    public init() {}
}

/// The rate limit: a link that sends one packet at a time at `rate` bit/s, fed by a FIFO queue whose
/// limit is the longest wait before a packet's first bit goes out.
private struct Bottleneck: Sendable {
    let rate: Int64
    let queueLimit: ClockTime
    /// When the last accepted packet's last bit leaves.
    var busyUntil = ClockTime(nanoseconds: .min)
    /// The part of a nanosecond (in units of 1/rate ns) that `busyUntil` leaves out, so that
    /// rounding never makes the long-run rate drift.
    var remainder: Int64 = 0

    /// When the packet's last bit leaves, or nil when it would wait longer than the limit.
    mutating func accept(bytes: Int, at now: ClockTime) -> ClockTime? {
        let start: ClockTime
        if busyUntil <= now {
            start = now
            remainder = 0
        } else {
            guard busyUntil - now <= queueLimit else { return nil }
            start = busyUntil
        }
        // bytes ≤ 2^24 and rate ≤ 10^12, so this stays below 2^63.
        let span = Int64(bytes) * 8 * 1_000_000_000 + remainder
        busyUntil = start + ClockTime(nanoseconds: span / rate)
        remainder = span % rate
        return busyUntil
    }
}

/// A binary min-heap of in-flight packets ordered by (due time, submission order), in storage that
/// grows only when full.
private struct DeliveryHeap<Packet> {
    fileprivate struct Entry {
        var due: ClockTime
        var order: UInt64
        var bytes: Int
        var packet: Packet

        func isBefore(_ other: Entry) -> Bool { due != other.due ? due < other.due : order < other.order }
    }

    private var entries: ContiguousArray<Entry> = []
    private var nextOrder: UInt64 = 0

    init(capacity: Int) { entries.reserveCapacity(capacity) }

    var count: Int { entries.count }
    var capacity: Int { entries.capacity }
    var earliestDue: ClockTime? { entries.first?.due }

    mutating func insert(_ packet: Packet, bytes: Int, due: ClockTime) {
        entries.append(Entry(due: due, order: nextOrder, bytes: bytes, packet: packet))
        nextOrder += 1
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].isBefore(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes the earliest entry; the heap must not be empty.
    mutating func removeEarliest() -> (Packet, bytes: Int) {
        entries.swapAt(0, entries.count - 1)
        let earliest = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { break }
            let right = left + 1
            let child = right < entries.count && entries[right].isBefore(entries[left]) ? right : left
            guard entries[child].isBefore(entries[parent]) else { break }
            entries.swapAt(child, parent)
            parent = child
        }
        return (earliest.packet, earliest.bytes)
    }
}

extension DeliveryHeap: Sendable where Packet: Sendable {}
extension DeliveryHeap.Entry: Sendable where Packet: Sendable {}
