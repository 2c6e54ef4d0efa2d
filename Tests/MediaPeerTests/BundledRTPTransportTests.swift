import Glibc
import MediaCore
import MediaDTLS
import MediaICE
import MediaRTP
import MediaSTUN
import MediaTransport
import Synchronization
import Testing

@testable import MediaPeer

// MARK: Packets

/// An RTP header (RFC 3550 §5.1) with payload type `payloadType` and `ssrc`, and four payload bytes.
private func rtp(payloadType: UInt8, ssrc: UInt32) -> [UInt8] {
    [0x80, payloadType, 0x00, 0x01,      // V=2, PT, sequence 1
     0x00, 0x00, 0x00, 0x10]             // timestamp
        + bytes(ssrc) + [0xDE, 0xAD, 0xBE, 0xEF]
}

private func bytes(_ word: UInt32) -> [UInt8] {
    [UInt8(word >> 24), UInt8((word >> 16) & 0xFF), UInt8((word >> 8) & 0xFF), UInt8(word & 0xFF)]
}

/// A PLI (RFC 4585 §6.3.1): PSFB (206) FMT 1, length 2, sender SSRC, media source SSRC.
private func pli(sender: UInt32, media: UInt32) -> [UInt8] { [0x81, 206, 0x00, 0x02] + bytes(sender) + bytes(media) }

/// A sender report (RFC 3550 §6.4.1) with no report blocks: length 6, SSRC, 20 bytes of sender info.
private func senderReport(ssrc: UInt32) -> [UInt8] { [0x80, 200, 0x00, 0x06] + bytes(ssrc) + [UInt8](repeating: 0, count: 20) }

/// A receiver report (RFC 3550 §6.4.2) with one report block about `about`: length 7.
private func receiverReport(ssrc: UInt32, about: UInt32) -> [UInt8] {
    [0x81, 201, 0x00, 0x07] + bytes(ssrc) + bytes(about) + [UInt8](repeating: 0, count: 20)
}

/// A FIR (RFC 5104 §4.3.1): PSFB FMT 4, media source 0, one FCI entry naming `target`.
private func fullIntraRequest(sender: UInt32, target: UInt32) -> [UInt8] {
    [0x84, 206, 0x00, 0x04] + bytes(sender) + bytes(0) + bytes(target) + [0x01, 0, 0, 0]
}

/// A BYE (RFC 3550 §6.6) for `source`: SC 1, length 1.
private func goodbye(_ source: UInt32) -> [UInt8] { [0x81, 203, 0x00, 0x01] + bytes(source) }

/// Everything a ring holds, drained without waiting.
private func drained(_ ring: BundledPacketRing) -> [(bytes: [UInt8], rtcp: Bool)] {
    var out: [(bytes: [UInt8], rtcp: Bool)] = []
    _ = ring.drain(until: .zero) { bytes, rtcp in out.append((Array(bytes), rtcp)) }
    return out
}

// MARK: Ring

@Suite struct BundledPacketRingTests {
    /// A full ring drops the newest packet and counts it; what it kept comes out in order, in place.
    @Test func aFullRingDropsAndCountsAndNeverGrows() {
        let ring = BundledPacketRing(slots: 4)
        let packets = (0..<6).map { [UInt8](repeating: UInt8($0), count: 10 + $0) }
        let pushed = packets.map { packet in packet.withUnsafeBytes { ring.push($0, rtcp: $0.count % 2 == 0) } }
        #expect(pushed == [true, true, true, true, false, false])
        #expect(ring.statistics == .init(queued: 4, droppedFull: 2, droppedOversized: 0))
        let out = drained(ring)
        #expect(out.map(\.bytes) == Array(packets.prefix(4)))
        #expect(out.map(\.rtcp) == [true, false, true, false])
        // Drained slots are free again, and the ring wraps.
        for packet in packets.suffix(3) { #expect(packet.withUnsafeBytes { ring.push($0, rtcp: false) }) }
        #expect(drained(ring).map(\.bytes) == Array(packets.suffix(3)))
    }

    @Test func aPacketLargerThanASlotIsDroppedAndCounted() {
        let ring = BundledPacketRing(slots: 2)
        let jumbo = [UInt8](repeating: 7, count: BundledPacketRing.slotSize + 1)
        #expect(!jumbo.withUnsafeBytes { ring.push($0, rtcp: false) })
        #expect(ring.statistics.droppedOversized == 1)
        #expect(drained(ring).isEmpty)
    }

    /// A drain with no deadline waits until `close()`, which ends it (nil).
    @Test func closeEndsAWaitingDrain() {
        let ring = BundledPacketRing(slots: 2)
        let result = Locked<Int??>(nil)
        let waiter = WorkerThread { result.withLock { $0 = .some(ring.drain(until: nil) { _, _ in }) } }
        ring.close()
        waiter.join()
        #expect(result.withLock { $0 } == .some(nil))
        #expect(![UInt8(1)].withUnsafeBytes { ring.push($0, rtcp: false) }, "a closed ring takes nothing")
    }

    /// A drain with a deadline and nothing queued returns 0 once the deadline passes.
    @Test func anEmptyDrainTimesOut() {
        let ring = BundledPacketRing(slots: 2)
        let start = SystemClock().now
        #expect(ring.drain(until: start + .milliseconds(20)) { _, _ in } == 0)
        #expect(SystemClock().now - start >= .milliseconds(20))
    }

    /// Whether `descriptor` is readable now (poll(2) without waiting).
    private func isReadable(_ descriptor: Int32) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) == 1
    }

    /// The readiness descriptor is readable exactly while a packet is queued: from the push that
    /// fills an empty ring until a drain takes the last one (a partial drain leaves it readable),
    /// and for good once the ring is closed.
    @Test func theReadinessDescriptorIsReadableWhilePacketsAreQueued() throws {
        let ring = BundledPacketRing(slots: 4)
        let descriptor = try #require(ring.readinessDescriptor)
        #expect(!isReadable(descriptor), "empty")
        for byte in [UInt8(1), 2, 3] { #expect([byte].withUnsafeBytes { ring.push($0, rtcp: false) }) }
        #expect(isReadable(descriptor), "three queued")
        var seen: [UInt8] = []
        _ = ring.drain(until: nil) { bytes, _ in
            seen.append(bytes[0])
            if seen.count < 3 { #expect(isReadable(descriptor), "\(3 - seen.count) still queued") }
        }
        #expect(seen == [1, 2, 3])
        #expect(!isReadable(descriptor), "drained")
        #expect([UInt8(4)].withUnsafeBytes { ring.push($0, rtcp: false) })
        #expect(isReadable(descriptor), "one queued again")
        #expect(ring.drain(until: nil) { _, _ in } == 1)
        #expect(!isReadable(descriptor))
        ring.close()
        #expect(isReadable(descriptor), "closed: the reader is to hear it")
    }
}

// MARK: Demultiplexer

private let videoSSRC: UInt32 = 0x0000_B1DE
private let audioSSRC: UInt32 = 0x0000_A0D1
private let localVideoSSRC: UInt32 = 0x1000_0001

@Suite struct BundledRTPDemultiplexerTests {
    /// Three sessions on one bundle: video received by payload type (SSRC not signalled), audio
    /// received by SSRC, and a local video sender.
    struct Bundle {
        let demux = BundledRTPDemultiplexer()
        let video = BundledPacketRing(slots: 8)
        let audio = BundledPacketRing(slots: 8)
        let sender = BundledPacketRing(slots: 8)

        init() {
            demux.attach(video, route: .receiving(payloadTypes: [96, 97]))
            demux.attach(audio, route: .receiving(ssrc: audioSSRC, payloadTypes: [111]))
            demux.attach(sender, route: .sending(ssrc: localVideoSSRC))
        }

        /// How many packets each ring got: video, audio, sender.
        func counts() -> [Int] { [video, audio, sender].map { drained($0).count } }
    }

    /// RTP: by SSRC when a route names it, else by payload type; unknown both ways, or too short, dropped.
    @Test(arguments: [
        (rtp(payloadType: 111, ssrc: audioSSRC), [0, 1, 0], "audio by SSRC"),
        (rtp(payloadType: 96, ssrc: audioSSRC), [0, 1, 0], "SSRC before payload type"),
        (rtp(payloadType: 96, ssrc: 0x0BAD_F00D), [1, 0, 0], "video by payload type"),
        (rtp(payloadType: 97, ssrc: 0x0BAD_F00E), [1, 0, 0], "RTX by payload type"),
        (rtp(payloadType: 100, ssrc: 0x0BAD_F00F), [0, 0, 0], "unrouted"),
        ([0x80, 96, 0, 1, 0, 0, 0, 0], [0, 0, 0], "malformed: shorter than a header"),
    ])
    func rtpIsRoutedBySSRCThenPayloadType(packet: [UInt8], expected: [Int], name: String) {
        let bundle = Bundle()
        packet.withUnsafeBytes { bundle.demux.routeRTP($0) }
        #expect(bundle.counts() == expected, "\(name)")
    }

    @Test func droppedRTPIsCountedByReason() {
        let bundle = Bundle()
        rtp(payloadType: 100, ssrc: 1).withUnsafeBytes { bundle.demux.routeRTP($0) }
        [UInt8](repeating: 0x80, count: 11).withUnsafeBytes { bundle.demux.routeRTP($0) }
        [UInt8](repeating: 0x80, count: 7).withUnsafeBytes { bundle.demux.routeRTCP($0) }
        let statistics = bundle.demux.statistics
        #expect(statistics.rtpUnrouted == 1 && statistics.malformed == 2)
    }

    /// RTCP: to the routes the compound names, else to every route.
    @Test(arguments: [
        (pli(sender: 0x5555_5555, media: localVideoSSRC), [0, 0, 1], "PLI to the sender it names"),
        (fullIntraRequest(sender: 0x5555_5555, target: localVideoSSRC), [0, 0, 1], "FIR by its FCI target"),
        (receiverReport(ssrc: 0x5555_5555, about: localVideoSSRC), [0, 0, 1], "RR block about our stream"),
        (senderReport(ssrc: audioSSRC), [0, 1, 0], "SR of the audio stream"),
        (goodbye(audioSSRC), [0, 1, 0], "BYE of the audio stream"),
        (senderReport(ssrc: audioSSRC) + receiverReport(ssrc: 0x5555_5555, about: localVideoSSRC), [0, 1, 1], "compound naming two"),
        (receiverReport(ssrc: 0x5555_5555, about: 0x6666_6666), [1, 1, 1], "naming nobody: everyone"),
        ([0x80, 201, 0xFF, 0xFF] + bytes(0x5555_5555), [1, 1, 1], "length past the end: read what is there"),
    ])
    func rtcpGoesToTheRoutesItNamesOrToAll(packet: [UInt8], expected: [Int], name: String) {
        let bundle = Bundle()
        packet.withUnsafeBytes { bundle.demux.routeRTCP($0) }
        #expect(bundle.counts() == expected, "\(name)")
    }

    /// A route reached by payload type learns the SSRC: that stream's sender report finds it after.
    @Test func aRouteLearnsTheSSRCItWasReachedBy() {
        let bundle = Bundle()
        senderReport(ssrc: videoSSRC).withUnsafeBytes { bundle.demux.routeRTCP($0) }
        #expect(bundle.counts() == [1, 1, 1], "before: nobody knows the SSRC")
        rtp(payloadType: 96, ssrc: videoSSRC).withUnsafeBytes { bundle.demux.routeRTP($0) }
        senderReport(ssrc: videoSSRC).withUnsafeBytes { bundle.demux.routeRTCP($0) }
        rtp(payloadType: 111, ssrc: videoSSRC).withUnsafeBytes { bundle.demux.routeRTP($0) }
        #expect(bundle.counts() == [3, 0, 0], "after: the RTP, the SR, and RTP of that SSRC whatever its type")
        let statistics = bundle.demux.statistics
        #expect(statistics.rtpRoutedByPayloadType == 1 && statistics.rtpRoutedBySSRC == 1)
        #expect(statistics.rtcpBroadcast == 1 && statistics.rtcpRoutedBySSRC == 1)
    }
}

// MARK: Sessions over two loops on loopback

/// Two peers on 127.0.0.1, each a `PeerTransportLoop` whose handlers feed a demultiplexer, connected
/// (ICE, DTLS-SRTP) with candidates trickled straight across.
private final class ConnectedPair: Sendable {
    let offerer: PeerTransportLoop
    let answerer: PeerTransportLoop
    let offererDemux = BundledRTPDemultiplexer()
    let answererDemux = BundledRTPDemultiplexer()
    private let shared = Shared()

    /// What the loops' handlers share: each side's state, and each side's loop for the other's candidates.
    private final class Shared: Sendable {
        let states = Locked<[Bool: PeerTransport.State]>([:])
        let loops = Locked<[Bool: PeerTransportLoop]>([:])
    }

    init() throws {
        func side(_ isOfferer: Bool, _ demux: BundledRTPDemultiplexer, _ shared: Shared) throws -> PeerTransportLoop {
            let configuration = PeerTransport.Configuration(ice: ICEConfiguration(includeLoopback: true))
            let transport = PeerTransport(iceRole: isOfferer ? .controlling : .controlled, certificate: try DTLSCertificate(),
                                          configuration: configuration)
            let handlers = demux.handlers { event in
                switch event {
                case .localCandidate(let candidate):
                    shared.loops.withLock { $0[!isOfferer] }?.withTransport { core, now in core.addRemoteCandidate(candidate, now: now) }
                case .stateChanged(let state):
                    shared.states.withLock { $0[isOfferer] = state }
                default: break
                }
            }
            return try PeerTransportLoop(transport: transport, bindingTo: [try SocketAddress(parsing: "127.0.0.1:0")],
                                         handlers: handlers)
        }
        offerer = try side(true, offererDemux, shared)
        answerer = try side(false, answererDemux, shared)
        shared.loops.withLock { $0 = [true: offerer, false: answerer] }
    }

    /// Exchanges credentials and fingerprints, starts both loops and waits up to 10 s for both to connect.
    func connect() throws -> Bool {
        try exchangeTransportDescriptions(offerer: offerer, answerer: answerer)
        offerer.start()
        answerer.start()
        let end = SystemClock().now + .seconds(10)
        while SystemClock().now < end {
            if shared.states.withLock({ $0[true] == .connected && $0[false] == .connected }) { return true }
            usleep(2000)
        }
        return false
    }

    func close() {
        offerer.close()
        answerer.close()
    }
}

@Suite(.serialized) struct BundledRTPTransportTests {
    static let video = (payloadType: UInt8(96), ssrc: UInt32(0x0000_B1DE), rtx: (payloadType: UInt8(97), ssrc: UInt32(0x0000_B1DF)))
    static let audio = (payloadType: UInt8(111), ssrc: UInt32(0x0000_A0D1))
    /// Not used: sessions given their transport ignore the configuration's addresses.
    static let unusedAddress = try! SocketAddress(parsing: "127.0.0.1:9")

    /// A VP8 frame of 1400 bytes (three packets of at most 500) whose bytes tell it apart.
    static func videoFrame(_ index: Int, keyframe: Bool) -> EncodedFrame {
        var bytes = (0..<1400).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
        // VP8 payload header (RFC 6386 §9.1): the P bit, bit 0 of the first byte, is 0 on keyframes.
        bytes[0] = keyframe ? bytes[0] & 0xFE : bytes[0] | 0x01
        return bytes.withUnsafeBytes {
            EncodedFrame(codec: .vp8, isKeyframe: keyframe, pts: .init(Int64(index), timebase: Rational(1, 30)),
                         copying: $0, pool: nil)
        }
    }

    /// An Opus packet of 20 ms (any bytes do: the payload is passed through, RFC 7587 §4.2).
    static func audioFrame(_ index: Int) -> EncodedFrame {
        let bytes = (0..<(60 + index % 40)).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ index) }
        return bytes.withUnsafeBytes {
            EncodedFrame(codec: .opus, isKeyframe: true, pts: .init(Int64(index), timebase: Rational(1, 50)),
                         duration: .init(1, timebase: Rational(1, 50)), copying: $0, pool: nil)
        }
    }

    /// Before the DTLS-SRTP keys, sends are refused and counted, not thrown, and RTCP is held back.
    @Test func sendsBeforeTheKeysAreRefusedAndCounted() throws {
        let pair = try ConnectedPair()
        defer { pair.close() }
        let transport = BundledRTPTransport(loop: pair.offerer, demultiplexer: pair.offererDemux, route: .sending(ssrc: 1))
        #expect(!transport.canSendRTCP)
        #expect(transport.rtpOverhead == 16 && transport.rtcpOverhead == 20, "room for the largest profile (AEAD-GCM)")
        var buffer = rtp(payloadType: 96, ssrc: 1) + [UInt8](repeating: 0, count: transport.rtpOverhead)
        try buffer.withUnsafeMutableBytes { try transport.sendRTP($0, length: 16, at: .zero) }
        #expect(transport.statistics.sendsRefused == 1)
        transport.close()
        #expect(throws: SocketError.closed) { try buffer.withUnsafeMutableBytes { try transport.sendRTP($0, length: 16, at: .zero) } }
        #expect(throws: SocketError.closed) { try transport.receive(timeout: nil) { _ in true } }
    }

    /// `close()` ends a `receive` waiting with no timeout: it throws `SocketError.closed`, and the
    /// transport no longer takes what the demultiplexer routes.
    @Test func closeWakesAWaitingReceive() throws {
        let pair = try ConnectedPair()
        defer { pair.close() }
        let transport = BundledRTPTransport(loop: pair.answerer, demultiplexer: pair.answererDemux,
                                            route: .receiving(payloadTypes: [96]), slots: 4)
        rtp(payloadType: 96, ssrc: 7).withUnsafeBytes { pair.answererDemux.routeRTP($0) }
        var delivered: [[UInt8]] = []
        #expect(try transport.receive(timeout: .zero) { packet in
            if case .rtp(let bytes, truncated: false) = packet { delivered.append(Array(bytes)) }
            return true
        })
        #expect(delivered == [rtp(payloadType: 96, ssrc: 7)])
        let ended = Locked<Bool?>(nil)
        let waiter = WorkerThread {
            do {
                _ = try transport.receive(timeout: nil) { _ in true }
                ended.withLock { $0 = false }
            } catch {
                ended.withLock { $0 = error as? SocketError == .closed }
            }
        }
        transport.close()
        waiter.join()
        #expect(ended.withLock { $0 } == true)
        rtp(payloadType: 96, ssrc: 7).withUnsafeBytes { pair.answererDemux.routeRTP($0) }
        #expect(pair.answererDemux.statistics.rtpUnrouted == 1, "detached: nobody takes payload type 96 now")
        #expect(transport.statistics.packetsQueued == 1)
    }

    /// A VP8 sender and an Opus sender on one peer, their receivers on the other, all four sessions
    /// on one bundled 5-tuple: every frame from the first keyframe on crosses whole and in order
    /// (the receiver's PLI brings that keyframe), audio routed by its signalled SSRC, video by payload
    /// type; sender and receiver reports flow both ways; the BYEs end both streams.
    @Test func videoAndAudioSessionsShareOneBundle() throws {
        let pair = try ConnectedPair()
        defer { pair.close() }
        #expect(pair.offerer.localBases.count == 1 && pair.answerer.localBases.count == 1, "one socket a side")
        #expect(try pair.connect())

        let video = Self.video, audio = Self.audio
        let videoSending = try RTPSendSession<VP8Packetizer>.Configuration(
            remote: Self.unusedAddress, multiplexed: true,
            sender: .init(payloadType: video.payloadType, ssrc: video.ssrc, rtx: video.rtx), reportInterval: .milliseconds(100))
        let videoSender = RTPSendSession(
            packetizer: try VP8Packetizer(maxPayloadSize: 500), configuration: videoSending,
            transport: BundledRTPTransport(loop: pair.offerer, demultiplexer: pair.offererDemux,
                                           route: .sending(ssrc: video.ssrc, rtxSSRC: video.rtx.ssrc), name: "video-out"))
        var audioSending = try RTPSendSession<OpusPacketizer>.Configuration(
            remote: Self.unusedAddress, multiplexed: true, sender: .init(payloadType: audio.payloadType, ssrc: audio.ssrc),
            reportInterval: .milliseconds(100))
        audioSending.linger = .milliseconds(50)
        let audioSender = RTPSendSession(
            packetizer: try OpusPacketizer(), configuration: audioSending,
            transport: BundledRTPTransport(loop: pair.offerer, demultiplexer: pair.offererDemux,
                                           route: .sending(ssrc: audio.ssrc), name: "audio-out"))
        // Video by payload type (its SSRC not signalled), audio by SSRC.
        let videoIn = BundledRTPTransport(loop: pair.answerer, demultiplexer: pair.answererDemux,
                                          route: .receiving(payloadTypes: [video.payloadType, video.rtx.payloadType]), name: "video-in")
        let audioIn = BundledRTPTransport(loop: pair.answerer, demultiplexer: pair.answererDemux,
                                          route: .receiving(ssrc: audio.ssrc), name: "audio-in")
        let videoReceiver = RTPReceiveSession(
            depacketizer: VP8Depacketizer(),
            configuration: .init(local: Self.unusedAddress, multiplexed: true, payloadType: video.payloadType,
                                 jitterBuffer: .init(rtx: video.rtx), reportInterval: .milliseconds(100)),
            transport: videoIn)
        let audioReceiver = RTPReceiveSession(
            depacketizer: OpusDepacketizer(),
            configuration: .init(local: Self.unusedAddress, multiplexed: true, payloadType: audio.payloadType,
                                 ssrc: audio.ssrc, reportInterval: .milliseconds(100)),
            transport: audioIn)
        let keyframeRequested = Atomic<Bool>(false)
        videoSender.onKeyframeRequest = { keyframeRequested.store(true, ordering: .relaxed) }
        videoSender.start()
        audioSender.start()

        let frameCount = 30
        var sentVideo: [EncodedFrame] = [], sentAudio: [EncodedFrame] = []
        var receivedVideo: [EncodedFrame] = [], receivedAudio: [EncodedFrame] = []
        var videoEnded = false, audioEnded = false
        let clock = SystemClock()
        func pull(until deadline: ClockTime) throws {
            if !videoEnded, case let event = try videoReceiver.next(until: deadline) {
                switch event {
                case .frame(let frame): receivedVideo.append(frame)
                case .goodbye: videoEnded = true
                case .timedOut: break
                }
            }
            if !audioEnded, case let event = try audioReceiver.next(until: deadline) {
                switch event {
                case .frame(let frame): receivedAudio.append(frame)
                case .goodbye: audioEnded = true
                case .timedOut: break
                }
            }
        }
        // A delta frame first, then a keyframe when asked; video every 33 ms, audio every 20 ms.
        let start = clock.now
        var end = start + .seconds(5)
        func reportsFlowed() -> Bool {
            videoSender.statistics.receiverReports > 0 && audioSender.statistics.receiverReports > 0
                && videoReceiver.statistics.senderReports > 0 && audioReceiver.statistics.senderReports > 0
        }
        while clock.now < end {
            let elapsed = clock.now - start
            if sentVideo.count < frameCount, elapsed >= .milliseconds(33 * Int64(sentVideo.count)) {
                let frame = Self.videoFrame(sentVideo.count, keyframe: keyframeRequested.exchange(false, ordering: .relaxed))
                try videoSender.send(frame)
                sentVideo.append(frame)
            }
            if sentAudio.count < frameCount, elapsed >= .milliseconds(20 * Int64(sentAudio.count)) {
                let frame = Self.audioFrame(sentAudio.count)
                try audioSender.send(frame)
                sentAudio.append(frame)
            }
            try pull(until: clock.now + .milliseconds(2))
            if sentVideo.count == frameCount, sentAudio.count == frameCount, receivedAudio.count == frameCount,
               receivedVideo.last.map({ Array($0.bytes) == Array(sentVideo[frameCount - 1].bytes) }) ?? false, reportsFlowed() {
                break
            }
        }
        #expect(reportsFlowed(), "SR and RR both ways")
        videoSender.close()
        audioSender.close()
        end = clock.now + .seconds(3)
        while clock.now < end, !(videoEnded && audioEnded) { try pull(until: clock.now + .milliseconds(5)) }
        #expect(videoEnded && audioEnded, "both BYEs routed to their receivers")

        let firstKeyframe = try #require(sentVideo.firstIndex { $0.isKeyframe }, "the receiver's PLI brought a keyframe")
        #expect(firstKeyframe >= 1)
        #expect(receivedVideo.map { Array($0.bytes) } == sentVideo[firstKeyframe...].map { Array($0.bytes) },
                "video frames in = frames out, from the keyframe on")
        #expect(receivedAudio.map { Array($0.bytes) } == sentAudio.map { Array($0.bytes) }, "audio frames in = out")
        #expect(videoReceiver.statistics.keyframeRequestsSent >= 1 && videoSender.statistics.keyframeRequests >= 1)
        #expect(audioSender.statistics.keyframeRequests == 0, "the video PLI did not reach the audio sender")
        #expect(videoReceiver.statistics.foreignPackets == 0 && audioReceiver.statistics.foreignPackets == 0,
                "no audio in the video session, nor the reverse")

        let routing = pair.answererDemux.statistics
        #expect(routing.rtpRoutedByPayloadType >= 1 && routing.rtpRoutedBySSRC > 0 && routing.rtpUnrouted == 0, "\(routing)")
        for transport in [videoIn, audioIn] {
            #expect(transport.statistics.droppedRingFull == 0 && transport.statistics.sendsRefused == 0, "\(transport.name)")
        }
        #expect(pair.offerer.failedSends == 0 && pair.answerer.failedSends == 0)
        videoReceiver.close()
        audioReceiver.close()
    }
}
