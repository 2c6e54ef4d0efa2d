/// How a channel is made (W3C RTCDataChannelInit): delivery, sub-protocol, priority, and whether it was
/// agreed out of band.
public struct DataChannelOptions: Sendable, Hashable {
    public var reliability: DataChannelReliability
    public var `protocol`: String
    /// RFC 8832 §5.1 priority; 256 is normal.
    public var priority: UInt16
    /// A pre-agreed stream id: both sides make the channel with it and no DCEP is sent (RFC 8832 §4,
    /// "negotiated" in W3C terms).
    public var negotiatedID: UInt16?

    public init(reliability: DataChannelReliability = .reliable, protocol: String = "", priority: UInt16 = 256,
                negotiatedID: UInt16? = nil) {
        self.reliability = reliability
        self.protocol = `protocol`
        self.priority = priority
        self.negotiatedID = negotiatedID
    }
}

/// A user message: text (PPID 51, or 56 when empty) or binary (53, or 57) (RFC 8831 §6.6).
public enum DataChannelMessage: Sendable, Hashable {
    case text(String)
    case binary([UInt8])

    /// The bytes the message carries, as the W3C stats count them.
    public var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}

/// W3C RTCDataChannelState.
public enum DataChannelState: String, Sendable, Hashable {
    case connecting, open, closing, closed
}

/// What a channel is: its stream id, label and options, and its state.
public struct DataChannelInfo: Sendable, Hashable {
    public var id: UInt16
    public var label: String
    public var options: DataChannelOptions
    public var state: DataChannelState
}

/// W3C RTCDataChannelStats (type `data-channel`).
public struct DataChannelStats: Sendable, Hashable {
    public var id: UInt16
    public var label: String
    public var `protocol`: String
    public var state: DataChannelState
    public var messagesSent = 0
    public var bytesSent = 0
    public var messagesReceived = 0
    public var bytesReceived = 0
}

public enum DataChannelEvent: Sendable, Hashable {
    /// The SCTP association is up: channels made before it now open.
    case associationEstablished
    /// A channel of ours is open (DATA_CHANNEL_OPEN sent, or a negotiated one whose association is up).
    case opened(UInt16)
    /// The peer opened a channel with DCEP; it is open already.
    case remoteOpened(DataChannelInfo)
    case message(UInt16, DataChannelMessage)
    /// The channel's buffered amount fell to its low threshold or below (W3C `bufferedamountlow`).
    case bufferedAmountLow(UInt16)
    /// The channel closed: both directions of its stream are reset, or the association ended.
    case closed(UInt16)
    case error(UInt16, String)
    case associationClosed(reason: String)
}

public enum DataChannelError: Error, Sendable, Hashable, CustomStringConvertible {
    case noStreamLeft
    case streamInUse(UInt16)
    case unknownChannel(UInt16)
    case notOpen(UInt16)
    /// Larger than the peer's `a=max-message-size` (RFC 8841 §6).
    case messageTooLarge(size: Int, maximum: Int)
    case sctp(SCTPError)

    public var description: String {
        switch self {
        case .noStreamLeft: "no SCTP stream left for a new channel"
        case .streamInUse(let id): "stream \(id) already carries a channel"
        case .unknownChannel(let id): "no channel on stream \(id)"
        case .notOpen(let id): "channel \(id) is closing or closed"
        case .messageTooLarge(let size, let maximum): "a message of \(size) bytes exceeds the peer's maximum of \(maximum)"
        case .sctp(let error): error.description
        }
    }
}
