// The WebRTC peer beyond its media path: STUN messages, call setup between two peer connections,
// and how many viewers one shared encoding keeps in real time (sluice serve's WHEP).
import BenchLoops
import Foundation
import Sluice
import Synchronization

enum PeerConnectionScenarios {
    static let all: [any Scenario] = [STUNScenario(), CallSetupScenario(), SharedViewersScenario(), DataChannelThroughputScenario()]
}

/// "stun.binding": an ICE connectivity check as the agent sends it (USERNAME, PRIORITY,
/// ICE-CONTROLLING, USE-CANDIDATE, MESSAGE-INTEGRITY, FINGERPRINT) made, then parsed and checked.
struct STUNScenario: Scenario {
    let name = "stun.binding"
    let summary = "ICE binding requests (integrity + fingerprint) serialized, and parsed with both checked, per second"
    let inDefaultSet = false

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let key = STUNIntegrityKey.shortTerm(password: "a-remote-ice-password-of-22")
        let request = STUNMessage(method: .binding, messageClass: .request, attributes: [
            .username("remoteufrag:localufrag"), .priority(0x6E00_1EFF), .iceControlling(0x1234_5678_9ABC_DEF0), .useCandidate,
        ])
        func measure(_ body: () throws -> Void) rethrows -> Double {
            var done = 0
            let begin = ProcessClock.now()
            while ProcessClock.now() - begin < size.seconds / 2 {
                for _ in 0..<1000 { try body() }
                done += 1000
            }
            return Double(done) / (ProcessClock.now() - begin)
        }
        var bytes: [UInt8] = []
        let serialized = measure { bytes = request.serialized(integrity: key, fingerprint: true) }
        let parsed = try measure { _ = try STUNMessage(parsing: bytes, key: key) }
        return ScenarioResult(scenario: name,
                              metrics: [Metric("serialized", serialized, unit: "messages/s"), Metric("parsed", parsed, unit: "messages/s")],
                              notes: ["\(bytes.count)-byte binding request; parse verifies MESSAGE-INTEGRITY (HMAC-SHA1) and FINGERPRINT"],
                              seconds: ProcessClock.now() - start)
    }
}

/// Two peer connections on 127.0.0.1 with a video track each way offered.
private func connectedPair(track: LocalTrack?) throws -> (offerer: PeerConnection, answerer: PeerConnection) {
    let factory = PeerConnectionFactory()
    let configuration = PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true, receive: [.video])
    let offerer = try factory.makePeerConnection(configuration), answerer = try factory.makePeerConnection(configuration)
    if let track { try offerer.addTrack(track) }
    try answerer.setRemoteDescription(try offerer.createOffer(), type: .offer)
    try offerer.setRemoteDescription(try answerer.createAnswer(), type: .answer)
    return (offerer, answerer)
}

/// Waits up to `seconds` for `condition`, polling every millisecond; the time it took, or nil.
private func timeUntil(seconds: Double, _ condition: () -> Bool) -> Double? {
    let begin = ProcessClock.now()
    while ProcessClock.now() - begin < seconds {
        if condition() { return ProcessClock.now() - begin }
        usleep(1000)
    }
    return nil
}

/// A sink that counts what it is given, readable from another thread.
private final class Counter<Item: MediaPayload>: MediaSink, @unchecked Sendable {
    let name = "counter"
    let count = Atomic<Int>(0)
    var inputCaps: Caps { [.video(.any), .audio(.any)] }
    func start(input: MediaFormat, context: NodeContext) throws {}
    func consume(_ item: Item) throws { count.add(1, ordering: .relaxed) }
    func finish() throws {}
}

/// The sample clip's pictures at `width`x`height`, looped and paced in real time at 25 fps, as a track.
private func sampleTrack(width: Int, height: Int) throws -> LocalTrack {
    let scaler = try VideoScaler(width: width, height: height, filter: .box)
    let pictures = try Sample.pictures.map { try scaler.scale($0) }
    let format = MediaFormat.video(VideoFormat(encoding: .pixels(.i420), width: width, height: height, frameRate: Sample.frameRate))
    return LocalTrack(id: "sample", .video { graph in
        graph.add(try LoopingSource(pacing: .realTime) { PreloadedSource(pictures[...], format: format) })
    })
}

/// "peer.setup": from the offer made to connected (ICE + DTLS-SRTP), and to the first picture
/// decoded by the answerer, between two peer connections over 127.0.0.1; one call after another.
struct CallSetupScenario: Scenario {
    let name = "peer.setup"
    let summary = "peer connection call setup over 127.0.0.1: offer to connected, and to the first decoded picture (VP8 640x360)"
    let inDefaultSet = false

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let calls = size.count(default: 10)
        let track = try sampleTrack(width: 640, height: 360)
        var connected: [Double] = [], firstPicture: [Double] = []
        for _ in 0..<calls {
            let begin = ProcessClock.now()
            let (offerer, answerer) = try connectedPair(track: track)
            let pictures = Counter<VideoFrame>()
            try answerer.remoteTracks.first?.start(.video { graph, port in graph.add(pictures, input: port) })
            if timeUntil(seconds: 10, { offerer.connectionState == .connected && answerer.connectionState == .connected }) != nil {
                connected.append((ProcessClock.now() - begin) * 1000)
            }
            if timeUntil(seconds: 10, { pictures.count.load(ordering: .relaxed) > 0 }) != nil {
                firstPicture.append((ProcessClock.now() - begin) * 1000)
            }
            offerer.close()
            answerer.close()
        }
        let latencies = [StageLatency(stage: "offer→connected", milliseconds: connected),
                         StageLatency(stage: "offer→first picture", milliseconds: firstPicture)]
        return ScenarioResult(scenario: name,
                              metrics: [Metric("connected p50", latencies[0].p50, unit: "ms", higherIsBetter: false),
                                        Metric("first picture p50", latencies[1].p50, unit: "ms", higherIsBetter: false)],
                              latencies: latencies,
                              notes: ["\(connected.count) of \(calls) calls connected, \(firstPicture.count) decoded a picture; sockets, certificate and signalling included"],
                              seconds: ProcessClock.now() - start)
    }
}

/// "serve.viewers.720p": viewers of one shared VP8 encoding of a 1280x720 25 fps source (sluice
/// serve's WHEP without HTTP): each a peer connection over 127.0.0.1 counting the frames it
/// receives. Viewers are added in steps; the figure is the most that each still got at least 95% of
/// the source's frame rate.
struct SharedViewersScenario: Scenario {
    let name = "serve.viewers.720p"
    let summary = "WHEP viewers of one shared 720p VP8 encoding kept in real time (each ≥ 95% of 25 fps) over 127.0.0.1"
    let inDefaultSet = false

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let registry = CodecRegistry.builtIn
        let shared = try SharedEncoding(track: try sampleTrack(width: 1280, height: 720), codec: .vp8, registry: registry,
                                        videoBitrate: 2_000_000)
        defer { shared.stop() }
        let factory = PeerConnectionFactory(registry: registry, capabilities: registry.capabilities.filter { $0.codec == .vp8 })
        let configuration = PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true, receive: [.video])
        var viewers: [(PeerConnection, PeerConnection, Counter<EncodedFrame>)] = []
        defer { for (server, client, _) in viewers { server.close(); client.close() } }
        var kept = 0
        var notes: [String] = []
        let window = max(2.0, size.seconds / 2)
        for target in [1, 2, 4, 8, 16, 32, 64, 96, 128, 160, 192, 256] {
            while viewers.count < target {
                let server = try factory.makePeerConnection(PeerConnection.Configuration(
                    localAddresses: ["127.0.0.1:0"], includeLoopback: true, receive: []))
                try server.addTrack(LocalTrack(shared: shared))
                let client = try factory.makePeerConnection(configuration)
                try server.setRemoteDescription(try client.createOffer(), type: .offer)
                try client.setRemoteDescription(try server.createAnswer(), type: .answer)
                let frames = Counter<EncodedFrame>()
                try client.remoteTracks.first?.start(.encoded { graph, port in graph.add(frames, input: port) })
                viewers.append((server, client, frames))
            }
            _ = timeUntil(seconds: 5) { viewers.allSatisfy { $0.2.count.load(ordering: .relaxed) > 0 } }
            let before = viewers.map { $0.2.count.load(ordering: .relaxed) }
            Thread.sleep(forTimeInterval: window)
            let rates = zip(viewers, before).map { Double($0.0.2.count.load(ordering: .relaxed) - $0.1) / window }
            let slowest = rates.min() ?? 0
            notes.append("\(target) viewers: slowest \(String(format: "%.1f", slowest)) fps, mean \(String(format: "%.1f", rates.reduce(0, +) / Double(rates.count))) fps")
            guard slowest >= 0.95 * Sample.frameRate.doubleValue else { break }
            kept = target
        }
        notes.append("one encoder: \(shared.encoderStatistics.framesEncoded) pictures encoded in all; viewers' clients in the same process")
        return ScenarioResult(scenario: name, metrics: [Metric("viewers in real time", Double(kept), unit: "viewers")], notes: notes,
                              seconds: ProcessClock.now() - start)
    }
}
