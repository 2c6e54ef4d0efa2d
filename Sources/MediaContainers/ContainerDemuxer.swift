import MediaCore

/// A `ContainerReader` shared by several readers of its streams (a graph's video and audio sources,
/// each on its own thread): each asks for the next frame of its stream, and the packets of the other
/// claimed streams read on the way wait in memory for theirs. Packets of unclaimed streams are dropped.
/// What waits is bounded: a reader whose stream runs ahead of the others by `maxQueuedBytes` is told
/// to wait (`mustWait(for:)`) until they catch up.
public final class ContainerDemuxer: @unchecked Sendable {
    public let reader: ContainerReader
    /// Bytes of packets waiting for their streams beyond which a stream that has none waiting pauses.
    public let maxQueuedBytes: Int
    private let lock = ConditionLock()
    private var queues: [Int: [EncodedFrame]] = [:]
    private var queuedBytes = 0
    private let pool: BufferPool

    public init(path: String, maxQueuedBytes: Int = 32 << 20) throws {
        reader = try ContainerReader(path: path)
        pool = BufferPool(name: path)
        self.maxQueuedBytes = maxQueuedBytes
    }

    /// Whether reading `stream` on now would queue too much of the others: its reader should wait
    /// for theirs to take what waits (a graph source returns `.wait` and asks again).
    public func mustWait(for stream: Int) -> Bool {
        lock.withLock { queues[stream]?.isEmpty != false && queuedBytes >= maxQueuedBytes }
    }

    public var path: String { reader.path }

    /// Keeps the packets of `stream` for `next(stream:)`.
    public func claim(_ stream: Int) { lock.withLock { queues[stream] = queues[stream] ?? [] } }

    /// The next frame of `stream` (claimed first); nil at the end of the file. A read error is thrown
    /// to every stream once its frames before the error are out.
    public func next(stream: Int) throws -> EncodedFrame? {
        try lock.withLock {
            precondition(queues[stream] != nil, "stream \(stream) of \(reader.path) was not claimed")
            if !queues[stream]!.isEmpty {
                let frame = queues[stream]!.removeFirst()
                queuedBytes -= frame.byteCount
                return frame
            }
            while let (index, frame) = try reader.next(pool: pool) {
                if index == stream { return frame }
                guard queues[index] != nil else { continue }
                queues[index]!.append(frame)
                queuedBytes += frame.byteCount
            }
            return nil
        }
    }
}
