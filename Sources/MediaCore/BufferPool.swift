import Synchronization

/// Storage for one frame's bytes, handed out by a `BufferPool` and returned to it when the last
/// reference goes away.
///
/// The producer fills the bytes before it passes the frame on; after that they are read-only by
/// convention, which is what makes sharing a buffer between threads safe.
public final class FrameBuffer: @unchecked Sendable {
    /// The whole storage; `count` bytes of it are in use.
    public let storage: UnsafeMutableRawBufferPointer
    /// The number of meaningful bytes.
    public var count: Int
    private let pool: BufferPool?

    init(storage: UnsafeMutableRawBufferPointer, count: Int, pool: BufferPool?) {
        self.storage = storage
        self.count = count
        self.pool = pool
    }

    /// An unpooled buffer of `capacity` bytes (uninitialised), with `count` set to `capacity`.
    public convenience init(capacity: Int) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(capacity, 1), alignment: 64)
        self.init(storage: storage, count: capacity, pool: nil)
    }

    /// An unpooled buffer holding a copy of `bytes`.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(bytes.count, 1), alignment: 64)
        if let base = bytes.baseAddress { storage.baseAddress!.copyMemory(from: base, byteCount: bytes.count) }
        self.init(storage: storage, count: bytes.count, pool: nil)
    }

    /// The meaningful bytes.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }
    public var capacity: Int { storage.count }

    deinit {
        if let pool { pool.recycle(storage) } else { storage.deallocate() }
    }
}

/// Recycles frame storage so that steady-state processing allocates none.
///
/// `acquire(capacity:)` reuses an idle block that is large enough or allocates a new one (rounded up
/// to a power of two for variable-size users such as encoders). `allocations` counts the blocks ever
/// allocated: once a pipeline is warm it stops growing, which tests and benchmarks check.
public final class BufferPool: Sendable {
    public let name: String
    private let state = Mutex(State())

    /// Raw storage owned by the pool while idle.
    private struct Block: @unchecked Sendable { let memory: UnsafeMutableRawBufferPointer }

    private struct State: ~Copyable {
        var idle: [Block] = []
        var allocations = 0
        var outstanding = 0
    }

    public init(name: String) { self.name = name }

    /// A buffer of at least `capacity` bytes, with `count` set to `capacity`.
    public func acquire(capacity: Int) -> FrameBuffer {
        let reused: Block? = state.withLock { state in
            state.outstanding += 1
            guard let index = state.idle.firstIndex(where: { $0.memory.count >= capacity }) else {
                state.allocations += 1
                return nil
            }
            return state.idle.remove(at: index)
        }
        let storage = reused?.memory ?? UnsafeMutableRawBufferPointer.allocate(
            byteCount: Swift.max(64, capacity.nextPowerOfTwo), alignment: 64)
        return FrameBuffer(storage: storage, count: capacity, pool: self)
    }

    /// Blocks ever allocated by this pool.
    public var allocations: Int { state.withLock { $0.allocations } }
    /// Buffers handed out and not yet returned.
    public var outstanding: Int { state.withLock { $0.outstanding } }

    fileprivate func recycle(_ storage: UnsafeMutableRawBufferPointer) {
        let block = Block(memory: storage)
        state.withLock { state in
            state.outstanding -= 1
            state.idle.append(block)
        }
    }

    deinit {
        state.withLock { state in
            for block in state.idle { block.memory.deallocate() }
        }
    }
}

extension Int {
    var nextPowerOfTwo: Int {
        self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}
