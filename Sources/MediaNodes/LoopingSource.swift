import MediaCore

/// Plays a file source again from its start each time it ends, so that a headless peer can stand in
/// for a camera or microphone that never runs dry. Each pass continues the timestamps of the pass
/// before, one frame step after its last item. Pacing and the frame limit apply to the whole run;
/// the passes themselves are read as fast as asked.
public final class LoopingSource<Inner: MediaSource>: MediaSource {
    public typealias Output = Inner.Output
    /// The source of the first pass (its reader describes the file).
    public let first: Inner
    /// Passes started so far, the first included.
    public private(set) var passes = 1
    private let reopen: () throws -> Inner
    private var current: Inner
    private var pacer: SourcePacer<Output>
    private var started: (format: MediaFormat, context: NodeContext)?
    /// Added to the timestamps of the current pass.
    private var offset: MediaTime?
    /// Where the next pass begins: one step after the latest item so far.
    private var end: MediaTime?
    /// The smallest distance seen between two items' timestamps: a frame or block.
    private var step: MediaTime?
    private var previousPTS: MediaTime?
    private var itemsThisPass = 0

    /// `open` makes a source reading the file from its start, unpaced and without a frame limit; it
    /// is called once now and again at the end of every pass.
    public init(pacing: Pacing = .asFastAsPossible, maxFrames: Int? = nil, open: @escaping () throws -> Inner) throws {
        first = try open()
        current = first
        reopen = open
        pacer = SourcePacer(pacing: pacing, limit: maxFrames)
    }

    public var name: String { first.name }
    public var execution: NodeExecution { first.execution }
    public func outputCaps() throws -> Caps { try first.outputCaps() }

    public func start(output: MediaFormat, context: NodeContext) throws {
        started = (output, context)
        pacer.start(context: context)
        try current.start(output: output, context: context)
    }

    public func produce() throws -> Production<Output> {
        try pacer.next { try nextItem() }
    }

    public func handle(_ event: UpstreamEvent) throws -> Bool { try current.handle(event) }

    public func close() {
        current.close()
        if current !== first { first.close() }
    }

    /// The current pass's next item moved onto the running timeline; nil when a pass yields nothing.
    private func nextItem() throws -> Output? {
        while true {
            switch try current.produce() {
            case .item(var item):
                let offset = self.offset ?? end.map { $0 - item.pts } ?? .zero(item.pts.timebase)
                self.offset = offset
                item.shift(by: offset)
                note(item.pts)
                itemsThisPass += 1
                return item
            case .wait(let until):
                preconditionFailure("a looped source is read unpaced, yet asked to wait until \(until)")
            case .end:
                guard itemsThisPass > 0, let started else { return nil }
                current.close()
                current = try reopen()
                try current.start(output: started.format, context: started.context)
                (offset, itemsThisPass, passes) = (nil, 0, passes + 1)
            }
        }
    }

    /// Keeps the frame step and the end of the timeline up to date with an item's (moved) time.
    private func note(_ pts: MediaTime) {
        if let previousPTS, pts != previousPTS {
            let distance = pts > previousPTS ? pts - previousPTS : previousPTS - pts
            if step.map({ distance < $0 }) ?? true { step = distance }
        }
        previousPTS = pts
        let next = step.map { pts + $0 } ?? pts
        if end.map({ next > $0 }) ?? true { end = next }
    }
}
