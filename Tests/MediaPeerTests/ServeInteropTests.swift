/// `sluice serve`'s WHEP and WHIP (SluiceServer's `PeerSessionService` over a real HTTP server on
/// 127.0.0.1) with real clients: aiortc and headless Chromium watch a source and publish into
/// recordings, which are read back by ffprobe and compared with their source by PSNR.
import Foundation
import MediaCore
import MediaPeer
import Sluice
import SluiceServer
import Testing
import TestSupport

/// A WHEP/WHIP server on 127.0.0.1 with an ephemeral port, stopped by `stop()`.
final class ServeFixture: @unchecked Sendable {
    let service: PeerSessionService
    let encodings: [SharedEncoding]
    private let task: Task<Void, any Error>
    let port: Int

    init(media: (video: String, audio: String), codec: CodecName = .vp8, audio: Bool = true, recordDirectory: String?) throws {
        let registry = CodecRegistry.builtIn
        encodings = [try SharedEncoding(track: try LocalTrack.y4mFile(media.video), codec: codec, registry: registry)]
            + (audio ? [try SharedEncoding(track: try LocalTrack.wavFile(media.audio), codec: .opus, registry: registry)] : [])
        service = PeerSessionService(
            configuration: .init(sources: ["clip": encodings], recordDirectory: recordDirectory,
                                 peer: PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true)),
            registry: registry, capabilities: registry.capabilities)
        let bound = Locked<Int?>(nil)
        let server = WebRTCHTTPServer(handler: service, configuration: .init(host: "127.0.0.1", port: 0))
        // On threads of its own: Swift's cooperative pool is held by the parallel run's synchronous tests
        // (WHIPPipelineTests run there), and a server waiting for it does not start.
        task = Task(executorPreference: DedicatedThreadsExecutor.shared) { try await server.run { port in bound.withLock { $0 = port } } }
        guard eventually(seconds: 10, { bound.withLock { $0 } != nil }) else {
            task.cancel()
            throw FixtureError(description: "the WHEP/WHIP server did not start")
        }
        port = bound.withLock { $0! }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// A new `recordings` folder in `folder`.
    static func recordings(in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("recordings").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func stop() {
        task.cancel()
        for encoding in encodings { encoding.stop() }
    }
}

extension InteropTests {
    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(2)))
    func twoAiortcViewersShareOneEncodingThroughWHEP() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, recordDirectory: nil)
            defer { serve.stop() }
            let recordings = [folder.appendingPathComponent("viewer-1.y4m").path, folder.appendingPathComponent("viewer-2.y4m").path]
            let encodedBefore = serve.encodings[0].encoderStatistics.framesEncoded
            let viewers = try recordings.map { recorded in
                try PeerProcess(script: "aiortc_peer.py",
                                arguments: ["whep", serve.url("/whep/clip"), "--record-video", recorded, "--min-frames", "30",
                                            "--timeout", "25", "--duration", "4", "--linger", "0.5"])
            }
            defer { for viewer in viewers { viewer.kill() } }
            #expect(eventually(seconds: 15) { serve.encodings[0].subscriberCount == 2 }, "viewers \(serve.encodings[0].subscriberCount)")
            let encodedWhileTwo = serve.encodings[0].encoderStatistics.framesEncoded
            let results = viewers.map { $0.result(seconds: 30) }
            let encoded = serve.encodings[0].encoderStatistics.framesEncoded
            for (result, recorded) in zip(results, recordings) {
                #expect(result?["ok"] as? Bool == true, "\(Self.describe(result))")
                let received = (result?["received"] as? [[String: Any]]) ?? []
                #expect(received.contains { $0["kind"] as? String == "video" && ($0["frames"] as? Int ?? 0) >= 30 }, "\(received)")
                #expect(received.contains { $0["kind"] as? String == "audio" && ($0["frames"] as? Int ?? 0) >= 50 }, "\(received)")
                let quality = try Self.psnr(source: media.video, received: recorded)
                print("interop WHEP viewer: \(received), PSNR \(String(describing: quality?["psnr_y_mean"]))")
                #expect((quality?["psnr_y_mean"] as? Double ?? 0) > 30, "\(String(describing: quality))")
            }
            // One encoder for both: each viewer received only pictures the shared encoder made after the
            // viewers were started (its count was read before they were; the call's own timing varies
            // with the machine's load, so no rate is asserted).
            let viewed = results.compactMap { ($0?["received"] as? [[String: Any]])?.first { $0["kind"] as? String == "video" }?["frames"] as? Int }
            print("interop WHEP: shared encoder made \(encoded - encodedBefore) pictures after the viewers started (\(encodedWhileTwo - encodedBefore) when both had joined); viewers received \(viewed)")
            #expect(viewed.count == 2 && viewed.allSatisfy { $0 <= encoded - encodedBefore }, "encoded \(encoded - encodedBefore), viewers \(viewed)")
        }
    }

    /// A source with video only, watched by a client that offers to receive audio too: the audio
    /// section is answered inactive (aiortc cannot take a rejected section it offered).
    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(2)))
    func aVideoOnlySourceServesAClientThatOffersAudioToo() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, codec: .h264, audio: false, recordDirectory: nil)
            defer { serve.stop() }
            let viewer = try PeerProcess(script: "aiortc_peer.py",
                                         arguments: ["whep", serve.url("/whep/clip"), "--expect", "video", "--codec", "h264", "--min-frames", "30",
                                                     "--timeout", "25", "--duration", "3", "--linger", "0.5"])
            defer { viewer.kill() }
            let result = viewer.result(seconds: 30)
            #expect(result?["ok"] as? Bool == true, "\(Self.describe(result))")
            let codecs = (result?["codecs"] as? [[String: Any]]) ?? []
            #expect(codecs.contains { $0["kind"] as? String == "video" && $0["codec"] as? String == "H264" }, "\(codecs)")
        }
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(2)))
    func aiortcPublishesH264ThroughWHIPIntoARecording() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, recordDirectory: try ServeFixture.recordings(in: folder))
            defer { serve.stop() }
            let publisher = try PeerProcess(script: "aiortc_peer.py",
                                            arguments: ["whip", serve.url("/whip/cam"), "--send-video", media.video, "--send-audio", "tone",
                                                        "--codec", "h264", "--timeout", "25", "--duration", "3", "--linger", "0.5"])
            defer { publisher.kill() }
            let result = publisher.result(seconds: 30)
            #expect(result?["ok"] as? Bool == true, "\(Self.describe(result))")
            // The DELETE closed the session: its files are complete.
            #expect(eventually(seconds: 5) { serve.service.recordedFiles.count == 2 })
            let files = serve.service.recordedFiles.sorted()
            #expect(files.map { URL(fileURLWithPath: $0).lastPathComponent } == ["cam-1.h264", "cam-1.opus"])
            let video = try TestSupport.probeVideo(files[0])
            print("interop WHIP aiortc H.264: recorded \(video)")
            #expect(video.codec == "h264" && video.width == 640 && video.height == 480 && video.frames >= 60, "\(video)")
            let decoded = folder.appendingPathComponent("recorded.y4m").path
            _ = try TestSupport.ffmpeg(["-i", files[0], "-pix_fmt", "yuv420p", decoded])
            let quality = try Self.psnr(source: media.video, received: decoded)
            #expect((quality?["psnr_y_mean"] as? Double ?? 0) > 30, "\(String(describing: quality))")
            let audio = try TestSupport.ffprobe(files[1], entries: "stream=codec_name,nb_read_packets", extra: ["-count_packets"])
            #expect(audio["codec_name"] == "opus" && Int(audio["nb_read_packets"] ?? "") ?? 0 >= 100, "\(audio)")
        }
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .onDedicatedThreads)
    func whepAndWhipRefuseByName() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let media = try Self.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, recordDirectory: nil)
            defer { serve.stop() }
            await #expect(throws: WebRTCSessionError.unknownName("nope")) { _ = try await serve.service.startEgress(name: "nope", offer: "") }
            await #expect(throws: WebRTCSessionError.unknownName("cam")) { _ = try await serve.service.startIngest(name: "cam", offer: "") }
            await #expect {
                _ = try await serve.service.startEgress(name: "clip", offer: "v=0\r\nnot sdp")
            } throws: { error in
                if case WebRTCSessionError.malformedOffer = error { return true }
                return false
            }
        }
    }

    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(2)))
    func chromiumWatchesThroughWHEPAndPublishesThroughWHIP() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, recordDirectory: try ServeFixture.recordings(in: folder))
            defer { serve.stop() }
            let viewer = try PeerProcess(script: "chromium_peer.py",
                                         arguments: ["whep", serve.url("/whep/clip"), "--min-frames", "20", "--timeout", "30",
                                                     "--duration", "3", "--linger", "0.5"])
            defer { viewer.kill() }
            let watched = viewer.result(seconds: 40)
            let inbound = (watched?["inbound"] as? [[String: Any]]) ?? []
            print("interop Chromium WHEP: \(inbound)")
            #expect(watched?["ok"] as? Bool == true, "\(Self.describe(watched))")
            let video = inbound.first { $0["kind"] as? String == "video" }
            #expect((video?["frames_decoded"] as? Int ?? 0) >= 20 && video?["frame_width"] as? Int == 640, "\(inbound)")

            let publisher = try PeerProcess(script: "chromium_peer.py",
                                            arguments: ["whip", serve.url("/whip/browser"), "--codec", "vp8", "--min-frames", "20",
                                                        "--timeout", "30", "--duration", "3", "--linger", "0.5"])
            defer { publisher.kill() }
            let published = publisher.result(seconds: 40)
            #expect(published?["ok"] as? Bool == true, "\(Self.describe(published))")
            #expect(eventually(seconds: 5) { serve.service.recordedFiles.count == 2 })
            let ivf = try #require(serve.service.recordedFiles.first { $0.hasSuffix(".ivf") })
            let recorded = try TestSupport.probeVideo(ivf)
            print("interop Chromium WHIP: recorded \(recorded)")
            #expect(recorded.codec == "vp8" && recorded.frames >= 20, "\(recorded)")
        }
    }
}

extension InteropTests {
    /// The `sluice serve` command as a user runs it: it prints where it serves, an aiortc viewer
    /// watches through WHEP with a data channel that is echoed and printed (`--chat`), and Ctrl-C
    /// (SIGINT) ends it cleanly.
    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(2)))
    func theServeCommandServesAViewerAndStopsOnInterrupt() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try Self.peerMedia(in: folder)
            let port = Int.random(in: 20_000...29_999)
            let process = Process()
            process.executableURL = TestSupport.productsDirectory.appendingPathComponent("sluice")
            process.arguments = ["serve", "--source", "clip=\(media.video)", "--source", "clip=\(media.audio)", "--port", "\(port)",
                                 "--chat"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            let printed = Locked("")
            let reader = Thread {
                while case let data = output.fileHandleForReading.availableData, !data.isEmpty {
                    printed.withLock { $0 += String(decoding: data, as: UTF8.self) }
                }
            }
            reader.start()
            #expect(eventually(seconds: 20) { printed.withLock { $0.contains("/whep/clip") } }, "printed: \(printed.withLock { $0 })")
            let viewer = try PeerProcess(script: "aiortc_peer.py",
                                         arguments: ["whep", "http://127.0.0.1:\(port)/whep/clip", "--min-frames", "20", "--datachannel",
                                                     "--timeout", "25", "--duration", "2", "--linger", "0.5"])
            defer { viewer.kill() }
            let result = viewer.result(seconds: 30)
            #expect(result?["ok"] as? Bool == true, "\(Self.describe(result))")
            // The viewer's data channel: its pings echoed back, and printed by --chat.
            #expect(result?["datachannel_messages_received"] as? Int ?? 0 >= 2, "\(Self.describe(result))")
            #expect(printed.withLock { $0.contains("message clip: ping ") }, "printed: \(printed.withLock { $0 })")
            kill(process.processIdentifier, SIGINT)
            #expect(eventually(seconds: 10) { !process.isRunning })
            if !process.isRunning { #expect(process.terminationStatus == 0, "status \(process.terminationStatus)") }
            #expect(printed.withLock { $0.contains("serving on http://127.0.0.1:\(port)") }, "printed: \(printed.withLock { $0 })")
        }
    }
}
