import MediaCore
import MediaRTP
import MediaSRTP
import MediaTransport

/// The RTP payload formats Sluice has: VP8 (RFC 7741), H.264 (RFC 6184) and Opus (RFC 7587).
public enum RTPPayloadFormats {
    public static let codecs: [CodecName] = [.vp8, .h264, .opus]

    /// The RTP clock rate of `codec`'s payload format (90 kHz for video, 48 kHz for Opus).
    public static func clockRate(of codec: CodecName) -> Int { codec == .opus ? 48_000 : 90_000 }
}

/// What an RTP stream travels over: UDP sockets the stream binds itself (with the SDES keys its
/// settings give, `sluice send`/`receive`), or a transport made for it (a WebRTC peer's bundled
/// transport, `BundledRTPTransport`), which the stream owns from then on.
public enum RTPStreamTransport {
    case udp
    case given(any RTPDatagramTransport)
}

/// One RTP stream sent from a graph, whatever its payload format: the `RTPSendSession` and the
/// `RTPSenderNode` that feeds it, as one piece to put at the end of a sending pipeline. The CLI's
/// `sluice send` and a peer connection's senders are both made of it.
public final class RTPSendStream: @unchecked Sendable {
    public struct Settings: Sendable {
        public var codec: CodecName
        public var payloadType: UInt8
        public var ssrc: UInt32
        /// Retransmissions as RTX (RFC 4588): their payload type and SSRC.
        public var rtx: (payloadType: UInt8, ssrc: UInt32)?
        public var maxPayloadSize: Int
        public var h264PacketizationMode: H264Packetizer.PacketizationMode
        /// The canonical name of the SDES packets (RFC 3550 §6.5.1).
        public var cname: String
        /// Where packets go over UDP; a given transport knows its own destination.
        public var remote: SocketAddress
        public var multiplexed: Bool
        public var impairment: ImpairmentProfile?
        /// SDES keys for a UDP transport.
        public var srtp: SRTPParameters?
        /// The sender node's name, unique in its graph.
        public var name = "rtp-sender"

        public init(codec: CodecName, payloadType: UInt8, ssrc: UInt32 = .random(in: 1...UInt32.max),
                    rtx: (payloadType: UInt8, ssrc: UInt32)? = nil, maxPayloadSize: Int = 1200,
                    h264PacketizationMode: H264Packetizer.PacketizationMode = .nonInterleaved, cname: String = "sluice",
                    remote: SocketAddress = .unspecified, multiplexed: Bool = true, impairment: ImpairmentProfile? = nil,
                    srtp: SRTPParameters? = nil) {
            self.codec = codec
            self.payloadType = payloadType
            self.ssrc = ssrc
            self.rtx = rtx
            self.maxPayloadSize = maxPayloadSize
            self.h264PacketizationMode = h264PacketizationMode
            self.cname = cname
            self.remote = remote
            self.multiplexed = multiplexed
            self.impairment = impairment
            self.srtp = srtp
        }
    }

    public let settings: Settings
    public let clockRate: Int
    /// The sender node's name in its graph.
    public let name: String
    public let transport: any RTPDatagramTransport
    private let statisticsOf: @Sendable () -> RTPSendStatistics
    private let attach: (Graph, Port<EncodedFrame>, Bool) -> Void
    private let closeSession: @Sendable () -> Void

    /// Makes the session over `transport`; nothing is sent before the first frame. Throws for a codec
    /// without a payload format here, and when UDP sockets cannot be bound.
    public init(_ settings: Settings, transport: RTPStreamTransport = .udp, tracer: FrameTracer? = nil) throws {
        self.settings = settings
        clockRate = RTPPayloadFormats.clockRate(of: settings.codec)
        let parts: Parts
        switch settings.codec {
        case .vp8: parts = try Self.parts(VP8Packetizer(maxPayloadSize: settings.maxPayloadSize), settings, transport, tracer)
        case .h264:
            parts = try Self.parts(H264Packetizer(mode: settings.h264PacketizationMode, maxPayloadSize: settings.maxPayloadSize),
                                   settings, transport, tracer)
        case .opus: parts = try Self.parts(OpusPacketizer(maxPayloadSize: settings.maxPayloadSize), settings, transport, tracer)
        default: throw RTPStreamError.noPayloadFormat(settings.codec)
        }
        (name, self.transport, statisticsOf, attach, closeSession) = parts
    }

    private typealias Parts = (String, any RTPDatagramTransport, @Sendable () -> RTPSendStatistics,
                               (Graph, Port<EncodedFrame>, Bool) -> Void, @Sendable () -> Void)

    private static func parts<Packetizer: RTPPacketizer>(_ packetizer: Packetizer, _ settings: Settings,
                                                         _ transport: RTPStreamTransport, _ tracer: FrameTracer?) throws -> Parts {
        var configuration = try RTPSendSession<Packetizer>.Configuration(
            remote: settings.remote, multiplexed: settings.multiplexed,
            sender: .init(payloadType: settings.payloadType, ssrc: settings.ssrc, rtx: settings.rtx),
            cname: settings.cname, impairment: settings.impairment)
        configuration.srtp = settings.srtp
        let carrier: any RTPDatagramTransport = switch transport {
        case .udp: try UDPRTPTransport(sending: configuration)
        case .given(let given): given
        }
        let session = RTPSendSession(packetizer: packetizer, configuration: configuration, transport: carrier)
        if let tracer { session.trace(with: tracer) }
        return (settings.name, carrier, { session.statistics },
                { graph, port, owns in graph.add(RTPSenderNode(session: session, ownsSession: owns, name: settings.name), input: port) },
                { session.close() })
    }

    /// What the session has sent and heard so far; safe from any thread.
    public var statistics: RTPSendStatistics { statisticsOf() }

    /// Puts a sender node at the end of `input`. When the graph ends, the stream ends with it (its
    /// BYE) if `endsWithGraph`; else it stays open for the next graph, until `close()`.
    public func add(to graph: Graph, input: Port<EncodedFrame>, endsWithGraph: Bool = true) { attach(graph, input, endsWithGraph) }

    /// Says BYE and closes the transport (what the graph's end does too); safe to call more than once.
    public func close() { closeSession() }
}

/// One RTP stream received into a graph, whatever its payload format: the `RTPReceiveSession`
/// and the `RTPReceiverNode` it feeds, as one piece to put at the start of a receiving pipeline.
public final class RTPReceiveStream: @unchecked Sendable {
    public struct Settings: Sendable {
        public var codec: CodecName
        public var payloadType: UInt8
        /// The SSRC the description names, when it does.
        public var ssrc: UInt32?
        /// Retransmissions arriving as RTX (RFC 4588): their payload type and SSRC.
        public var rtx: (payloadType: UInt8, ssrc: UInt32)?
        /// Where to listen over UDP; a given transport has its own.
        public var local: SocketAddress
        public var multiplexed: Bool
        public var rtcpPort: UInt16?
        /// SDES keys for a UDP transport.
        public var srtp: SRTPParameters?
        /// Nominal frame rate of video, and channels of audio (for the output format).
        public var frameRate: Rational
        public var channels: Int
        public var minimumDelay: ClockTime
        public var maximumDelay: ClockTime
        public var nack: Bool
        public var limits: RTPReceiveLimits
        /// The other streams of its recording: they end together and share a timeline (`ReceiverGroup`).
        public var together: ReceiverGroup?
        /// The receiver node's name, unique in its graph.
        public var name = "rtp-receiver"

        public init(codec: CodecName, payloadType: UInt8, ssrc: UInt32? = nil, rtx: (payloadType: UInt8, ssrc: UInt32)? = nil,
                    local: SocketAddress = .unspecified, multiplexed: Bool = true, rtcpPort: UInt16? = nil,
                    srtp: SRTPParameters? = nil, frameRate: Rational = Rational(30, 1), channels: Int = 2,
                    minimumDelay: ClockTime = .milliseconds(10), maximumDelay: ClockTime = .milliseconds(1000),
                    nack: Bool = true, limits: RTPReceiveLimits = RTPReceiveLimits()) {
            self.codec = codec
            self.payloadType = payloadType
            self.ssrc = ssrc
            self.rtx = rtx
            self.local = local
            self.multiplexed = multiplexed
            self.rtcpPort = rtcpPort
            self.srtp = srtp
            self.frameRate = frameRate
            self.channels = channels
            self.minimumDelay = minimumDelay
            self.maximumDelay = maximumDelay
            self.nack = nack
            self.limits = limits
        }
    }

    public let settings: Settings
    public let transport: any RTPDatagramTransport
    /// The receiver node's name in its graph.
    public let name: String
    private let statisticsOf: @Sendable () -> RTPReceiveStatistics
    private let endReasonOf: () -> String?
    private let timelineOffsetOf: () -> Double?
    private let attach: (Graph) -> (Port<EncodedFrame>, any MediaNode)
    private let closeSession: @Sendable () -> Void
    private var node: (any MediaNode)?

    /// Makes the session over `transport` (for UDP: binds its sockets, so that what is sent from now
    /// on is received). Throws for a codec without a payload format here.
    public init(_ settings: Settings, transport: RTPStreamTransport = .udp, tracer: FrameTracer? = nil) throws {
        self.settings = settings
        let parts: Parts
        switch settings.codec {
        case .vp8: parts = try Self.parts(VP8Depacketizer(), settings, transport, tracer)
        case .h264: parts = try Self.parts(H264Depacketizer(), settings, transport, tracer)
        case .opus: parts = try Self.parts(OpusDepacketizer(), settings, transport, tracer)
        default: throw RTPStreamError.noPayloadFormat(settings.codec)
        }
        (name, self.transport, statisticsOf, endReasonOf, timelineOffsetOf, attach, closeSession) = parts
    }

    private typealias Parts = (String, any RTPDatagramTransport, @Sendable () -> RTPReceiveStatistics, () -> String?, () -> Double?,
                               (Graph) -> (Port<EncodedFrame>, any MediaNode), @Sendable () -> Void)

    private static func parts<Depacketizer: RTPDepacketizer>(_ depacketizer: Depacketizer, _ settings: Settings,
                                                             _ transport: RTPStreamTransport, _ tracer: FrameTracer?) throws -> Parts {
        var jitter = JitterBuffer<Depacketizer>.Configuration(minimumDelay: settings.minimumDelay,
                                                              maximumDelay: settings.maximumDelay, nack: settings.nack)
        jitter.rtx = settings.rtx
        var configuration = RTPReceiveSession<Depacketizer>.Configuration(
            local: settings.local, multiplexed: settings.multiplexed, rtcpPort: settings.rtcpPort,
            payloadType: settings.payloadType, ssrc: settings.ssrc, jitterBuffer: jitter)
        configuration.srtp = settings.srtp
        let carrier: any RTPDatagramTransport = switch transport {
        case .udp: try UDPRTPTransport(receiving: configuration)
        case .given(let given): given
        }
        let session = RTPReceiveSession(depacketizer: depacketizer, configuration: configuration, transport: carrier)
        session.tracer = tracer
        let receiver = RTPReceiverNode(session: session, limits: settings.limits, frameRate: settings.frameRate,
                                       channels: settings.channels, together: settings.together, name: settings.name)
        return (receiver.name, carrier, { session.statistics }, { receiver.endReason?.rawValue }, { receiver.timelineOffset },
                { graph in (graph.add(receiver), receiver) }, { session.close() })
    }

    /// What the session has received so far; safe from any thread.
    public var statistics: RTPReceiveStatistics { statisticsOf() }

    /// Why the stream ended, once it has.
    public var endReason: String? { endReasonOf() }

    /// Seconds the stream's frames were moved by onto its `ReceiverGroup`'s timeline, once decided.
    public var timelineOffset: Double? { timelineOffsetOf() }

    /// Puts the receiver node at the start of a pipeline in `graph`: the encoded frames.
    public func add(to graph: Graph) -> Port<EncodedFrame> {
        let (port, node) = attach(graph)
        self.node = node
        return port
    }

    /// The receiver node, once added (to ask its graph for its output format).
    public var receiverNode: (any MediaNode)? { node }

    /// Closes the session and its transport; a graph waiting on it ends. Safe to call more than once.
    public func close() { closeSession() }
}

/// Why an RTP stream could not be made.
public enum RTPStreamError: Error, Equatable, CustomStringConvertible {
    case noPayloadFormat(CodecName)

    public var description: String {
        switch self {
        case .noPayloadFormat(let codec): "Sluice has no RTP payload format for \(codec)"
        }
    }
}
