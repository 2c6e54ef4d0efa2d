import Glibc
import MediaCore
import MediaSCTP
import TestSupport

/// Two `DataChannels` joined in memory, the DTLS client's and the server's, with SCTP packets lost at
/// `loss` in each direction (a seeded generator) and delivered `latency` after they were sent, on the
/// system clock (usrsctp's timers run on it).
final class ChannelPair {
    let client: DataChannels
    let server: DataChannels
    var clientEvents: [DataChannelEvent] = []
    var serverEvents: [DataChannelEvent] = []
    private(set) var packetsLost = 0
    /// The largest SCTP packet either side sent.
    private(set) var largestPacket = 0
    var loss: Double
    private let latency: ClockTime
    private var inFlight: [(at: ClockTime, toServer: Bool, packet: [UInt8])] = []
    private var random: SplitMix64
    let clock = SystemClock()

    init(loss: Double = 0, latency: ClockTime = .zero, seed: UInt64 = 1, configuration: SCTPConfiguration = SCTPConfiguration(),
         remoteMaxMessageSize: Int = 262_144) throws {
        client = try DataChannels(configuration: .init(sctp: configuration, isDTLSClient: true,
                                                       remoteMaxMessageSize: remoteMaxMessageSize))
        server = try DataChannels(configuration: .init(sctp: configuration, isDTLSClient: false,
                                                       remoteMaxMessageSize: remoteMaxMessageSize))
        self.loss = loss
        self.latency = latency
        random = SplitMix64(seed: seed)
    }

    /// Starts both ends and runs until both see the association up.
    func connect() throws {
        try client.start(now: clock.now)
        try server.start(now: clock.now)
        let up = run(seconds: 20) {
            $0.clientEvents.contains(.associationEstablished) && $0.serverEvents.contains(.associationEstablished)
        }
        guard up else { throw PairError.timedOut("association") }
    }

    enum PairError: Error { case timedOut(String) }

    /// Moves packets and runs timers until `done` holds or `seconds` pass; whether `done` held.
    @discardableResult
    func run(seconds: Double, until done: (ChannelPair) -> Bool) -> Bool {
        let deadline = clock.now + .seconds(seconds)
        while clock.now < deadline {
            if done(self) { return true }
            if !step() { usleep(300) }
        }
        return done(self)
    }

    /// One round: packets both ways, due timers, events; whether a packet moved.
    func step() -> Bool {
        let now = clock.now
        var moved = false
        while let packet = client.pollTransmit() {
            moved = true
            largestPacket = max(largestPacket, packet.count)
            if !lose() { inFlight.append((now + latency, true, packet)) }
        }
        while let packet = server.pollTransmit() {
            moved = true
            largestPacket = max(largestPacket, packet.count)
            if !lose() { inFlight.append((now + latency, false, packet)) }
        }
        let due = inFlight.filter { $0.at <= now }
        inFlight.removeAll { $0.at <= now }
        for item in due { (item.toServer ? server : client).handleReceive(item.packet, now: now) }
        for side in [client, server] where (side.nextTimeout.map { $0 <= now } ?? false) { side.handleTimeout(now: now) }
        while let event = client.pollEvent() { clientEvents.append(event) }
        while let event = server.pollEvent() { serverEvents.append(event) }
        return moved || !due.isEmpty
    }

    private func lose() -> Bool {
        guard loss > 0, Double(random.next() % 1_000_000) / 1_000_000 < loss else { return false }
        packetsLost += 1
        return true
    }

    static func messages(in events: [DataChannelEvent], on id: UInt16) -> [DataChannelMessage] {
        events.compactMap { if case .message(id, let message) = $0 { message } else { nil } }
    }
}
