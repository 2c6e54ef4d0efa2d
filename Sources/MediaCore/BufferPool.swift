
/// Storage for one frame's bytes, usually handed out by a `BufferPool`.
///
/// The producer fills the bytes before it passes the frame on; after that they are read-only by
/// convention, which is what makes sharing a buffer between threads safe.
public final class FrameBuffer: @unchecked Sendable {
    /// The whole storage; `count` bytes of it are in use.
    public let storage: UnsafeMutableRawBufferPointer
    /// The number of meaningful bytes.
    @inlinable public var count: Int {
        get { length }
        set { length = newValue }
    }
    /// `count`, set by the producer before it passes the frame on and read-only after (above), so
    /// accessed without the runtime's exclusivity check: that check cost about 75 instructions on
    /// every access, once a frame on the RTP paths. Behind an inlinable `count`: other modules
    /// accessing a public stored property emit the check themselves, whatever its attributes, and
    /// a getter they call costs a jump to code far from theirs.
    @exclusivity(unchecked) @usableFromInline var length: Int

    /// A buffer of `capacity` bytes (uninitialised), with `count` set to `capacity`.
    public init(capacity: Int) {
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(capacity, 1), alignment: 64)
        length = capacity
    }

    /// A buffer holding a copy of `bytes`.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(capacity: bytes.count)
        if let base = bytes.baseAddress { storage.baseAddress!.copyMemory(from: base, byteCount: bytes.count) }
    }

    /// The meaningful bytes.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }
    public var capacity: Int { storage.count }

    deinit { storage.deallocate() }
}

/// Recycles frame storage so that steady-state processing allocates nothing.
///
/// The pool keeps every buffer it made. `acquire(capacity:)` hands out the smallest one that nobody
/// else holds any more (its only reference is the pool's) and is large enough; only when there is
/// none does it allocate, rounding up to a power of two for variable-size users such as encoders.
/// Neither the bytes nor the buffer object are allocated again once a pipeline is warm:
/// `allocations` stops growing, which tests and benchmarks check. Smallest, not first: an encoder's
/// delta frames taking the free buffers its keyframes had made left the next keyframe none, and
/// its new one replaced a small buffer, so that over a long call every buffer grew to keyframe size
/// (a sender keeps its last frames for retransmissions, so its pool holds many).
public final class BufferPool: Sendable {
    public let name: String
    private let state = Locked(State())

    private struct State: ~Copyable {
        var buffers: [FrameBuffer] = []
        var allocations = 0
        /// Where the next search starts: after the buffer handed out last. Frames mostly come back
        /// in the order they went out, so the buffer there is usually free, and a search does not
        /// step over every buffer still held (a sender keeps its last frames for retransmissions).
        var searchStart = 0
    }

    public init(name: String) { self.name = name }

    /// A buffer of at least `capacity` bytes, with `count` set to `capacity`.
    public func acquire(capacity: Int) -> FrameBuffer {
        state.withLock { state in
            // Through a buffer pointer: the array's own accessors allocate when not specialised.
            // No free buffer can fit better than the size a new one would have.
            let ideal = Swift.max(64, capacity.nextPowerOfTwo)
            let start = state.searchStart
            let (found, tooSmall) = state.buffers.withUnsafeMutableBufferPointer { buffers in
                var best: Int?, tooSmall: Int?
                var step = 0
                while step < buffers.count {
                    var index = start + step
                    if index >= buffers.count { index -= buffers.count }
                    step += 1
                    guard isKnownUniquelyReferenced(&buffers[index]) else { continue }
                    let size = buffers[index].capacity
                    guard size >= capacity else {
                        tooSmall = tooSmall ?? index
                        continue
                    }
                    if best.map({ size < buffers[$0].capacity }) ?? true { best = index }
                    if size <= ideal { break }
                }
                return (best, tooSmall)
            }
            if let found {
                state.searchStart = found + 1 < state.buffers.count ? found + 1 : 0
                let free = state.buffers[found]
                free.count = capacity
                return free
            }
            state.allocations += 1
            let fresh = FrameBuffer(capacity: ideal)
            fresh.count = capacity
            // A free buffer that is too small is replaced, so the pool does not grow without bound.
            if let tooSmall { state.buffers[tooSmall] = fresh } else { state.buffers.append(fresh) }
            return fresh
        }
    }

    /// Buffers ever allocated by this pool.
    public var allocations: Int { state.withLock { $0.allocations } }

    /// Buffers handed out and still held by someone.
    public var outstanding: Int {
        state.withLock { state in
            state.buffers.withUnsafeMutableBufferPointer { buffers in
                buffers.indices.filter { !isKnownUniquelyReferenced(&buffers[$0]) }.count
            }
        }
    }
}

extension Int {
    var nextPowerOfTwo: Int {
        self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount)
    }
}
