/// `sluice serve`'s sessions (SluiceServer's `PeerSessionService`) with Sluice's own peer connection as
/// the client, without HTTP: trickle ICE and ICE restart by PATCH fragments (RFC 9725 §4.3).
import Foundation
import MediaCore
import MediaPeer
import Sluice
import SluiceServer
import Testing
import TestSupport

@Suite(.onDedicatedThreads)
struct PeerSessionServiceTests {
    @Test(.timeLimit(.minutes(1)))
    func aViewerRestartsICEByPatchAndKeepsWatching() async throws {
        try await TestSupport.withTemporaryDirectory { folder in
            let (video, _) = try PeerConnectionTests.media(in: folder)
            let registry = CodecRegistry.builtIn
            let encoding = try SharedEncoding(track: try LocalTrack.y4mFile(video), codec: .vp8, registry: registry)
            defer { encoding.stop() }
            let loopback = PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true)
            let service = PeerSessionService(configuration: .init(sources: ["clip": [encoding]], peer: loopback),
                                             registry: registry, capabilities: registry.capabilities)
            var viewing = loopback
            viewing.receive = [.video]
            let viewer = try PeerConnectionFactory().makePeerConnection(viewing)
            defer { viewer.close() }
            let offer = try viewer.createOffer()
            let session = try await service.startEgress(name: "clip", offer: offer)
            try viewer.setRemoteDescription(session.answer, type: .answer)
            let pictures = TrackCollector<VideoFrame>()
            try #require(viewer.remoteTracks.first).start(.video { graph, port in graph.add(pictures, input: port) })
            #expect(eventually(seconds: 10) { viewer.connectionState == .connected && pictures.count >= 10 })
            #expect(session.supportsTrickleICE)

            // A trickle fragment with the same credentials is taken: 204, nothing to answer.
            let same = "a=ice-ufrag:\(PeerConnectionTests.ufrag(offer) ?? "")\r\na=ice-pwd:x\r\na=end-of-candidates\r\n"
            #expect(try await session.addRemoteCandidates(sdpFragment: same) == nil)
            await #expect(throws: WebRTCSessionError.self) { try await session.addRemoteCandidates(sdpFragment: "v=0\r\n") }

            viewer.restartIce()
            let restarted = try viewer.createOffer()
            let answered = try #require(try await session.addRemoteCandidates(sdpFragment: TrickleFragment.restartAnswer(from: restarted)))
            let fragment = try TrickleFragment(parsing: answered)
            #expect(fragment.ufrag != nil && fragment.ufrag != PeerConnectionTests.ufrag(session.answer))
            #expect(!fragment.candidates.isEmpty, "\(answered)")
            try viewer.setRemoteDescription(fragment.replacingCredentials(session.answer), type: .answer)
            for candidate in fragment.candidates { try viewer.addIceCandidate(candidate) }
            let atRestart = pictures.count, checks = viewer.stats().ice?.checksSent ?? 0
            #expect(eventually(seconds: 10) { (viewer.stats().ice?.checksSent ?? 0) > checks && viewer.connectionState == .connected })
            #expect(eventually(seconds: 10) { pictures.count >= atRestart + 25 }, "\(pictures.count - atRestart) pictures after the restart")
            print("WHEP ICE restart by PATCH: \(atRestart) pictures before, \(pictures.count) in all; answer fragment:\n\(answered)")
            await session.close()
        }
    }

    @Test func trickleFragmentsAreReadAndRefusedByName() throws {
        let text = "a=ice-options:trickle\r\na=group:BUNDLE 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\n"
            + "a=ice-ufrag:EsAw\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\n"
            + "a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw\r\na=end-of-candidates\r\n"
        let fragment = try TrickleFragment(parsing: text)
        #expect(fragment == TrickleFragment(ufrag: "EsAw", pwd: "P2uYro0UCOQ4zxjKXaWCBui1",
                                            candidates: ["candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw"],
                                            endOfCandidates: true))
        #expect(throws: WebRTCSessionError.self) { try TrickleFragment(parsing: "garbage\r\n") }
        #expect(throws: WebRTCSessionError.self) { try TrickleFragment(parsing: "a=ice-ufrag:only\r\n") }
        let description = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ice-ufrag:old\r\na=ice-pwd:oldpassword\r\na=mid:0\r\n"
            + "a=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\na=end-of-candidates\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:1\r\n"
        #expect(fragment.replacingCredentials(description)
                == "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ice-ufrag:EsAw\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\na=mid:0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:1\r\n")
        #expect(TrickleFragment.restartAnswer(from: description)
                == "a=ice-ufrag:old\r\na=ice-pwd:oldpassword\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\na=end-of-candidates\r\n")
    }
}

extension PeerSessionServiceTests {
    /// A WHIP publisher (Sluice's own peer connection sending a clip and a tone) recorded as asked:
    /// decoded (`NAME-1.y4m` and `NAME-1.wav`), or the call in one WebM or Matroska file.
    @Test(.timeLimit(.minutes(2)), arguments: [RecordFormat.decoded, .container(.webm), .container(.matroska)])
    func aPublisherIsRecordedAsAsked(format: RecordFormat) async throws {
        try await TestSupport.withTemporaryDirectory { folder in
            let (video, audio) = try PeerConnectionTests.media(in: folder)
            let recordings = folder.appendingPathComponent("recordings").path
            try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
            let registry = CodecRegistry.builtIn
            let loopback = PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true)
            var configuration = PeerSessionService.Configuration(recordDirectory: recordings, peer: loopback)
            configuration.recordFormat = format
            let service = PeerSessionService(configuration: configuration, registry: registry, capabilities: registry.capabilities)
            var publishing = loopback
            publishing.receive = []
            let publisher = try PeerConnectionFactory(preferredCodecs: [.vp8]).makePeerConnection(publishing)
            try publisher.addTrack(try LocalTrack.y4mFile(video))
            try publisher.addTrack(try LocalTrack.wavFile(audio))
            let session = try await service.startIngest(name: "studio", offer: try publisher.createOffer())
            try publisher.setRemoteDescription(session.answer, type: .answer)
            #expect(eventually(seconds: 15) { publisher.stats().outbound.count == 2 && publisher.stats().outbound.allSatisfy { $0.packetsSent > 0 } })
            try await Task.sleep(for: .seconds(3))
            await session.close()
            publisher.close()
            let files = service.recordedFiles.map { URL(fileURLWithPath: $0).lastPathComponent }.sorted()
            switch format {
            case .decoded:
                #expect(files == ["studio-1.wav", "studio-1.y4m"])
                let pictures = try TestSupport.ffprobe(recordings + "/studio-1.y4m", entries: "stream=width,height,nb_read_frames", extra: ["-count_frames"])
                let samples = try TestSupport.ffprobe(recordings + "/studio-1.wav", entries: "stream=codec_name,sample_rate,duration")
                print("WHIP recorded decoded: \(pictures); \(samples)")
                #expect(pictures["width"] == "320" && pictures["height"] == "240" && Int(pictures["nb_read_frames"] ?? "") ?? 0 >= 50)
                #expect(samples["codec_name"] == "pcm_s16le" && samples["sample_rate"] == "48000" && Double(samples["duration"] ?? "") ?? 0 >= 2)
            case .container(let container):
                #expect(files == ["studio-1.\(container.fileExtension)"])
                let path = recordings + "/" + (files.first ?? "")
                let video = try TestSupport.ffprobe(path, entries: "stream=codec_name,width,height,nb_read_frames,start_time",
                                                    extra: ["-select_streams", "v", "-count_frames"])
                let audio = try TestSupport.ffprobe(path, entries: "stream=codec_name,nb_read_frames,start_time",
                                                    extra: ["-select_streams", "a", "-count_frames"])
                print("WHIP recorded into \(container): video \(video); audio \(audio)")
                #expect(video["codec_name"] == "vp8" && video["width"] == "320" && Int(video["nb_read_frames"] ?? "") ?? 0 >= 50)
                #expect(audio["codec_name"] == "opus" && Int(audio["nb_read_frames"] ?? "") ?? 0 >= 100)
            case .frames:
                break
            }
        }
    }
}
