import Foundation
import MediaCodecs
import MediaCore
import MediaNegotiation
import MediaNodes
import MediaRTP
import MediaTransport

/// A transceiver's graph, running on the shared workers until it ends or `stop()` cancels it. A
/// graph not yet built is built first on a short-lived thread (a receiver's build waits for its
/// first keyframe), which ends once the graph has started.
final class RunningPipeline: @unchecked Sendable {
    let graph: Graph
    private let done = DispatchSemaphore(value: 0)
    private let outcome = Locked<Result<GraphReport, any Error>?>(nil)

    init(graph: Graph, built: Bool = false) {
        self.graph = graph
        let finished: @Sendable (Result<GraphReport, any Error>) -> Void = { [self] result in self.end(result) }
        if built {
            do { try graph.start(completion: finished) } catch { finished(.failure(error)) }
        } else {
            graph.startBuildingAside(completion: finished)
        }
    }

    private func end(_ result: Result<GraphReport, any Error>) {
        outcome.withLock { $0 = result }
        done.signal()
    }

    /// How the graph ended; nil while it runs.
    var result: Result<GraphReport, any Error>? { outcome.withLock { $0 } }

    /// Cancels the graph and waits for it to end.
    func stop() {
        graph.cancel()
        done.wait()
        done.signal()   // a second stop() returns at once
    }
}

/// The sending side of a transceiver (W3C `RTCRtpSender`): a local track, the SSRCs it is sent
/// with, and once negotiated its pipeline (track ─▶ enabled gate ─▶ encoder ─▶ RTP stream).
public final class PeerSender: @unchecked Sendable {
    public let kind: MediaKind
    public let ssrc = UInt32.random(in: 1...UInt32.max)
    /// Retransmissions' SSRC (RFC 4588), used when the peer accepts RTX.
    public let rtxSSRC = UInt32.random(in: 1...UInt32.max)
    private unowned let connection: PeerConnection
    private let state: Locked<Sending>
    private let timeline = SendTimeline()

    private struct Sending: @unchecked Sendable {
        var track: LocalTrack
        var codec: NegotiatedCodec?
        var mid: String?
        var stream: RTPSendStream?
        var pipeline: RunningPipeline?
        var encoderStatistics: () -> EncoderStatistics? = { nil }
        var stopped = false
    }

    init(track: LocalTrack, connection: PeerConnection) {
        kind = track.kind
        self.connection = connection
        state = Locked(Sending(track: track))
    }

    public var track: LocalTrack { state.withLock { $0.track } }
    /// The negotiated codec, once the description that sends it is settled.
    public var codec: NegotiatedCodec? { state.withLock { $0.codec } }
    public var mid: String? { state.withLock { $0.mid } }

    /// Sends `track` from now on in place of the current one, without renegotiating (webrtc-pc
    /// §5.2 `replaceTrack`): the stream, its SSRC and sequence numbers go on, a new encoder starts
    /// with a keyframe, and timestamps continue from the last ones sent.
    public func replaceTrack(_ track: LocalTrack) throws(PeerConnectionError) {
        guard track.kind == kind else { throw .invalidState("cannot replace a \(kind.rawValue) track with a \(track.kind.rawValue) one") }
        let running = state.withLock { state -> RunningPipeline? in
            state.track = track
            defer { state.pipeline = nil }
            return state.pipeline
        }
        guard let running else { return }
        running.stop()
        try start()
    }

    /// Makes the RTP stream for the negotiated `codec` over the bundle (not yet sending).
    func negotiated(codec: NegotiatedCodec, mid: String, loop: PeerTransportLoop,
                    demultiplexer: BundledRTPDemultiplexer) throws(PeerConnectionError) {
        let rtx = codec.retransmissionPayloadType.map { (payloadType: $0, ssrc: rtxSSRC) }
        let transport = BundledRTPTransport(loop: loop, demultiplexer: demultiplexer,
                                            route: .sending(ssrc: ssrc, rtxSSRC: rtx?.ssrc), name: "mid \(mid) sending")
        let mode = codec.capability.parameters["packetization-mode"].flatMap(Int.init)
            .flatMap(H264Packetizer.PacketizationMode.init(rawValue:)) ?? .singleNALUnit
        let settings = RTPSendStream.Settings(codec: codec.capability.codec, payloadType: codec.payloadType, ssrc: ssrc, rtx: rtx,
                                              h264PacketizationMode: mode, cname: "sluice-\(ssrc)")
        let stream: RTPSendStream
        do { stream = try RTPSendStream(settings, transport: .given(transport)) } catch {
            transport.close()
            throw .media("\(error)")
        }
        state.withLock { state in
            state.codec = codec
            state.mid = mid
            state.stream = stream
        }
    }

    /// Starts the pipeline if the stream is negotiated and nothing runs yet.
    func startIfNegotiated() {
        let ready = state.withLock { $0.stream != nil && $0.pipeline == nil && !$0.stopped }
        if ready { try? start() }
    }

    private func start() throws(PeerConnectionError) {
        let (track, stream, codec) = state.withLock { ($0.track, $0.stream, $0.codec) }
        guard let stream, let codec else { return }
        let graph = Graph()
        let encoderStatistics: () -> EncoderStatistics?
        let settings = connection.configuration
        do {
            let registry = connection.factory.registry
            if case .encoded(let shared) = track.source {
                guard shared.codec == codec.capability.codec else {
                    throw PeerConnectionError.media("the shared encoding is \(shared.codec), the negotiated codec \(codec.capability.codec)")
                }
                stream.add(to: graph, input: graph.add(SharedEncodingSource(shared: shared)), endsWithGraph: false)
                encoderStatistics = { shared.encoderStatistics }
            } else {
                let encoding = try track.addEncoding(to: graph, codec: codec.capability.codec, registry: registry, timeline: timeline,
                                                     videoBitrate: settings.videoBitrate, keyframeInterval: settings.keyframeInterval,
                                                     audioBitrate: settings.audioBitrate)
                stream.add(to: graph, input: encoding.frames, endsWithGraph: false)
                encoderStatistics = encoding.statistics
            }
        } catch let error as PeerConnectionError {
            throw error
        } catch {
            throw .media("\(track.kind.rawValue) track \(track.id): \(error)")
        }
        let pipeline = RunningPipeline(graph: graph)
        state.withLock { state in
            state.pipeline = pipeline
            state.encoderStatistics = encoderStatistics
        }
    }

    /// How the running pipeline ended, if it has (an error names the node).
    public var pipelineResult: Result<GraphReport, any Error>? { state.withLock { $0.pipeline?.result } }

    /// Stops the pipeline and ends the stream (BYE).
    func stop() {
        let (pipeline, stream) = state.withLock { state in
            state.stopped = true
            return (state.pipeline, state.stream)
        }
        pipeline?.stop()
        stream?.close()
    }

    func stats() -> OutboundRTPStreamStatistics? {
        let (stream, encoder) = state.withLock { ($0.stream, $0.encoderStatistics) }
        guard let stream else { return nil }
        return OutboundRTPStreamStatistics(ssrc: ssrc, session: stream.statistics, encoder: encoder(), latencies: nil)
    }
}

/// A track the peer sends (W3C `MediaStreamTrack`, remote, with its `RTCRtpReceiver`): the RTP
/// stream of one negotiated section, received over the bundle into a pipeline the app completes
/// with `start(_:)`: encoded frames as they came, or decoded pictures or samples.
public final class RemoteTrack: @unchecked Sendable {
    /// Where the track's media goes: graph pieces that take the port and add the app's sinks.
    public enum Output: Sendable {
        case encoded(@Sendable (Graph, MediaCore.Port<EncodedFrame>) throws -> Void)
        case video(@Sendable (Graph, MediaCore.Port<VideoFrame>) throws -> Void)
        case audio(@Sendable (Graph, MediaCore.Port<AudioFrame>) throws -> Void)
    }

    public let kind: MediaKind
    public let mid: String
    /// The peer's track id (`a=msid`), else the mid.
    public let id: String
    public let codec: NegotiatedCodec
    /// The SSRC the description names, when it does (else the first stream of the payload type).
    public let ssrc: UInt32?
    private let stream: RTPReceiveStream
    private unowned let connection: PeerConnection
    private let running = Locked(Running())

    private struct Running: @unchecked Sendable {
        var pipeline: RunningPipeline?
        var decoder: (() -> DecoderStatistics?)?
    }

    init(kind: MediaKind, mid: String, id: String, codec: NegotiatedCodec, remoteSSRC: UInt32?, remoteRTXSSRC: UInt32?,
         loop: PeerTransportLoop, demultiplexer: BundledRTPDemultiplexer, connection: PeerConnection) throws(PeerConnectionError) {
        self.kind = kind
        self.mid = mid
        self.id = id
        self.codec = codec
        ssrc = remoteSSRC
        self.connection = connection
        let rtx = zip(codec.retransmissionPayloadType, remoteRTXSSRC).map { (payloadType: $0, ssrc: $1) }
        let payloadTypes = [codec.payloadType] + (codec.retransmissionPayloadType.map { [$0] } ?? [])
        let transport = BundledRTPTransport(loop: loop, demultiplexer: demultiplexer,
                                            route: .receiving(ssrc: remoteSSRC, rtxSSRC: remoteRTXSSRC, payloadTypes: payloadTypes),
                                            name: "mid \(mid) receiving")
        let settings = connection.configuration
        do {
            stream = try RTPReceiveStream(
                RTPReceiveStream.Settings(codec: codec.capability.codec, payloadType: codec.payloadType, ssrc: remoteSSRC, rtx: rtx,
                                          channels: codec.capability.channels ?? 2, minimumDelay: settings.minimumDelay,
                                          maximumDelay: settings.maximumDelay,
                                          // A call ends by BYE or close, not by a quiet spell (a muted peer).
                                          limits: RTPReceiveLimits(silence: .seconds(24 * 3600))),
                transport: .given(transport))
        } catch {
            transport.close()
            throw .media("\(error)")
        }
    }

    /// Receives into `output` on the shared workers (the bundled transport's readiness wakes the
    /// receiver); a video pipeline is made when the first keyframe shows the picture size. Decoders come from the factory's registry.
    public func start(_ output: Output) throws(PeerConnectionError) {
        let graph = Graph()
        let frames = stream.add(to: graph)
        var decoderStatistics: (() -> DecoderStatistics?)?
        do {
            let registry = connection.factory.registry
            switch output {
            case .encoded(let attach):
                try attach(graph, frames)
            case .video(let attach):
                guard kind == .video else { throw PeerConnectionError.invalidState("an audio track has no pictures") }
                let decoder = VideoDecoderNode(try registry.videoDecoder(for: codec.capability.codec))
                decoderStatistics = { decoder.statistics }
                try attach(graph, graph.add(decoder, input: frames))
            case .audio(let attach):
                guard kind == .audio else { throw PeerConnectionError.invalidState("a video track has no samples") }
                let decoder = AudioDecoderNode(try registry.audioDecoder(for: codec.capability.codec),
                                               preferredOutput: [.audio(.exactly(.samples(.s16)))])
                decoderStatistics = { decoder.statistics }
                try attach(graph, graph.add(decoder, input: frames))
            }
        } catch let error as PeerConnectionError {
            throw error
        } catch {
            throw .media("remote \(kind.rawValue) track \(id): \(error)")
        }
        let started = running.withLock { running -> Bool in
            guard running.pipeline == nil else { return false }
            running = Running(pipeline: RunningPipeline(graph: graph),
                              decoder: decoderStatistics)
            return true
        }
        guard started else { throw .invalidState("remote track \(id) is started already") }
    }

    /// How the pipeline ended, if it has; nil while it runs or before `start`.
    public var pipelineResult: Result<GraphReport, any Error>? { running.withLock { $0.pipeline?.result } }

    /// Stops the pipeline first, then closes the stream: the session's last report and BYE are sent
    /// on this thread only once the pipeline has let go of the session (a race ThreadSanitizer
    /// showed).
    func stop() {
        running.withLock { $0.pipeline }?.stop()
        stream.close()
    }

    /// What the track's share of the bundle queued and dropped (a ring the pipeline drains).
    public var transportStatistics: BundledRTPTransport.Statistics? { (stream.transport as? BundledRTPTransport)?.statistics }

    public func stats() -> InboundRTPStreamStatistics {
        InboundRTPStreamStatistics(session: stream.statistics, decoder: running.withLock { $0.decoder?() }, latencies: nil)
    }
}

private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
