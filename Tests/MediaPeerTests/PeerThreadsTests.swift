import Foundation
import MediaCore
import MediaPeer
import MediaSCTP
import Sluice
import Testing
import TestSupport

/// Issue 13 for WebRTC: a peer connection costs no thread of its own. Each pair here is two peer
/// connections on 127.0.0.1 with a data channel (ICE, DTLS, SCTP), connected and carrying messages
/// both ways, or a video track decoded on the other side; every peer's sockets and timers (the
/// transport's and SCTP's) are on the one `SocketReactor` thread, and its senders' and receivers'
/// graphs on the shared workers. Run alone (tools/test): it counts the process's threads.
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

    /// Each pair sends a 320x240 VP8 track one way: the sending graph, its session's RTCP feedback,
    /// the receiving graph and its session all ride on the reactor and the shared workers. Counted
    /// once every pair decodes, for 1.5 s of media: while pairs are set up, each receiver's graph is
    /// built on a short-lived thread that waits for its first keyframe (`RunningPipeline`).
    @Test(.timeLimit(.minutes(2)))
    func twelvePeerPairsCarryVideoWithoutAThreadPerPeer() throws {
        let pairs = 12, pictures = 20
        try TestSupport.withTemporaryDirectory { folder in
            let (video, _) = try PeerConnectionTests.media(in: folder)
            let before = Self.threads()
            var connections: [(offerer: PeerConnection, answerer: PeerConnection)] = []
            var collectors: [TrackCollector<VideoFrame>] = []
            defer { for (a, b) in connections { a.close(); b.close() } }
            for _ in 0..<pairs {
                let (a, b) = try PeerConnectionTests.pair()
                connections.append((a, b))
                try a.addTrack(try LocalTrack.y4mFile(video))
                try PeerConnectionTests.connect(a, b)
                let collector = TrackCollector<VideoFrame>()
                let track = try #require(b.remoteTracks.first)
                try track.start(.video { graph, port in graph.add(collector, input: port) })
                collectors.append(collector)
            }
            let decoded = eventually(seconds: 30) { collectors.allSatisfy { $0.count >= pictures } }
            try #require(decoded, "pictures decoded per pair: \(collectors.map(\.count))")
            var most = 0
            let counted = collectors.map(\.count)
            for _ in 0..<150 {
                most = max(most, Self.threads())
                usleep(10_000)
            }
            for (index, (a, b)) in connections.enumerated() {
                #expect(collectors[index].count > counted[index], "pair \(index) still decodes")
                #expect(b.remoteTracks.first?.pipelineResult == nil, "pair \(index): the receiving pipeline ended")
                #expect(a.senders.first?.pipelineResult == nil, "pair \(index): the sending pipeline ended")
            }
            // The reactor, the shared workers (up to 4 per core, at least 8, while codecs keep them
            // busy) and their timer: a constant, where each pair had a thread for its receiver, one
            // for its sender's feedback and two per peer for the transport and SCTP's timers.
            let cores = ProcessInfo.processInfo.activeProcessorCount
            #expect(most - before < max(pairs, max(8, 4 * cores) + 2),
                    "threads grew from \(before) to \(most) for \(2 * pairs) peers")
            print("peer threads with video: \(before) before, \(most) at most with \(2 * pairs) peers")
        }
    }
}
