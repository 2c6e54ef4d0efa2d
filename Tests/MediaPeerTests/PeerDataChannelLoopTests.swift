/// Data channels between two Sluice peers: SCTP over the DTLS of two `PeerTransportLoop`s on 127.0.0.1.
import Glibc
import MediaCore
import MediaDTLS
import MediaICE
import MediaPeer
import MediaSCTP
import MediaTransport
import TestSupport
import Testing

/// One side: its loop and channels, set once made, and what its channels reported.
private final class ChannelSide: Sendable {
    let loop = Locked<PeerTransportLoop?>(nil)
    let channels = Locked<PeerDataChannelLoop?>(nil)
    let events = Locked<[DataChannelEvent]>([])

    func messages(on id: UInt16) -> [DataChannelMessage] {
        events.withLock { $0.compactMap { if case .message(id, let message) = $0 { message } else { nil } } }
    }

    func saw(_ event: DataChannelEvent) -> Bool { events.withLock { $0.contains(event) } }

    var channelLoop: PeerDataChannelLoop { channels.withLock { $0 }! }
}

/// Waits up to `seconds` for `condition`, polling.
private func wait(seconds: Double, for condition: () -> Bool) -> Bool {
    let clock = SystemClock(), end = clock.now + .seconds(seconds)
    while clock.now < end {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

@Suite(.serialized) struct PeerDataChannelLoopTests {
    /// A loop whose events feed its channels; candidates trickle to `other`.
    private static func makeSide(role: ICERole, isDTLSClient: Bool, side: ChannelSide, other: ChannelSide,
                                 sctp: SCTPConfiguration = SCTPConfiguration()) throws {
        let configuration = PeerTransport.Configuration(ice: ICEConfiguration(includeLoopback: true))
        let transport = PeerTransport(iceRole: role, certificate: try DTLSCertificate(), configuration: configuration)
        let handlers = PeerTransportLoop.Handlers(onEvent: { event in
            if case .localCandidate(let candidate) = event {
                other.loop.withLock { $0 }?.withTransport { core, now in core.addRemoteCandidate(candidate, now: now) }
            }
            side.channels.withLock { $0 }?.handle(event)
        })
        let loop = try PeerTransportLoop(transport: transport, bindingTo: [try SocketAddress(parsing: "127.0.0.1:0")],
                                         handlers: handlers)
        let channels = try PeerDataChannelLoop(
            loop: loop, configuration: DataChannels.Configuration(sctp: sctp, isDTLSClient: isDTLSClient,
                                                                 remoteMaxMessageSize: 262_144),
            onEvent: { event in side.events.withLock { $0.append(event) } })
        side.loop.withLock { $0 = loop }
        side.channels.withLock { $0 = channels }
    }

    /// Two sides over 127.0.0.1 with their SCTP associations up: the offerer controls ICE and is the DTLS
    /// server, the answerer the client.
    private static func connectedSides(answererSCTP: SCTPConfiguration = SCTPConfiguration()) throws
        -> (ChannelSide, ChannelSide) {
        let offerer = ChannelSide(), answerer = ChannelSide()
        try makeSide(role: .controlling, isDTLSClient: false, side: offerer, other: answerer)
        try makeSide(role: .controlled, isDTLSClient: true, side: answerer, other: offerer, sctp: answererSCTP)
        let offererLoop = offerer.loop.withLock { $0 }!, answererLoop = answerer.loop.withLock { $0 }!
        try exchangeTransportDescriptions(offerer: offererLoop, answerer: answererLoop)
        offererLoop.start()
        answererLoop.start()
        #expect(wait(seconds: 15) { offerer.saw(.associationEstablished) && answerer.saw(.associationEstablished) })
        return (offerer, answerer)
    }

    private static func close(_ sides: ChannelSide...) {
        for side in sides { side.channelLoop.close() }
        for side in sides { side.loop.withLock { $0 }?.close() }
    }

    @Test func channelsOpenBothWaysAndCarryAMebibyteOverDTLS() throws {
        // The offerer is the DTLS server (odd streams), the answerer the client (even).
        let (offerer, answerer) = try Self.connectedSides()
        defer { Self.close(offerer, answerer) }

        // A channel each way, text and binary.
        let fromAnswerer = answerer.channelLoop.withChannels { channels, now in
            try? channels.open(label: "chat", options: DataChannelOptions(protocol: "text"), now: now)
        }!
        let fromOfferer = offerer.channelLoop.withChannels { channels, now in try? channels.open(label: "back", now: now) }!
        #expect(fromAnswerer % 2 == 0 && fromOfferer % 2 == 1)
        #expect(wait(seconds: 5) {
            offerer.events.withLock { $0.contains { if case .remoteOpened(let info) = $0 { info.label == "chat" } else { false } } }
                && answerer.events.withLock { $0.contains { if case .remoteOpened(let info) = $0 { info.id == fromOfferer } else { false } } }
        })
        try answerer.channelLoop.withChannels { channels, now in try channels.send(.text("hello offerer"), on: fromAnswerer, now: now) }
        try offerer.channelLoop.withChannels { channels, now in try channels.send(.binary([0, 1, 2, 255]), on: fromOfferer, now: now) }
        #expect(wait(seconds: 5) { !offerer.messages(on: fromAnswerer).isEmpty && !answerer.messages(on: fromOfferer).isEmpty })
        #expect(offerer.messages(on: fromAnswerer) == [.text("hello offerer")])
        #expect(answerer.messages(on: fromOfferer) == [.binary([0, 1, 2, 255])])

        // 1 MiB in 64 KiB messages, sent as bufferedAmount allows.
        let file: [UInt8] = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        let chunk = 64 << 10, threshold = 128 << 10
        var offset = 0
        let clock = SystemClock(), end = clock.now + .seconds(30)
        while offset < file.count, clock.now < end {
            let sent = try answerer.channelLoop.withChannels { channels, now -> Bool in
                guard channels.bufferedAmount(of: fromAnswerer) <= threshold else { return false }
                try channels.send(.binary(Array(file[offset..<offset + chunk])), on: fromAnswerer, now: now)
                return true
            }
            if sent { offset += chunk } else { usleep(1000) }
        }
        #expect(offset == file.count)
        #expect(wait(seconds: 30) { offerer.messages(on: fromAnswerer).count == 1 + file.count / chunk })
        let received: [UInt8] = offerer.messages(on: fromAnswerer).dropFirst().flatMap { message -> [UInt8] in
            if case .binary(let bytes) = message { bytes } else { [] }
        }
        // Digests, not the arrays: a failure would otherwise print a diff of a mebibyte.
        #expect(received.count == file.count)
        #expect(fnv1a(received) == fnv1a(file))
        let stats = offerer.channelLoop.withChannels { channels, _ in channels.stats(fromAnswerer) }
        #expect(stats?.messagesReceived == 17 && stats?.bytesReceived == file.count + 13)
        #expect(offerer.channelLoop.failedSends == 0 && answerer.channelLoop.failedSends == 0)

        // Closing from the side that did not open it closes both.
        offerer.channelLoop.withChannels { channels, now in channels.close(fromAnswerer, now: now) }
        #expect(wait(seconds: 5) { offerer.saw(.closed(fromAnswerer)) && answerer.saw(.closed(fromAnswerer)) })
    }

    /// SCTP packets larger than a DTLS record can hold are refused by the transport: counted, and the
    /// association is lost after its retransmissions (short here), closing the channel on that side.
    @Test func packetsTheTransportRefusesAreCountedAndTheAssociationEnds() throws {
        let tooLarge = SCTPConfiguration(mtu: 1400, rtoInitial: 100, rtoMinimum: 50, rtoMaximum: 100)
        let (offerer, answerer) = try Self.connectedSides(answererSCTP: tooLarge)
        defer { Self.close(offerer, answerer) }
        let id = try answerer.channelLoop.withChannels { channels, now in try channels.open(label: "big", now: now) }
        try answerer.channelLoop.withChannels { channels, now in
            try channels.send(.binary([UInt8](repeating: 7, count: 4000)), on: id, now: now)
        }
        #expect(wait(seconds: 20) { answerer.saw(.closed(id)) })
        #expect(answerer.channelLoop.failedSends > 0)
        // Both sides keep answering afterwards.
        usleep(3_000_000)
        #expect(offerer.channelLoop.withChannels { channels, _ in channels.channel(id)?.state } != nil)
        #expect(answerer.channelLoop.withChannels { channels, _ in channels.channel(id)?.state } == .closed)
        guard case .dtls(.applicationDataTooLarge)? = answerer.channelLoop.lastFailedSend else {
            Issue.record("refused for \(String(describing: answerer.channelLoop.lastFailedSend))")
            return
        }
    }
}
