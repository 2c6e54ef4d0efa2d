import Foundation
import MediaCodecs
import MediaContainers
import MediaCore
import MediaNegotiation
import MediaNodes
import MediaPeer

/// Answers WHEP and WHIP offers with peer connections: the `WebRTCSessionHandler` of `sluice serve`.
///
/// - WHEP (`POST /whep/NAME`): a viewer gets the tracks of the source NAME. Each source is encoded
///   once (`SharedEncoding`), whatever the number of viewers; each viewer's connection packetizes
///   and protects for itself, and its PLI asks the shared encoder for a keyframe.
/// - WHIP (`POST /whip/NAME`): what the publisher sends is recorded, as it came, into the
///   recording directory: `NAME-<n>.ivf` (VP8), `.h264` (H.264) or `.opus` (Opus), one file per
///   track, each valid however the session ends.
/// - Either way, data channels the client opens are echoed, every message sent back as it came,
///   and text messages handed to `onText`.
public final class PeerSessionService: WebRTCSessionHandler, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Each WHEP source: its shared encodings (a video and/or an audio track).
        public var sources: [String: [SharedEncoding]]
        /// Where WHIP sessions are recorded; nil refuses WHIP (404).
        public var recordDirectory: String?
        /// ICE servers, policy, local addresses of every session.
        public var peer: PeerConnection.Configuration
        /// How long an answer may wait for server-reflexive and relayed candidates (no trickle in
        /// WHIP/WHEP answers); only with ICE servers.
        public var gatheringTimeout: Duration
        /// Called with the session's NAME and each text message its data channels receive (`--chat`).
        public var onText: (@Sendable (_ name: String, _ text: String) -> Void)?
        /// How WHIP sessions are recorded.
        public var recordFormat = RecordFormat.frames

        public init(sources: [String: [SharedEncoding]] = [:], recordDirectory: String? = nil,
                    peer: PeerConnection.Configuration = PeerConnection.Configuration(), gatheringTimeout: Duration = .seconds(3),
                    onText: (@Sendable (_ name: String, _ text: String) -> Void)? = nil) {
            self.sources = sources
            self.recordDirectory = recordDirectory
            self.peer = peer
            self.gatheringTimeout = gatheringTimeout
            self.onText = onText
        }
    }

    public let configuration: Configuration
    /// What the sessions negotiate: a source's viewers are offered its encodings' codecs only.
    public let registry: CodecRegistry
    public let capabilities: [CodecCapability]
    private let recordings = Locked<[String: Int]>([:])
    private let recorded = Locked<[String]>([])

    public init(configuration: Configuration, registry: CodecRegistry, capabilities: [CodecCapability]) {
        self.configuration = configuration
        self.registry = registry
        self.capabilities = capabilities
    }

    /// The files WHIP sessions have recorded into so far.
    public var recordedFiles: [String] { recorded.withLock { $0 } }

    public func streamNames() async -> WebRTCStreamNames? {
        WebRTCStreamNames(egress: configuration.sources.keys.sorted(), ingest: configuration.recordDirectory == nil ? [] : ["*"])
    }

    public func startEgress(name: String, offer: String) async throws -> any WebRTCSession {
        guard let encodings = configuration.sources[name] else { throw WebRTCSessionError.unknownName(name) }
        let codecs = Set(encodings.map(\.codec)), kinds = Set(encodings.map(\.kind))
        // The source's codec for each kind it has; a kind it lacks is answered inactive, not rejected
        // (some clients, aiortc among them, cannot take a rejected section they offered).
        let factory = PeerConnectionFactory(registry: registry,
                                            capabilities: capabilities.filter { codecs.contains($0.codec) || !kinds.contains($0.kind) })
        var peer = configuration.peer
        peer.receive = []
        let connection = try factory.makePeerConnection(peer)
        do {
            for encoding in encodings { try connection.addTrack(LocalTrack(shared: encoding)) }
            let answer = try await answer(offer, on: connection)
            guard !connection.senders.allSatisfy({ $0.codec == nil }) else {
                throw WebRTCSessionError.unacceptableOffer("the offer takes none of \(codecs.map(\.rawValue).sorted()) for \(name)")
            }
            return PeerSession(connection: connection, answer: answer, echoing: name, onText: configuration.onText)
        } catch {
            connection.close()
            throw error
        }
    }

    public func startIngest(name: String, offer: String) async throws -> any WebRTCSession {
        guard let directory = configuration.recordDirectory else { throw WebRTCSessionError.unknownName(name) }
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw WebRTCSessionError.unknownName(name)
        }
        var peer = configuration.peer
        peer.receive = [.audio, .video]
        let connection = try PeerConnectionFactory(registry: registry, capabilities: capabilities).makePeerConnection(peer)
        do {
            let answer = try await answer(offer, on: connection)
            let base = nextRecording(name: name, in: directory)
            try record(connection.remoteTracks, at: base)

            return PeerSession(connection: connection, answer: answer, echoing: name, onText: configuration.onText)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Takes the offer and makes the answer, with every candidate when there are servers to ask.
    private func answer(_ offer: String, on connection: PeerConnection) async throws -> String {
        do {
            try connection.setRemoteDescription(offer, type: .offer)
            if !configuration.peer.iceServers.isEmpty {
                let deadline = ContinuousClock.now + configuration.gatheringTimeout
                while !connection.isGatheringComplete, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            }
            return try connection.createAnswer()
        } catch PeerConnectionError.malformedDescription(let why) {
            throw WebRTCSessionError.malformedOffer(why)
        } catch PeerConnectionError.unacceptableDescription(let why) {
            throw WebRTCSessionError.unacceptableOffer(why)
        } catch PeerConnectionError.transport(let error) {
            throw WebRTCSessionError.unacceptableOffer("\(error)")
        }
    }

    /// `DIR/NAME-<n>` for the files of one session (an extension per track), with the first n that no
    /// earlier session of this server or file in the directory has taken.
    private func nextRecording(name: String, in directory: String) -> String {
        let taken = Set(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .map { $0.split(separator: ".").first.map(String.init) ?? $0 })
        return recordings.withLock { counters in
            var n = counters[name, default: 0] + 1
            while taken.contains("\(name)-\(n)") { n += 1 }
            counters[name] = n
            return URL(fileURLWithPath: directory).appendingPathComponent("\(name)-\(n)").path
        }
    }

    /// Starts every remote track of a WHIP session into its recording at `base` (without extension).
    private func record(_ tracks: [RemoteTrack], at base: String) throws {
        if case .container(let format) = configuration.recordFormat {
            // One file for the call: each track's graph writes its own track of one writer, which
            // interleaves them by time.
            let path = base + "." + format.fileExtension
            let recording = try ContainerRecording(path: path, format: format, trackCount: tracks.count)
            for track in tracks {
                let kind: ContainerStream.Kind = track.kind == .audio ? .audio : .video
                try track.start(.encoded { graph, frames in recording.record(frames, kind: kind, in: graph) })
            }
            if !tracks.isEmpty { recorded.withLock { $0.append(path) } }
            return
        }
        for track in tracks {
            let codec = track.codec.capability.codec
            let path: String
            switch (configuration.recordFormat, track.kind) {
            case (.decoded, .video):
                path = base + ".y4m"
                try track.start(.video { graph, pictures in graph.add(Y4MFileSink(path: path), input: pictures) })
            case (.decoded, .audio):
                path = base + ".wav"
                try track.start(.audio { graph, samples in graph.add(WAVFileSink(path: path), input: samples) })
            default:
                path = base + "." + Self.fileExtension(codec)
                try track.start(.encoded { graph, frames in try Self.addRecorder(path: path, codec: codec, graph, frames) })
            }
            recorded.withLock { $0.append(path) }
        }
    }

    static func fileExtension(_ codec: CodecName) -> String {
        switch codec {
        case .h264: "h264"
        case .opus: "opus"
        default: "ivf"
        }
    }

    private static func addRecorder(path: String, codec: CodecName, _ graph: Graph, _ frames: MediaCore.Port<EncodedFrame>) throws {
        switch codec {
        case .h264: graph.add(AnnexBFileSink(path: path), input: frames)
        // RTP does not carry Opus's encoder delay (RFC 7587): libopus's usual 6.5 ms is assumed.
        case .opus: graph.add(OggOpusFileSink(path: path, preSkip: { 312 }), input: frames)
        default: graph.add(IVFFileSink(path: path, codecs: [codec]), input: frames)
        }
    }
}

/// One WHEP or WHIP session: its peer connection, closed with the session, and the echo of the data
/// channels the client opens.
final class PeerSession: WebRTCSession {
    let connection: PeerConnection
    let answer: String
    var supportsTrickleICE: Bool { true }

    init(connection: PeerConnection, answer: String, echoing name: String, onText: (@Sendable (String, String) -> Void)?) {
        self.connection = connection
        self.answer = answer
        // On the channels' own threads, before any message: nothing waits on Swift's cooperative pool.
        connection.onDataChannel = { channel in
            channel.onEvent = { [weak channel] event in
                guard case .message(let message) = event else { return }
                if case .text(let text) = message { onText?(name, text) }
                try? channel?.send(message)
            }
        }
    }

    /// Trickled candidates, or an ICE restart when the fragment brings new credentials (RFC 9725 §4.3.2):
    /// the client's offer again with them, answered, and the answer's credentials and candidates returned.
    func addRemoteCandidates(sdpFragment: String) async throws -> String? {
        let fragment = try TrickleFragment(parsing: sdpFragment)
        var restartAnswer: String?
        if let ufrag = fragment.ufrag, let offer = connection.remoteDescription, TrickleFragment.iceUfrags(in: offer).first != ufrag {
            do {
                try connection.setRemoteDescription(fragment.replacingCredentials(offer), type: .offer)
                restartAnswer = TrickleFragment.restartAnswer(from: try connection.createAnswer())
            } catch {
                throw WebRTCSessionError.malformedFragment("the ICE restart was refused: \(error)")
            }
        }
        for candidate in fragment.candidates { try? connection.addIceCandidate(candidate) }
        if fragment.endOfCandidates { try? connection.addIceCandidate("") }
        return restartAnswer
    }

    func close() async {
        connection.close()
    }
}

/// How `sluice serve` records a WHIP session.
public enum RecordFormat: Sendable, Hashable {
    /// Each track in its codec's own file: `.ivf` (VP8), `.h264`, `.opus`.
    case frames
    /// Each track decoded: `.y4m` pictures, `.wav` samples.
    case decoded
    /// Audio and video of the call in one container file (`.webm` takes VP8, `.mp4` H.264, `.mkv` either).
    case container(ContainerFormat)

    /// `frames`, `decoded`, `webm`, `mkv` or `mp4`, as `--record-format` takes them.
    public init?(name: String) {
        switch name.lowercased() {
        case "frames": self = .frames
        case "decoded": self = .decoded
        case "webm": self = .container(.webm)
        case "mkv", "matroska": self = .container(.matroska)
        case "mp4": self = .container(.mp4)
        default: return nil
        }
    }
}
