import ArgumentParser
import Dispatch
import Foundation
import Sluice
import SluiceServer

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve WebRTC peers over HTTP: WHEP viewers of named sources, WHIP publishers recorded to files.",
        discussion: """
            WHEP (POST /whep/NAME with an SDP offer) streams the source NAME to the
            viewer; each source is encoded once and shared by all its viewers, and a
            viewer's keyframe request (PLI) makes the shared encoder send one. WHIP
            (POST /whip/NAME) records what the publisher sends into --record-dir as
            NAME-<n>.ivf (VP8), .h264 (H.264) or .opus (Opus), one file per track,
            valid however the session ends (--record-format: decoded .y4m and .wav, or
            the call in one .webm, .mp4 or .mkv). DELETE on the Location of a 201 ends a
            session. Data channels a client opens are echoed; --chat also prints
            each text message as "message NAME: TEXT". Sources loop: .y4m, .ivf, .h264 (video), .wav, .opus (audio),
            or devices (v4l2:/dev/videoN, alsa:PCM); give the same NAME twice for
            video and audio. Stops on Ctrl-C, closing every session.

            Examples:
              sluice serve --source bunny=clip.y4m --source bunny=tone.wav
              sluice serve --source cam=v4l2:/dev/video0 --codec h264 --bitrate 2M
              sluice serve --record-dir recordings --port 8081
              sluice serve --source bunny=clip.ivf --ice-server stun:stun.example.org:3478
              sluice serve --source bunny=clip.y4m --relay-only \\
                --ice-server turn:127.0.0.1:3478 --ice-username u --ice-credential p
            """)

    @Option(name: .customLong("source"), help: "A WHEP source, NAME=INPUT (repeatable).")
    var sources: [String] = []

    @Option(name: .customLong("record-dir"), help: "Record WHIP publishers into this directory (made if missing).")
    var recordDirectory: String?

    @Option(name: .customLong("record-format"),
            help: "How WHIP publishers are recorded: frames (NAME-<n>.ivf|.h264|.opus, the default), decoded (.y4m, .wav), or one file with audio and video: webm (VP8), mp4 (H.264), mkv (either).")
    var recordFormat = "frames"

    @Option(help: "TCP port of the HTTP server.")
    var port = 8080

    @Option(help: "Address the HTTP server binds (and the peers' media sockets, unless it is 0.0.0.0 or ::).")
    var host = "127.0.0.1"

    @Option(help: "Video codec of the sources (vp8, h264).")
    var codec = "vp8"

    @Option(help: "Video bitrate of the sources, e.g. 1M.", transform: { text in
        guard let bps = TranscodeOptions.parseBitrate(text), bps > 0 else { throw ValidationError("bad bitrate '\(text)': use e.g. 800k, 2M") }
        return bps
    })
    var bitrate = 1_000_000

    @Option(name: .customLong("ice-server"), help: "A STUN or TURN server, stun:HOST[:PORT] or turn:HOST[:PORT] (repeatable).")
    var iceServers: [String] = []

    @Option(name: .customLong("ice-username"), help: "Username of the turn: servers.")
    var iceUsername: String?

    @Option(name: .customLong("ice-credential"), help: "Credential of the turn: servers.")
    var iceCredential: String?

    @Flag(name: .customLong("relay-only"), help: "Use only relayed (TURN) candidates.")
    var relayOnly = false

    @Flag(help: "Print each text message the sessions' data channels receive, as 'message NAME: TEXT'.")
    var chat = false

    func validate() throws {
        guard (1...65_535).contains(port) else { throw ValidationError("bad port \(port): use 1-65535") }
        guard !sources.isEmpty || recordDirectory != nil else {
            throw ValidationError("nothing to serve: give --source NAME=INPUT and/or --record-dir DIR")
        }
        guard ["vp8", "h264"].contains(codec.lowercased()) else { throw ValidationError("bad codec '\(codec)': use vp8 or h264") }
        guard RecordFormat(name: recordFormat) != nil else {
            throw ValidationError("bad --record-format '\(recordFormat)': use frames, decoded, webm, mp4 or mkv")
        }
        if relayOnly && !iceServers.contains(where: { $0.lowercased().hasPrefix("turn:") }) {
            throw ValidationError("--relay-only needs a --ice-server turn:HOST[:PORT]")
        }
    }

    func run() throws {
        let format = RecordFormat(name: recordFormat)!
        var peer = PeerConnection.Configuration(
            iceServers: iceServers.map { ICEServer(url: $0, username: iceUsername, credential: iceCredential) },
            iceTransportPolicy: relayOnly ? .relay : .all,
            includeLoopback: true)
        if host != "0.0.0.0", host != "::" { peer.localAddresses = [host.contains(":") ? "[\(host)]:0" : "\(host):0"] }
        // A bad server or address is named now, not at the first offer.
        _ = try PeerConnectionFactory().makePeerConnection(peer)
        let registry = CodecRegistry.builtIn
        var encodings: [String: [SharedEncoding]] = [:]
        for entry in sources {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                throw ValidationError("bad --source '\(entry)': use NAME=INPUT")
            }
            let name = String(entry[..<equals]), input = String(entry[entry.index(after: equals)...])
            let track = try LocalTrack.input(input, registry: registry)
            guard !(encodings[name] ?? []).contains(where: { $0.kind == track.kind }) else {
                throw ValidationError("source \(name) has a \(track.kind.rawValue) track already")
            }
            let codec: CodecName = track.kind == .audio ? .opus : (self.codec.lowercased() == "h264" ? .h264 : .vp8)
            encodings[name, default: []].append(try SharedEncoding(track: track, codec: codec, registry: registry,
                                                                   videoBitrate: bitrate))
        }
        if let recordDirectory { try FileManager.default.createDirectory(atPath: recordDirectory, withIntermediateDirectories: true) }
        let printText: @Sendable (String, String) -> Void = { name, text in
            print("message \(name): \(text)")
            fflush(nil)
        }
        var configuration = PeerSessionService.Configuration(sources: encodings, recordDirectory: recordDirectory, peer: peer,
                                                             onText: chat ? printText : nil)
        configuration.recordFormat = format
        let service = PeerSessionService(configuration: configuration, registry: registry, capabilities: registry.capabilities)
        let links = iceServers.map { ICEServerLink(url: $0, username: iceUsername, credential: iceCredential) }
        let server = WebRTCHTTPServer(handler: service, configuration: .init(host: host, port: port, iceServers: links))
        let names = encodings.keys.sorted()
        let host = self.host, recordDirectory = self.recordDirectory
        let recordedAs = switch format {
        case .frames: ".ivf|.h264|.opus"
        case .decoded: ".y4m|.wav"
        case .container(let container): "." + container.fileExtension
        }
        let done = DispatchSemaphore(value: 0)
        let failure = LockedBox<(any Error)?>(nil)
        Task.detached {
            do {
                try await server.run { port in
                    print("serving on http://\(host):\(port)")
                    for name in names { print("  WHEP http://\(host):\(port)/whep/\(name)") }
                    if let recordDirectory { print("  WHIP http://\(host):\(port)/whip/NAME -> \(recordDirectory)/NAME-<n>\(recordedAs)") }
                    fflush(nil)
                }
            } catch {
                failure.value = error
            }
            done.signal()
        }
        done.wait()
        for shared in encodings.values.joined() { shared.stop() }
        for path in service.recordedFiles { print("recorded \(path)") }
        if let error = failure.value { throw error }
    }
}

/// A value shared between the server's task and the command's thread.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
