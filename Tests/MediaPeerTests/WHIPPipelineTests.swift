import Foundation
import MediaCore
import Sluice
import SluiceServer
import Testing
import TestSupport

/// `sluice run`'s `whip` sink (a WHIP client, RFC 9725) publishing to `sluice serve`'s WHIP endpoint
/// in this process: what the pipeline makes arrives in the server's recording, picture for picture,
/// and a wrong endpoint is refused by name.
@Suite(.serialized) struct WHIPPipelineTests {
    @Test(.timeLimit(.minutes(2))) func aPipelinePublishesThroughWHIPIntoARecording() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try InteropTests.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, recordDirectory: try ServeFixture.recordings(in: folder))
            defer { serve.stop() }
            let pipeline = try TextPipeline("file:\(media.video) frames=45 ! scale size=320x240 ! whip url=\(serve.url("/whip/pipe"))")
            let started = Date()
            let report = try pipeline.run()
            let elapsed = Date().timeIntervalSince(started)
            #expect(report["whip"]?.itemsIn == 45, "\(report)")
            // Paced like a camera: 45 pictures at 30 fps take 1.5 s, plus the connection's set-up.
            #expect(elapsed > 1.4 && elapsed < 10, "\(elapsed) s")
            var recorded = (file: "", frames: 0, width: 0)
            let complete = eventually(seconds: 10) {
                guard let file = serve.service.recordedFiles.first(where: { $0.hasSuffix(".ivf") || $0.hasSuffix(".h264") }),
                      let probe = try? TestSupport.probeVideo(file) else { return false }
                recorded = (file, probe.frames, probe.width)
                return probe.frames == 45
            }
            print("WHIP from a pipeline: \(recorded.frames) of 45 pictures recorded in \(recorded.file), \(elapsed) s")
            #expect(complete, "\(recorded.frames) of 45 pictures recorded (\(serve.service.recordedFiles))")
            #expect(recorded.width == 320)
        }
    }

    /// A WAV file's 2 s of samples published as audio: the server records every 20 ms Opus packet.
    @Test(.timeLimit(.minutes(2))) func audioIsPublishedToo() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try InteropTests.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, recordDirectory: try ServeFixture.recordings(in: folder))
            defer { serve.stop() }
            let report = try TextPipeline("file:\(media.audio) ! whip url=\(serve.url("/whip/tone"))").run()
            #expect(report["whip"]?.itemsIn ?? 0 > 0, "\(report)")
            var packets = 0
            let complete = eventually(seconds: 10) {
                guard let file = serve.service.recordedFiles.first(where: { $0.hasSuffix(".opus") }),
                      let fields = try? TestSupport.ffprobe(file, entries: "stream=nb_read_packets", extra: ["-count_packets"]) else { return false }
                packets = Int(fields["nb_read_packets"] ?? "") ?? 0
                return packets >= 99
            }
            print("WHIP audio from a pipeline: \(packets) Opus packets recorded in \(serve.service.recordedFiles)")
            #expect(complete && packets <= 101, "\(packets) packets for 2 s")
        }
    }

    /// `whep` watches `sluice serve`'s WHEP endpoint: the frames asked for arrive as a playable file,
    /// and the session is ended (DELETE) when the pipeline is done.
    @Test(.timeLimit(.minutes(2))) func aPipelineWatchesThroughWHEPIntoAFile() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try InteropTests.peerMedia(in: folder)
            let serve = try ServeFixture(media: media, recordDirectory: nil)
            defer { serve.stop() }
            let output = folder.appendingPathComponent("watched.ivf").path
            let pipeline = try TextPipeline("whep url=\(serve.url("/whep/clip")) frames=30 ! file:\(output)")
            #expect(serve.encodings[0].subscriberCount == 1, "the pipeline watches from when it is built")
            let report = try pipeline.run()
            #expect(report["whep"]?.itemsOut == 30, "\(report)")
            let probe = try TestSupport.probeVideo(output)
            #expect(probe.codec == "vp8" && probe.frames == 30, "\(probe)")
            #expect(eventually(seconds: 5) { serve.encodings[0].subscriberCount == 0 }, "the WHEP session was not ended")
        }
    }

    @Test func aRefusedOfferIsNamed() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try InteropTests.peerMedia(in: folder)
            // No record directory: the server refuses WHIP with 404.
            let serve = try ServeFixture(media: media, recordDirectory: nil)
            defer { serve.stop() }
            let url = serve.url("/whip/pipe")
            let pipeline = try TextPipeline("file:\(media.video) frames=5 ! whip url=\(url)")
            #expect { try pipeline.run() } throws: { error in
                guard case WHIPError.refused(let refused, let status, _) = error else { return false }
                return refused == url && status == 404
            }
        }
    }
}
