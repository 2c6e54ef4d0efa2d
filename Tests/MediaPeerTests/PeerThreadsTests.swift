import Foundation
import MediaCore
import MediaPeer
import MediaSCTP
import Testing

/// Issue 13 for WebRTC: a peer connection costs no thread of its own. Each pair here is two peer
/// connections on 127.0.0.1 with a data channel (ICE, DTLS, SCTP), connected and carrying messages
/// both ways; every peer's sockets and timers (the transport's and SCTP's) are on the one
/// `SocketReactor` thread. Run alone (tools/test): it counts the process's threads.
@Suite(.serialized) struct PeerThreadsTests {
    static func threads() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0 }

    @Test(.timeLimit(.minutes(2)))
    func twentyPeerPairsCarryDataChannelMessagesWithoutAThreadPerPeer() throws {
        let pairs = 20, messages = 10
        let before = Self.threads()
        var most = before
        var connections: [(offerer: PeerConnection, answerer: PeerConnection)] = []
        var records: [(ours: PeerConnectionTests.ChannelRecord, channel: PeerDataChannel)] = []
        defer { for (a, b) in connections { a.close(); b.close() } }
        for index in 0..<pairs {
            let (a, b) = try PeerConnectionTests.pair()
            connections.append((a, b))
            let channel = try a.createDataChannel("pair-\(index)")
            records.append((PeerConnectionTests.ChannelRecord(channel), channel))
            try PeerConnectionTests.connect(a, b)
            most = max(most, Self.threads())
        }
        let opened = eventually(seconds: 30) {
            most = max(most, Self.threads())
            return records.allSatisfy { $0.ours.saw(.open) } && connections.allSatisfy { !$0.answerer.dataChannels.isEmpty }
        }
        try #require(opened, "channels open: \(records.filter { $0.ours.saw(.open) }.count) of \(pairs)")
        let theirs = try connections.map { PeerConnectionTests.ChannelRecord(try #require($0.answerer.dataChannels.first)) }
        for (index, record) in records.enumerated() {
            let remote = try #require(connections[index].answerer.dataChannels.first)
            #expect(remote.label == "pair-\(index)")
            for number in 0..<messages {
                try record.channel.send("to \(index): \(number)")
                try remote.send("from \(index): \(number)")
            }
        }
        let delivered = eventually(seconds: 20) {
            most = max(most, Self.threads())
            return theirs.allSatisfy { $0.messages.count == messages } && records.allSatisfy { $0.ours.messages.count == messages }
        }
        #expect(delivered, "pairs with every message each way: \(zip(theirs, records).filter { $0.0.messages.count == messages && $0.1.ours.messages.count == messages }.count) of \(pairs)")
        for index in 0..<pairs {
            #expect(theirs[index].messages == (0..<messages).map { DataChannelMessage.text("to \(index): \($0)") })
            #expect(records[index].ours.messages == (0..<messages).map { DataChannelMessage.text("from \(index): \($0)") })
        }
        #expect(connections.allSatisfy { $0.offerer.connectionState == .connected && $0.answerer.connectionState == .connected })
        // The reactor, the shared workers and the test process's own: a constant, where a transport
        // thread and an SCTP timer thread per peer made 80.
        #expect(most - before < pairs / 2, "threads grew from \(before) to \(most) for \(2 * pairs) peers")
        print("peer threads: \(before) before, \(most) at most with \(2 * pairs) peers")
    }
}
