import MediaCore

/// A source that hands out prepared items (pictures, audio frames, packets) of one format, then ends.
public final class ItemsSource<Item: MediaPayload>: MediaSource {
    public let name: String
    public let format: MediaFormat
    private let items: [Item]
    private var next = 0

    public init(_ items: [Item], format: MediaFormat, name: String = "items") {
        self.items = items
        self.format = format
        self.name = name
    }

    public func outputCaps() throws -> Caps { Caps(format) }
    public func start(output: MediaFormat, context: NodeContext) throws {}
    public func produce() throws -> Production<Item> {
        guard next < items.count else { return .end }
        defer { next += 1 }
        return .item(items[next])
    }
}

/// A sink that keeps every item it receives, and the format it was started with.
public final class CollectingSink<Item: MediaPayload>: MediaSink {
    public let name: String
    public let inputCaps: Caps
    public private(set) var items: [Item] = []
    public private(set) var format: MediaFormat?
    public private(set) var finished = false

    public init(accepting caps: Caps, name: String = "collector") {
        inputCaps = caps
        self.name = name
    }

    public func start(input: MediaFormat, context: NodeContext) throws { format = input }
    public func consume(_ item: Item) throws { items.append(item) }
    public func finish() throws { finished = true }
}
