import MediaCore

/// The WebRTC data channels of one SCTP association (RFC 8831) with the DCEP handshake (RFC 8832).
/// Sans-I/O like `SCTPAssociation` under it: feed it the SCTP packets the DTLS association received
/// (`handleReceive`) and the time (`handleTimeout` at `nextTimeout`), send what `pollTransmit` gives as
/// DTLS application data, and read `pollEvent`.
///
/// Messages wait in one queue, in the order they were sent, and go into SCTP as fast as it acknowledges
/// (its send space is bounded): `bufferedAmount(of:)` is what a channel has in that queue, and
/// `.bufferedAmountLow` says when it falls to the channel's threshold, so a sender applies back-pressure.
public final class DataChannels {
    public struct Configuration: Sendable, Hashable {
        public var sctp: SCTPConfiguration
        /// The DTLS client uses even stream ids, the server odd ones (RFC 8832 §6).
        public var isDTLSClient: Bool
        /// The peer's `a=max-message-size` (RFC 8841 §6): 64 KiB when it gave none, 0 for no limit.
        public var remoteMaxMessageSize: Int

        public init(sctp: SCTPConfiguration = SCTPConfiguration(), isDTLSClient: Bool,
                    remoteMaxMessageSize: Int = 65_536) {
            self.sctp = sctp
            self.isDTLSClient = isDTLSClient
            self.remoteMaxMessageSize = remoteMaxMessageSize
        }
    }

    private struct Channel {
        var info: DataChannelInfo
        var stats: DataChannelStats
        /// Our DATA_CHANNEL_OPEN is out and its ACK not yet in: messages go ordered (RFC 8832 §6).
        var awaitingAck = false
        var bufferedAmount = 0
        var lowThreshold = 0
        /// Our outgoing stream reset is asked for (we close, or answer the peer's reset).
        var resetRequested = false
    }

    /// A message, or the rest of one, waiting to go into SCTP.
    private struct Outgoing {
        var stream: UInt16
        var ppid: DataChannelPPID
        var bytes: [UInt8]
        var offset = 0
        /// Counted in the channel's buffered amount and stats (not DCEP).
        var isUserMessage: Bool
        /// Fixed when its first byte goes out, so that all its pieces agree.
        var reliability: DataChannelReliability?
    }

    public let configuration: Configuration
    public let association: SCTPAssociation
    /// Malformed or unexpected messages, counted by reason and dropped (SCTP's own under `association`).
    public private(set) var drops: [String: Int] = [:]

    private var channels: [UInt16: Channel] = [:]
    private var queue: [Outgoing] = []
    private var queueStart = 0
    private var events = PollQueue<DataChannelEvent>()
    private var established = false

    public init(configuration: Configuration) throws(SCTPError) {
        self.configuration = configuration
        association = try SCTPAssociation(configuration: configuration.sctp)
    }

    // MARK: Driving

    /// Starts the association (INIT); call once DTLS is connected.
    public func start(now: ClockTime) throws(SCTPError) {
        try association.connect(now: now)
        pump(now: now)
    }

    /// An SCTP packet: the bytes of one DTLS application data record.
    public func handleReceive(_ packet: [UInt8], now: ClockTime) {
        association.handleReceive(packet, now: now)
        pump(now: now)
    }

    public func handleTimeout(now: ClockTime) {
        association.handleTimeout(now: now)
        pump(now: now)
    }

    public func pollTransmit() -> [UInt8]? { association.pollTransmit() }

    public func pollEvent() -> DataChannelEvent? { events.poll() }

    public var nextTimeout: ClockTime? { association.nextTimeout }

    /// Aborts the association; every channel closes.
    public func close(now: ClockTime) {
        association.close(now: now)
        pump(now: now)
    }

    // MARK: Channels

    /// Makes a channel: DATA_CHANNEL_OPEN goes out when the association is up (at once if it is), or, for
    /// a negotiated one, it just opens then. Returns its stream id.
    @discardableResult
    public func open(label: String, options: DataChannelOptions = DataChannelOptions(), now: ClockTime)
        throws(DataChannelError) -> UInt16 {
        let id: UInt16
        if let negotiated = options.negotiatedID {
            guard isFree(negotiated) else { throw .streamInUse(negotiated) }
            id = negotiated
        } else {
            guard let free = freeStream() else { throw .noStreamLeft }
            id = free
        }
        let info = DataChannelInfo(id: id, label: label, options: options, state: .connecting)
        channels[id] = Channel(info: info, stats: DataChannelStats(id: id, label: label, protocol: options.protocol,
                                                                   state: .connecting))
        if established { announce(id) }
        pump(now: now)
        return id
    }

    /// Queues a message; it goes into SCTP as its send space allows.
    public func send(_ message: DataChannelMessage, on id: UInt16, now: ClockTime) throws(DataChannelError) {
        guard let channel = channels[id] else { throw .unknownChannel(id) }
        guard channel.info.state == .open || channel.info.state == .connecting else { throw .notOpen(id) }
        let maximum = configuration.remoteMaxMessageSize
        if maximum > 0, message.byteCount > maximum { throw .messageTooLarge(size: message.byteCount, maximum: maximum) }
        let (ppid, bytes): (DataChannelPPID, [UInt8]) = switch message {
        case .text(let text) where text.isEmpty: (.stringEmpty, [0])
        case .text(let text): (.string, Array(text.utf8))
        case .binary(let bytes) where bytes.isEmpty: (.binaryEmpty, [0])
        case .binary(let bytes): (.binary, bytes)
        }
        queue.append(Outgoing(stream: id, ppid: ppid, bytes: bytes, isUserMessage: true))
        channels[id]?.bufferedAmount += message.byteCount
        pump(now: now)
    }

    /// Closes a channel (RFC 8831 §6.7): what it has queued goes out, then its outgoing stream is reset;
    /// it is closed when the peer has reset its own.
    public func close(_ id: UInt16, now: ClockTime) {
        guard let channel = channels[id], channel.info.state == .open || channel.info.state == .connecting else { return }
        setState(id, .closing)
        if !established { closeChannel(id) }
        pump(now: now)
    }

    public func channel(_ id: UInt16) -> DataChannelInfo? { channels[id]?.info }

    public var allChannels: [DataChannelInfo] { channels.values.map(\.info).sorted { $0.id < $1.id } }

    public func stats(_ id: UInt16) -> DataChannelStats? { channels[id]?.stats }

    /// Bytes of user messages sent on the channel and not yet taken by SCTP (W3C `bufferedAmount`).
    public func bufferedAmount(of id: UInt16) -> Int { channels[id]?.bufferedAmount ?? 0 }

    /// W3C `bufferedAmountLowThreshold`.
    public func setBufferedAmountLowThreshold(_ threshold: Int, for id: UInt16) {
        channels[id]?.lowThreshold = max(0, threshold)
    }

    // MARK: Internals

    /// The lowest unused stream id of our parity below the stream count.
    private func freeStream() -> UInt16? {
        let parity: UInt16 = configuration.isDTLSClient ? 0 : 1
        var id = parity
        while id < configuration.sctp.streams {
            if isFree(id) { return id }
            id += 2
        }
        return nil
    }

    /// Our channel meets an established association: DATA_CHANNEL_OPEN, or open at once if negotiated.
    private func announce(_ id: UInt16) {
        guard let channel = channels[id], channel.info.state == .connecting else { return }
        if channel.info.options.negotiatedID == nil {
            let open = DCEPOpen(reliability: channel.info.options.reliability, priority: channel.info.options.priority,
                                label: channel.info.label, protocol: channel.info.options.protocol)
            // Ahead of anything already queued for the channel.
            let first = queue[queueStart...].firstIndex { $0.stream == id } ?? queue.endIndex
            queue.insert(Outgoing(stream: id, ppid: .dcep, bytes: DCEPMessage.open(open).bytes, isUserMessage: false),
                         at: first)
            channels[id]?.awaitingAck = true
        }
        setState(id, .open)
        events.append(.opened(id))
    }

    private func setState(_ id: UInt16, _ state: DataChannelState) {
        channels[id]?.info.state = state
        channels[id]?.stats.state = state
    }

    /// Takes the association's events, moves queued messages into SCTP, asks for the resets of closing
    /// channels whose queue is empty.
    private func pump(now: ClockTime) {
        while let event = association.pollEvent() { handle(event, now: now) }
        flush(now: now)
        for (id, channel) in channels where channel.info.state == .closing && !channel.resetRequested {
            guard !queue[queueStart...].contains(where: { $0.stream == id }) else { continue }
            requestReset(id, now: now)
        }
        // Resets and the ACKs of DCEP may have produced events of their own.
        while let event = association.pollEvent() { handle(event, now: now) }
    }

    private func requestReset(_ id: UInt16, now: ClockTime) {
        channels[id]?.resetRequested = true
        do {
            try association.resetOutgoing(streams: [id], now: now)
        } catch {
            events.append(.error(id, error.description))
            closeChannel(id)
        }
    }

    private func flush(now: ClockTime) {
        guard established, association.state == .connected else { return }
        while queueStart < queue.count {
            var head = queue[queueStart]
            if head.reliability == nil {
                guard let channel = channels[head.stream] else {
                    dropHead()
                    continue
                }
                var reliability = channel.info.options.reliability
                // DCEP is ordered and reliable; user messages are ordered until the ACK (RFC 8832 §6).
                if !head.isUserMessage { reliability = .reliable }
                if channel.awaitingAck { reliability.ordered = true }
                head.reliability = reliability
            }
            let reliability = head.reliability!
            let result = head.bytes.withUnsafeBytes { raw in
                Result { () throws(SCTPError) -> Int in
                    try association.send(UnsafeRawBufferPointer(rebasing: raw[head.offset...]), stream: head.stream,
                                         ppid: head.ppid.rawValue, reliability: reliability, endOfMessage: true, now: now)
                }
            }
            let written: Int
            switch result {
            case .success(let count): written = count
            case .failure(let error):
                events.append(.error(head.stream, error.description))
                dropHead()
                continue
            }
            head.offset += written
            if head.isUserMessage { reduceBuffered(head.stream, by: head.ppid.isEmptyMessage ? 0 : written) }
            guard head.offset == head.bytes.count else {
                queue[queueStart] = head
                return
            }
            if head.isUserMessage {
                channels[head.stream]?.stats.messagesSent += 1
                channels[head.stream]?.stats.bytesSent += head.ppid.isEmptyMessage ? 0 : head.bytes.count
            }
            dropHead()
        }
    }

    private func dropHead() {
        let head = queue[queueStart]
        if head.isUserMessage, head.reliability == nil || head.offset < head.bytes.count {
            reduceBuffered(head.stream, by: head.ppid.isEmptyMessage ? 0 : head.bytes.count - head.offset)
        }
        queueStart += 1
        if queueStart == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueStart = 0
        } else if queueStart > 64, queueStart * 2 > queue.count {
            queue.removeFirst(queueStart)
            queueStart = 0
        }
    }

    private func reduceBuffered(_ id: UInt16, by amount: Int) {
        guard amount > 0, let channel = channels[id] else { return }
        let before = channel.bufferedAmount
        let after = max(0, before - amount)
        channels[id]?.bufferedAmount = after
        if before > channel.lowThreshold, after <= channel.lowThreshold { events.append(.bufferedAmountLow(id)) }
    }

    private func handle(_ event: SCTPEvent, now: ClockTime) {
        switch event {
        case .connected:
            guard !established else { return }
            established = true
            events.append(.associationEstablished)
            for id in channels.keys.sorted() { announce(id) }
        case .message(let message):
            receive(message, now: now)
        case .incomingStreamsReset(let streams):
            for id in streams { peerReset(id, now: now) }
        case .outgoingStreamsReset:
            // Ours is reset; the channel closes when the peer's is too (peerReset).
            break
        case .closed(let reason):
            established = false
            for id in channels.keys.sorted() where channels[id]?.info.state != .closed { closeChannel(id) }
            queue.removeAll()
            queueStart = 0
            events.append(.associationClosed(reason: reason))
        }
    }

    /// The peer reset its outgoing stream `id`: it closes the channel (RFC 8831 §6.7). If we had not
    /// asked to close, we reset ours in answer.
    private func peerReset(_ id: UInt16, now: ClockTime) {
        guard let channel = channels[id], channel.info.state != .closed else { return }
        if !channel.resetRequested {
            // What never started goes unsent; a message half in SCTP must end (explicit EOR).
            queue.removeFirst(queueStart)
            queueStart = 0
            queue.removeAll { $0.stream == id && $0.reliability == nil }
            setState(id, .closing)
            requestReset(id, now: now)
        }
        closeChannel(id)
    }

    /// The channel stays, closed, for its stats; its stream id may carry a new channel.
    private func closeChannel(_ id: UInt16) {
        guard let channel = channels[id], channel.info.state != .closed else { return }
        setState(id, .closed)
        channels[id]?.bufferedAmount = 0
        events.append(.closed(id))
    }

    /// Whether stream `id` carries no live channel.
    private func isFree(_ id: UInt16) -> Bool { channels[id].map { $0.info.state == .closed } ?? true }

    private func count(_ reason: String) { drops[reason, default: 0] += 1 }

    private func receive(_ message: SCTPMessage, now: ClockTime) {
        guard let ppid = DataChannelPPID(rawValue: message.ppid) else {
            count("unknown-ppid")
            return
        }
        if ppid == .dcep {
            receiveDCEP(message, now: now)
            return
        }
        guard var channel = channels[message.stream] else {
            count("message-on-unknown-stream")
            return
        }
        guard channel.info.state == .open || channel.info.state == .closing else {
            count("message-on-channel-not-open")
            return
        }
        // User data before the ACK means the peer has the OPEN (RFC 8832 §6).
        channel.awaitingAck = false
        let received: DataChannelMessage
        switch ppid {
        case .string:
            guard let text = String(validating: message.bytes, as: UTF8.self) else {
                count("text-not-utf8")
                return
            }
            received = .text(text)
        case .binary: received = .binary(message.bytes)
        case .stringEmpty: received = .text("")
        case .binaryEmpty: received = .binary([])
        case .stringPartial, .binaryPartial, .dcep:
            count("deprecated-ppid")
            return
        }
        channel.stats.messagesReceived += 1
        channel.stats.bytesReceived += received.byteCount
        channels[message.stream] = channel
        events.append(.message(message.stream, received))
    }

    private func receiveDCEP(_ message: SCTPMessage, now: ClockTime) {
        let dcep: DCEPMessage
        do {
            dcep = try DCEPMessage(parsing: message.bytes)
        } catch {
            count(error.reason)
            return
        }
        switch dcep {
        case .ack:
            guard channels[message.stream]?.awaitingAck == true else {
                count("dcep-unexpected-ack")
                return
            }
            channels[message.stream]?.awaitingAck = false
        case .open(let open):
            let peerParity: UInt16 = configuration.isDTLSClient ? 1 : 0
            guard message.stream % 2 == peerParity else {
                count("dcep-open-wrong-stream-parity")
                return
            }
            guard isFree(message.stream) else {
                count("dcep-open-on-used-stream")
                return
            }
            let options = DataChannelOptions(reliability: open.reliability, protocol: open.protocol,
                                             priority: open.priority)
            let info = DataChannelInfo(id: message.stream, label: open.label, options: options, state: .open)
            channels[message.stream] = Channel(info: info, stats: DataChannelStats(
                id: message.stream, label: open.label, protocol: open.protocol, state: .open))
            queue.append(Outgoing(stream: message.stream, ppid: .dcep, bytes: DCEPMessage.ack.bytes, isUserMessage: false))
            events.append(.remoteOpened(info))
        }
    }
}

extension DataChannelPPID {
    /// PPIDs 56 and 57 carry one ignored byte for an empty message.
    var isEmptyMessage: Bool { self == .stringEmpty || self == .binaryEmpty }
}
