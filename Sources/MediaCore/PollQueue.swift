/// A first-in first-out queue drained by `poll`, for the datagrams and events a protocol core hands out
/// (`pollTransmit`, `pollEvent`).
public struct PollQueue<Element> {
    private var elements: [Element] = []
    private var start = 0

    public init() {}

    public mutating func append(_ element: Element) { elements.append(element) }

    public mutating func append(contentsOf more: some Sequence<Element>) { elements.append(contentsOf: more) }

    /// The oldest element, removed; nil when empty.
    public mutating func poll() -> Element? {
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
