import DequeModule

/// What an edge carries: an item, or the end of the stream.
enum Packet<Item> {
    case item(Item)
    case end
}

/// The bounded queue between a producer and one consumer.
///
/// In a threaded run `push` blocks while the queue is full (backpressure: a fast source cannot
/// outrun a slow sink, so memory stays flat) and `pop` blocks while it is empty; `close()` wakes
/// both and makes them fail, which is how a run stops. In a deterministic run nothing blocks: the
/// scheduler only runs a producer while `hasRoom` and a consumer while items are queued.
///
/// Wake-ups cost a system call and a context switch each, so they are spent only where they help:
/// a waiting consumer is woken by every push (latency), a producer waiting on a full queue only once
/// the queue has drained to half (it then pushes several items in one go instead of one per pop).
final class Edge<Item>: @unchecked Sendable {
    let capacity: Int
    private(set) var blocking = true
    private let lock = ConditionLock()
    private var packets: Deque<Packet<Item>>
    private var closed = false
    private var producerWaits = false
    private var consumerWaits = false
    /// The queue length at which a waiting producer is woken.
    private var lowWater: Int { capacity / 2 }

    init(capacity: Int) {
        precondition(capacity > 0, "edge capacity must be positive")
        self.capacity = capacity
        packets = Deque(minimumCapacity: capacity + 1)
    }

    /// Switches to the non-blocking behaviour of deterministic runs.
    func makeNonBlocking() { lock.withLock { blocking = false } }

    /// Queues `packet`; blocks while full if blocking. Returns false when the edge is closed.
    func push(_ packet: Packet<Item>) -> Bool {
        lock.withLock {
            while blocking && !closed && packets.count >= capacity {
                producerWaits = true
                lock.wait()
            }
            producerWaits = false
            guard !closed else { return false }
            packets.append(packet)
            if consumerWaits { lock.broadcast() }
            return true
        }
    }

    /// The next packet; blocks while empty if blocking. `nil` when closed, or empty and non-blocking.
    func pop() -> Packet<Item>? {
        lock.withLock {
            while blocking && !closed && packets.isEmpty {
                consumerWaits = true
                lock.wait()
            }
            consumerWaits = false
            guard !closed, let packet = packets.popFirst() else { return nil }
            if producerWaits && packets.count <= lowWater { lock.broadcast() }
            return packet
        }
    }

    /// Whether a producer may push without exceeding the capacity (always true when blocking,
    /// where `push` itself waits).
    var hasRoom: Bool { lock.withLock { blocking || packets.count < capacity } }

    var count: Int { lock.withLock { packets.count } }

    /// Drops what is queued and fails every current and later `push`/`pop`.
    func close() {
        lock.withLock {
            closed = true
            packets.removeAll()
            lock.broadcast()
        }
    }
}
