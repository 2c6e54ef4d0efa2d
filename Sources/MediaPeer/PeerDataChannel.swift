import MediaCore
import MediaSCTP

/// A data channel of a peer connection (W3C `RTCDataChannel`, RFC 8831): made by
/// `PeerConnection.createDataChannel` or opened by the peer (`PeerConnection.Event.dataChannel`).
/// Messages and state changes arrive on `events` (an AsyncSequence keeping the newest
/// `eventBufferLimit` unread ones), and to `onEvent` when set (called on the thread that drove the
/// channels, as libwebrtc's observers are, for apps and tests that must not wait on Swift's
/// cooperative pool).
/// `send` queues a message and `bufferedAmount` says how much is still queued, so that a sender can
/// wait for `.bufferedAmountLow` instead of buffering without bound.
public final class PeerDataChannel: @unchecked Sendable {
    public enum Event: Sendable, Equatable {
        case open
        case message(DataChannelMessage)
        /// `bufferedAmount` fell to `bufferedAmountLowThreshold` or below.
        case bufferedAmountLow
        case error(String)
        /// Closed by either side or with the connection; `events` ends.
        case closed
    }

    /// Unread events `events` keeps; older ones are dropped past it, so a peer cannot make a channel
    /// nobody reads grow without bound.
    public static let eventBufferLimit = 4096

    public let label: String
    public let options: DataChannelOptions
    public let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation
    private let observer = ObserverSlot<Event>()
    private let state = Locked<(id: UInt16?, state: DataChannelState, channels: PeerDataChannelLoop?)>((nil, .connecting, nil))

    init(label: String, options: DataChannelOptions) {
        self.label = label
        self.options = options
        (events, sink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(Self.eventBufferLimit))
    }

    /// Called with every event from now on, on the thread that has it: mostly `SocketReactor`'s (the
    /// transport's datagrams, SCTP's timers), where every socket of the process waits for it to
    /// return, so keep it short and never block in it. Nil stops it.
    public var onEvent: (@Sendable (Event) -> Void)? {
        get { observer.callback }
        set { observer.callback = newValue }
    }

    private func deliver(_ event: Event) {
        sink.yield(event)
        observer(event)
    }

    /// The SCTP stream id, once the association exists (or the negotiated one).
    public var id: UInt16? { state.withLock { $0.id } }
    public var readyState: DataChannelState { state.withLock { $0.state } }

    /// Queues `text` (PPID 51, RFC 8831 §8).
    public func send(_ text: String) throws(DataChannelError) { try send(.text(text)) }

    /// Queues `bytes` (PPID 53).
    public func send(_ bytes: [UInt8]) throws(DataChannelError) { try send(.binary(bytes)) }

    public func send(_ message: DataChannelMessage) throws(DataChannelError) {
        let (id, channels) = state.withLock { ($0.id, $0.channels) }
        guard let id, let channels else { throw .notOpen(id ?? 0) }
        let outcome = channels.withChannels { channels, now in
            Result { () throws(DataChannelError) in try channels.send(message, on: id, now: now) }
        }
        try outcome.get()
    }

    /// Bytes sent and not yet taken by SCTP (W3C `bufferedAmount`).
    public var bufferedAmount: Int {
        let (id, channels) = state.withLock { ($0.id, $0.channels) }
        guard let id, let channels else { return 0 }
        return channels.withChannels { channels, _ in channels.bufferedAmount(of: id) }
    }

    /// W3C `bufferedAmountLowThreshold`: `.bufferedAmountLow` comes when the queue drains to it.
    public func setBufferedAmountLowThreshold(_ threshold: Int) {
        let (id, channels) = state.withLock { ($0.id, $0.channels) }
        guard let id, let channels else { return }
        channels.withChannels { channels, _ in channels.setBufferedAmountLowThreshold(threshold, for: id) }
    }

    /// Closes the channel (its stream is reset, RFC 8831 §6.7); `.closed` follows.
    public func close() {
        let (id, channels) = state.withLock { ($0.id, $0.channels) }
        guard let id, let channels else { return finish() }
        channels.withChannels { channels, now in channels.close(id, now: now) }
    }

    /// W3C `data-channel` statistics: messages and bytes each way.
    public func stats() -> DataChannelStats? {
        let (id, channels) = state.withLock { ($0.id, $0.channels) }
        guard let id, let channels else { return nil }
        return channels.withChannels { channels, _ in channels.stats(id) }
    }

    // MARK: From the connection

    /// The channel has its stream on `channels`.
    func attach(id: UInt16, to channels: PeerDataChannelLoop, open: Bool) {
        state.withLock { $0 = (id, open ? .open : .connecting, channels) }
        if open { deliver(.open) }
    }

    func handle(_ event: DataChannelEvent) {
        switch event {
        case .opened:
            state.withLock { $0.state = .open }
            deliver(.open)
        case .message(_, let message): deliver(.message(message))
        case .bufferedAmountLow: deliver(.bufferedAmountLow)
        case .error(_, let reason): deliver(.error(reason))
        case .closed: finish()
        default: break
        }
    }

    func finish() {
        state.withLock { $0.state = .closed }
        deliver(.closed)
        sink.finish()
    }
}
