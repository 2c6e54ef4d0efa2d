/// The Sluice side of an interop call with a reference peer (aiortc, Chromium): a `PeerTransport` run
/// by a `PeerTransportLoop` on 127.0.0.1, its description for JSEP, and what it received.
import CodecVPX
import Foundation
import MediaCodecs
import MediaCore
import MediaDTLS
import MediaICE
import MediaNegotiation
import MediaPeer
import MediaRTP
import MediaSDP
import MediaTransport
import Synchronization

/// One SRTP-unprotected RTP packet as the loop delivered it, with its arrival on the system clock.
struct ArrivedPacket: Sendable {
    var bytes: [UInt8]
    var arrival: ClockTime

    var payloadType: UInt8? { bytes.count >= 12 ? bytes[1] & 0x7F : nil }
    var ssrc: UInt32? {
        bytes.count >= 12 ? bytes[8..<12].reduce(0) { $0 << 8 | UInt32($1) } : nil
    }
}

/// What the loop's handlers saw, with times on the system clock.
final class InteropRecord: Sendable {
    let states = Locked<[(state: PeerTransport.State, at: ClockTime)]>([])
    let failures = Locked<[PeerTransportError]>([])
    let localCandidates = Locked<[ICECandidate]>([])
    let packets = Locked<[ArrivedPacket]>([])

    var lastState: PeerTransport.State? { states.withLock { $0.last?.state } }

    func time(of state: PeerTransport.State) -> ClockTime? { states.withLock { $0.first { $0.state == state }?.at } }

    func packets(payloadType: UInt8) -> [ArrivedPacket] { packets.withLock { $0.filter { $0.payloadType == payloadType } } }

    /// Polls `condition` for up to `seconds` (`eventually`); false on time out.
    func wait(seconds: Double, for condition: () -> Bool) -> Bool { eventually(seconds: seconds, condition) }
}

/// A Sluice transport on a loop bound to 127.0.0.1:0, host candidates from loopback.
struct SluiceSide {
    let loop: PeerTransportLoop
    let record: InteropRecord

    init(iceRole: ICERole, ice: ICEConfiguration = ICEConfiguration(includeLoopback: true)) throws {
        let record = InteropRecord()
        let configuration = PeerTransport.Configuration(ice: ice)
        let transport = PeerTransport(iceRole: iceRole, certificate: try DTLSCertificate(),
                                      configuration: configuration)
        let handlers = PeerTransportLoop.Handlers(
            onEvent: { event in
                switch event {
                case .localCandidate(let candidate): record.localCandidates.withLock { $0.append(candidate) }
                case .stateChanged(let state): record.states.withLock { $0.append((state, SystemClock().now)) }
                case .failed(let error): record.failures.withLock { $0.append(error) }
                default: break
                }
            },
            onRTP: { packet in
                let arrived = ArrivedPacket(bytes: Array(packet), arrival: SystemClock().now)
                record.packets.withLock { $0.append(arrived) }
            })
        loop = try PeerTransportLoop(transport: transport, bindingTo: [try SocketAddress(parsing: "127.0.0.1:0")],
                                     handlers: handlers)
        self.record = record
        // Gathering happens in start(): the host candidates are known when it returns.
        loop.start()
    }

    /// This side's transport for a description (`PeerTransport.localTransportDescription`): credentials,
    /// fingerprint (or `fingerprint`, to test a wrong one) and the host candidates gathered so far.
    func transportDescription(setup: SDPSetup, fingerprint: DTLSFingerprint? = nil) -> TransportDescription {
        let candidates = record.localCandidates.withLock { $0 }
        var description = loop.withTransport { core, _ in
            core.localTransportDescription(setup: setup, candidates: candidates, endOfCandidates: true)
        }
        if let fingerprint {
            description.fingerprints = [SDPFingerprint(algorithm: fingerprint.algorithm, bytes: fingerprint.bytes)]
        }
        return description
    }

    /// The remote description's transport: credentials, its first fingerprint (or `fingerprint`),
    /// the DTLS role this side plays, then its candidates (mDNS ones cannot be resolved here).
    func setRemote(_ remote: TransportDescription, dtlsRole: DTLSRole, fingerprint: DTLSFingerprint? = nil) throws {
        guard let first = remote.fingerprints.first else { throw InteropError.noFingerprint }
        let theirs = fingerprint ?? DTLSFingerprint(algorithm: first.algorithm.lowercased(), bytes: first.bytes)
        let candidates = try remote.candidates.map { try ICECandidate(parsing: $0) }.filter { !$0.isMDNS }
        try loop.withTransport { core, now in
            try core.setRemote(credentials: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), fingerprint: theirs,
                               dtlsRole: dtlsRole, now: now)
            for candidate in candidates { core.addRemoteCandidate(candidate, now: now) }
            if remote.endOfCandidates { core.endOfRemoteCandidates(now: now) }
        }
    }
}

enum InteropError: Error {
    case noFingerprint
}

/// The codecs Sluice takes in these calls, written as the codec registry would: VP8 and Opus.
let interopCapabilities: [CodecCapability] = [.vp8(), .opus()]

/// The payload type and the remote SSRC the description negotiated for VP8 in its first video section.
func negotiatedVP8(_ remote: RemoteDescription) -> (payloadType: UInt8, ssrc: UInt32?)? {
    guard let video = remote.media.first(where: { $0.type == "video" && !$0.rejected }),
          let codec = video.codecs.first(where: { $0.capability.codec == .vp8 })
    else { return nil }
    return (codec.payloadType, video.senders.first?.ssrc)
}

/// Received packets per second between the first and the last.
func packetRate(_ packets: [ArrivedPacket]) -> Double {
    guard let first = packets.first?.arrival, let last = packets.last?.arrival, last > first else { return 0 }
    return Double(packets.count - 1) / (last - first).seconds
}

/// The pictures a receiver gets from VP8 RTP packets: the jitter buffer reassembles frames at the
/// packets' arrival times, the VP8 decoder decodes them.
func decodeVP8(_ packets: [ArrivedPacket]) throws -> [VideoFrame] {
    var buffer = JitterBuffer(depacketizer: VP8Depacketizer(), pool: BufferPool(name: "interop-jitter"))
    let decoder = try VP8Decoder(format: VideoFormat(encoding: .compressed(.vp8), width: 640, height: 480,
                                                     frameRate: Rational(30, 1)))
    var pictures: [VideoFrame] = []
    func drain(at now: ClockTime) throws {
        while let frame = buffer.nextFrame(at: now) { try decoder.decode(frame) { pictures.append($0) } }
    }
    for packet in packets {
        guard let parsed = try? RTPPacket(parsing: packet.bytes) else { continue }
        _ = packet.bytes.withUnsafeBytes { buffer.insert(parsed, in: $0, arrival: packet.arrival) }
        try drain(at: packet.arrival)
    }
    if let last = packets.last { try drain(at: last.arrival + .seconds(2)) }
    try decoder.flush { pictures.append($0) }
    return pictures
}

/// Sends an RTCP receiver report (RFC 3550 §6.4.2) every `interval` for each SSRC received so far,
/// on its own thread, as a receiving pipeline would; stopped by `stop()`. Browsers pace their
/// sending on this feedback.
final class ReceiverReports: Sendable {
    private final class Flags: Sendable {
        let stopped = Atomic<Bool>(false)
        let done = Locked<Bool>(false)
    }

    private let flags = Flags()

    init(side: SluiceSide, interval: Double = 0.25) {
        let record = side.record, loop = side.loop, flags = self.flags
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 1500)
            while !flags.stopped.load(ordering: .acquiring) {
                // Highest sequence number per SSRC (no wrap in these short calls).
                var highest: [UInt32: UInt32] = [:]
                for packet in record.packets.withLock({ $0 }) {
                    guard let ssrc = packet.ssrc, packet.bytes.count >= 4 else { continue }
                    let sequence = UInt32(packet.bytes[2]) << 8 | UInt32(packet.bytes[3])
                    highest[ssrc] = max(highest[ssrc] ?? 0, sequence)
                }
                let blocks = highest.map { ReportBlock(ssrc: $0.key, extendedHighestSequenceNumber: $0.value) }
                if !blocks.isEmpty {
                    let report = ReceiverReport(ssrc: 0x5EED_0001, reportBlocks: Array(blocks.prefix(31)))
                    if let length = try? buffer.withUnsafeMutableBytes({ try report.write(into: $0) }) {
                        _ = try? buffer.withUnsafeMutableBytes { try loop.sendRTCP($0, length: length) }
                    }
                }
                usleep(UInt32(interval * 1_000_000))
            }
            flags.done.withLock { $0 = true }
        }
    }

    /// Stops the thread and waits (up to 2 s) for it to end.
    func stop() {
        flags.stopped.store(true, ordering: .releasing)
        let end = Date().addingTimeInterval(2)
        while !flags.done.withLock({ $0 }), Date() < end { usleep(5000) }
    }
}
