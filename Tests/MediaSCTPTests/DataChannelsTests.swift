import Glibc
import MediaCore
@testable import MediaSCTP
import TestSupport
import Testing

/// Two data channel stacks over in-memory SCTP (no DTLS): DCEP, every reliability mode at 10% loss,
/// large messages with back-pressure, closing from either side.
@Suite(.serialized) struct DataChannelsTests {
    /// Text messages numbered 0..<count, one to several SCTP packets long.
    static func numbered(_ count: Int) -> [String] {
        (0..<count).map { "\($0):" + String(repeating: "x", count: ($0 * 37) % 3000) }
    }

    static func index(_ message: DataChannelMessage) -> Int? {
        guard case .text(let text) = message, let colon = text.firstIndex(of: ":") else { return nil }
        return Int(text[..<colon])
    }

    @Test func remoteOpenedChannelCarriesLabelProtocolAndBothKindsBothWays() throws {
        let pair = try ChannelPair()
        try pair.connect()
        let id = try pair.client.open(label: "chat", options: DataChannelOptions(protocol: "json", priority: 512),
                                      now: pair.clock.now)
        #expect(id % 2 == 0)   // the DTLS client's streams are even (RFC 8832 §6)
        #expect(pair.run(seconds: 5) { $0.serverEvents.contains { if case .remoteOpened = $0 { true } else { false } } })
        guard case .remoteOpened(let info)? = pair.serverEvents.first(where: { if case .remoteOpened = $0 { true } else { false } })
        else { return }
        #expect(info.id == id && info.label == "chat" && info.options.protocol == "json" && info.options.priority == 512)
        #expect(pair.clientEvents.contains(.opened(id)))

        try pair.client.send(.text("héllo"), on: id, now: pair.clock.now)
        try pair.client.send(.binary([1, 2, 3]), on: id, now: pair.clock.now)
        try pair.client.send(.text(""), on: id, now: pair.clock.now)
        try pair.client.send(.binary([]), on: id, now: pair.clock.now)
        try pair.server.send(.text("back"), on: id, now: pair.clock.now)
        #expect(pair.run(seconds: 5) {
            ChannelPair.messages(in: $0.serverEvents, on: id).count == 4 && ChannelPair.messages(in: $0.clientEvents, on: id).count == 1
        })
        #expect(ChannelPair.messages(in: pair.serverEvents, on: id) == [.text("héllo"), .binary([1, 2, 3]), .text(""), .binary([])])
        #expect(ChannelPair.messages(in: pair.clientEvents, on: id) == [.text("back")])
        let sent = try #require(pair.client.stats(id)), received = try #require(pair.server.stats(id))
        #expect(sent.messagesSent == 4 && sent.bytesSent == 9 && sent.messagesReceived == 1 && sent.bytesReceived == 4)
        #expect(received.messagesReceived == 4 && received.bytesReceived == 9 && received.messagesSent == 1)
        #expect(pair.client.drops.isEmpty && pair.server.drops.isEmpty)

        // The server's own channel takes an odd stream.
        let serverID = try pair.server.open(label: "s", now: pair.clock.now)
        #expect(serverID % 2 == 1)
        #expect(pair.run(seconds: 5) { $0.clientEvents.contains { if case .remoteOpened(let i) = $0 { i.id == serverID } else { false } } })
    }

    @Test func negotiatedChannelsSendNoDCEP() throws {
        let pair = try ChannelPair()
        try pair.connect()
        let options = DataChannelOptions(negotiatedID: 7)
        try pair.client.open(label: "n", options: options, now: pair.clock.now)
        try pair.server.open(label: "n", options: options, now: pair.clock.now)
        try pair.client.send(.text("pre-agreed"), on: 7, now: pair.clock.now)
        #expect(pair.run(seconds: 5) { !ChannelPair.messages(in: $0.serverEvents, on: 7).isEmpty })
        #expect(ChannelPair.messages(in: pair.serverEvents, on: 7) == [.text("pre-agreed")])
        #expect(!pair.serverEvents.contains { if case .remoteOpened = $0 { true } else { false } })
        #expect(throws: DataChannelError.streamInUse(7)) { try pair.client.open(label: "again", options: options, now: pair.clock.now) }
    }

    @Test(arguments: [true, false])
    func reliableChannelsDeliverEverythingAtTenPercentLoss(ordered: Bool) throws {
        let pair = try ChannelPair(loss: 0.1, seed: ordered ? 11 : 12)
        try pair.connect()
        let id = try pair.client.open(label: "r", options: DataChannelOptions(
            reliability: DataChannelReliability(ordered: ordered, limit: .reliable)), now: pair.clock.now)
        let texts = Self.numbered(300)
        for text in texts { try pair.client.send(.text(text), on: id, now: pair.clock.now) }
        #expect(pair.run(seconds: 60) { ChannelPair.messages(in: $0.serverEvents, on: id).count == texts.count })
        let received = ChannelPair.messages(in: pair.serverEvents, on: id)
        if ordered {
            #expect(received == texts.map { .text($0) })
        } else {
            #expect(Set(received) == Set(texts.map { .text($0) }) && received.count == texts.count)
        }
        #expect(pair.packetsLost > 0)
    }

    /// With 25 ms each way, a lost message cannot come back within its limit (no retransmission, or a
    /// lifetime shorter than the round trip): about 10% are lost, and the sender counts each as abandoned.
    @Test(arguments: [
        DataChannelReliability(ordered: false, limit: .maxRetransmits(0)),
        DataChannelReliability(ordered: true, limit: .maxRetransmits(0)),
        DataChannelReliability(ordered: true, limit: .maxPacketLifetime(milliseconds: 40)),
        DataChannelReliability(ordered: false, limit: .maxPacketLifetime(milliseconds: 40)),
    ])
    func partiallyReliableChannelsLoseWithinTheirLimits(reliability: DataChannelReliability) throws {
        let pair = try ChannelPair(loss: 0.1, latency: .milliseconds(25), seed: 21)
        try pair.connect()
        let id = try pair.client.open(label: "pr", options: DataChannelOptions(reliability: reliability), now: pair.clock.now)
        #expect(pair.run(seconds: 10) { $0.clientEvents.contains(.opened(id)) })
        // Single-packet messages, one a millisecond.
        let count = 300
        for n in 0..<count {
            try pair.client.send(.text("\(n):" + String(repeating: "p", count: 200)), on: id, now: pair.clock.now)
            _ = pair.step()
            usleep(1000)
        }
        // Until each message arrived or was given up, then a second for late arrivals.
        #expect(pair.run(seconds: 30) {
            ChannelPair.messages(in: $0.serverEvents, on: id).count + $0.client.association.abandonedMessages >= count
        })
        _ = pair.run(seconds: 1) { _ in false }
        let indices = ChannelPair.messages(in: pair.serverEvents, on: id).compactMap(Self.index)
        let lost = count - indices.count
        let abandoned = pair.client.association.abandonedMessages
        #expect(Set(indices).count == indices.count)   // nothing twice
        if reliability.ordered { #expect(indices == indices.sorted()) }
        #expect(lost >= count / 50 && lost <= count / 4, "lost \(lost) of \(count)")
        // Every message that did not arrive was given up by the sender, not lost silently (an arrived
        // one whose acknowledgements were all lost may be given up too).
        #expect(abandoned >= lost, "lost \(lost), abandoned \(abandoned)")
        #expect(pair.server.stats(id)?.messagesReceived == indices.count)
    }

    @Test func oneMebibyteInSixtyFourKiBMessagesWithBackPressure() throws {
        let pair = try ChannelPair(loss: 0.01, seed: 31)
        try pair.connect()
        let id = try pair.client.open(label: "file", options: DataChannelOptions(protocol: "bytes"), now: pair.clock.now)
        var random = SplitMix64(seed: 99)
        let file: [UInt8] = (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let chunk = 64 << 10, threshold = 128 << 10
        pair.client.setBufferedAmountLowThreshold(threshold, for: id)
        var offset = 0, peak = 0, lowEvents = 0
        let finished = pair.run(seconds: 60) { pair in
            // Send while at or under the threshold, as a W3C sender does on bufferedamountlow.
            while offset < file.count, pair.client.bufferedAmount(of: id) <= threshold {
                try? pair.client.send(.binary(Array(file[offset..<offset + chunk])), on: id, now: pair.clock.now)
                offset += chunk
                peak = max(peak, pair.client.bufferedAmount(of: id))
            }
            lowEvents = pair.clientEvents.filter { $0 == .bufferedAmountLow(id) }.count
            return ChannelPair.messages(in: pair.serverEvents, on: id).count == file.count / chunk
        }
        #expect(finished)
        let received = ChannelPair.messages(in: pair.serverEvents, on: id)
        #expect(received.allSatisfy { $0.byteCount == chunk })
        let joined: [UInt8] = received.flatMap { message -> [UInt8] in if case .binary(let bytes) = message { bytes } else { [] } }
        // Digests, not the arrays: a failure would otherwise print a diff of a mebibyte.
        #expect(joined.count == file.count)
        #expect(fnv1a(joined) == fnv1a(file))
        #expect(peak <= threshold + chunk)   // bounded: never more than one message past the threshold
        #expect(lowEvents > 0)
        #expect(pair.client.bufferedAmount(of: id) == 0)
        // Every packet fits the configured MTU, so that its DTLS record fits the datagram.
        #expect(pair.largestPacket <= Int(pair.client.configuration.sctp.mtu), "largest packet \(pair.largestPacket)")
        #expect(pair.server.stats(id)?.bytesReceived == file.count)
    }

    @Test func largestMessageGoesAndLargerIsRefused() throws {
        let pair = try ChannelPair()
        try pair.connect()
        let id = try pair.client.open(label: "big", now: pair.clock.now)
        let big = [UInt8](repeating: 0xA5, count: 262_144)
        try pair.client.send(.binary(big), on: id, now: pair.clock.now)
        #expect(throws: DataChannelError.messageTooLarge(size: 262_145, maximum: 262_144)) {
            try pair.client.send(.binary(big + [0]), on: id, now: pair.clock.now)
        }
        #expect(pair.run(seconds: 20) { !ChannelPair.messages(in: $0.serverEvents, on: id).isEmpty })
        let received = ChannelPair.messages(in: pair.serverEvents, on: id)
        #expect(received.count == 1)
        guard case .binary(let bytes)? = received.first else { return }
        #expect(bytes.count == big.count && fnv1a(bytes) == fnv1a(big))
    }

    @Test(arguments: [true, false])
    func closingFromEitherSideResetsTheStreamAndClosesBoth(fromOpener: Bool) throws {
        let pair = try ChannelPair()
        try pair.connect()
        let id = try pair.client.open(label: "c", now: pair.clock.now)
        try pair.client.send(.text("last words"), on: id, now: pair.clock.now)
        #expect(pair.run(seconds: 5) { !ChannelPair.messages(in: $0.serverEvents, on: id).isEmpty })
        (fromOpener ? pair.client : pair.server).close(id, now: pair.clock.now)
        #expect(pair.run(seconds: 10) { $0.clientEvents.contains(.closed(id)) && $0.serverEvents.contains(.closed(id)) })
        #expect(pair.client.channel(id)?.state == .closed && pair.server.channel(id)?.state == .closed)
        #expect(throws: DataChannelError.notOpen(id)) { try pair.client.send(.text("late"), on: id, now: pair.clock.now) }
        // The stream id is free again, and the association still works.
        let again = try pair.client.open(label: "again", now: pair.clock.now)
        #expect(again == id)
        try pair.client.send(.text("after"), on: again, now: pair.clock.now)
        #expect(pair.run(seconds: 5) { ChannelPair.messages(in: $0.serverEvents, on: again).contains(.text("after")) })
    }

    @Test func closingTheAssociationClosesEveryChannelOnBothSides() throws {
        let pair = try ChannelPair()
        try pair.connect()
        let a = try pair.client.open(label: "a", now: pair.clock.now)
        let b = try pair.server.open(label: "b", now: pair.clock.now)
        #expect(pair.run(seconds: 5) { $0.serverEvents.contains(.opened(b)) && $0.clientEvents.contains(.opened(a)) })
        pair.client.close(now: pair.clock.now)
        #expect(pair.run(seconds: 5) { pair in
            pair.serverEvents.contains { if case .associationClosed = $0 { true } else { false } }
        })
        for events in [pair.clientEvents, pair.serverEvents] {
            #expect(events.contains(.closed(a)) && events.contains(.closed(b)))
        }
        #expect(pair.client.nextTimeout == nil && pair.client.pollTransmit() == nil)
    }

    @Test func aPeerThatStopsAnsweringLosesTheAssociationAndEveryChannel() throws {
        let configuration = SCTPConfiguration(rtoInitial: 100, rtoMinimum: 50, rtoMaximum: 100)
        let pair = try ChannelPair(configuration: configuration)
        try pair.connect()
        let id = try pair.client.open(label: "gone", now: pair.clock.now)
        #expect(pair.run(seconds: 5) { $0.serverEvents.contains { if case .remoteOpened = $0 { true } else { false } } })
        pair.loss = 1   // the path goes away
        try pair.client.send(.text("into the void"), on: id, now: pair.clock.now)
        #expect(pair.run(seconds: 20) { pair in
            pair.clientEvents.contains { if case .associationClosed = $0 { true } else { false } }
        })
        #expect(pair.clientEvents.contains(.closed(id)) && pair.client.channel(id)?.state == .closed)
        #expect(pair.client.association.state == .closed && pair.client.nextTimeout == nil)
        #expect(throws: DataChannelError.notOpen(id)) { try pair.client.send(.text("late"), on: id, now: pair.clock.now) }
    }

    @Test func garbageIsCountedAndDropped() throws {
        let pair = try ChannelPair()
        try pair.connect()
        pair.server.handleReceive([1, 2, 3], now: pair.clock.now)
        #expect(pair.server.association.drops["sctp-packet-too-short"] == 1)
        // An SCTP packet with a wrong checksum is dropped by usrsctp; the association lives on.
        pair.server.handleReceive([UInt8](repeating: 0x13, count: 64), now: pair.clock.now)
        let id = try pair.client.open(label: "still", now: pair.clock.now)
        try pair.client.send(.text("alive"), on: id, now: pair.clock.now)
        #expect(pair.run(seconds: 5) { !ChannelPair.messages(in: $0.serverEvents, on: id).isEmpty })
    }
}
