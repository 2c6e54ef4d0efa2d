/// A first-in, first-out ring of elements that grows when full: an edge's queue.
///
/// Appending and taking the first element touch one slot and two integers. (A `Deque` checked its
/// storage's uniqueness and went through closures on each: some 190 instructions to append a
/// packet.) Not copyable, so the storage has one owner and no reference count.
struct PacketRing<Element>: ~Copyable {
    private var slots: UnsafeMutablePointer<Element>
    /// The slot count less one; the count is a power of two.
    private var mask: Int
    private var head = 0
    private(set) var count = 0

    init(minimumCapacity: Int) {
        let capacity = Swift.max(2, minimumCapacity).nextPowerOfTwo
        slots = .allocate(capacity: capacity)
        mask = capacity - 1
    }

    deinit {
        for index in 0..<count { (slots + ((head + index) & mask)).deinitialize(count: 1) }
        slots.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: consuming Element) {
        if count > mask { grow() }
        (slots + ((head + count) & mask)).initialize(to: element)
        count += 1
    }

    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = (slots + head).move()
        head = (head + 1) & mask
        count -= 1
        return element
    }

    /// Every element, oldest first, moved out into an array; the ring is left empty.
    mutating func removeAll() -> [Element] {
        var all: [Element] = []
        all.reserveCapacity(count)
        while let element = popFirst() { all.append(element) }
        return all
    }

    /// Twice the slots, the elements moved over in order from the first.
    private mutating func grow() {
        let capacity = 2 * (mask + 1)
        let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        for index in 0..<count { (larger + index).moveInitialize(from: slots + ((head + index) & mask), count: 1) }
        slots.deallocate()
        (slots, mask, head) = (larger, capacity - 1, 0)
    }
}
