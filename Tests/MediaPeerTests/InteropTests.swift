/// Calls between Sluice's WebRTC transport and real peers from tools/peers (aiortc, headless Chromium)
/// over 127.0.0.1: JSEP offer/answer through `makeWebRTCOffer`/`makeWebRTCAnswer`/
/// `readRemoteDescription`, ICE, DTLS-SRTP and SRTP through `PeerTransportLoop`. Each call is bounded
/// (the peers' `--timeout`, and every wait here), and the peer process is killed on every path.
/// Skipped when tools/peers/.venv (tools/peers/setup) or Chromium is missing.
import Foundation
import MediaCore
import MediaDTLS
import MediaICE
import MediaNegotiation
import MediaPeer
import MediaSDP
import Testing

@Suite(.serialized) struct InteropTests {
    static let aiortcMissing = PeerTools.missing("aiortc_peer.py")
    static let chromiumMissing = PeerTools.missing("chromium_peer.py")
    /// Set by tools/peers/loopback-only: lo is the only interface.
    static let loopbackOnly = ProcessInfo.processInfo.environment["SLUICE_LOOPBACK_ONLY"] == "1"

    /// A peer's JSON result: whether its connection state reached "connected".
    static func reachedConnected(_ result: [String: Any]?) -> Bool { result?["reached_connected"] as? Bool == true }

    static func describe(_ result: [String: Any]?) -> String {
        guard let result, let data = try? JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]) else { return "no JSON" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Sluice answers `peer`'s offer (read from its stdout) and waits for `.connected` and
    /// `minimumPackets` VP8 RTP packets; returns the side, the negotiated VP8, and the setup time.
    private static func answer(_ peer: PeerProcess, wrongFingerprint: Bool = false,
                               ice: ICEConfiguration = ICEConfiguration(includeLoopback: true),
                               options: WebRTCOptions = WebRTCOptions(receives: [.audio, .video])) throws
        -> (side: SluiceSide, vp8: (payloadType: UInt8, ssrc: UInt32?), written: ClockTime)
    {
        let offer = try SessionDescription(parsing: try peer.readSDP(seconds: 20))
        let remote = try readRemoteDescription(offer, type: .offer, capabilities: interopCapabilities)
        let side = try SluiceSide(iceRole: .controlled, ice: ice)
        let shown = wrongFingerprint ? try DTLSCertificate().fingerprint : nil
        let answer = try makeWebRTCAnswer(to: offer, capabilities: interopCapabilities,
                                          transport: side.transportDescription(setup: remote.localSetup, fingerprint: shown),
                                          options: options)
        // The answerer answers actpass with active (RFC 8842 §5.3) and is the DTLS client.
        #expect(answer.setup == .active)
        try side.setRemote(remote.transport, dtlsRole: answer.setup.isDTLSClient ? .client : .server)
        let answerText = answer.description.serialized()
        // RFC 8839 §5.1: `a=candidate:<foundation> ...`, the value without a second "candidate:".
        #expect(answerText.contains("a=candidate:") && !answerText.contains("a=candidate:candidate:"), "\(answerText)")
        peer.writeSDP(answerText)
        let written = SystemClock().now
        guard let vp8 = negotiatedVP8(remote) else {
            side.loop.close()
            throw InteropFailure("no VP8 in the offer:\n\(offer.serialized())")
        }
        return (side, vp8, written)
    }

    /// Waits for `.connected` and then for `count` packets of `payloadType`; records the numbers.
    private static func expectMedia(_ side: SluiceSide, payloadType: UInt8, count: Int, since written: ClockTime, peer: PeerProcess,
                                    label: String) -> [ArrivedPacket]
    {
        let record = side.record
        let connected = record.wait(seconds: 15) { record.lastState == .connected || record.lastState == .failed }
        #expect(connected && record.lastState == .connected,
                "\(label): transport \(String(describing: record.lastState)), failures \(record.failures.withLock { $0 }); peer stderr:\n\(peer.stderrTail())")
        guard record.lastState == .connected, let at = record.time(of: .connected) else { return [] }
        let setup = at - written
        #expect(record.wait(seconds: 10) { record.packets(payloadType: payloadType).count > count },
                "\(label): \(record.packets(payloadType: payloadType).count) RTP packets of payload type \(payloadType), all: \(record.packets.withLock { $0.count })")
        let packets = record.packets(payloadType: payloadType)
        print("interop \(label): answer written → connected \(setup), \(packets.count) RTP packets (PT \(payloadType)), \(String(format: "%.1f", packetRate(packets))) packets/s")
        return packets
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(1)))
    func aiortcOffersSluiceAnswers() throws {
        // Sends only: with nothing to receive, aiortc succeeds after --duration of connected media.
        let peer = try PeerProcess(script: "aiortc_peer.py",
                                   arguments: ["offer", "--send-video", "pattern", "--codec", "vp8", "--timeout", "20",
                                               "--duration", "4", "--linger", "0.5"])
        defer { peer.kill() }
        let (side, vp8, written) = try Self.answer(peer)
        defer { side.loop.close() }
        let packets = Self.expectMedia(side, payloadType: vp8.payloadType, count: 50, since: written, peer: peer,
                                       label: "aiortc offers, Sluice answers")
        if let ssrc = vp8.ssrc { #expect(packets.allSatisfy { $0.ssrc == ssrc }, "offer's a=ssrc \(ssrc)") }
        // Keep receiving until aiortc ends its call: the decoder gets every frame it sent.
        let result = peer.result(seconds: 20)
        #expect(Self.reachedConnected(result), "\(Self.describe(result))")
        #expect(result?["ok"] as? Bool == true, "\(Self.describe(result))")
        let all = side.record.packets(payloadType: vp8.payloadType)
        let pictures = try decodeVP8(all)
        print("interop aiortc offers, Sluice answers: \(all.count) packets in all (\(String(format: "%.1f", packetRate(all))) packets/s), \(pictures.count) pictures decoded, aiortc sent \(String(describing: result?["sent"]))")
        #expect(pictures.count > 20)
        #expect(pictures.allSatisfy { $0.width == 640 && $0.height == 480 },
                "sizes \(Set(pictures.map { "\($0.width)x\($0.height)" }))")
        #expect(side.record.failures.withLock { $0 }.isEmpty)
    }

    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(1)))
    func sluiceOffersAiortcAnswers() throws {
        let peer = try PeerProcess(script: "aiortc_peer.py",
                                   arguments: ["answer", "--send-video", "pattern", "--codec", "vp8", "--timeout", "20",
                                               "--duration", "4", "--linger", "0.5"])
        defer { peer.kill() }
        let side = try SluiceSide(iceRole: .controlling)
        defer { side.loop.close() }
        let offer = makeWebRTCOffer(capabilities: interopCapabilities, transport: side.transportDescription(setup: .actpass),
                                    options: WebRTCOptions(media: [.video], receives: [.video]))
        peer.writeSDP(offer.serialized())
        let offered = SystemClock().now
        let answerText = try peer.readSDP(seconds: 20)
        let remote = try readRemoteDescription(try SessionDescription(parsing: answerText), type: .answer,
                                               capabilities: interopCapabilities)
        // aiortc answers actpass with active: Sluice, the offerer, is the DTLS server.
        #expect(remote.transport.setup == .active)
        #expect(remote.localSetup == .passive)
        try side.setRemote(remote.transport, dtlsRole: remote.localSetup.isDTLSClient ? .client : .server)
        let answered = SystemClock().now
        let vp8 = try #require(negotiatedVP8(remote), "answer:\n\(answerText)")
        let packets = Self.expectMedia(side, payloadType: vp8.payloadType, count: 50, since: answered, peer: peer,
                                       label: "Sluice offers, aiortc answers")
        if let connected = side.record.time(of: .connected) {
            print("interop Sluice offers, aiortc answers: offer written → connected \(connected - offered)")
        }
        if let ssrc = vp8.ssrc { #expect(packets.allSatisfy { $0.ssrc == ssrc }, "answer's a=ssrc \(ssrc)") }
        let result = peer.result(seconds: 20)
        #expect(Self.reachedConnected(result), "\(Self.describe(result))")
        #expect(result?["ok"] as? Bool == true, "\(Self.describe(result))")
        let all = side.record.packets(payloadType: vp8.payloadType)
        let pictures = try decodeVP8(all)
        print("interop Sluice offers, aiortc answers: \(all.count) packets in all (\(String(format: "%.1f", packetRate(all))) packets/s), \(pictures.count) pictures decoded")
        #expect(pictures.count > 20)
        #expect(pictures.allSatisfy { $0.width == 640 && $0.height == 480 })
    }

    /// Descriptions for Chromium leave out transport-wide congestion control (header extension and
    /// rtcp-fb): Sluice sends no transport-cc feedback yet, and Chromium paces on it when negotiated.
    static let chromiumOptions = WebRTCOptions(
        receives: [.audio, .video], headerExtensions: [RTPHeaderExtensionURI.mid, RTPHeaderExtensionURI.absSendTime],
        videoFeedback: [.nack, .pli, .fir])

    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(1)))
    func chromiumOffersSluiceAnswers() throws {
        // Fake camera and microphone, sent only; Chromium prefers VP8 (--codec vp8).
        let peer = try PeerProcess(script: "chromium_peer.py",
                                   arguments: ["offer", "--video", "send", "--audio", "send", "--codec", "vp8",
                                               "--timeout", "25", "--duration", "4", "--linger", "0.5"])
        defer { peer.kill() }
        let (side, vp8, written) = try Self.answer(peer, options: Self.chromiumOptions)
        defer { side.loop.close() }
        let reports = ReceiverReports(side: side)
        defer { reports.stop() }
        let packets = Self.expectMedia(side, payloadType: vp8.payloadType, count: 20, since: written, peer: peer,
                                       label: "Chromium offers, Sluice answers")
        if let ssrc = vp8.ssrc { #expect(packets.allSatisfy { $0.ssrc == ssrc }, "offer's a=ssrc \(ssrc)") }
        let profile = side.loop.withTransport { core, _ in core.srtpProfile }
        #expect(profile != nil)
        let result = peer.result(seconds: 25)
        #expect(Self.reachedConnected(result), "\(Self.describe(result))")
        let all = side.record.packets(payloadType: vp8.payloadType)
        let lastArrival = all.last.map { ($0.arrival - written).seconds } ?? 0
        let pictures = try decodeVP8(all)
        let ice = side.loop.withTransport { core, _ in core.ice.statistics }
        print("interop Chromium offers, Sluice answers: SRTP \(String(describing: profile)), \(all.count) VP8 packets in all (\(String(format: "%.1f", packetRate(all))) packets/s), last \(lastArrival) s after the answer, \(pictures.count) pictures decoded \(Set(pictures.map { "\($0.width)x\($0.height)" })), Sluice \(side.record.states.withLock { $0.map(\.state.rawValue) }), STUN checks received \(ice.checksReceived); Chromium sent \(String(describing: result?["outbound"]))")
        #expect(pictures.count > 10)
        #expect(pictures.allSatisfy { $0.width == 640 && $0.height == 480 })
        Self.expectWholeCall(lastArrival)
    }

    /// Chromium sends for the whole call (4 s after connected) on a quiet machine. On a loaded one
    /// (2 cores, six busy loops) it goes silent, no RTP and no STUN checks, 1.2 to 1.7 s after
    /// connecting while its stats still say connected: with Sluice either way and with aiortc
    /// answering it alike, so this is Chromium's, not Sluice's.
    private static func expectWholeCall(_ lastArrival: Double) {
        withKnownIssue("headless Chromium stops sending under CPU load", isIntermittent: true) {
            #expect(lastArrival > 3.0, "last VP8 packet \(lastArrival) s after the answer")
        }
    }

    /// Sluice offers to receive video; Chromium answers sending its fake camera.
    @Test(.enabled(if: aiortcMissing == nil && chromiumMissing == nil, "needs Chromium, chromedriver and tools/peers/.venv"),
          .enabled(if: loopbackOnly, "Chromium sends from every interface: run inside tools/peers/loopback-only (tools/peers/README.md)"),
          .timeLimit(.minutes(1)))
    func sluiceOffersChromiumAnswers() throws {
        let peer = try PeerProcess(script: "chromium_peer.py",
                                   arguments: ["answer", "--video", "send", "--audio", "send", "--codec", "vp8",
                                               "--timeout", "25", "--duration", "4", "--linger", "0.5"])
        defer { peer.kill() }
        let side = try SluiceSide(iceRole: .controlling)
        defer { side.loop.close() }
        let reports = ReceiverReports(side: side)
        defer { reports.stop() }
        var options = Self.chromiumOptions
        options.media = [.video]
        options.receives = [.video]
        let offer = makeWebRTCOffer(capabilities: interopCapabilities, transport: side.transportDescription(setup: .actpass), options: options)
        peer.writeSDP(offer.serialized())
        let answerText = try peer.readSDP(seconds: 25)
        let remote = try readRemoteDescription(try SessionDescription(parsing: answerText), type: .answer,
                                               capabilities: interopCapabilities)
        try side.setRemote(remote.transport, dtlsRole: remote.localSetup.isDTLSClient ? .client : .server)
        let answered = SystemClock().now
        let vp8 = try #require(negotiatedVP8(remote), "answer:\n\(answerText)")
        let packets = Self.expectMedia(side, payloadType: vp8.payloadType, count: 20, since: answered, peer: peer,
                                       label: "Sluice offers, Chromium answers")
        if let ssrc = vp8.ssrc { #expect(packets.allSatisfy { $0.ssrc == ssrc }, "answer's a=ssrc \(ssrc)") }
        let result = peer.result(seconds: 25)
        #expect(Self.reachedConnected(result), "\(Self.describe(result))")
        let all = side.record.packets(payloadType: vp8.payloadType)
        let lastArrival = all.last.map { ($0.arrival - answered).seconds } ?? 0
        let pictures = try decodeVP8(all)
        print("interop Sluice offers, Chromium answers: Chromium setup \(remote.transport.setup), \(all.count) VP8 packets in all (\(String(format: "%.1f", packetRate(all))) packets/s), last \(lastArrival) s after the answer, \(pictures.count) pictures decoded; Chromium sent \(String(describing: result?["outbound"]))")
        #expect(pictures.count > 10)
        #expect(pictures.allSatisfy { $0.width == 640 && $0.height == 480 })
        Self.expectWholeCall(lastArrival)
    }

    /// Sluice's answer shows another certificate's fingerprint. aiortc checks the fingerprint only
    /// once its OpenSSL handshake is done, so Sluice, the DTLS client, completes the handshake (its
    /// own check of aiortc's certificate passes) and is connected; aiortc then fails the call without
    /// an alert and stops answering consent checks, and Sluice ends failed by RFC 7675 (consent
    /// timeout shortened to 4 s here). Nothing hangs.
    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(1)))
    func wrongFingerprintInSluiceAnswerFailsBothSides() throws {
        let peer = try PeerProcess(script: "aiortc_peer.py",
                                   arguments: ["offer", "--send-video", "pattern", "--codec", "vp8", "--timeout", "10",
                                               "--duration", "2"])
        defer { peer.kill() }
        let ice = ICEConfiguration(consentInterval: .milliseconds(1000), consentTimeout: .milliseconds(4000),
                                   disconnectedTimeout: .milliseconds(2000), includeLoopback: true)
        let (side, _, written) = try Self.answer(peer, wrongFingerprint: true, ice: ice)
        defer { side.loop.close() }
        let result = peer.result(seconds: 15)
        #expect(result?["ok"] as? Bool == false, "\(Self.describe(result))")
        // aiortc's DTLS transport fails (its INFO log does not say why; the same call with the right
        // fingerprint, aiortcOffersSluiceAnswers, connects).
        #expect(result?["dtls_state"] as? String == "failed", "\(Self.describe(result))")
        let record = side.record
        let ended = record.wait(seconds: 15) { record.lastState == .failed || record.lastState == .closed }
        let states = record.states.withLock { $0.map(\.state.rawValue) }
        let failures = record.failures.withLock { $0.map(\.reason) }
        print("interop wrong fingerprint in Sluice's answer: aiortc error \(String(describing: result?["error"])), dtls_state \(String(describing: result?["dtls_state"])), Sluice states \(states), failures \(failures), ended after \(SystemClock().now - written)")
        #expect(ended, "Sluice states \(states)")
        #expect(record.lastState == .failed, "Sluice states \(states)")
        #expect(failures == ["consent-lost"], "\(failures)")
    }

    /// aiortc's answer read with a wrong fingerprint for aiortc: Sluice itself refuses the peer's
    /// certificate by name.
    @Test(.enabled(if: aiortcMissing == nil, "needs tools/peers/.venv with aiortc (tools/peers/setup)"), .timeLimit(.minutes(1)))
    func wrongFingerprintForAiortcFailsSluiceByName() throws {
        let peer = try PeerProcess(script: "aiortc_peer.py",
                                   arguments: ["offer", "--send-video", "pattern", "--codec", "vp8", "--timeout", "10",
                                               "--duration", "2"])
        defer { peer.kill() }
        let offer = try SessionDescription(parsing: try peer.readSDP(seconds: 20))
        let remote = try readRemoteDescription(offer, type: .offer, capabilities: interopCapabilities)
        let side = try SluiceSide(iceRole: .controlled)
        defer { side.loop.close() }
        let answer = try makeWebRTCAnswer(to: offer, capabilities: interopCapabilities, transport: side.transportDescription(setup: remote.localSetup),
                                          options: WebRTCOptions(receives: [.video]))
        try side.setRemote(remote.transport, dtlsRole: .client, fingerprint: try DTLSCertificate().fingerprint)
        peer.writeSDP(answer.description.serialized())
        let written = SystemClock().now
        let record = side.record
        #expect(record.wait(seconds: 15) { record.lastState == .failed || record.lastState == .closed })
        let failures = record.failures.withLock { $0.map(\.reason) }
        print("interop wrong aiortc fingerprint: Sluice \(String(describing: record.lastState)) \(failures) after \(SystemClock().now - written)")
        #expect(record.lastState == .failed)
        #expect(failures == ["dtls-fingerprint-mismatch"])
        let result = peer.result(seconds: 15)
        #expect(result?["ok"] as? Bool == false, "\(Self.describe(result))")
    }
}

struct InteropFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
