import Foundation
import Sluice
import Testing
import TestSupport

/// Issue 13: the thread count of a process does not grow with its calls. Each call here is a VP8
/// file sent as it is over RTP on 127.0.0.1 (paced in real time) to a receive pipeline writing IVF;
/// every sender and receiver graph runs on the shared workers, and every socket is watched by the
/// one `SocketReactor` thread.
@Suite(.serialized) struct CallThreadsTests {
    static func threads() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0 }

    @Test func fortyCallsDeliverEveryStreamWithoutAThreadPerCall() throws {
        let calls = 40, frames = 45
        try TestSupport.withTemporaryDirectory { dir in
            let before = Self.threads()
            let outcomes = Locked<[String: Result<GraphReport, any Error>]>([:])
            var receivers: [RTPReceivePipeline] = []
            var senders: [Transcoder] = []
            for index in 0..<calls {
                var options = ReceiveOptions()
                options.limits.silence = .seconds(10)
                let receiver = try RTPReceivePipeline(stream: try RTPStreamingTests.loopback(.vp8),
                                                      output: dir.file("call-\(index).ivf"), options: options)
                var sending = TranscodeOptions()
                sending.maxFrames = frames
                let sender = try Transcoder(input: TestSupport.sampleIVF, sendingTo: RTPStreamingTests.destination(of: receiver),
                                            options: sending)
                try sender.graph.start { result in outcomes.withLock { $0["sender \(index)"] = result } }
                // Negotiation waits for the stream's first keyframe, here on the test's thread.
                try receiver.build()
                try receiver.graph.start { result in outcomes.withLock { $0["receiver \(index)"] = result } }
                receivers.append(receiver)
                senders.append(sender)
            }
            var most = Self.threads()
            let deadline = Date().addingTimeInterval(60)
            while outcomes.withLock({ $0.count }) < 2 * calls && Date() < deadline {
                most = max(most, Self.threads())
                usleep(10_000)
            }
            let results = outcomes.withLock { $0 }
            try #require(results.count == 2 * calls, "every graph ends")
            for index in 0..<calls {
                let report = try results["receiver \(index)"]!.get()
                _ = try results["sender \(index)"]!.get()
                #expect(report.nodes.last!.itemsIn == frames, "call \(index) delivers every frame")
                #expect(receivers[index].endReason() == RTPReceiverNode<VP8Depacketizer>.EndReason.goodbye.rawValue)
            }
            // The shared workers (one per core, up to 8 while some block), their timer thread, the
            // reactor and the test process's own: a constant, where a thread per receiver and per
            // sender made 80.
            #expect(most - before < calls / 2, "threads grew from \(before) to \(most) for \(calls) calls")
            _ = senders
        }
    }
}
