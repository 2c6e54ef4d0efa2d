import Glibc

/// What an edge carries: an item, or the end of the stream.
enum Packet<Item> {
    case item(Item)
    case end
}

/// What a push found: the edge closed, or the packet queued with room left behind it or not.
enum PushOutcome {
    case closed
    case full
    /// The queue holds fewer packets than its capacity. Only the producer makes it grow, so it has
    /// room at the producer's next step too, without asking `hasRoom`.
    case roomLeft
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
    /// Taken and released around each operation by hand: a closure given to a lock would move each
    /// item through an optional on the way in and out (a picture is some 200 bytes).
    private let mutex = makeMutex()
    // Touched only under `mutex`, so the runtime's exclusivity check on each access is left out.
    @exclusivity(unchecked) private var packets: PacketRing<Packet<Item>>
    @exclusivity(unchecked) private var closed = false
    @exclusivity(unchecked) private var producerParked = false
    @exclusivity(unchecked) private var consumerParked = false
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
        packets = PacketRing(minimumCapacity: capacity + 1)
    }

    deinit { destroyMutex(mutex) }

    /// Queues `packet` (past the capacity if need be: a producer checks `hasRoom` before it works,
    /// not before each of a step's outputs).
    @_specialize(where Item == VideoFrame)
    @_specialize(where Item == AudioFrame)
    @_specialize(where Item == EncodedFrame)
    func push(_ packet: consuming Packet<Item>) -> PushOutcome {
        pthread_mutex_lock(mutex)
        guard !closed else {
            pthread_mutex_unlock(mutex)
            return .closed
        }
        packets.append(packet)
        let outcome: PushOutcome = packets.count < capacity ? .roomLeft : .full
        let wakeConsumer = consumerParked
        consumerParked = false
        pthread_mutex_unlock(mutex)
        if wakeConsumer { consumer.wake() }
        return outcome
    }

    /// The next packet; nil when closed, or empty (the consumer is then parked here).
    @_specialize(where Item == VideoFrame)
    @_specialize(where Item == AudioFrame)
    @_specialize(where Item == EncodedFrame)
    func pop() -> Packet<Item>? {
        pthread_mutex_lock(mutex)
        guard !closed, let packet = packets.popFirst() else {
            if !closed { consumerParked = true }
            pthread_mutex_unlock(mutex)
            return nil
        }
        let wakeProducer = producerParked && packets.count <= lowWater
        if wakeProducer { producerParked = false }
        pthread_mutex_unlock(mutex)
        if wakeProducer { producer.wake() }
        return packet
    }

    /// Whether the producer may work without exceeding the capacity; when not, it is parked here.
    var hasRoom: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard packets.count >= capacity else { return true }
        producerParked = true
        return false
    }

    var count: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return packets.count
    }

    /// Drops what is queued and fails every later `push`/`pop`.
    func close() {
        pthread_mutex_lock(mutex)
        closed = true
        let dropped = packets.removeAll()
        pthread_mutex_unlock(mutex)
        _ = consume dropped  // their buffers go back to their pools outside the lock
    }
}
