/// Calls between Sluice's `PeerConnection` and real peers (aiortc, headless Chromium) over
/// 127.0.0.1 with media both ways: Sluice sends a Y4M file (ffmpeg's testsrc2) and a tone, the peer
/// sends its own; what the peer recorded is compared with the source by PSNR (tools/peers/psnr.py),
/// what Sluice received is decoded and counted. Bounded like the other interop calls.
import Foundation
import MediaICE
import MediaCore
import MediaPeer
import Sluice
import Testing
import TestSupport

extension InteropTests {
    /// A 640x480 30 fps testsrc2 clip (2 s) and a 48 kHz stereo tone, made by ffmpeg in `folder`.
    static func peerMedia(in folder: URL) throws -> (video: String, audio: String) {
        let video = folder.appendingPathComponent("testsrc2.y4m").path, audio = folder.appendingPathComponent("tone.wav").path
        _ = try TestSupport.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30:duration=2", "-pix_fmt", "yuv420p", video])
        _ = try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2", "-ac", "2", audio])
        return (video, audio)
    }

    /// A Sluice peer connection on 127.0.0.1 sending `media`, with collectors started on its remote tracks.
    final class SluicePeer {
        let connection: PeerConnection
        let pictures = TrackCollector<VideoFrame>()
        let samples = TrackCollector<AudioFrame>()

        init(media: (video: String, audio: String), preferring codecs: [CodecName] = []) throws {
            connection = try PeerConnectionFactory(preferredCodecs: codecs)
                .makePeerConnection(.init(localAddresses: ["127.0.0.1:0"], includeLoopback: true))
            try connection.addTrack(try LocalTrack.y4mFile(media.video))
            try connection.addTrack(try LocalTrack.wavFile(media.audio))
        }

        /// Starts every remote track into the collectors.
        func receive() throws {
            for track in connection.remoteTracks {
                switch track.kind {
                case .video: try track.start(.video { [pictures] graph, port in graph.add(pictures, input: port) })
                case .audio: try track.start(.audio { [samples] graph, port in graph.add(samples, input: port) })
                }
            }
        }
    }

    /// psnr.py's JSON for `received` against `source`.
    static func psnr(source: String, received: String) throws -> [String: Any]? {
        let result = try TestSupport.run(PeerTools.python, [PeerTools.directory.appendingPathComponent("psnr.py").path,
                                                            source, received], timeout: 60)
        let line = result.stdout.split(separator: UInt8(ascii: "\n")).last.map { Data($0) } ?? Data()
        return try JSONSerialization.jsonObject(with: line) as? [String: Any]
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(2)))
    func peerConnectionOffersAiortcAnswersMediaBothWays() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let recorded = folder.appendingPathComponent("aiortc-received.y4m").path
            let peer = try PeerProcess(script: "aiortc_peer.py",
                                       arguments: ["answer", "--send-video", "pattern", "--send-audio", "tone", "--codec", "vp8",
                                                   "--record-video", recorded, "--min-frames", "30", "--timeout", "25",
                                                   "--duration", "4", "--linger", "1"])
            defer { peer.kill() }
            let sluice = try SluicePeer(media: media)
            defer { sluice.connection.close() }
            let started = Date()
            peer.writeSDP(try sluice.connection.createOffer())
            try sluice.connection.setRemoteDescription(try peer.readSDP(seconds: 20), type: .answer)
            try sluice.receive()
            #expect(eventually(seconds: 15) { sluice.connection.connectionState == .connected },
                    "Sluice \(sluice.connection.connectionState); aiortc:\n\(peer.stderrTail())")
            let connected = Date().timeIntervalSince(started)
            let result = peer.result(seconds: 30)
            #expect(Self.reachedConnected(result) && result?["ok"] as? Bool == true, "\(Self.describe(result))")
            let stats = sluice.connection.stats()
            print("interop PeerConnection offers, aiortc answers: connected after \(String(format: "%.3f", connected)) s; Sluice decoded \(sluice.pictures.count) pictures and \(sluice.samples.count) audio frames; aiortc received \(String(describing: result?["received"])); Sluice sent \(stats.outbound.map { "\($0.ssrc): \($0.packetsSent) packets" })")
            // What arrived may still be queued for the decoder on a loaded machine: wait for it.
            #expect(eventually(seconds: 10) { sluice.pictures.count >= 30 && sluice.samples.count >= 50 },
                    "pictures \(sluice.pictures.count), audio frames \(sluice.samples.count)")
            let received = (result?["received"] as? [[String: Any]]) ?? []
            #expect(received.contains { $0["kind"] as? String == "video" && ($0["frames"] as? Int ?? 0) >= 30 }, "\(received)")
            #expect(received.contains { $0["kind"] as? String == "audio" && ($0["frames"] as? Int ?? 0) >= 50 }, "\(received)")
            let quality = try Self.psnr(source: media.video, received: recorded)
            print("interop PeerConnection → aiortc VP8 PSNR: \(String(describing: quality))")
            #expect((quality?["psnr_y_mean"] as? Double ?? 0) > 30, "\(String(describing: quality))")
        }
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(2)))
    func aiortcOffersH264PeerConnectionAnswersMediaBothWays() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let recorded = folder.appendingPathComponent("aiortc-received.y4m").path
            let peer = try PeerProcess(script: "aiortc_peer.py",
                                       arguments: ["offer", "--send-video", "pattern", "--send-audio", "tone", "--codec", "h264",
                                                   "--recv", "video,audio", "--record-video", recorded, "--min-frames", "30",
                                                   "--timeout", "25", "--duration", "4", "--linger", "1"])
            defer { peer.kill() }
            let sluice = try SluicePeer(media: media, preferring: [.h264])
            defer { sluice.connection.close() }
            try sluice.connection.setRemoteDescription(try peer.readSDP(seconds: 20), type: .offer)
            peer.writeSDP(try sluice.connection.createAnswer())
            try sluice.receive()
            #expect(sluice.connection.senders.first { $0.kind == .video }?.codec?.capability.codec == .h264)
            let result = peer.result(seconds: 30)
            #expect(Self.reachedConnected(result) && result?["ok"] as? Bool == true, "\(Self.describe(result))")
            let inbound = sluice.connection.stats().inbound.map { "ssrc \(String(describing: $0.ssrc)): \($0.packetsReceived) packets, \($0.packetsLost) lost, \($0.framesReceived) frames received, \($0.framesDecoded) decoded, \($0.framesDropped) dropped, \($0.pliCount) PLI" }
            let all = sluice.connection.stats()
            print("interop aiortc offers H.264: demultiplexer \(all.demultiplexer), transport \(all.transport), tracks \(sluice.connection.remoteTracks.map { String(describing: $0.transportStatistics) })")
            print("interop aiortc offers H.264, PeerConnection answers: Sluice decoded \(sluice.pictures.count) pictures and \(sluice.samples.count) audio frames (\(inbound)); aiortc received \(String(describing: result?["received"])), sent \(String(describing: result?["sent"])) in \(String(describing: result?["rtp_packets_sent"])) RTP packets")
            // What arrived may still be queued for the decoder on a loaded machine: wait for it.
            #expect(eventually(seconds: 10) { sluice.pictures.count >= 30 && sluice.samples.count >= 50 },
                    "pictures \(sluice.pictures.count), audio frames \(sluice.samples.count)")
            let quality = try Self.psnr(source: media.video, received: recorded)
            print("interop PeerConnection → aiortc H.264 PSNR: \(String(describing: quality))")
            #expect((quality?["psnr_y_mean"] as? Double ?? 0) > 30, "\(String(describing: quality))")
        }
    }

    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(2)))
    func peerConnectionOffersChromiumAnswersMediaBothWays() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let peer = try PeerProcess(script: "chromium_peer.py",
                                       arguments: ["answer", "--video", "sendrecv", "--audio", "sendrecv", "--codec", "vp8",
                                                   "--min-frames", "20", "--timeout", "30", "--duration", "4", "--linger", "1"])
            defer { peer.kill() }
            let sluice = try SluicePeer(media: media)
            defer { sluice.connection.close() }
            peer.writeSDP(try sluice.connection.createOffer())
            try sluice.connection.setRemoteDescription(try peer.readSDP(seconds: 25), type: .answer)
            try sluice.receive()
            let result = peer.result(seconds: 40)
            #expect(Self.reachedConnected(result), "\(Self.describe(result))")
            let inbound = (result?["inbound"] as? [[String: Any]]) ?? []
            print("interop PeerConnection offers, Chromium answers: Chromium inbound \(inbound); Sluice decoded \(sluice.pictures.count) pictures, \(sluice.samples.count) audio frames")
            let video = inbound.first { $0["kind"] as? String == "video" }
            #expect((video?["frames_decoded"] as? Int ?? 0) >= 20, "\(inbound)")
            #expect(video?["frame_width"] as? Int == 640 && video?["frame_height"] as? Int == 480, "\(inbound)")
            #expect(inbound.contains { $0["kind"] as? String == "audio" && ($0["packets_received"] as? Int ?? 0) >= 20 }, "\(inbound)")
            #expect(eventually(seconds: 10) { sluice.pictures.count >= 10 }, "Sluice decoded \(sluice.pictures.count) of Chromium's pictures")
        }
    }
}

extension InteropTests {
    /// Sluice's peer connection and the reference peer both relay-only through one coturn: media both
    /// ways through the relay, the selected pair relay to relay.
    func relayOnlyCall(script: String, arguments extra: [String]) throws {
        try CoturnServer.with { server in
            try TestSupport.withTemporaryDirectory { folder in
                let media = try Self.peerMedia(in: folder)
                let turn = "turn:\(server.address.ip):\(server.address.port)?transport=udp"
                let peer = try PeerProcess(script: script,
                                           arguments: ["answer", "--relay-only", "--ice-server", turn, "--ice-username", "sluice",
                                                       "--ice-credential", "secret", "--min-frames", "20", "--timeout", "30",
                                                       "--duration", "3", "--linger", "1"] + extra)
                defer { peer.kill() }
                let connection = try PeerConnectionFactory().makePeerConnection(
                    .init(iceServers: [ICEServer(url: turn, username: "sluice", credential: "secret")], iceTransportPolicy: .relay,
                          localAddresses: ["127.0.0.1:0"], includeLoopback: true))
                defer { connection.close() }
                try connection.addTrack(try LocalTrack.y4mFile(media.video))
                try connection.addTrack(try LocalTrack.wavFile(media.audio))
                _ = try connection.createOffer()
                #expect(eventually(seconds: 5) { connection.isGatheringComplete })
                // The offer again, now with the relayed candidate (no trickle to the peer's stdin).
                let offer = try connection.createOffer()
                #expect(offer.contains(" typ relay"), "offer:\n\(offer)")
                #expect(!offer.contains(" typ host"), "a relay-only offer leaks a host address:\n\(offer)")
                peer.writeSDP(offer)
                try connection.setRemoteDescription(try peer.readSDP(seconds: 25), type: .answer)
                let pictures = TrackCollector<VideoFrame>()
                for track in connection.remoteTracks where track.kind == .video {
                    try track.start(.video { graph, port in graph.add(pictures, input: port) })
                }
                let result = peer.result(seconds: 40)
                let stats = connection.stats()
                print("interop relay-only PeerConnection ↔ \(script): pair \(String(describing: stats.selectedPair)), Sluice decoded \(pictures.count) pictures; peer: \(String(describing: result?["received"] ?? result?["inbound"]))")
                #expect(Self.reachedConnected(result), "\(Self.describe(result))")
                #expect(stats.selectedPair?.hasPrefix("relay ") == true && stats.selectedPair?.contains("-> relay ") == true,
                        "\(String(describing: stats.selectedPair))")
                #expect(eventually(seconds: 10) { pictures.count >= 20 }, "Sluice decoded \(pictures.count) pictures through the relay")
                #expect(result?["ok"] as? Bool == true, "\(Self.describe(result))")
            }
        }
    }

    @Test(.enabled(if: aiortcMissing == nil && CoturnServer.executable != nil, "needs tools/peers/.venv and coturn"),
          .timeLimit(.minutes(2)))
    func relayOnlyPeerConnectionAndAiortcThroughCoturn() throws {
        try relayOnlyCall(script: "aiortc_peer.py", arguments: ["--send-video", "pattern", "--send-audio", "tone", "--codec", "vp8"])
    }

    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil && CoturnServer.executable != nil,
                   "needs Chromium, chromedriver, tools/peers/.venv and coturn"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(2)))
    func relayOnlyPeerConnectionAndChromiumThroughCoturn() throws {
        try relayOnlyCall(script: "chromium_peer.py", arguments: ["--video", "sendrecv", "--audio", "sendrecv", "--codec", "vp8"])
    }
}

extension InteropTests {
    /// aiortc killed mid-call: no close, no BYE, nothing more on the wire. Consent freshness (RFC 7675
    /// §5.1, a 4 s timeout here) fails the connection by name, and the media stops.
    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(1)))
    func aPeerThatVanishesFailsThePeerConnectionByConsentLoss() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let peer = try PeerProcess(script: "aiortc_peer.py",
                                       arguments: ["answer", "--send-video", "pattern", "--codec", "vp8", "--timeout", "40",
                                                   "--duration", "30"])
            defer { peer.kill() }
            var ice = ICEConfiguration()
            ice.consentTimeout = .seconds(4)
            ice.consentInterval = .seconds(1)
            let connection = try PeerConnectionFactory().makePeerConnection(
                .init(localAddresses: ["127.0.0.1:0"], includeLoopback: true, ice: ice))
            defer { connection.close() }
            try connection.addTrack(try LocalTrack.y4mFile(media.video))
            peer.writeSDP(try connection.createOffer())
            try connection.setRemoteDescription(try peer.readSDP(seconds: 20), type: .answer)
            #expect(eventually(seconds: 15) { connection.connectionState == .connected }, "\(connection.connectionState)")
            #expect(eventually(seconds: 10) { (connection.stats().outbound.first?.packetsSent ?? 0) > 30 })
            peer.vanish()
            let vanished = Date()
            #expect(eventually(seconds: 15) { connection.connectionState == .failed }, "\(connection.connectionState)")
            let after = Date().timeIntervalSince(vanished)
            print("interop aiortc vanished: Sluice's peer connection failed after \(String(format: "%.1f", after)) s, \(String(describing: connection.failure))")
            #expect(after >= 3 && after < 10, "failed after \(after) s with a 4 s consent timeout")
            #expect(connection.failure == .consentLost, "\(String(describing: connection.failure))")
            // Media stopped: sends are refused from then on (RFC 7675 §5.1).
            let refused = connection.stats().transport.sendsRefused
            #expect(eventually(seconds: 3) { connection.stats().transport.sendsRefused > refused })
        }
    }
}

/// What a data channel echoed, readable from the test's thread.
final class Echoed: Sendable {
    let texts = Locked<[String]>([])
}

extension InteropTests {
    /// The peer offers a data channel with its media and pings on it every 0.5 s until five echoes
    /// came back (`--min-messages`: a count, not a time, so that a slow start under load only makes
    /// the call longer); Sluice's peer connection answers, takes the channel (`Event.dataChannel`)
    /// and echoes every message.
    func echoDataChannel(script: String, arguments extra: [String]) throws {
        let peer = try PeerProcess(script: script,
                                   arguments: ["offer", "--datachannel", "--min-messages", "5", "--timeout", "30", "--duration", "4",
                                               "--linger", "1"] + extra)
        defer { peer.kill() }
        let connection = try PeerConnectionFactory().makePeerConnection(.init(localAddresses: ["127.0.0.1:0"], includeLoopback: true))
        defer { connection.close() }
        let echoed = Echoed()
        try connection.setRemoteDescription(try peer.readSDP(seconds: 25), type: .offer)
        peer.writeSDP(try connection.createAnswer())
        // The peer's channel (Event.dataChannel, here read from `dataChannels`): every message echoed.
        #expect(eventually(seconds: 20) { !connection.dataChannels.isEmpty })
        if let channel = connection.dataChannels.first {
            channel.onEvent = { [weak channel] event in
                guard case .message(let message) = event else { return }
                if case .text(let text) = message { echoed.texts.withLock { $0.append(text) } }
                try? channel?.send(message)
            }
        }
        let result = peer.result(seconds: 40)
        let received = result?["datachannel_messages_received"] as? Int ?? 0
        let channel = connection.dataChannels.first
        print("interop \(script) data channel: \(channel.map { "\($0.label) \($0.readyState)" } ?? "none"), Sluice echoed \(echoed.texts.withLock { $0.count }) messages (first \(echoed.texts.withLock { $0.first ?? "" })), the peer got \(received) back; stats \(connection.stats().dataChannels)")
        #expect(Self.reachedConnected(result), "\(Self.describe(result))")
        #expect(channel?.label == "sluice")
        #expect(echoed.texts.withLock { $0.count } >= 5 && echoed.texts.withLock { $0.allSatisfy { $0.hasPrefix("ping") } })
        #expect(received >= 5, "\(Self.describe(result))")
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(1)))
    func aiortcOpensADataChannelThatSluiceEchoes() throws {
        try echoDataChannel(script: "aiortc_peer.py", arguments: ["--send-video", "pattern", "--codec", "vp8"])
    }

    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(1)))
    func chromiumOpensADataChannelThatSluiceEchoes() throws {
        try echoDataChannel(script: "chromium_peer.py", arguments: ["--video", "send", "--audio", "send", "--codec", "vp8"])
    }
}

extension InteropTests {
    /// Sluice opens the channel (its offer has only a data channel section) and sends 1 MiB in 64 KiB
    /// binary messages, holding back while more than 256 KiB is buffered until the channel says the
    /// queue drained (`bufferedAmountLow`); the peer echoes every message, and what comes back is the
    /// same 1 MiB, in order.
    func megabyteThroughAnEchoingPeer(script: String, arguments extra: [String] = []) throws {
        let peer = try PeerProcess(script: script,
                                   arguments: ["answer", "--dc-echo", "--timeout", "40", "--duration", "4", "--linger", "1"] + extra)
        defer { peer.kill() }
        let connection = try PeerConnectionFactory().makePeerConnection(
            .init(localAddresses: ["127.0.0.1:0"], includeLoopback: true, receive: []))
        defer { connection.close() }
        let channel = try connection.createDataChannel("bulk")
        let record = PeerConnectionTests.ChannelRecord(channel)
        peer.writeSDP(try connection.createOffer())
        try connection.setRemoteDescription(try peer.readSDP(seconds: 30), type: .answer)
        #expect(eventually(seconds: 15) { record.saw(.open) }, "\(record.events.withLock { $0 })")
        var generator = SplitMix64(seed: 0x5EED)
        let payload = (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let chunk = 64 * 1024, highWater = 256 * 1024
        channel.setBufferedAmountLowThreshold(chunk)
        let started = Date()
        var waits = 0
        for offset in stride(from: 0, to: payload.count, by: chunk) {
            if channel.bufferedAmount > highWater {
                let lows = record.events.withLock { $0.filter { $0 == .bufferedAmountLow }.count }
                #expect(eventually(seconds: 10) { record.events.withLock { $0.filter { $0 == .bufferedAmountLow }.count } > lows },
                        "offset \(offset): buffered \(channel.bufferedAmount), stats \(String(describing: channel.stats())), echoed \(record.messages.count) messages, transport \(connection.stats().transport); peer:\n\(peer.stderrTail(1500))")
                waits += 1
            }
            try channel.send(Array(payload[offset..<(offset + chunk)]))
        }
        func echoedBytes() -> [UInt8] {
            record.messages.flatMap { message -> [UInt8] in if case .binary(let bytes) = message { bytes } else { [] } }
        }
        #expect(eventually(seconds: 20) { echoedBytes().count >= payload.count }, "\(echoedBytes().count) bytes echoed")
        let seconds = Date().timeIntervalSince(started)
        let echoed = echoedBytes()
        print("interop \(script): 1 MiB in 64 KiB messages there and back in \(String(format: "%.2f", seconds)) s (\(String(format: "%.1f", 2.0 / seconds)) MB/s both ways), \(waits) waits for bufferedAmountLow")
        #expect(echoed == payload, "the echo differs (\(echoed.count) bytes)")
        let result = peer.result(seconds: 30)
        #expect((result?["datachannel_bytes_received"] as? Int ?? 0) >= payload.count, "\(Self.describe(result))")
        #expect(waits > 0, "the sender never had to wait: back-pressure was not exercised")
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(1)))
    func aMegabyteToAiortcAndBackWithBackPressure() throws {
        try megabyteThroughAnEchoingPeer(script: "aiortc_peer.py")
    }

    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(1)))
    func aMegabyteToChromiumAndBackWithBackPressure() throws {
        try megabyteThroughAnEchoingPeer(script: "chromium_peer.py", arguments: ["--expect", "none"])
    }
}

/// The channels `--dc-modes` makes a test peer open (tools/peers), one per reliability mode, with the
/// options Sluice must read from their DCEP opens (RFC 8832 §5.1).
let reliabilityModes: [(label: String, reliability: DataChannelReliability)] = [
    ("reliable", .reliable),
    ("unordered", DataChannelReliability(ordered: false)),
    ("rexmit0", DataChannelReliability(ordered: false, limit: .maxRetransmits(0))),
    ("lifetime500", DataChannelReliability(limit: .maxPacketLifetime(milliseconds: 500))),
]

extension InteropTests {
    /// The peer opens one channel per reliability mode and greets on each with a text and a 1 KiB
    /// binary message; Sluice's answer takes all four with the options the peer gave them, and echoes.
    /// The peer then closes "unordered" once its binary came back: Sluice's channel closes too.
    func peerOpensAChannelPerReliabilityMode(script: String) throws {
        let peer = try PeerProcess(script: script,
                                   arguments: ["offer", "--dc-modes", "--timeout", "30", "--duration", "3", "--linger", "1"])
        defer { peer.kill() }
        let connection = try PeerConnectionFactory().makePeerConnection(.init(localAddresses: ["127.0.0.1:0"], includeLoopback: true))
        defer { connection.close() }
        let echoes = Locked<[String: Int]>([:])
        connection.onDataChannel = { channel in
            channel.onEvent = { [weak channel] event in
                guard case .message(let message) = event, let channel else { return }
                echoes.withLock { $0[channel.label, default: 0] += 1 }
                try? channel.send(message)
            }
        }
        try connection.setRemoteDescription(try peer.readSDP(seconds: 25), type: .offer)
        peer.writeSDP(try connection.createAnswer())
        #expect(eventually(seconds: 20) { echoes.withLock { $0.values.reduce(0, +) } >= 2 * reliabilityModes.count },
                "echoed \(echoes.withLock { $0 })")
        let channels = Dictionary(uniqueKeysWithValues: connection.dataChannels.map { ($0.label, $0) })
        #expect(eventually(seconds: 10) { channels["unordered"]?.readyState == .closed }, "closed by the peer")
        #expect(channels["reliable"]?.readyState == .open)
        let result = peer.result(seconds: 40)
        let seen = result?["datachannels"] as? [String: [String: Any]] ?? [:]
        print("interop \(script) reliability modes opened by the peer: Sluice echoed \(echoes.withLock { $0 }); the peer got back \(seen.mapValues { "\($0["texts"] ?? 0) texts, \($0["binaries"] ?? 0) binaries" })")
        #expect(Self.reachedConnected(result), "\(Self.describe(result))")
        for (label, reliability) in reliabilityModes {
            #expect(channels[label]?.options.reliability == reliability, "\(label): \(String(describing: channels[label]?.options))")
            #expect(seen[label]?["texts"] as? Int ?? 0 >= 1 && seen[label]?["binaries"] as? Int ?? 0 >= 1,
                    "\(label) came back as \(String(describing: seen[label]))")
        }
    }

    /// Sluice opens one channel per reliability mode and greets on each; the peer sees each with the
    /// options Sluice gave it and echoes, and Sluice gets its text and binary back on every channel.
    /// Sluice then closes "rexmit0": the peer sees it closed.
    func sluiceOpensAChannelPerReliabilityMode(script: String, arguments extra: [String] = []) throws {
        let peer = try PeerProcess(script: script,
                                   arguments: ["answer", "--dc-echo", "--timeout", "30", "--duration", "3", "--linger", "1"] + extra)
        defer { peer.kill() }
        let connection = try PeerConnectionFactory().makePeerConnection(
            .init(localAddresses: ["127.0.0.1:0"], includeLoopback: true, receive: []))
        defer { connection.close() }
        var records: [String: PeerConnectionTests.ChannelRecord] = [:]
        var channels: [String: PeerDataChannel] = [:]
        for (label, reliability) in reliabilityModes {
            let channel = try connection.createDataChannel(label, options: DataChannelOptions(reliability: reliability))
            channels[label] = channel
            records[label] = PeerConnectionTests.ChannelRecord(channel)
        }
        peer.writeSDP(try connection.createOffer())
        try connection.setRemoteDescription(try peer.readSDP(seconds: 30), type: .answer)
        #expect(eventually(seconds: 15) { records.values.allSatisfy { $0.saw(.open) } })
        let binary = (0..<1024).map { UInt8(truncatingIfNeeded: $0) }
        for (label, channel) in channels {
            try channel.send("hello \(label)")
            try channel.send(binary)
        }
        #expect(eventually(seconds: 15) { records.values.allSatisfy { $0.messages.count >= 2 } })
        channels["rexmit0"]?.close()
        #expect(eventually(seconds: 10) { records["rexmit0"]?.saw(.closed) == true })
        let result = peer.result(seconds: 40)
        let seen = result?["datachannels"] as? [String: [String: Any]] ?? [:]
        print("interop \(script) reliability modes opened by Sluice: echoed \(records.mapValues { $0.messages.count }); the peer saw \(seen.mapValues { "ordered \($0["ordered"] ?? "?"), maxRetransmits \($0["max_retransmits"] ?? "?"), maxPacketLifeTime \($0["max_packet_lifetime"] ?? "?")" })")
        #expect(Self.reachedConnected(result), "\(Self.describe(result))")
        for (label, reliability) in reliabilityModes {
            let messages = records[label]?.messages ?? []
            #expect(messages.contains(.text("hello \(label)")) && messages.contains(.binary(binary)), "\(label): \(messages.count) echoed")
            let theirs = seen[label] ?? [:]
            #expect(theirs["ordered"] as? Bool == reliability.ordered, "\(label): \(theirs)")
            #expect(theirs["closed"] as? Bool == (label == "rexmit0"), "\(label) closed only when Sluice closed it: \(theirs)")
            let retransmits = theirs["max_retransmits"] as? Int, lifetime = theirs["max_packet_lifetime"] as? Int
            switch reliability.limit {
            case .reliable: #expect(retransmits == nil && lifetime == nil, "\(label): \(theirs)")
            case .maxRetransmits(let count): #expect(retransmits == Int(count) && lifetime == nil, "\(label): \(theirs)")
            case .maxPacketLifetime(let milliseconds): #expect(lifetime == Int(milliseconds) && retransmits == nil, "\(label): \(theirs)")
            }
        }
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(2)))
    func aiortcAndSluiceOpenAChannelPerReliabilityMode() throws {
        try peerOpensAChannelPerReliabilityMode(script: "aiortc_peer.py")
        try sluiceOpensAChannelPerReliabilityMode(script: "aiortc_peer.py")
    }

    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(2)))
    func chromiumAndSluiceOpenAChannelPerReliabilityMode() throws {
        try peerOpensAChannelPerReliabilityMode(script: "chromium_peer.py")
        try sluiceOpensAChannelPerReliabilityMode(script: "chromium_peer.py", arguments: ["--expect", "none"])
    }
}

extension InteropTests {
    /// Chromium offers, Sluice answers; once media flows Chromium restarts ICE (`restartIce()`, a second
    /// offer with new credentials and `a=setup:actpass`). Sluice's answer renews its own credentials and
    /// keeps its DTLS role, and the call goes on: Chromium decodes more of Sluice's pictures after the
    /// restart, and Sluice more of Chromium's.
    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(2)))
    func chromiumRestartsICEAndTheCallGoesOn() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let peer = try PeerProcess(script: "chromium_peer.py",
                                       arguments: ["offer", "--video", "sendrecv", "--audio", "sendrecv", "--codec", "vp8", "--restart-ice",
                                                   "--min-frames", "20", "--timeout", "50", "--duration", "3", "--linger", "1"])
            defer { peer.kill() }
            let sluice = try SluicePeer(media: media)
            defer { sluice.connection.close() }
            let offer = try peer.readSDP(seconds: 25)
            try sluice.connection.setRemoteDescription(offer, type: .offer)
            let answer = try sluice.connection.createAnswer()
            peer.writeSDP(answer)
            try sluice.receive()
            let restart: String
            do { restart = try peer.readSDP(seconds: 30) } catch {
                Issue.record("no restart offer: \(error); \(Self.describe(peer.result(seconds: 5)))")
                return
            }
            let beforeRestart = sluice.pictures.count
            try sluice.connection.setRemoteDescription(restart, type: .offer)
            let restartAnswer = try sluice.connection.createAnswer()
            peer.writeSDP(restartAnswer)
            let result = peer.result(seconds: 40)
            let inbound = (result?["inbound"] as? [[String: Any]]) ?? []
            let decoded = inbound.first { $0["kind"] as? String == "video" }?["frames_decoded"] as? Int ?? 0
            let atRestart = result?["frames_decoded_at_restart"] as? Int ?? 0
            print("interop Chromium ICE restart: Chromium decoded \(atRestart) pictures before and \(decoded) in all; Sluice \(beforeRestart) before, \(sluice.pictures.count) in all; ufrags \(PeerConnectionTests.ufrag(answer) ?? "?") -> \(PeerConnectionTests.ufrag(restartAnswer) ?? "?")")
            #expect(Self.reachedConnected(result) && result?["ice_restart_answered"] as? Bool == true, "\(Self.describe(result))")
            #expect(PeerConnectionTests.ufrag(offer) != PeerConnectionTests.ufrag(restart), "Chromium's restart has new credentials")
            #expect(PeerConnectionTests.ufrag(restartAnswer) != nil && PeerConnectionTests.ufrag(restartAnswer) != PeerConnectionTests.ufrag(answer))
            #expect(decoded >= atRestart + 30, "Chromium decoded \(decoded - atRestart) pictures after the restart")
            #expect(eventually(seconds: 5) { sluice.pictures.count >= beforeRestart + 30 }, "Sluice decoded \(sluice.pictures.count - beforeRestart) after")
            #expect(sluice.connection.connectionState == .connected || sluice.connection.connectionState == .closed)
        }
    }
}
