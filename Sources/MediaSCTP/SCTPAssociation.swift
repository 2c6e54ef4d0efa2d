import CUsrSCTP
import Glibc
import MediaCore

/// How an SCTP association over DTLS is set up (RFC 8261, RFC 8841).
public struct SCTPConfiguration: Sendable, Hashable {
    /// The SCTP ports, from `a=sctp-port` (RFC 8841 §5); 5000 by default on both sides.
    public var localPort: UInt16
    public var remotePort: UInt16
    /// Streams asked for in each direction.
    public var streams: UInt16
    /// The largest SCTP packet: the DTLS record around it must fit a UDP datagram (RFC 8261 §5); 1140
    /// leaves room for the record overhead of any DTLS 1.2 cipher within `PeerTransport`'s 1200.
    public var mtu: UInt32
    /// usrsctp's receive window and the bytes it holds unacknowledged; past that, sends return 0.
    public var receiveBuffer: Int32
    public var sendBuffer: Int32
    /// Retransmission timeout bounds (RFC 4960 §6.3.1), in milliseconds.
    public var rtoInitial: UInt32
    public var rtoMinimum: UInt32
    public var rtoMaximum: UInt32
    /// The largest message accepted (`a=max-message-size`, RFC 8841 §6): longer ones are dropped, counted.
    public var maxReceiveMessageSize: Int

    public init(localPort: UInt16 = 5000, remotePort: UInt16 = 5000, streams: UInt16 = 1024, mtu: UInt32 = 1140,
                receiveBuffer: Int32 = 1 << 20, sendBuffer: Int32 = 1 << 19, rtoInitial: UInt32 = 1000,
                rtoMinimum: UInt32 = 200, rtoMaximum: UInt32 = 3000, maxReceiveMessageSize: Int = 262_144) {
        self.localPort = localPort
        self.remotePort = remotePort
        self.streams = streams
        self.mtu = mtu
        self.receiveBuffer = receiveBuffer
        self.sendBuffer = sendBuffer
        self.rtoInitial = rtoInitial
        self.rtoMinimum = rtoMinimum
        self.rtoMaximum = rtoMaximum
        self.maxReceiveMessageSize = maxReceiveMessageSize
    }
}

public enum SCTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// usrsctp refused a call; the call's name and errno.
    case call(String, errno: Int32)
    case notConnected
    case closed

    public var description: String {
        switch self {
        case .call(let name, let code): "\(name) failed: \(String(cString: strerror(code)))"
        case .notConnected: "the SCTP association is not established"
        case .closed: "the SCTP association is closed"
        }
    }
}

/// A user message as SCTP delivers it: whole, with its stream and payload protocol identifier.
public struct SCTPMessage: Sendable, Hashable {
    public var stream: UInt16
    public var ppid: UInt32
    public var bytes: [UInt8]
    public var unordered: Bool
}

public enum SCTPEvent: Sendable, Hashable {
    /// The association is established (RFC 4960 §5.1) with these stream counts.
    case connected(outboundStreams: UInt16, inboundStreams: UInt16)
    case message(SCTPMessage)
    /// The peer reset its outgoing direction of these streams (RFC 6525 §5.2.2): our incoming side.
    case incomingStreamsReset([UInt16])
    /// Our outgoing direction of these streams is reset: the request was performed.
    case outgoingStreamsReset([UInt16])
    /// The association ended: lost, shut down, aborted, or never established.
    case closed(reason: String)
}

/// An SCTP association over AF_CONN in usrsctp: SCTP packets in and out as bytes, for the DTLS
/// association to carry (RFC 8261). Sans-I/O like the other cores: `handleReceive`, `handleTimeout`,
/// then `pollTransmit` and `pollEvent`; `nextTimeout` says when to call again. Used from one thread at a
/// time; associations on different threads share usrsctp under its lock.
///
/// Messages are written in explicit-EOR mode, so one larger than usrsctp's free send space goes in
/// pieces (`send` returns how much it took) and nothing is ever buffered without bound here.
public final class SCTPAssociation {
    public enum State: String, Sendable, Hashable { case new, connecting, connected, closed }

    public let configuration: SCTPConfiguration
    public private(set) var state: State = .new
    /// Malformed or unexpected input, counted by reason and dropped.
    public private(set) var drops: [String: Int] = [:]
    /// Messages SCTP gave up on: partially reliable ones past their limit (RFC 3758), and what was unsent
    /// when the association ended.
    public private(set) var abandonedMessages = 0

    private let endpoint: SCTPEndpoint
    private var socket: OpaquePointer?
    private var transmits = PollQueue<[UInt8]>()
    private var events = PollQueue<SCTPEvent>()
    /// Pieces of messages being reassembled (partial delivery), by stream.
    private var partial: [UInt16: [UInt8]] = [:]
    /// Streams whose current message outgrew `maxReceiveMessageSize`: its pieces are dropped up to its end.
    private var discarding: Set<UInt16> = []
    private var lastNow: ClockTime?
    /// How often usrsctp's timers are run while the association lives.
    static let tickInterval = ClockTime.milliseconds(10)

    public init(configuration: SCTPConfiguration = SCTPConfiguration()) throws(SCTPError) {
        self.configuration = configuration
        let (endpoint, socket, error) = USRSCTP.lock.withLock { () -> (SCTPEndpoint, OpaquePointer?, SCTPError?) in
            let endpoint = USRSCTP.register()
            let ulp = UnsafeMutableRawPointer(bitPattern: endpoint.id)
            guard let socket = usrsctp_socket(AF_CONN, Int32(SOCK_STREAM.rawValue), Int32(IPPROTO_SCTP), sctpReceive, nil,
                                              0, ulp) else {
                USRSCTP.deregister(endpoint)
                return (endpoint, nil, .call("usrsctp_socket", errno: sluice_sctp_errno()))
            }
            if let error = Self.configure(socket, configuration, endpoint: endpoint) {
                usrsctp_close(socket)
                USRSCTP.deregister(endpoint)
                return (endpoint, nil, error)
            }
            return (endpoint, socket, nil)
        }
        self.endpoint = endpoint
        if let error { throw error }
        self.socket = socket
    }

    deinit { release() }

    /// Socket options for a WebRTC data channel association, then the bind to the local port.
    private static func configure(_ socket: OpaquePointer, _ configuration: SCTPConfiguration,
                                  endpoint: SCTPEndpoint) -> SCTPError? {
        func set<T>(_ level: Int32, _ option: Int32, _ value: T, _ name: String) -> SCTPError? {
            var value = value
            let result = usrsctp_setsockopt(socket, level, option, &value, socklen_t(MemoryLayout<T>.size))
            return result == 0 ? nil : .call("setsockopt \(name)", errno: sluice_sctp_errno())
        }
        let sctp = Int32(IPPROTO_SCTP)
        if usrsctp_set_non_blocking(socket, 1) != 0 { return .call("usrsctp_set_non_blocking", errno: sluice_sctp_errno()) }
        // Closing aborts (RFC 4960 §9.1) instead of lingering in a graceful shutdown nobody drives.
        if let error = set(SOL_SOCKET, SO_LINGER, linger(l_onoff: 1, l_linger: 0), "SO_LINGER") { return error }
        if let error = set(SOL_SOCKET, SO_RCVBUF, configuration.receiveBuffer, "SO_RCVBUF") { return error }
        if let error = set(SOL_SOCKET, SO_SNDBUF, configuration.sendBuffer, "SO_SNDBUF") { return error }
        if let error = set(sctp, SCTP_NODELAY, Int32(1), "SCTP_NODELAY") { return error }
        if let error = set(sctp, SCTP_EXPLICIT_EOR, Int32(1), "SCTP_EXPLICIT_EOR") { return error }
        // RFC 8831 §6.7: channels close by resetting their streams (RFC 6525).
        if let error = set(sctp, SCTP_ENABLE_STREAM_RESET,
                           sctp_assoc_value(assoc_id: sctp_assoc_t(SCTP_ALL_ASSOC), assoc_value: UInt32(SCTP_ENABLE_RESET_STREAM_REQ)),
                           "SCTP_ENABLE_STREAM_RESET") { return error }
        let streams = configuration.streams
        if let error = set(sctp, SCTP_INITMSG, sctp_initmsg(sinit_num_ostreams: streams, sinit_max_instreams: streams,
                                                            sinit_max_attempts: 0, sinit_max_init_timeo: 0),
                           "SCTP_INITMSG") { return error }
        if let error = set(sctp, SCTP_RTOINFO, sctp_rtoinfo(srto_assoc_id: 0, srto_initial: configuration.rtoInitial,
                                                            srto_max: configuration.rtoMaximum,
                                                            srto_min: configuration.rtoMinimum), "SCTP_RTOINFO") {
            return error
        }
        for type in [SCTP_ASSOC_CHANGE, SCTP_STREAM_RESET_EVENT, SCTP_PARTIAL_DELIVERY_EVENT, SCTP_SEND_FAILED_EVENT] {
            let event = sctp_event(se_assoc_id: sctp_assoc_t(SCTP_ALL_ASSOC), se_type: UInt16(type), se_on: 1)
            if let error = set(sctp, SCTP_EVENT, event, "SCTP_EVENT") { return error }
        }
        var local = connAddress(endpoint, port: configuration.localPort)
        let bound = withUnsafeMutableBytes(of: &local) { raw in
            usrsctp_bind(socket, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        return bound == 0 ? nil : .call("usrsctp_bind", errno: sluice_sctp_errno())
    }

    private static func connAddress(_ endpoint: SCTPEndpoint, port: UInt16) -> sockaddr_conn {
        sockaddr_conn(sconn_family: UInt16(AF_CONN), sconn_port: port.bigEndian, sconn_addr: endpoint.address)
    }

    // MARK: Driving

    /// Sends the INIT (RFC 4960 §5.1). Both WebRTC peers connect at once; SCTP resolves the collision.
    public func connect(now: ClockTime) throws(SCTPError) {
        guard let socket else { throw .closed }
        guard state == .new else { return }
        lastNow = now
        state = .connecting
        let error: SCTPError? = withUSRSCTP {
            var remote = Self.connAddress(endpoint, port: configuration.remotePort)
            let result = withUnsafeMutableBytes(of: &remote) { raw in
                usrsctp_connect(socket, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            let code = sluice_sctp_errno()
            guard result == 0 || code == EINPROGRESS else { return .call("usrsctp_connect", errno: code) }
            // A fixed path MTU: the DTLS record must fit the datagram, and AF_CONN has no path to probe.
            var parameters = sctp_paddrparams()
            withUnsafeMutableBytes(of: &parameters.spp_address) { raw in
                withUnsafeBytes(of: &remote) { raw.copyMemory(from: $0) }
            }
            parameters.spp_flags = UInt32(SPP_PMTUD_DISABLE)
            // usrsctp's path MTU over AF_CONN leaves out the 12-byte common header (RFC 4960 §3.1).
            parameters.spp_pathmtu = max(configuration.mtu, 512) - 12
            if usrsctp_setsockopt(socket, Int32(IPPROTO_SCTP), SCTP_PEER_ADDR_PARAMS, &parameters,
                                  socklen_t(MemoryLayout<sctp_paddrparams>.size)) != 0 {
                return .call("setsockopt SCTP_PEER_ADDR_PARAMS", errno: sluice_sctp_errno())
            }
            return nil
        }
        if let error {
            finish(reason: error.description)
            throw error
        }
    }

    /// An SCTP packet from the peer (the payload of one DTLS application data record).
    public func handleReceive(_ packet: [UInt8], now: ClockTime) {
        guard socket != nil else { return }
        lastNow = now
        guard packet.count >= 12 else {   // the common header (RFC 4960 §3.1)
            count("sctp-packet-too-short")
            return
        }
        withUSRSCTP {
            packet.withUnsafeBytes { raw in usrsctp_conninput(endpoint.address, raw.baseAddress, raw.count, 0) }
        }
    }

    public func handleTimeout(now: ClockTime) {
        guard socket != nil else { return }
        lastNow = now
        withUSRSCTP {}
    }

    /// The next SCTP packet to send to the peer, nil when none waits.
    public func pollTransmit() -> [UInt8]? { transmits.poll() }

    public func pollEvent() -> SCTPEvent? { events.poll() }

    /// When usrsctp's timers want running: a fixed tick while the association lives (usrsctp does not say
    /// when its next timer is due).
    public var nextTimeout: ClockTime? {
        guard socket != nil, let lastNow else { return nil }
        return lastNow + Self.tickInterval
    }

    // MARK: Sending

    /// Writes `bytes` (a message, or the next piece of one) on `stream`; `endOfMessage` marks the last
    /// piece (explicit EOR). Returns how many bytes usrsctp took: fewer than given, even 0, when its send
    /// space is full; write the rest later. Every piece of a message carries the same stream, PPID and
    /// reliability; pieces of different messages must not interleave.
    public func send(_ bytes: UnsafeRawBufferPointer, stream: UInt16, ppid: UInt32, reliability: DataChannelReliability,
                     endOfMessage: Bool, now: ClockTime) throws(SCTPError) -> Int {
        guard let socket else { throw .closed }
        guard state == .connected else { throw .notConnected }
        lastNow = now
        var info = sctp_sendv_spa()
        info.sendv_flags = UInt32(SCTP_SEND_SNDINFO_VALID)
        info.sendv_sndinfo.snd_sid = stream
        info.sendv_sndinfo.snd_ppid = ppid.bigEndian
        var flags = endOfMessage ? Int32(SCTP_EOR) : 0
        if !reliability.ordered { flags |= Int32(SCTP_UNORDERED) }
        info.sendv_sndinfo.snd_flags = UInt16(flags)
        switch reliability.limit {
        case .reliable: break
        case .maxRetransmits(let count):
            info.sendv_flags |= UInt32(SCTP_SEND_PRINFO_VALID)
            info.sendv_prinfo = sctp_prinfo(pr_policy: UInt16(SCTP_PR_SCTP_RTX), pr_value: count)
        case .maxPacketLifetime(let milliseconds):
            info.sendv_flags |= UInt32(SCTP_SEND_PRINFO_VALID)
            info.sendv_prinfo = sctp_prinfo(pr_policy: UInt16(SCTP_PR_SCTP_TTL), pr_value: milliseconds)
        }
        let (written, code) = withUSRSCTP { () -> (Int, Int32) in
            let written = usrsctp_sendv(socket, bytes.baseAddress, bytes.count, nil, 0, &info,
                                        socklen_t(MemoryLayout<sctp_sendv_spa>.size), UInt32(SCTP_SENDV_SPA), 0)
            return (written, written < 0 ? sluice_sctp_errno() : 0)
        }
        if written >= 0 { return written }
        if code == EWOULDBLOCK || code == EAGAIN { return 0 }
        throw .call("usrsctp_sendv", errno: code)
    }

    /// Resets our outgoing direction of `streams` (RFC 6525 §5.1.2); the peer answers by resetting its own
    /// (RFC 8831 §6.7). usrsctp sends the request once what is queued on those streams is out.
    public func resetOutgoing(streams: [UInt16], now: ClockTime) throws(SCTPError) {
        guard let socket else { throw .closed }
        guard state == .connected, !streams.isEmpty else { return }
        lastNow = now
        let code = withUSRSCTP { streams.withUnsafeBufferPointer {
            sluice_sctp_reset_outgoing(socket, $0.baseAddress, UInt16(clamping: $0.count))
        } }
        if code != 0 { throw .call("SCTP_RESET_STREAMS", errno: code) }
    }

    /// Aborts the association (the ABORT waits in `pollTransmit`) and frees usrsctp's socket.
    public func close(now: ClockTime) {
        guard socket != nil else { return }
        lastNow = now
        release()
        finish(reason: "closed")
    }

    // MARK: Internals

    /// Runs `body` and usrsctp's timers under the lock, then takes what the callbacks left.
    private func withUSRSCTP<T>(_ body: () -> T) -> T {
        let (result, sent, received) = USRSCTP.lock.withLock { () -> (T, [[UInt8]], [SCTPEndpoint.Inbound]) in
            USRSCTP.tick()
            let result = body()
            defer { endpoint.transmits.removeAll(); endpoint.inbound.removeAll() }
            return (result, endpoint.transmits, endpoint.inbound)
        }
        transmits.append(contentsOf: sent)
        for item in received { handle(item) }
        return result
    }

    private func release() {
        guard let socket else { return }
        self.socket = nil
        let sent = USRSCTP.lock.withLock { () -> [[UInt8]] in
            usrsctp_close(socket)
            USRSCTP.deregister(endpoint)
            defer { endpoint.transmits.removeAll(); endpoint.inbound.removeAll() }
            return endpoint.transmits
        }
        transmits.append(contentsOf: sent)
        partial.removeAll()
    }

    private func finish(reason: String) {
        guard state != .closed else { return }
        state = .closed
        events.append(.closed(reason: reason))
        if socket != nil { release() }
    }

    private func count(_ reason: String) { drops[reason, default: 0] += 1 }

    private func handle(_ item: SCTPEndpoint.Inbound) {
        switch item {
        case .data(let bytes, let stream, let ppid, let unordered, let endOfRecord):
            if discarding.contains(stream) {
                if endOfRecord { discarding.remove(stream) }
                return
            }
            var whole = partial.removeValue(forKey: stream) ?? []
            whole.append(contentsOf: bytes)
            guard whole.count <= configuration.maxReceiveMessageSize else {
                count("sctp-message-too-large")
                if !endOfRecord { discarding.insert(stream) }
                return
            }
            guard endOfRecord else {
                partial[stream] = whole
                return
            }
            events.append(.message(SCTPMessage(stream: stream, ppid: ppid, bytes: whole, unordered: unordered)))
        case .notification(let bytes):
            handleNotification(bytes)
        case .endOfFile:
            finish(reason: "end of stream")
        }
    }

    /// Notifications (RFC 6458 §6.1): the header is type, flags (16 bits each), length (32), host order.
    private func handleNotification(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else {
            count("sctp-notification-too-short")
            return
        }
        func u16(_ at: Int) -> UInt16 {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
        }
        func u32(_ at: Int) -> UInt32 {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) }
        }
        switch Int32(u16(0)) {
        case SCTP_ASSOC_CHANGE where bytes.count >= 16:
            // sac_state at 8, sac_error at 10, outbound streams at 12, inbound at 14.
            switch Int32(u16(8)) {
            case SCTP_COMM_UP, SCTP_RESTART:
                if state != .connected {
                    state = .connected
                    events.append(.connected(outboundStreams: u16(12), inboundStreams: u16(14)))
                }
            case SCTP_COMM_LOST: finish(reason: "association lost")
            case SCTP_SHUTDOWN_COMP: finish(reason: "shut down")
            case SCTP_CANT_STR_ASSOC: finish(reason: "could not establish the association")
            default: break
            }
        case SCTP_STREAM_RESET_EVENT where bytes.count >= 12:
            // strreset_flags at 2, the stream list after the 12-byte header.
            let flags = Int32(u16(2))
            guard flags & (SCTP_STREAM_RESET_DENIED | SCTP_STREAM_RESET_FAILED) == 0 else {
                count("sctp-stream-reset-refused")
                return
            }
            let length = min(Int(u32(4)), bytes.count)
            let streams = stride(from: 12, to: length - 1, by: 2).map { u16($0) }
            if flags & SCTP_STREAM_RESET_INCOMING_SSN != 0 {
                for stream in streams {
                    partial[stream] = nil
                    discarding.remove(stream)
                }
                events.append(.incomingStreamsReset(streams))
            }
            if flags & SCTP_STREAM_RESET_OUTGOING_SSN != 0 { events.append(.outgoingStreamsReset(streams)) }
        case SCTP_PARTIAL_DELIVERY_EVENT where bytes.count >= 16:
            // pdapi_indication at 8, pdapi_stream at 12: an aborted partial delivery drops its pieces.
            if Int32(u32(8)) == SCTP_PARTIAL_DELIVERY_ABORTED {
                partial[UInt16(truncatingIfNeeded: u32(12))] = nil
                discarding.remove(UInt16(truncatingIfNeeded: u32(12)))
                count("sctp-partial-delivery-aborted")
            }
        case SCTP_SEND_FAILED_EVENT:
            // A partially reliable message given up (RFC 3758), or data unsent when the association ended.
            abandonedMessages += 1
        default:
            break
        }
    }
}
