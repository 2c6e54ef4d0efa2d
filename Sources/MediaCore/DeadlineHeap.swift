/// Elements ordered by a deadline, earliest first: a binary min-heap in an array that keeps its
/// storage, so that a warm heap allocates nothing. The scheduler's timers and the socket reactor's
/// use it.
public struct DeadlineHeap<Element> {
    @usableFromInline var entries: [(deadline: ClockTime, element: Element)] = []

    public init(capacity: Int = 0) { entries.reserveCapacity(capacity) }

    /// The earliest deadline and its element.
    @inlinable public var first: (deadline: ClockTime, element: Element)? { entries.first }

    @inlinable public mutating func insert(_ element: Element, at deadline: ClockTime) {
        entries.append((deadline, element))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes the earliest; the heap must not be empty.
    @inlinable public mutating func removeFirst() {
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        siftDown(from: 0)
    }

    /// Removes every element that `matches` (a linear scan, then the heap is rebuilt).
    public mutating func removeAll(where matches: (Element) -> Bool) {
        let count = entries.count
        entries.removeAll { matches($0.element) }
        guard entries.count != count else { return }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    @inlinable mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < entries.count && entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count && entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
