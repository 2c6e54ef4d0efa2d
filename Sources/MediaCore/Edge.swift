import DequeModule

/// What an edge carries: an item, or the end of the stream.
enum Packet<Item> {
    case item(Item)
    case end
}

/// The bounded queue between a producer and one consumer.
///
/// Nothing here blocks. A producer runs only while `hasRoom` (backpressure: a fast source cannot
/// outrun a slow sink, so memory stays flat), a consumer only while `pop()` gives something. A node
/// that finds its edge full or empty is left *parked* on it, and the other side wakes it
/// (`NodeRunner.wake()`): a consumer at the next push, a producer once the queue has drained to half,
/// so that it then pushes several items in one go instead of being woken for each pop. A wake-up of
/// a node that is already scheduled or running costs one atomic operation, and in a deterministic
/// run it does nothing. `close()` drops what is queued and fails every later `push`/`pop`, which is
/// how a run stops.
final class Edge<Item>: @unchecked Sendable {
    let capacity: Int
    private let lock = ConditionLock()
    /// Touched only under `lock`, so the runtime's exclusivity check on each access is left out.
    @exclusivity(unchecked) private var packets: Deque<Packet<Item>>
    private var closed = false
    private var producerParked = false
    private var consumerParked = false
    // The graph keeps every runner alive for as long as their edges exist.
    unowned(unsafe) let producer: NodeRunner
    unowned(unsafe) let consumer: NodeRunner
    /// The queue length at which a parked producer is woken.
    private var lowWater: Int { capacity / 2 }

    init(capacity: Int, from producer: NodeRunner, to consumer: NodeRunner) {
        precondition(capacity > 0, "edge capacity must be positive")
        self.capacity = capacity
        self.producer = producer
        self.consumer = consumer
        packets = Deque(minimumCapacity: capacity + 1)
    }

    /// Queues `packet` (past the capacity if need be: a producer checks `hasRoom` before it works,
    /// not before each of a step's outputs). Returns false when the edge is closed.
    @_specialize(where Item == VideoFrame)
    @_specialize(where Item == AudioFrame)
    @_specialize(where Item == EncodedFrame)
    func push(_ packet: consuming Packet<Item>) -> Bool {
        var wakeConsumer = false
        var moving = Optional(packet)
        let accepted: Bool = lock.withLock {
            guard !closed else { return false }
            packets.append(moving.take()!)
            wakeConsumer = consumerParked
            consumerParked = false
            return true
        }
        if wakeConsumer { consumer.wake() }
        return accepted
    }

    /// The next packet; nil when closed, or empty (the consumer is then parked here).
    @_specialize(where Item == VideoFrame)
    @_specialize(where Item == AudioFrame)
    @_specialize(where Item == EncodedFrame)
    func pop() -> Packet<Item>? {
        var wakeProducer = false
        let packet: Packet<Item>? = lock.withLock {
            guard !closed else { return nil }
            guard let packet = packets.popFirst() else {
                consumerParked = true
                return nil
            }
            if producerParked && packets.count <= lowWater {
                producerParked = false
                wakeProducer = true
            }
            return packet
        }
        if wakeProducer { producer.wake() }
        return packet
    }

    /// Whether the producer may work without exceeding the capacity; when not, it is parked here.
    var hasRoom: Bool {
        lock.withLock {
            guard packets.count >= capacity else { return true }
            producerParked = true
            return false
        }
    }

    var count: Int { lock.withLock { packets.count } }

    /// Drops what is queued and fails every later `push`/`pop`.
    func close() {
        lock.withLock {
            closed = true
            packets.removeAll()
        }
    }
}
