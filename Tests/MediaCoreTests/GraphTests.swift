import Foundation
import MediaCore
import Testing
import TestSupport

@Suite struct GraphTests {
    @Test func linearPipelineDeliversEveryFrameInOrder() throws {
        let graph = Graph()
        let source = PatternSource(count: 100)
        let stage = StageTransform(name: "stage")
        let sink = CollectingSink()
        graph.add(sink, input: graph.add(stage, input: graph.add(source)))
        let report = try graph.run()
        #expect(sink.indices == (0..<100).map { $0 % 256 })
        #expect(sink.finished)
        #expect(report["stage"]?.itemsIn == 100)
        #expect(report["stage"]?.itemsOut == 100)
        #expect(source.closed && stage.closed && sink.closed)
        #expect(graph.outputFormat(of: source) == .video(smallVideo))
    }

    @Test func fanOutFeedsEveryConsumer() throws {
        let graph = Graph()
        let port = graph.add(PatternSource(count: 20))
        let a = CollectingSink(name: "a"), b = CollectingSink(name: "b")
        graph.add(a, input: port)
        graph.add(b, input: port)
        try graph.run()
        #expect(a.indices.count == 20 && b.indices == a.indices)
    }

    @Test func incompatibleFormatsFailAtBuildNamingBothNodesAndFormats() throws {
        let graph = Graph()
        let sink = CollectingSink(name: "qvga-only")
        sink.accepted = [.video(.exactly(.pixels(.i420)), width: .exactly(320), height: .exactly(240))]
        graph.add(sink, input: graph.add(PatternSource(name: "camera", count: 1)))
        do {
            try graph.build()
            Issue.record("build succeeded")
        } catch let error as GraphError {
            guard case .incompatibleFormats(let up, let offered, let down, let accepted) = error else {
                Issue.record("wrong error \(error)"); return
            }
            #expect(up == "camera" && down == "qvga-only")
            #expect(offered == Caps(.video(smallVideo)))
            #expect(accepted == sink.accepted)
            #expect(error.description.contains("64x48") && error.description.contains("320x240"))
        }
    }

    @Test func unconnectedOutputAndDuplicateNamesAreBuildErrors() {
        let lonely = Graph()
        lonely.add(PatternSource(count: 1))
        #expect(throws: GraphError.self) { try lonely.build() }

        let twins = Graph()
        let port = twins.add(PatternSource(count: 1))
        twins.add(CollectingSink(name: "same"), input: port)
        twins.add(CollectingSink(name: "same"), input: port)
        do { try twins.build(); Issue.record("built") } catch {
            #expect("\(error)" == "two nodes are named same")
        }
    }

    @Test(arguments: [false, true])
    func firstErrorStopsTheGraphAndNamesTheNode(deterministic: Bool) throws {
        let graph = deterministic ? Graph(clock: ManualClock()) : Graph()
        let source = PatternSource(count: nil)
        let faulty = StageTransform(name: "faulty")
        faulty.failAt = 5
        let sink = CollectingSink()
        graph.add(sink, input: graph.add(faulty, input: graph.add(source)))
        do {
            _ = try deterministic ? graph.runDeterministic() : graph.run()
            Issue.record("run succeeded")
        } catch let error as GraphError {
            guard case .nodeFailed(let node, let underlying) = error else { Issue.record("\(error)"); return }
            #expect(node == "faulty")
            #expect(underlying as? StageTransform.Failure == StageTransform.Failure(item: 5))
        }
        // Items still queued when a run stops are dropped: a threaded run may deliver fewer.
        if deterministic {
            #expect(sink.indices == [0, 1, 2, 3, 4])
        } else {
            #expect(sink.indices == Array(0..<sink.indices.count) && sink.indices.count <= 5)
        }
        #expect(!sink.finished)
        #expect(source.closed && faulty.closed && sink.closed)
    }

    @Test func cancellationStopsAnEndlessRunPromptly() throws {
        let graph = Graph()
        let source = PatternSource(count: nil, paced: true)
        let sink = CollectingSink()
        graph.add(sink, input: graph.add(source))
        // A thread, not a task: tests running in parallel may occupy the cooperative pool.
        let canceller = Thread {
            usleep(200_000)
            graph.cancel()
        }
        canceller.start()
        let start = SystemClock().now
        #expect(throws: GraphError.self) { try graph.run() }
        let elapsed = (SystemClock().now - start).seconds
        #expect(elapsed < 2, "cancel took \(elapsed) s")
        #expect(source.closed && sink.closed && !sink.finished)
        #expect(sink.indices.count >= 3, "paced at 30 fps for 0.2 s")
    }

    @Test(arguments: [false, true])
    func aFailingSourceLetsDownstreamCompleteWhatItHasThenReportsTheError(deterministic: Bool) throws {
        let graph = deterministic ? Graph(clock: ManualClock()) : Graph()
        let source = PatternSource(name: "reader", count: nil)
        source.failAt = 12
        let slow = StageTransform(name: "slow")
        slow.delayMicroseconds = deterministic ? 0 : 2_000
        let sink = CollectingSink()
        graph.add(sink, input: graph.add(slow, input: graph.add(source)))
        do {
            _ = try deterministic ? graph.runDeterministic() : graph.run()
            Issue.record("run succeeded")
        } catch let GraphError.nodeFailed(node, error) {
            #expect(node == "reader")
            #expect(error as? PatternSource.Failure != nil)
        }
        #expect(sink.indices == Array(0..<12), "every frame produced before the failure arrives")
        #expect(sink.finished, "the sink completed its output")
    }

    @Test(.onDedicatedThreads) func asyncRunLeavesTheCallersThreadFreeAndCancelsWithItsTask() async throws {
        let graph = Graph()
        let sink = CollectingSink()
        graph.add(sink, input: graph.add(PatternSource(count: nil, paced: true)))
        // On the test's executor: an unstructured `Task {}` would wait for Swift's cooperative pool,
        // which the parallel run's synchronous tests hold for a minute and more.
        let task = Task(executorPreference: DedicatedThreadsExecutor.shared) { try await graph.run() }
        func delivered() -> Int { graph.progress.first { $0.name == sink.name }?.itemsIn ?? 0 }
        let deadline = SystemClock().now + .seconds(60)
        while delivered() < 3 && SystemClock().now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        await #expect(throws: GraphError.self) { try await task.value }
        #expect(sink.closed && sink.indices.count >= 3)
    }

    @Test func backpressureKeepsMemoryFlatBehindASlowSink() throws {
        let graph = Graph(edgeCapacity: 2)
        let source = PatternSource(count: 300)
        let sink = CollectingSink()
        sink.delayMicroseconds = 300
        graph.add(sink, input: graph.add(source))
        try graph.run()
        #expect(sink.indices.count == 300)
        // In flight at most: the edge's 2, one being pushed, one held by the sink, plus recycling lag.
        #expect(source.pool.allocations <= 6, "pool grew to \(source.pool.allocations) buffers")
        #expect(source.pool.outstanding == 0)
    }

    @Test func stagesRunConcurrently() throws {
        let graph = Graph()
        let first = StageTransform(name: "first"), second = StageTransform(name: "second")
        first.delayMicroseconds = 5_000
        second.delayMicroseconds = 5_000
        let sink = CollectingSink()
        graph.add(sink, input: graph.add(second, input: graph.add(first, input: graph.add(PatternSource(count: 40)))))
        try graph.run()
        // Each stage's steps on a worker of its own: some steps of the two overlap in time. (Not the
        // run's duration: other tests running beside this one decide that.)
        let overlapping = first.steps.contains { a in second.steps.contains { b in a.overlaps(b) } }
        #expect(overlapping, "no step of the first stage overlapped one of the second")
        #expect(first.steps.count == 40 && second.steps.count == 40)
        #expect(sink.indices.count == 40)
    }

    @Test func upstreamEventsTravelBackToTheNodeThatHandlesThem() throws {
        let graph = Graph(clock: ManualClock())
        let source = PatternSource(count: 30)
        let sink = CollectingSink()
        sink.requests = [10: .keyframeRequest, 20: .bitrateChange(300_000)]
        graph.add(sink, input: graph.add(StageTransform(name: "pass"), input: graph.add(source)))
        let report = try graph.runDeterministic()
        #expect(source.eventsSeen.map(\.event) == [.keyframeRequest, .bitrateChange(300_000)])
        // Handled before the next frame is produced: within one edge's worth of frames per hop.
        let seenAt = source.eventsSeen[0].atFrame
        #expect(seenAt > 10 && seenAt <= 10 + 2 * graph.edgeCapacity + 2, "seen at frame \(seenAt)")
        // The source does not handle bitrate changes, and it is first: counted, not lost silently.
        #expect(report["pattern"]?.unhandledEvents == 1)
    }

    /// A node may keep its context past its graph: waking the node or sending upstream through it
    /// then does nothing, and the graph's runners and other nodes are freed all the same.
    @Test(arguments: [false, true])
    func aContextKeptPastItsGraphDoesNothing(threaded: Bool) throws {
        let sink = CollectingSink()
        weak var weakSource: PatternSource?
        do {
            let graph = threaded ? Graph() : Graph(clock: ManualClock())
            let source = PatternSource(count: 3)
            weakSource = source
            graph.add(sink, input: graph.add(source))
            _ = threaded ? try graph.run() : try graph.runDeterministic()
            #expect(sink.indices.count == 3)
        }
        // The completion may still be returning on a worker: give it a moment. (A Bool, since a
        // failed expectation on the node itself would reflect its non-copyable fields.)
        for _ in 0..<100 where weakSource != nil { Thread.sleep(forTimeInterval: 0.01) }
        let sourceFreed = weakSource == nil
        #expect(sourceFreed, "the source outlived its graph")
        sink.keptContext.wake()
        sink.keptContext.sendUpstream(.keyframeRequest)
    }

    @Test func applicationsCanPostEventsToANode() throws {
        let graph = Graph(clock: ManualClock())
        let source = PatternSource(count: 5)
        graph.add(CollectingSink(), input: graph.add(source))
        graph.post(.keyframeRequest, to: source)
        try graph.runDeterministic()
        #expect(source.eventsSeen.map(\.event) == [.keyframeRequest])
        #expect(source.eventsSeen[0].atFrame == 0)
    }

    @Test func deterministicRunPacesByTheManualClockWithoutWaiting() throws {
        func run() throws -> (indices: [Int], times: [ClockTime], elapsed: ClockTime) {
            let clock = ManualClock()
            let graph = Graph(clock: clock)
            let sink = CollectingSink()
            graph.add(sink, input: graph.add(PatternSource(count: 90, paced: true)))
            let wallStart = SystemClock().now
            let report = try graph.runDeterministic()
            #expect((SystemClock().now - wallStart).seconds < 1, "a 3 s paced stream must not take real time")
            return (sink.indices, sink.arrivalTimes, report.elapsed)
        }
        let first = try run(), second = try run()
        #expect(first.indices == Array(0..<90))
        #expect(first.times == second.times && first.indices == second.indices)
        // Frame 89 is due at 89/30 s and arrives then.
        #expect(first.times.last == ClockTime(MediaTime(89, timebase: Rational(1, 30))))
        #expect(first.elapsed == ClockTime(MediaTime(89, timebase: Rational(1, 30))))
    }

    @Test func deterministicRunNeedsAManualClock() {
        let graph = Graph()
        graph.add(CollectingSink(), input: graph.add(PatternSource(count: 1)))
        #expect(throws: GraphError.self) { try graph.runDeterministic() }
    }
}
