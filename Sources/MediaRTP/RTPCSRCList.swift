/// The contributing-source list of an RTP header (RFC 3550 §5.1, "CSRC list"): at most 15 SSRCs, the
/// limit set by the 4-bit CC field. Stored inline, so parsing a packet that carries CSRCs and copying
/// its header do not allocate.
public struct CSRCList: RandomAccessCollection, Sendable, Hashable, ExpressibleByArrayLiteral,
    CustomStringConvertible
{
    /// The most CSRCs a packet can carry: CC is four bits (RFC 3550 §5.1).
    public static let capacity = 15

    private var storage = InlineArray<15, UInt32>(repeating: 0)
    public private(set) var count = 0

    public init() {}

    /// The CSRCs in `sources`; nil when there are more than `capacity`.
    public init?(_ sources: some Sequence<UInt32>) {
        for source in sources {
            guard count < Self.capacity else { return nil }
            storage[count] = source
            count += 1
        }
    }

    /// A literal list; more than 15 elements is a programming error.
    public init(arrayLiteral elements: UInt32...) {
        guard let list = CSRCList(elements) else {
            preconditionFailure("a CSRC list holds at most \(Self.capacity) sources, not \(elements.count)")
        }
        self = list
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(position: Int) -> UInt32 {
        get {
            precondition(position >= 0 && position < count, "CSRC index out of range")
            return storage[position]
        }
        set {
            precondition(position >= 0 && position < count, "CSRC index out of range")
            storage[position] = newValue
        }
    }

    /// Appends `source`; returns false (and leaves the list as it was) when the list is full.
    @discardableResult
    public mutating func append(_ source: UInt32) -> Bool {
        guard count < Self.capacity else { return false }
        storage[count] = source
        count += 1
        return true
    }

    public mutating func removeAll() { count = 0 }

    public static func == (lhs: CSRCList, rhs: CSRCList) -> Bool { lhs.elementsEqual(rhs) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for source in self { hasher.combine(source) }
    }

    public var description: String { "[" + map { String($0) }.joined(separator: ", ") + "]" }
}
