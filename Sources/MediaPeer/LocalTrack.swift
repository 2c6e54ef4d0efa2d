import Foundation
import MediaCodecs
import MediaCore
import MediaNegotiation
import MediaNodes
import Synchronization

/// A track this side sends (W3C `MediaStreamTrack`, local): a graph piece that makes its raw
/// pictures or samples, whatever they come from (a file, a looping file, a camera, a microphone, a
/// graph of the app's own). A peer connection puts the piece at the start of the track's sending
/// pipeline (source ─▶ enabled gate ─▶ encoder ─▶ RTP sender) when media can flow.
///
/// `isEnabled = false` mutes it as browsers do (webrtc-pc §5.2, mediacapture-main §4.3.1): the
/// pipeline keeps running and sends black pictures or silence, so the stream stays alive and the
/// remote decoder keeps its state; `true` sends the source again.
public final class LocalTrack: Sendable {
    /// The source as a graph piece: adds its nodes to the graph and gives their output.
    public enum Source: Sendable {
        case video(@Sendable (Graph) throws -> MediaCore.Port<VideoFrame>)
        case audio(@Sendable (Graph) throws -> MediaCore.Port<AudioFrame>)
        /// Frames encoded once for many connections; muting is the shared track's (`SharedEncoding`).
        case encoded(SharedEncoding)
    }

    /// The track id, the second value of `a=msid` (RFC 8830 §2).
    public let id: String
    public let source: Source
    private let enabled = Atomic<Bool>(true)

    public init(id: String = UUID().uuidString.lowercased(), _ source: Source) {
        self.id = id
        self.source = source
    }

    public var kind: MediaKind {
        switch source {
        case .video: .video
        case .audio: .audio
        case .encoded(let shared): shared.kind
        }
    }

    /// Whether the source's media is sent (true), or black pictures and silence in its place.
    public var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }

    /// A viewer's track of a shared encoding.
    public convenience init(shared: SharedEncoding, id: String = UUID().uuidString.lowercased()) {
        self.init(id: id, .encoded(shared))
    }

    /// A Y4M file played in real time, from its start again each time it ends when `loop` (a
    /// headless peer's camera, as libwebrtc's file capturer).
    public static func y4mFile(_ path: String, loop: Bool = true, id: String = UUID().uuidString.lowercased()) throws -> LocalTrack {
        _ = try Y4MFileSource(path: path)   // a missing or damaged file is named now, not when media starts
        return LocalTrack(id: id, .video { graph in
            if loop { return graph.add(try LoopingSource(pacing: .realTime) { try Y4MFileSource(path: path) }) }
            return graph.add(try Y4MFileSource(path: path, pacing: .realTime))
        })
    }

    /// A WAV file played in real time in 20 ms frames, looped when `loop` (a headless peer's microphone).
    public static func wavFile(_ path: String, loop: Bool = true, id: String = UUID().uuidString.lowercased()) throws -> LocalTrack {
        _ = try WAVFileSource(path: path)
        return LocalTrack(id: id, .audio { graph in
            if loop { return graph.add(try LoopingSource(pacing: .realTime) { try WAVFileSource(path: path) }) }
            return graph.add(try WAVFileSource(path: path, pacing: .realTime))
        })
    }

    /// The track's sending pipeline up to its encoded frames, in `graph`: source ─▶ enabled gate
    /// (muting, placing items on `timeline`) ─▶ `codec`'s encoder from `registry`, through the
    /// encoding stage every sending pipeline shares (`EncodingStage`; audio is converted to 48 kHz
    /// stereo first). A track that is encoded already throws.
    func addEncoding(to graph: Graph, codec: CodecName, registry: CodecRegistry, timeline: SendTimeline,
                     videoBitrate: Int, keyframeInterval: Int?, audioBitrate: Int) throws -> TrackEncoding {
        switch source {
        case .video(let make):
            let pictures = graph.add(EnabledGateNode<VideoFrame>(track: self, timeline: timeline), input: try make(graph))
            let (frames, encoder) = try EncodingStage.video(pictures, in: graph, codec: codec, registry: registry,
                                                            settings: VideoEncoderSettings(bitrate: videoBitrate,
                                                                                           keyframeInterval: keyframeInterval))
            return TrackEncoding(frames: frames, encoder: encoder, statistics: { encoder.statistics })
        case .audio(let make):
            let samples = graph.add(EnabledGateNode<AudioFrame>(track: self, timeline: timeline), input: try make(graph))
            let (packets, encoder) = try EncodingStage.audio(samples, format: nil, in: graph, codec: codec, registry: registry,
                                                             settings: AudioEncoderSettings(bitrate: audioBitrate))
            return TrackEncoding(frames: packets, encoder: encoder, statistics: { encoder.statistics })
        case .encoded:
            throw PeerConnectionError.media("track \(id) is encoded already")
        }
    }
}

/// A track's pipeline up to its encoded frames (`LocalTrack.addEncoding`).
struct TrackEncoding {
    let frames: MediaCore.Port<EncodedFrame>
    /// The encoder node, for keyframe requests and its output format.
    let encoder: any MediaNode
    let statistics: () -> EncoderStatistics
}

/// What a muted track sends in place of an item: the same format and time, black or silent.
protocol Blankable: MediaPayload {
    var pts: MediaTime { get set }
    /// How long the item lasts, or a usual frame's length when it does not say.
    var step: MediaTime { get }
    /// A blank item shaped as `self`, with storage from `pool`.
    func blanked(pool: BufferPool) -> Self
}

extension VideoFrame: Blankable {
    var step: MediaTime { duration ?? MediaTime(1, timebase: Rational(1, 30)) }

    func blanked(pool: BufferPool) -> VideoFrame {
        var frame = VideoFrame(pixelFormat: pixelFormat, width: width, height: height, pts: pts, duration: duration, pool: pool)
        frame.buffer.count = frame.layout.byteCount
        // Video-range black: Y 16, Cb and Cr 128 (BT.601).
        frame.buffer.storage.initializeMemory(as: UInt8.self, repeating: 128)
        frame.plane(0).initializeMemory(as: UInt8.self, repeating: 16)
        frame.pts = pts
        return frame
    }
}

extension AudioFrame: Blankable {
    var step: MediaTime { duration }

    func blanked(pool: BufferPool) -> AudioFrame {
        let frame = AudioFrame(sampleFormat: sampleFormat, sampleRate: sampleRate, channels: channels, sampleCount: sampleCount,
                               pts: pts, pool: pool)
        frame.buffer.count = byteCount
        frame.bytes.initializeMemory(as: UInt8.self, repeating: 0)
        return frame
    }
}

/// The media times a sender has sent, across the tracks it has sent (`replaceTrack`): each new
/// source is shifted to go on one frame after the last item of the one before, so that RTP
/// timestamps keep rising (RFC 3550 §5.1) and the receiver's jitter buffer keeps its timing.
final class SendTimeline: Sendable {
    private let last = Locked<MediaTime?>(nil)

    /// The shift that puts `first`, the first item of a new source, one `step` after the last item sent.
    func offset(forFirst first: MediaTime, step: MediaTime) -> MediaTime {
        last.withLock { last in last.map { $0 + step - first } ?? .zero(first.timebase) }
    }

    func sent(_ time: MediaTime) { last.withLock { $0 = time } }
}

/// Passes its input on while its track is enabled, and blank items of the same format and time
/// while it is not (`LocalTrack.isEnabled`); places the items on the sender's timeline.
final class EnabledGateNode<Item: Blankable>: MediaTransform {
    typealias Input = Item
    typealias Output = Item
    let name: String
    private let track: LocalTrack
    private let timeline: SendTimeline
    private let pool: BufferPool
    private var offset: MediaTime?
    private(set) var blanked = 0

    init(track: LocalTrack, timeline: SendTimeline) {
        self.track = track
        self.timeline = timeline
        name = "\(track.id)-enabled"
        pool = BufferPool(name: name)
    }

    var inputCaps: Caps { Item.self == VideoFrame.self ? Caps.anyVideo : Caps.anyAudio }
    func outputCaps(for input: MediaFormat) throws -> Caps { Caps(input) }
    func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {}

    func process(_ item: Item, into outbox: inout Outbox<Item>) throws {
        var out = track.isEnabled ? item : item.blanked(pool: pool)
        if !track.isEnabled { blanked += 1 }
        let offset = self.offset ?? timeline.offset(forFirst: item.pts, step: item.step)
        self.offset = offset
        if offset.value != 0 { out.pts = (item.pts + offset).rescaled(to: item.pts.timebase) }
        timeline.sent(out.pts)
        outbox.emit(out)
    }

    func finish(into outbox: inout Outbox<Item>) throws {}
}
