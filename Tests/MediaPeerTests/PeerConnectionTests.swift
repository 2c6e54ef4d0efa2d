import Foundation
import MediaCore
import MediaNegotiation
import MediaPeer
import MediaSCTP
import MediaSDP
import Sluice
import Testing
import TestSupport

/// A sink that keeps what a remote track delivers, readable from the test's thread while the
/// pipeline runs: every item counted, the first `keeping` kept, and each picture's mean luma.
final class TrackCollector<Item: MediaPayload>: MediaSink, @unchecked Sendable {
    let name = "track-collector"
    private let keeping: Int
    private let state = Locked<(count: Int, kept: [Item], lumas: [Double])>((0, [], []))

    init(keeping: Int = 0) { self.keeping = keeping }

    var inputCaps: Caps { Item.self == VideoFrame.self ? Caps.anyVideo : Caps.anyAudio }
    func start(input: MediaFormat, context: NodeContext) throws {}
    func consume(_ item: Item) throws {
        let luma = (item as? VideoFrame).map(Self.meanLuma)
        state.withLock { state in
            state.count += 1
            if state.kept.count < keeping { state.kept.append(item) }
            if let luma { state.lumas.append(luma) }
        }
    }
    func finish() throws {}

    var count: Int { state.withLock { $0.count } }
    var kept: [Item] { state.withLock { $0.kept } }
    var lumas: [Double] { state.withLock { $0.lumas } }

    static func meanLuma(_ picture: VideoFrame) -> Double {
        var sum = 0
        for row in 0..<picture.height { for value in picture.row(row, ofPlane: 0).prefix(picture.width) { sum += Int(value) } }
        return Double(sum) / Double(picture.width * picture.height)
    }
}

/// Polls `condition` every 10 ms for up to `seconds`.
func eventually(seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// The mean luma PSNR of `received` against `source` played in a loop: the first picture is matched
/// against every source picture, the next ones against the following source pictures.
func loopedPSNR(_ received: [VideoFrame], source: [VideoFrame]) -> Double {
    guard let first = received.first, !source.isEmpty else { return 0 }
    let start = source.indices.max { PictureQuality.psnr(first, source[$0]) < PictureQuality.psnr(first, source[$1]) }!
    let values = received.enumerated().map { PictureQuality.psnr($0.element, source[(start + $0.offset) % source.count]) }
    return values.reduce(0, +) / Double(values.count)
}

@Suite(.serialized)
struct PeerConnectionTests {
    /// Two peer connections on 127.0.0.1 only.
    static func pair() throws -> (offerer: PeerConnection, answerer: PeerConnection) {
        let factory = PeerConnectionFactory()
        let configuration = PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true)
        return (try factory.makePeerConnection(configuration), try factory.makePeerConnection(configuration))
    }

    static func connect(_ offerer: PeerConnection, _ answerer: PeerConnection) throws {
        let offer = try offerer.createOffer()
        try answerer.setRemoteDescription(offer, type: .offer)
        let answer = try answerer.createAnswer()
        try offerer.setRemoteDescription(answer, type: .answer)
    }

    /// A Y4M and a WAV made by ffmpeg in `folder`: `frames` pictures of the sample at 320x240, and a
    /// 440 Hz tone.
    static func media(in folder: URL, frames: Int = 50) throws -> (video: String, audio: String) {
        let video = folder.appendingPathComponent("clip.y4m").path, audio = folder.appendingPathComponent("tone.wav").path
        _ = try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=320:240", "-frames:v", "\(frames)",
                                    "-pix_fmt", "yuv420p", video])
        _ = try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2", "-ac", "2", audio])
        return (video, audio)
    }

    @Test(.timeLimit(.minutes(1)))
    func aCallCarriesVideoAndAudioBothDecoded() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let (videoPath, audioPath) = try Self.media(in: folder)
            let (a, b) = try Self.pair()
            defer { a.close(); b.close() }
            let video = try LocalTrack.y4mFile(videoPath), audio = try LocalTrack.wavFile(audioPath)
            let videoSender = try a.addTrack(video)
            try a.addTrack(audio)
            try Self.connect(a, b)
            let tracks = b.remoteTracks
            #expect(Set(tracks.map(\.kind)) == [.audio, .video])
            let pictures = TrackCollector<VideoFrame>(keeping: 40), samples = TrackCollector<AudioFrame>()
            for track in tracks {
                switch track.kind {
                case .video: try track.start(.video { graph, port in graph.add(pictures, input: port) })
                case .audio: try track.start(.audio { graph, port in graph.add(samples, input: port) })
                }
            }
            #expect(eventually(seconds: 10) { a.connectionState == .connected && b.connectionState == .connected })
            #expect(eventually(seconds: 15) { pictures.count >= 40 && samples.count >= 50 },
                    "pictures \(pictures.count), audio frames \(samples.count)")
            #expect(tracks.first { $0.kind == .video }?.ssrc == videoSender.ssrc)
            let source = try Samples.unpackAll(try Data(contentsOf: URL(fileURLWithPath: videoPath)).dropY4MHeaders(frames: 50),
                                               count: 50, width: 320, height: 240, pool: BufferPool(name: "source"))
            let psnr = loopedPSNR(pictures.kept, source: source)
            print("peer connection: \(pictures.count) pictures, \(samples.count) audio frames, PSNR \(psnr) dB")
            #expect(psnr > 30, "PSNR \(psnr) dB")

            let stats = b.stats(), sent = a.stats()
            #expect(stats.selectedPair?.hasPrefix("host 127.0.0.1") == true, "\(String(describing: stats.selectedPair))")
            #expect(stats.inbound.count == 2 && stats.inbound.allSatisfy { $0.packetsReceived > 0 })
            #expect(sent.outbound.count == 2 && sent.outbound.allSatisfy { $0.packetsSent > 0 })
            #expect(stats.inbound.first { $0.ssrc == videoSender.ssrc }.map { $0.framesDecoded > 0 } == true)
        }
    }

    /// The `a=ice-ufrag` of a description.
    static func ufrag(_ sdp: String) -> String? {
        sdp.split(whereSeparator: \.isNewline).first { $0.hasPrefix("a=ice-ufrag:") }.map { String($0.dropFirst("a=ice-ufrag:".count)) }
    }

    /// ICE restart (RFC 8445 §9) in a second offer/answer round: the offer and the answer carry new
    /// credentials, checks run again and the call returns to connected, while pictures keep coming;
    /// a third round without restart keeps the credentials; either side may re-offer.
    @Test(.timeLimit(.minutes(1)))
    func anICERestartRenewsCredentialsAndTheCallGoesOn() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let (videoPath, _) = try Self.media(in: folder)
            let (a, b) = try Self.pair()
            defer { a.close(); b.close() }
            try a.addTrack(try LocalTrack.y4mFile(videoPath))
            let offer1 = try a.createOffer()
            try b.setRemoteDescription(offer1, type: .offer)
            let answer1 = try b.createAnswer()
            try a.setRemoteDescription(answer1, type: .answer)
            let pictures = TrackCollector<VideoFrame>()
            try #require(b.remoteTracks.first).start(.video { graph, port in graph.add(pictures, input: port) })
            #expect(eventually(seconds: 10) { a.connectionState == .connected && pictures.count >= 10 })
            let checksBefore = a.stats().ice?.checksSent ?? 0

            a.restartIce()
            let offer2 = try a.createOffer()
            #expect(a.signalingState == .haveLocalOffer)
            try b.setRemoteDescription(offer2, type: .offer)
            #expect(b.signalingState == .haveRemoteOffer)
            let answer2 = try b.createAnswer()
            try a.setRemoteDescription(answer2, type: .answer)
            #expect(a.signalingState == .stable && b.signalingState == .stable)
            #expect(Self.ufrag(offer2) != nil && Self.ufrag(offer2) != Self.ufrag(offer1))
            #expect(Self.ufrag(answer2) != nil && Self.ufrag(answer2) != Self.ufrag(answer1))
            let atRestart = pictures.count
            #expect(eventually(seconds: 10) { (a.stats().ice?.checksSent ?? 0) > checksBefore && a.connectionState == .connected
                                              && b.connectionState == .connected })
            #expect(eventually(seconds: 10) { pictures.count >= atRestart + 25 }, "\(pictures.count - atRestart) pictures after the restart")
            #expect(b.remoteTracks.count == 1, "a later round made no new transceiver")

            let offer3 = try b.createOffer()
            try a.setRemoteDescription(offer3, type: .offer)
            let answer3 = try a.createAnswer()
            try b.setRemoteDescription(answer3, type: .answer)
            #expect(Self.ufrag(offer3) == Self.ufrag(answer2) && Self.ufrag(answer3) == Self.ufrag(offer2))
            let atThird = pictures.count
            #expect(eventually(seconds: 10) { pictures.count >= atThird + 25 && a.connectionState == .connected })
            print("ICE restart: \(atRestart) pictures before, \(pictures.count) in all; checks sent \(checksBefore) -> \(a.stats().ice?.checksSent ?? 0); selected \(a.stats().selectedPair ?? "none")")
        }
    }

    /// A later offer that changes the sections is refused by name, and the call stays as it was.
    @Test(.timeLimit(.minutes(1)))
    func aLaterOfferThatChangesTheSectionsIsRefused() throws {
        let (a, b) = try Self.pair()
        defer { a.close(); b.close() }
        _ = try a.createDataChannel("chat")
        try Self.connect(a, b)
        let other = try PeerConnectionFactory().makePeerConnection(.init(localAddresses: ["127.0.0.1:0"], includeLoopback: true))
        defer { other.close() }
        let different = try other.createOffer()   // audio and video, no data channel
        #expect(throws: PeerConnectionError.self) { try b.setRemoteDescription(different, type: .offer) }
        #expect(b.signalingState == .stable)
        #expect(throws: PeerConnectionError.self) { try b.setRemoteDescription(different, type: .answer) }
        #expect(b.signalingState == .stable)
        #expect(eventually(seconds: 10) { b.connectionState == .connected })
    }

    @Test(.timeLimit(.minutes(1)))
    func mutingSendsBlackAndReplaceTrackSwitchesSourceOnTheSameStream() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let (videoPath, _) = try Self.media(in: folder)
            let white = folder.appendingPathComponent("white.y4m").path
            _ = try TestSupport.ffmpeg(["-f", "lavfi", "-i", "color=c=white:s=320x240:r=25:d=1", "-pix_fmt", "yuv420p", white])
            let (a, b) = try Self.pair()
            defer { a.close(); b.close() }
            let camera = try LocalTrack.y4mFile(videoPath)
            let sender = try a.addTrack(camera)
            try Self.connect(a, b)
            let pictures = TrackCollector<VideoFrame>()
            let track = try #require(b.remoteTracks.first)
            try track.start(.video { graph, port in graph.add(pictures, input: port) })
            #expect(eventually(seconds: 10) { pictures.count >= 10 }, "\(pictures.count) pictures")
            #expect(pictures.lumas.suffix(5).allSatisfy { $0 > 30 }, "\(pictures.lumas.suffix(5))")

            camera.isEnabled = false
            let muted = pictures.count
            #expect(eventually(seconds: 5) { pictures.lumas.dropFirst(muted).contains { $0 < 17 } },
                    "lumas after muting \(pictures.lumas.dropFirst(muted).prefix(20))")
            camera.isEnabled = true
            let unmuted = pictures.count
            #expect(eventually(seconds: 5) { pictures.lumas.dropFirst(unmuted).contains { $0 > 30 } })

            try sender.replaceTrack(try LocalTrack.y4mFile(white))
            let replaced = pictures.count
            #expect(eventually(seconds: 5) { pictures.lumas.dropFirst(replaced).contains { $0 > 230 } },
                    "lumas after replaceTrack \(pictures.lumas.dropFirst(replaced).prefix(20))")
            let inbound = b.stats().inbound
            #expect(inbound.count == 1 && inbound.first?.ssrc == sender.ssrc)
            #expect(track.pipelineResult == nil, "the receiving pipeline ended: \(String(describing: track.pipelineResult))")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func closeEndsTheRemoteTrackAndIsIdempotent() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let (videoPath, _) = try Self.media(in: folder, frames: 10)
            let (a, b) = try Self.pair()
            defer { b.close() }
            try a.addTrack(try LocalTrack.y4mFile(videoPath))
            try Self.connect(a, b)
            let pictures = TrackCollector<VideoFrame>()
            let track = try #require(b.remoteTracks.first)
            try track.start(.video { graph, port in graph.add(pictures, input: port) })
            #expect(eventually(seconds: 10) { pictures.count >= 5 })
            a.close()
            a.close()
            #expect(a.connectionState == .closed)
            // The sender's BYE ends the remote track's pipeline.
            #expect(eventually(seconds: 5) { track.pipelineResult != nil })
            #expect(throws: PeerConnectionError.closed) { try a.addTrack(try LocalTrack.y4mFile(videoPath)) }
        }
    }

    /// Offers as browsers and other stacks write them (Tests/MediaSDPTests/Fixtures, origins in its
    /// README): answered with every transport line, a sending codec for each track, a remote track for
    /// each section the offer sends in.
    @Test(arguments: ["chrome-offer", "firefox-offer", "safari-offer", "gstreamer-webrtcbin", "aiortc-offer"])
    func offersFromOtherStacksAreAnswered(_ fixture: String) throws {
        let path = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures/\(fixture).sdp")
        let offer = try String(contentsOf: path, encoding: .utf8)
        try TestSupport.withTemporaryDirectory { folder in
            let (videoPath, audioPath) = try Self.media(in: folder, frames: 5)
            let connection = try PeerConnectionFactory().makePeerConnection(.init(localAddresses: ["127.0.0.1:0"], includeLoopback: true))
            defer { connection.close() }
            try connection.addTrack(try LocalTrack.y4mFile(videoPath))
            try connection.addTrack(try LocalTrack.wavFile(audioPath))
            try connection.setRemoteDescription(offer, type: .offer)
            let answer = try connection.createAnswer()
            for line in ["a=ice-ufrag:", "a=ice-pwd:", "a=fingerprint:sha-256 ", "a=setup:active", "a=group:BUNDLE", "a=rtcp-mux", "a=candidate:"] {
                #expect(answer.contains(line), "\(fixture): the answer has no \(line)\n\(answer)")
            }
            let remote = try readRemoteDescription(try SessionDescription(parsing: offer), type: .offer, capabilities: [])
            let media = remote.media.filter { ["audio", "video"].contains($0.type) && !$0.rejected }
            // A track is sent in the first section of its kind, if that section receives (Safari's
            // video is sendonly); every section the offer sends in is a remote track.
            let receiving = Set(MediaKind.allCases.filter { kind in media.first { $0.type == kind.rawValue }?.direction.receives == true })
            let codecs = connection.senders.compactMap { $0.codec?.capability.codec }
            #expect(Set(codecs).isSubset(of: [.vp8, .h264, .opus]) && codecs.count == receiving.count,
                    "\(fixture): sending \(codecs), the offer receives \(receiving)")
            let sending = media.filter { $0.direction.sends }
            #expect(connection.remoteTracks.count == sending.count,
                    "\(fixture): \(connection.remoteTracks.map(\.kind)) for sections \(sending.map(\.type))")
        }
    }

    /// A remote audio track played on a speaker the app picks for it (alsa-lib's `file` plugin as the
    /// speaker, writing what it plays to a WAV file): the peer's tone is heard.
    @Test(.timeLimit(.minutes(1)))
    func aRemoteAudioTrackPlaysOnTheSpeakerChosenForIt() throws {
        let alsa = ALSATestConfiguration.shared
        try TestSupport.withTemporaryDirectory { folder in
            let (_, audioPath) = try Self.media(in: folder, frames: 1)
            let played = folder.appendingPathComponent("speaker.wav").path
            let (a, b) = try Self.pair()
            defer { a.close() }
            try a.addTrack(try LocalTrack.wavFile(audioPath))
            try Self.connect(a, b)
            let track = try #require(b.remoteTracks.first { $0.kind == .audio })
            let speaker = ALSATestConfiguration.playbackDevice(writing: played)
            try track.start(.audio { graph, samples in graph.add(try ALSAPlaybackNode(device: speaker), input: samples) })
            #expect(eventually(seconds: 10) { (b.stats().inbound.first?.framesDecoded ?? 0) >= 75 }, "\(b.stats().inbound)")
            b.close()   // the speaker's file is complete once its PCM closes
            _ = alsa
            let heard = floats(try TestSupport.ffmpeg(["-i", played, "-f", "f32le", "-"]).stdout, format: .f32)
            #expect(heard.count >= 2 * 48_000, "\(heard.count) samples played")
            // The loudest 100 ms of the left channel: ffmpeg's sine (amplitude 1/8, RMS 0.088) at 440 Hz,
            // made stereo by ffmpeg at -3 dB a channel (RMS 0.0625).
            let left = stride(from: 0, to: heard.count, by: 2).map { heard[$0] }
            let windows = stride(from: 0, to: max(0, left.count - 4800), by: 4800).map { left[$0..<($0 + 4800)] }
            let loudest = windows.max { $0.reduce(0) { $0 + $1 * $1 } < $1.reduce(0) { $0 + $1 * $1 } } ?? []
            let rms = (loudest.reduce(0) { $0 + Double($1 * $1) } / Double(max(1, loudest.count))).squareRoot()
            let crossings = zip(loudest.dropLast(), loudest.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
            print("peer connection: the speaker played \(left.count) samples a channel; loudest 100 ms: RMS \(rms), \(crossings) zero crossings")
            #expect(rms > 0.055 && rms < 0.07, "the tone is heard (RMS \(rms))")
            #expect((80...96).contains(crossings), "440 Hz makes 88 zero crossings in 100 ms: \(crossings)")
        }
    }

    /// Collects a data channel's events (through `onEvent`, on the channel's thread: a task reading
    /// `events` could wait long for Swift's cooperative pool while synchronous tests hold it),
    /// readable from the test's thread.
    final class ChannelRecord: Sendable {
        let events = Locked<[PeerDataChannel.Event]>([])

        init(_ channel: PeerDataChannel) {
            channel.onEvent = { [self] event in events.withLock { $0.append(event) } }
        }

        var messages: [DataChannelMessage] {
            events.withLock { $0.compactMap { if case .message(let message) = $0 { message } else { nil } } }
        }
        func saw(_ event: PeerDataChannel.Event) -> Bool { events.withLock { $0.contains(event) } }
    }

    @Test(.timeLimit(.minutes(1)))
    func dataChannelsCarryTextAndBinaryBothWaysAndClose() throws {
        let (a, b) = try Self.pair()
        defer { a.close(); b.close() }
        let chat = try a.createDataChannel("chat", options: DataChannelOptions(protocol: "sluice-chat"))
        let ours = ChannelRecord(chat)
        try Self.connect(a, b)
        #expect(eventually(seconds: 10) { ours.saw(.open) && !b.dataChannels.isEmpty }, "\(ours.events.withLock { $0 })")
        let theirs = try #require(b.dataChannels.first)
        let record = ChannelRecord(theirs)
        #expect(theirs.label == "chat" && theirs.options.protocol == "sluice-chat" && theirs.readyState == .open)
        try chat.send("hello")
        try chat.send([0, 1, 2, 255])
        try chat.send("")
        #expect(eventually(seconds: 5) { record.messages.count == 3 })
        #expect(record.messages == [.text("hello"), .binary([0, 1, 2, 255]), .text("")])
        try theirs.send("hi back")
        #expect(eventually(seconds: 5) { ours.messages == [.text("hi back")] })
        let stats = try #require(a.stats().dataChannels.first)
        #expect(stats.messagesSent == 3 && stats.bytesSent == 9 && stats.messagesReceived == 1, "\(stats)")
        theirs.close()
        #expect(eventually(seconds: 5) { ours.saw(.closed) && record.saw(.closed) })
        #expect(chat.readyState == .closed)
        #expect(throws: DataChannelError.self) { try chat.send("late") }
    }

    @Test
    func signallingOutOfOrderIsRefusedByName() throws {
        let (a, b) = try Self.pair()
        defer { a.close(); b.close() }
        #expect(throws: PeerConnectionError.invalidState("no offer to answer")) { try a.createAnswer() }
        let offer = try a.createOffer()
        #expect(throws: PeerConnectionError.self) { try b.setRemoteDescription(offer, type: .answer) }
        #expect {
            try b.setRemoteDescription("v=0\r\nbogus", type: .offer)
        } throws: { error in
            if case PeerConnectionError.malformedDescription = error { return true }
            return false
        }
        #expect(throws: PeerConnectionError.iceServer("turns:example.org", "TLS is not supported; use stun: or turn: over UDP")) {
            _ = try PeerConnectionFactory().makePeerConnection(.init(iceServers: [ICEServer(url: "turns:example.org")]))
        }
    }
}

extension Data {
    /// The raw I420 pictures of a Y4M file: its header and each FRAME line removed.
    func dropY4MHeaders(frames: Int) -> Data {
        var out = Data()
        guard let headerEnd = firstIndex(of: 0x0A) else { return out }
        var index = headerEnd + 1
        let header = String(decoding: self[startIndex..<headerEnd], as: UTF8.self)
        let width = header.split(separator: " ").first { $0.hasPrefix("W") }.flatMap { Int($0.dropFirst()) } ?? 0
        let height = header.split(separator: " ").first { $0.hasPrefix("H") }.flatMap { Int($0.dropFirst()) } ?? 0
        let size = width * height * 3 / 2
        for _ in 0..<frames {
            guard let lineEnd = self[index...].firstIndex(of: 0x0A), lineEnd + 1 + size <= endIndex else { break }
            out.append(self[(lineEnd + 1)..<(lineEnd + 1 + size)])
            index = lineEnd + 1 + size
        }
        return out
    }
}
