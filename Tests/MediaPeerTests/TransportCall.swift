import MediaCore
import MediaDTLS
import MediaICE
import MediaPeer
import MediaSTUN
import Testing

/// Two `PeerTransport`s joined by an in-memory network with a manual clock: what one transmits reaches
/// the other after `latency`, unless `deliver` says no. The offerer controls ICE and is the DTLS server
/// (its `a=setup:actpass` answered with `active`, RFC 8842 §5.2).
final class TransportCall {
    enum Side: Hashable { case offerer, answerer }

    let offerer: PeerTransport
    let answerer: PeerTransport
    let offererBase = TransportAddress(host: "10.0.0.1", port: 5000)!
    let answererBase = TransportAddress(host: "10.0.0.2", port: 6000)!
    var now = ClockTime.zero
    var latency = ClockTime.milliseconds(5)
    /// Whether a datagram from `side` is delivered.
    var deliver: (Side, ICETransmit) -> Bool = { _, _ in true }
    /// Whether local candidates of `side` are signalled to the other side.
    var trickle: (Side) -> Bool = { _ in true }
    private(set) var received: [Side: [PeerTransport.Received]] = [:]
    private(set) var receivedBytes: [Side: [[UInt8]]] = [:]
    private(set) var events: [Side: [PeerTransport.Event]] = [:]
    private(set) var states: [Side: [PeerTransport.State]] = [:]
    private var inFlight: [(at: ClockTime, to: Side, transmit: ICETransmit)] = []

    /// Two transports with their bases added. Signalling is `signal`'s, by default the transport values
    /// handed over directly (with `offererFingerprint`/`answererFingerprint` in place of the real ones
    /// when given).
    init(offererFingerprint: DTLSFingerprint? = nil, answererFingerprint: DTLSFingerprint? = nil,
         configuration: PeerTransport.Configuration = PeerTransport.Configuration(),
         signal: ((PeerTransport, PeerTransport, ClockTime) throws -> Void)? = nil) throws {
        offerer = PeerTransport(iceRole: .controlling, certificate: try DTLSCertificate(), configuration: configuration)
        answerer = PeerTransport(iceRole: .controlled, certificate: try DTLSCertificate(), configuration: configuration)
        offerer.addLocalBases([offererBase], now: now)
        answerer.addLocalBases([answererBase], now: now)
        if let signal {
            try signal(offerer, answerer, now)
            return
        }
        // The answerer has the offer: it answers setup:active and is the DTLS client.
        try answerer.setRemote(credentials: offerer.ice.localCredentials,
                               fingerprint: offererFingerprint ?? offerer.certificate.fingerprint,
                               dtlsRole: .client, now: now)
        try offerer.setRemote(credentials: answerer.ice.localCredentials,
                              fingerprint: answererFingerprint ?? answerer.certificate.fingerprint,
                              dtlsRole: .server, now: now)
    }

    func transport(_ side: Side) -> PeerTransport { side == .offerer ? offerer : answerer }
    func other(_ side: Side) -> Side { side == .offerer ? .answerer : .offerer }

    /// Runs the network and both transports until `done` holds or `limit` of manual time has passed.
    /// Returns whether `done` held.
    @discardableResult
    func run(for limit: ClockTime, until done: () -> Bool = { false }) -> Bool {
        let end = now + limit
        var stalled = 0
        while true {
            drain()
            if done() { return true }
            let deadlines = [inFlight.map(\.at).min(), offerer.nextTimeout, answerer.nextTimeout].compactMap { $0 }
            guard let next = deadlines.min(), next <= end else {
                now = end
                return done()
            }
            // A timer that stays due after it ran would make an adapter spin: say so and stop.
            stalled = next <= now ? stalled + 1 : 0
            if stalled > 1000 {
                Issue.record("time stopped at \(now): offerer timeout \(String(describing: offerer.nextTimeout)), answerer \(String(describing: answerer.nextTimeout))")
                return false
            }
            now = max(now, next)
            let due = inFlight.filter { $0.at <= now }
            inFlight.removeAll { $0.at <= now }
            for item in due { receive(item.transmit, on: item.to) }
            for side in [Side.offerer, .answerer] where (transport(side).nextTimeout ?? .max) <= now {
                transport(side).handleTimeout(now: now)
            }
        }
    }

    /// Sends an RTP packet (or RTCP with `rtcp`) from `side` and puts it on the network; false when the
    /// transport refused it.
    func send(_ packet: [UInt8], from side: Side, rtcp: Bool = false) throws -> Bool {
        var buffer = packet + [UInt8](repeating: 0, count: 64)
        let sent = try buffer.withUnsafeMutableBytes { raw in
            rtcp ? try transport(side).sendRTCP(raw, length: packet.count, now: now)
                 : try transport(side).sendRTP(raw, length: packet.count, now: now)
        }
        guard let sent else { return false }
        put(ICETransmit(source: sent.route.source, destination: sent.route.destination,
                        bytes: Array(buffer.prefix(sent.length)), relayed: sent.route.relayed), from: side)
        return true
    }

    /// A raw datagram from the other side's address, as an attacker on the path could send.
    func inject(_ bytes: [UInt8], to side: Side) -> PeerTransport.Received {
        let base = side == .offerer ? offererBase : answererBase
        let source = side == .offerer ? answererBase : offererBase
        return deliverBytes(bytes, from: source, to: base, on: side)
    }

    private func drain() {
        var moved = true
        while moved {
            moved = false
            for side in [Side.offerer, .answerer] {
                while let transmit = transport(side).pollTransmit() {
                    put(transmit, from: side)
                    moved = true
                }
                while let event = transport(side).pollEvent() {
                    moved = true
                    events[side, default: []].append(event)
                    switch event {
                    case .localCandidate(let candidate) where trickle(side):
                        transport(other(side)).addRemoteCandidate(candidate, now: now)
                    case .stateChanged(let state):
                        states[side, default: []].append(state)
                    default: break
                    }
                }
            }
        }
    }

    private func put(_ transmit: ICETransmit, from side: Side) {
        guard deliver(side, transmit) else { return }
        let destination: Side = transmit.destination == offererBase ? .offerer : .answerer
        guard destination != side else { return }
        inFlight.append((now + latency, destination, transmit))
    }

    private func receive(_ transmit: ICETransmit, on side: Side) {
        let result = deliverBytes(transmit.bytes, from: transmit.source, to: transmit.destination, on: side)
        if case .consumed = result { return }
        received[side, default: []].append(result)
    }

    private func deliverBytes(_ bytes: [UInt8], from source: TransportAddress, to base: TransportAddress,
                              on side: Side) -> PeerTransport.Received {
        var buffer = bytes
        let result = buffer.withUnsafeMutableBytes {
            transport(side).handleReceive($0, length: bytes.count, from: source, to: base, now: now)
        }
        switch result {
        case .rtp(let length), .rtcp(let length): receivedBytes[side, default: []].append(Array(buffer.prefix(length)))
        case .consumed: break
        }
        return result
    }
}

/// An RTP packet (RFC 3550 §5.1): V=2, PT 96, the given sequence number, a payload of `size` bytes.
func rtpPacket(sequence: UInt16, ssrc: UInt32 = 0x1122_3344, size: Int = 100) -> [UInt8] {
    [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xff),
     0, 0, UInt8(sequence >> 8), UInt8(sequence & 0xff),              // timestamp
     UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xff), UInt8((ssrc >> 8) & 0xff), UInt8(ssrc & 0xff)]
        + (0..<size).map { UInt8(truncatingIfNeeded: Int(sequence) &+ $0) }
}

/// An RTCP receiver report with no report blocks (RFC 3550 §6.4.2): PT 201, length 1.
func rtcpReceiverReport(ssrc: UInt32 = 0x5566_7788) -> [UInt8] {
    [0x80, 201, 0, 1, UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xff), UInt8((ssrc >> 8) & 0xff), UInt8(ssrc & 0xff)]
}
