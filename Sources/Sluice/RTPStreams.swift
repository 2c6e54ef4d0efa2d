import MediaCore
import MediaNodes
import MediaRTP
import MediaTransport

/// Where and how a pipeline sends its one RTP stream.
public struct RTPDestination: Sendable {
    /// The codecs Sluice has RTP payload formats for.
    public static let codecs: [CodecName] = [.vp8, .h264, .opus]

    /// Where RTP goes; RTCP goes to the next port, or the same one when `multiplexed`.
    public var address: SocketAddress
    /// Default: 96 for video, 111 for Opus (dynamic types, RFC 3551 §3).
    public var payloadType: UInt8?
    /// Largest RTP payload; with a 12-byte header and UDP/IP this keeps packets under a 1280-byte MTU.
    public var maxPayloadSize = 1200
    public var multiplexed = false
    /// Retransmissions as RTX (RFC 4588) with this payload type, on an SSRC of their own.
    public var rtxPayloadType: UInt8?
    public var rtxSSRC: UInt32 = .random(in: 1...UInt32.max)
    public var h264PacketizationMode: H264Packetizer.PacketizationMode = .nonInterleaved
    public var ssrc: UInt32 = .random(in: 1...UInt32.max)
    public var impairment: ImpairmentProfile?
    /// SRTP (RFC 3711), keyed as an SDP `a=crypto` line says (`SessionDescription(describing:)`
    /// writes it).
    public var srtp: SRTPParameters?

    public init(address: SocketAddress) { self.address = address }

    /// The payload type used for `codec`.
    public func payloadType(for codec: CodecName) -> UInt8 { payloadType ?? (codec == .opus ? 111 : 96) }

    /// A sender for `codec` with its session's sockets bound.
    func makeSender(codec: CodecName, tracer: FrameTracer? = nil) throws -> RTPSenderHandle {
        guard RTPPayloadFormats.codecs.contains(codec) else { throw TranscodeError.incompatible(RTPStreamError.noPayloadFormat(codec).description) }
        return try RTPSenderHandle(destination: self, codec: codec, tracer: tracer)
    }
}

/// A pipeline's RTP sender, whatever its payload format: what it sends and how to reach its session.
public final class RTPSenderHandle: @unchecked Sendable {
    public let name: String
    public let codec: CodecName
    public let payloadType: UInt8
    public let clockRate: Int
    public let ssrc: UInt32
    public let destination: RTPDestination
    /// The local RTP address packets leave from.
    public let localAddress: SocketAddress
    /// Retransmissions' payload type and SSRC, when they go as RTX.
    public let rtx: (payloadType: UInt8, ssrc: UInt32)?
    /// The canonical name in the session's SDES packets (RFC 3550 §6.5.1).
    public let cname: String
    /// What the session has sent and heard so far; safe from any thread.
    public let statistics: @Sendable () -> RTPSendStatistics
    private let attach: (Graph, Port<EncodedFrame>) -> Void

    init(destination: RTPDestination, codec: CodecName, tracer: FrameTracer?) throws {
        let payloadType = destination.payloadType(for: codec)
        let rtx = destination.rtxPayloadType.map { (payloadType: $0, ssrc: destination.rtxSSRC) }
        let stream = try RTPSendStream(
            RTPSendStream.Settings(codec: codec, payloadType: payloadType, ssrc: destination.ssrc, rtx: rtx,
                                   maxPayloadSize: destination.maxPayloadSize,
                                   h264PacketizationMode: destination.h264PacketizationMode, remote: destination.address,
                                   multiplexed: destination.multiplexed, impairment: destination.impairment,
                                   srtp: destination.srtp),
            tracer: tracer)
        name = stream.name
        self.codec = codec
        self.payloadType = payloadType
        clockRate = stream.clockRate
        ssrc = destination.ssrc
        self.destination = destination
        localAddress = (stream.transport as? UDPRTPTransport)?.sockets.rtp.localAddress ?? destination.address
        self.rtx = rtx
        cname = stream.settings.cname
        statistics = { stream.statistics }
        attach = { graph, port in stream.add(to: graph, input: port) }
    }

    func add(to graph: Graph, input: Port<EncodedFrame>) { attach(graph, input) }
}

/// One RTP stream to receive, as a session description (SDP media section) describes it.
public struct RTPStreamDescription: Sendable {
    public var codec: CodecName
    public var payloadType: UInt8
    /// Where to listen for RTP.
    public var local: SocketAddress
    public var multiplexed = false
    /// Default: the RTP port + 1.
    public var rtcpPort: UInt16?
    /// Retransmissions arriving as RTX (RFC 4588): their payload type and SSRC.
    public var rtx: (payloadType: UInt8, ssrc: UInt32)?
    /// The one source to receive (SDP `a=ssrc`); nil: the first to pass probation (RFC 3550 §A.1).
    public var ssrc: UInt32?
    /// Audio channels (Opus: 2 when the SDP says opus/48000/2).
    public var channels = 2
    /// SRTP, when the description gives a key (`a=crypto`).
    public var srtp: SRTPParameters?
    /// Nominal frame rate of video (SDP a=framerate), for the output file's timing.
    public var frameRate = Rational(30, 1)

    public init(codec: CodecName, payloadType: UInt8, local: SocketAddress) {
        self.codec = codec
        self.payloadType = payloadType
        self.local = local
    }
}

/// What a receive pipeline should do besides choosing its stream and file.
public struct ReceiveOptions: Sendable {
    public var limits = RTPReceiveLimits()
    /// Jitter-buffer latency bounds and NACK.
    public var minimumDelay: ClockTime = .milliseconds(10)
    public var maximumDelay: ClockTime = .milliseconds(1000)
    public var nack = true
    public var threads = 1
    /// Video decoder provider to use, e.g. "openh264"; defaults to the registry's preferred one.
    public var decoderName: String?
    /// Per-frame latency tracing of the receiving stages (first packet in to the sink); the
    /// sending pipeline's tracer for a loopback call (`TranscodeOptions.tracer`).
    public var tracer: FrameTracer?

    public init() {}
}

/// A pipeline that receives one RTP stream into a file: the elementary stream as it came when the
/// file holds its codec (`.ivf`, `.h264`, `.opus`), else decoded pictures (`.y4m`) or samples
/// (`.wav`). A video stream's first keyframe must arrive (within the silence limit) for the
/// pipeline to be made: it gives the picture size.
public final class RTPReceivePipeline: @unchecked Sendable {
    public let stream: RTPStreamDescription
    public let output: String
    public let graph = Graph()
    public private(set) var outputFormat: MediaFormat?
    /// The session's statistics; safe from any thread.
    public private(set) var statistics: @Sendable () -> RTPReceiveStatistics = { RTPReceiveStatistics() }
    /// Why the stream ended, once it has.
    public private(set) var endReason: () -> String? = { nil }
    /// Frames the decoder rejected, and frames skipped until the next keyframe (decoded outputs).
    public private(set) var decoderStatistics: () -> (corrupt: Int, skipped: Int) = { (0, 0) }
    /// Where the session listens (with the port the kernel chose, if the description's was 0).
    public private(set) var localAddress: SocketAddress
    private var sinkName = ""
    private var formatOf: () -> MediaFormat? = { nil }
    private var decoderCounters: () -> DecoderStatistics? = { nil }
    private let tracer: FrameTracer?

    /// Binds the session's sockets, so that packets sent from now on are received.
    public init(stream: RTPStreamDescription, output: String, options: ReceiveOptions = ReceiveOptions(),
                registry: CodecRegistry = .builtIn) throws {
        self.stream = stream
        self.output = output
        localAddress = stream.local
        tracer = options.tracer
        if let tracer { graph.tracing = .receiving(tracer) }
        let container = try Container(path: output)
        guard container.isVideo == (stream.codec != .opus) else {
            throw TranscodeError.incompatible("\(output): a .\(container.rawValue) file cannot hold the \(stream.codec) stream")
        }
        guard RTPPayloadFormats.codecs.contains(stream.codec) else {
            throw TranscodeError.incompatible(RTPStreamError.noPayloadFormat(stream.codec).description)
        }
        let receiving = try RTPReceiveStream(stream.receiveSettings(options), tracer: options.tracer)
        statistics = { receiving.statistics }
        endReason = { receiving.endReason }
        localAddress = (receiving.transport as? UDPRTPTransport)?.sockets.rtp.localAddress ?? stream.local
        let frames = receiving.add(to: graph)
        formatOf = { [graph] in receiving.receiverNode.flatMap { graph.outputFormat(of: $0) } }
        do {
            try attachSink(frames, container: container, options: options, registry: registry)
        } catch {
            receiving.close()
            throw error
        }
    }

    private func attachSink(_ frames: Port<EncodedFrame>, container: Container, options: ReceiveOptions,
                            registry: CodecRegistry) throws {
        switch container {
        case .ivf:
            let sink = IVFFileSink(path: output, codecs: [stream.codec])
            graph.add(sink, input: frames)
            sinkName = sink.name
        case .h264:
            let sink = AnnexBFileSink(path: output)
            graph.add(sink, input: frames)
            sinkName = sink.name
        case .opus:
            // RTP does not carry Opus's encoder delay (RFC 7587); libopus's usual 6.5 ms is assumed.
            let sink = OggOpusFileSink(path: output, preSkip: { 312 })
            graph.add(sink, input: frames)
            sinkName = sink.name
        case .mp4, .webm, .mkv:
            // As for .opus, RTP does not carry the encoder delay: libopus's usual 312 samples are assumed.
            let sink = ContainerFileSink(writer: try ContainerWriter(path: output, format: container.containerFormat!),
                                         kind: stream.codec == .opus ? .audio : .video, preSkip: { 312 })
            graph.add(sink, input: frames)
            sinkName = sink.name
        case .y4m:
            let decoder = VideoDecoderNode(try registry.videoDecoder(for: stream.codec, named: options.decoderName),
                                           threads: options.threads)
            decoderStatistics = { (decoder.corruptFrames, decoder.skippedFrames) }
            decoderCounters = { decoder.statistics }
            let sink = Y4MFileSink(path: output)
            graph.add(sink, input: graph.add(decoder, input: frames))
            sinkName = sink.name
        case .wav:
            let decoder = AudioDecoderNode(try registry.audioDecoder(for: stream.codec),
                                           preferredOutput: [.audio(.exactly(.samples(.s16)))], preSkip: 312)
            decoderStatistics = { (decoder.corruptPackets, 0) }
            decoderCounters = { decoder.statistics }
            let sink = WAVFileSink(path: output)
            graph.add(sink, input: graph.add(decoder, input: frames))
            sinkName = sink.name
        }
    }

    /// The RTP stream received, in W3C webrtc-stats terms (inbound-rtp), with the per-stage
    /// latencies when tracing. Safe from any thread, while running and after.
    public func stats() -> InboundRTPStreamStatistics {
        InboundRTPStreamStatistics(session: statistics(), decoder: decoderCounters(), latencies: tracer?.latencies())
    }

    /// Frames written so far; safe from any thread.
    public var framesDone: Int { graph.progress.first { $0.name == sinkName }?.itemsIn ?? 0 }

    /// Waits for the stream's first keyframe (video) and makes the graph: after this,
    /// `outputFormat` is known. Called by `run()` if not called before.
    public func build() throws {
        try graph.build()
        outputFormat = formatOf()
    }

    /// Receives until the stream ends (BYE, a limit, silence) and the file is complete.
    public func run() throws -> GraphReport {
        try build()
        return try graph.run()
    }
}

extension RTPStreamDescription {
    /// The settings of an `RTPReceiveStream` receiving this stream with `options`' limits and delays.
    func receiveSettings(_ options: ReceiveOptions) -> RTPReceiveStream.Settings {
        RTPReceiveStream.Settings(codec: codec, payloadType: payloadType, ssrc: ssrc, rtx: rtx, local: local,
                                  multiplexed: multiplexed, rtcpPort: rtcpPort, srtp: srtp, frameRate: frameRate, channels: channels,
                                  minimumDelay: options.minimumDelay, maximumDelay: options.maximumDelay,
                                  nack: options.nack, limits: options.limits)
    }
}
