import MediaCore

/// A callback that one thread sets and others call: `PeerDataChannel.onEvent`,
/// `PeerConnection.onDataChannel`.
///
/// The closure is kept inside a struct. A lock (`Locked`, as `Mutex` before it) whose value is
/// itself a function type reabstracts the closure through the generic `inout` of every `withLock`
/// and writes the result back, so each read wrapped the stored closure in two more thunks: a
/// callback read once per message grew a chain as long as the messages, and 20000 small messages
/// took seconds in call and return.
final class ObserverSlot<Argument: Sendable>: Sendable {
    private struct Entry: Sendable {
        let call: @Sendable (Argument) -> Void
    }

    private let entry = Locked<Entry?>(nil)

    var callback: (@Sendable (Argument) -> Void)? {
        get { entry.withLock { $0?.call } }
        set { entry.withLock { $0 = newValue.map(Entry.init) } }
    }

    /// Calls the callback, if one is set, outside the lock.
    func callAsFunction(_ argument: Argument) {
        entry.withLock { $0 }?.call(argument)
    }
}
