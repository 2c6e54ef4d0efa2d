/// A first-in first-out queue drained by `poll`, for the datagrams and events an association hands out.
struct PollQueue<Element> {
    private var elements: [Element] = []
    private var start = 0

    mutating func append(_ element: Element) { elements.append(element) }

    mutating func append(contentsOf more: some Sequence<Element>) { elements.append(contentsOf: more) }

    /// The oldest element, removed; nil when empty.
    mutating func poll() -> Element? {
        guard start < elements.count else { return nil }
        let element = elements[start]
        start += 1
        if start == elements.count {
            elements.removeAll(keepingCapacity: true)
            start = 0
        }
        return element
    }
}
