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
        let result = Mutex<Int??>(nil)
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
