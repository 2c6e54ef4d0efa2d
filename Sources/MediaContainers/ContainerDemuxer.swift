import MediaCore

/// A `ContainerReader` shared by several readers of its streams (a graph's video and audio sources,
/// each on its own thread): each asks for the next frame of its stream, and the packets of the other
/// claimed streams read on the way wait in memory for theirs. Packets of unclaimed streams are dropped.
public final class ContainerDemuxer: @unchecked Sendable {
    public let reader: ContainerReader
    private let lock = ConditionLock()
    private var queues: [Int: [EncodedFrame]] = [:]
    private let pool: BufferPool

    public init(path: String) throws {
        reader = try ContainerReader(path: path)
        pool = BufferPool(name: path)
    }

    public var path: String { reader.path }

    /// Keeps the packets of `stream` for `next(stream:)`.
    public func claim(_ stream: Int) { lock.withLock { queues[stream] = queues[stream] ?? [] } }

    /// The next frame of `stream` (claimed first); nil at the end of the file. A read error is thrown
    /// to every stream once its frames before the error are out.
    public func next(stream: Int) throws -> EncodedFrame? {
        try lock.withLock {
            precondition(queues[stream] != nil, "stream \(stream) of \(reader.path) was not claimed")
            if !queues[stream]!.isEmpty { return queues[stream]!.removeFirst() }
            while let (index, frame) = try reader.next(pool: pool) {
                if index == stream { return frame }
                queues[index]?.append(frame)
            }
            return nil
        }
    }
}
