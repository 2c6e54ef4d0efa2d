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

    /// A sender for `codec` with its session's sockets bound; `name` is its node's in the graph.
    func makeSender(codec: CodecName, tracer: FrameTracer? = nil, name: String = "rtp-sender") throws -> RTPSenderHandle {
        guard RTPPayloadFormats.codecs.contains(codec) else { throw TranscodeError.incompatible(RTPStreamError.noPayloadFormat(codec).description) }
        return try RTPSenderHandle(destination: self, codec: codec, tracer: tracer, name: name)
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

    init(destination: RTPDestination, codec: CodecName, tracer: FrameTracer?, name: String) throws {
        let payloadType = destination.payloadType(for: codec)
        let rtx = destination.rtxPayloadType.map { (payloadType: $0, ssrc: destination.rtxSSRC) }
        var settings = RTPSendStream.Settings(codec: codec, payloadType: payloadType, ssrc: destination.ssrc, rtx: rtx,
                                              maxPayloadSize: destination.maxPayloadSize,
                                              h264PacketizationMode: destination.h264PacketizationMode, remote: destination.address,
                                              multiplexed: destination.multiplexed, impairment: destination.impairment,
                                              srtp: destination.srtp)
        settings.name = name
        let stream = try RTPSendStream(settings, tracer: tracer)
        self.name = stream.name
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

/// A pipeline that receives RTP into a file: one stream as it came when the file holds its codec
/// (`.ivf`, `.h264`, `.opus`), else decoded pictures (`.y4m`) or samples (`.wav`); or the streams of a
/// call (audio and video) into one container file (`.webm`, `.mkv`, `.mp4`: `ContainerRecording`,
/// as `sluice serve` records), placed on one timeline by the sender's RTCP sender reports (RFC 3550
/// §6.4.1; `ReceiverGroup`): until every stream has had one, or if one never comes within 2 s,
/// each track starts at its first frame. A video stream's first
/// keyframe must arrive (within the silence limit) for the pipeline to be made: it gives the picture
/// size. The streams of one file end together (`RTPReceiverNode.together`); a frame limit counts
/// the video's frames.
public final class RTPReceivePipeline: @unchecked Sendable {
    /// The streams received, in the order given.
    public let streams: [RTPStreamDescription]
    /// The first of `streams`.
    public var stream: RTPStreamDescription { streams[0] }
    public let output: String
    public let graph = Graph()
    /// The first stream's format in the file, once built (`outputFormats` has every stream's).
    public var outputFormat: MediaFormat? { outputFormats.first ?? nil }
    public private(set) var outputFormats: [MediaFormat?] = []
    /// The first stream's session statistics; safe from any thread.
    public private(set) var statistics: @Sendable () -> RTPReceiveStatistics = { RTPReceiveStatistics() }
    /// Why the first stream ended, once it has.
    public private(set) var endReason: () -> String? = { nil }
    /// Frames the decoder rejected, and frames skipped until the next keyframe (decoded outputs).
    public private(set) var decoderStatistics: () -> (corrupt: Int, skipped: Int) = { (0, 0) }
    /// Where the first stream's session listens (with the port the kernel chose, if the description's was 0).
    public var localAddress: SocketAddress { localAddresses[0] }
    /// Where each stream's session listens.
    public private(set) var localAddresses: [SocketAddress]
    private var receivings: [RTPReceiveStream] = []
    private var group: ReceiverGroup?
    private var sinkNames: [String] = []
    private var decoderCounters: () -> DecoderStatistics? = { nil }
    private let tracer: FrameTracer?

    /// Binds the session's sockets, so that packets sent from now on are received.
    public convenience init(stream: RTPStreamDescription, output: String, options: ReceiveOptions = ReceiveOptions(),
                            registry: CodecRegistry = .builtIn) throws {
        try self.init(streams: [stream], output: output, options: options, registry: registry)
    }

    /// Binds every stream's sockets. More than one stream needs a container file (`.webm`, `.mkv`,
    /// `.mp4`) that takes each stream's codec.
    public init(streams: [RTPStreamDescription], output: String, options: ReceiveOptions = ReceiveOptions(),
                registry: CodecRegistry = .builtIn) throws {
        precondition(!streams.isEmpty, "a receive pipeline needs a stream")
        self.streams = streams
        self.output = output
        localAddresses = streams.map(\.local)
        tracer = options.tracer
        if let tracer { graph.tracing = .receiving(tracer) }
        let container = try Container(path: output)
        guard streams.count == 1 || container.containerFormat != nil else {
            throw TranscodeError.incompatible("\(output): a .\(container.rawValue) file holds one stream; "
                                              + "audio and video go together into .webm, .mkv or .mp4")
        }
        for stream in streams {
            guard RTPPayloadFormats.codecs.contains(stream.codec) else {
                throw TranscodeError.incompatible(RTPStreamError.noPayloadFormat(stream.codec).description)
            }
            if let format = container.containerFormat {
                guard format.codecs.contains(stream.codec) else {
                    throw TranscodeError.incompatible("\(output): a .\(container.rawValue) file takes "
                                                      + "\(format.codecs.map(\.rawValue).joined(separator: ", ")), not the \(stream.codec) stream")
                }
            } else if container.isVideo != (stream.codec != .opus) {
                throw TranscodeError.incompatible("\(output): a .\(container.rawValue) file cannot hold the \(stream.codec) stream")
            }
        }
        do {
            let hasVideo = streams.contains { $0.codec != .opus }
            let together = streams.count > 1 ? ReceiverGroup() : nil
            var ports: [Port<EncodedFrame>] = []
            for stream in streams {
                var settings = stream.receiveSettings(options)
                settings.together = together
                group = together
                if streams.count > 1 { settings.name = "rtp-receiver-\(ports.count)-\(stream.codec == .opus ? "audio" : "video")" }
                // The frame limit counts pictures when there are any; the audio ends with them.
                if hasVideo && stream.codec == .opus { settings.limits.frames = nil }
                let receiving = try RTPReceiveStream(settings, tracer: options.tracer)
                receivings.append(receiving)
                ports.append(receiving.add(to: graph))
            }
            localAddresses = zip(receivings, streams).map { ($0.transport as? UDPRTPTransport)?.sockets.rtp.localAddress ?? $1.local }
            let first = receivings[0]
            statistics = { first.statistics }
            endReason = { first.endReason }
            try attachSinks(ports, container: container, options: options, registry: registry)
        } catch {
            for receiving in receivings { receiving.close() }
            throw error
        }
    }

    /// What stream `index`'s session has received so far; safe from any thread.
    public func statistics(ofStream index: Int) -> RTPReceiveStatistics { receivings[index].statistics }

    /// Why stream `index` ended, once it has.
    public func endReason(ofStream index: Int) -> String? { receivings[index].endReason }

    /// Seconds stream `index` starts after the earliest stream in the file, once decided (streams of
    /// one file only): by the sender reports when `synchronizedBySenderReports`, else 0.
    public func timelineOffset(ofStream index: Int) -> Double? { receivings[index].timelineOffset }

    /// Whether the streams of the file were placed by the sender's reports (RFC 3550 §6.4.1) rather
    /// than each at its first frame; nil for one stream, or while undecided.
    public var synchronizedBySenderReports: Bool? { group?.synchronizedBySenderReports }

    private func attachSinks(_ ports: [Port<EncodedFrame>], container: Container, options: ReceiveOptions,
                             registry: CodecRegistry) throws {
        if let format = container.containerFormat {
            let recording = try ContainerRecording(path: output, format: format, trackCount: streams.count)
            sinkNames = zip(ports, streams).map { recording.record($0, kind: $1.codec == .opus ? .audio : .video, in: graph) }
            return
        }
        let frames = ports[0]
        switch container {
        case .ivf:
            let sink = IVFFileSink(path: output, codecs: [stream.codec])
            graph.add(sink, input: frames)
            sinkNames = [sink.name]
        case .h264:
            let sink = AnnexBFileSink(path: output)
            graph.add(sink, input: frames)
            sinkNames = [sink.name]
        case .opus:
            let sink = OggOpusFileSink(path: output, preSkip: { ContainerRecording.opusPreSkip })
            graph.add(sink, input: frames)
            sinkNames = [sink.name]
        case .y4m:
            let decoder = VideoDecoderNode(try registry.videoDecoder(for: stream.codec, named: options.decoderName),
                                           threads: options.threads)
            decoderStatistics = { (decoder.corruptFrames, decoder.skippedFrames) }
            decoderCounters = { decoder.statistics }
            let sink = Y4MFileSink(path: output)
            graph.add(sink, input: graph.add(decoder, input: frames))
            sinkNames = [sink.name]
        case .wav:
            let decoder = AudioDecoderNode(try registry.audioDecoder(for: stream.codec),
                                           preferredOutput: [.audio(.exactly(.samples(.s16)))], preSkip: ContainerRecording.opusPreSkip)
            decoderStatistics = { (decoder.corruptPackets, 0) }
            decoderCounters = { decoder.statistics }
            let sink = WAVFileSink(path: output)
            graph.add(sink, input: graph.add(decoder, input: frames))
            sinkNames = [sink.name]
        default:
            preconditionFailure("\(container) is a container format")
        }
    }

    /// The RTP stream received, in W3C webrtc-stats terms (inbound-rtp), with the per-stage
    /// latencies when tracing. Safe from any thread, while running and after.
    public func stats() -> InboundRTPStreamStatistics {
        InboundRTPStreamStatistics(session: statistics(), decoder: decoderCounters(), latencies: tracer?.latencies())
    }

    /// Frames of the first stream written so far; safe from any thread.
    public var framesDone: Int { framesDone(ofStream: 0) }

    /// Frames of stream `index` written so far; safe from any thread.
    public func framesDone(ofStream index: Int) -> Int {
        let name = sinkNames[index]
        return graph.progress.first { $0.name == name }?.itemsIn ?? 0
    }

    /// Waits for the stream's first keyframe (video) and makes the graph: after this,
    /// `outputFormat` is known. Called by `run()` if not called before.
    public func build() throws {
        try graph.build()
        outputFormats = receivings.map { receiving in receiving.receiverNode.flatMap { graph.outputFormat(of: $0) } }
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
