// Calls over loopback UDP: Transcoder(sendingTo:) -> RTP/SRTP -> RTPReceivePipeline, in real time, traced
// frame by frame (FrameTracer); and how many such calls one machine carries in real time.
import BenchLoops
import CSluiceShims
import Foundation
import Sluice

/// One send+receive stream over 127.0.0.1, with the W3C statistics of both ends.
struct LoopbackCall {
    let sender: Transcoder
    let receiver: RTPReceivePipeline
    let tracer: FrameTracer
    private let outputPath: String

    /// A call sending `input` as `codec` (SRTP, NACK), through `impairment` when given. Sockets are bound.
    /// `soak` loops the input, re-encodes video, adds RTX (RFC 4588) and discards what is decoded.
    init(input: String, codec: CodecName, frames: Int, bitrate: Int, impairment: ImpairmentProfile?, tag: String,
         soak: Bool = false) throws {
        tracer = FrameTracer()
        let local = try SocketAddress(parsing: "127.0.0.1:0")
        var stream = RTPStreamDescription(codec: codec, payloadType: codec == .opus ? 111 : 96, local: local)
        stream.multiplexed = true
        stream.frameRate = Sample.frameRate
        stream.srtp = .random(.aes128CmHmacSha1_80)
        var receiving = ReceiveOptions()
        receiving.limits.silence = .seconds(5)
        receiving.tracer = tracer
        outputPath = ScratchFolder.file("call-\(tag)" + (codec == .opus ? ".wav" : ".y4m"))
        var destination = RTPDestination(address: local)
        if soak {
            // An hour of decoded pictures would fill the disk: the output is /dev/null under its name.
            try? FileManager.default.removeItem(atPath: outputPath)
            try FileManager.default.createSymbolicLink(atPath: outputPath, withDestinationPath: "/dev/null")
            destination.rtxPayloadType = codec == .opus ? 112 : 97
            stream.rtx = (destination.rtxPayloadType!, destination.rtxSSRC)
        }
        receiver = try RTPReceivePipeline(stream: stream, output: outputPath, options: receiving)
        destination.address = receiver.localAddress
        destination.multiplexed = true
        destination.srtp = stream.srtp
        destination.impairment = impairment
        var sending = TranscodeOptions()
        sending.codec = codec
        sending.bitrate = bitrate
        sending.maxFrames = frames
        sending.tracer = tracer
        if soak {
            sending.loop = true
            if codec != .opus { sending.size = (640, 360) }   // decoded and encoded again, not passed through
        }
        sender = try Transcoder(input: input, sendingTo: destination, options: sending)
    }

    /// Starts every call's sender and receiver on the shared scheduler (a receiver is built first on
    /// a short-lived thread: it waits for its first keyframe), runs `probe`, and waits for all.
    /// Returns how long each call's sending graph ran, from its start to its end (BYE).
    @discardableResult
    static func run(_ calls: [LoopbackCall], whileRunning probe: () -> Void = {}) throws -> [ClockTime] {
        let failures = Locked<[String]>([])
        let sendingTimes = Locked<[ObjectIdentifier: ClockTime]>([:])
        let ended = DispatchGroup()
        let end: @Sendable (String, Result<GraphReport, any Error>) -> Void = { side, result in
            if case .failure(let error) = result { failures.withLock { $0.append("\(side): \(error)") } }
            ended.leave()
        }
        for call in calls {
            ended.enter()
            ended.enter()
            let receiver = call.receiver
            Thread.detachNewThread {
                do {
                    try receiver.build()
                    try receiver.graph.start { end("receiver", $0) }
                } catch {
                    end("receiver", .failure(error))
                }
            }
            let sender = ObjectIdentifier(call.sender)
            do {
                try call.sender.graph.start { result in
                    if case .success(let report) = result { sendingTimes.withLock { $0[sender] = report.elapsed } }
                    end("sender", result)
                }
            } catch { end("sender", .failure(error)) }
        }
        probe()
        ended.wait()
        calls.forEach { try? FileManager.default.removeItem(atPath: $0.outputPath) }
        if let first = failures.withLock({ $0.first }) { throw CallScenarioError.failed(first) }
        return sendingTimes.withLock { times in calls.map { times[ObjectIdentifier($0.sender)] ?? .zero } }
    }
}

enum CallScenarioError: Error, CustomStringConvertible {
    case failed(String)
    var description: String { switch self { case .failed(let text): "a call failed: \(text)" } }
}

/// "call.loopback": the sample paced in real time, encoded (VP8, then H.264), sent as SRTP over
/// 127.0.0.1, received, jitter-buffered and decoded; per-stage latency percentiles from the tracer, and
/// frames delivered of those sent. `--impair` (e.g. loss=5%) puts the impairment on the way.
struct CallLoopbackScenario: Scenario {
    let name = "call.loopback"
    let summary = "file (real time) -> VP8 and H.264 -> SRTP over UDP 127.0.0.1 -> jitter buffer -> decode: stage latencies"
    let inDefaultSet = true

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        // Half the measuring time per codec, at 25 frames/s, within the sample's 132 frames.
        let frames = min(132, max(25, size.frames ?? Int(size.seconds / 2 * 25)))
        var metrics: [Metric] = []
        var latencies: [StageLatency] = []
        var notes: [String] = []
        for codec in [CodecName.vp8, .h264] {
            let call = try LoopbackCall(input: Sample.path, codec: codec, frames: frames, bitrate: 800_000,
                                        impairment: size.impairment, tag: codec.rawValue)
            try LoopbackCall.run([call])
            let sent = try call.sender.stats().orThrow("no RTP statistics")
            let received = call.receiver.stats()
            let traced = call.tracer.latencies()
            let label = codec.rawValue.lowercased()
            for stage in FrameStage.allCases.dropFirst() where traced[stage].count > 0 {
                latencies.append(StageLatency(label: "\(label) \(stage)", traced[stage]))
            }
            latencies.append(StageLatency(label: "\(label) end to end", traced.endToEnd))
            metrics += [
                Metric("\(label) frames sent", Double(sent.framesSent), unit: "frames"),
                Metric("\(label) frames delivered", Double(received.framesDecoded), unit: "frames"),
                Metric("\(label) end-to-end p95", traced.endToEnd.p95.seconds * 1000, unit: "ms", higherIsBetter: false),
                Metric("\(label) packets lost", Double(received.packetsLost), unit: "packets", higherIsBetter: false),
            ]
            notes.append("\(label): \(sent.packetsSent) packets sent (\(sent.retransmittedPacketsSent) retransmitted), "
                + "\(received.packetsReceived) received, \(received.nackCount) NACKs, \(received.framesDropped) frames dropped, "
                + "jitter buffer delay \(Self.milliseconds(received.jitterBufferDelay, per: received.jitterBufferEmittedCount)) ms/frame")
        }
        if let impairment = size.impairment { notes.append("impairment: \(impairment)") }
        notes.append("stage latencies: each stage from the one it follows (receive first from send first, receive last from send last)")
        return ScenarioResult(scenario: name, metrics: metrics, latencies: latencies, notes: notes,
                              seconds: ProcessClock.now() - start)
    }

    static func milliseconds(_ total: Double, per count: Int) -> String {
        String(format: "%.1f", count > 0 ? total * 1000 / Double(count) : 0)
    }
}

/// "scale.video" / "scale.audio": N concurrent loopback calls (VP8 at 160x90, or Opus), N doubled then
/// bisected until a call falls behind real time; reports the largest N that keeps up, CPU and memory per
/// call. Not in the default set: a search takes half a minute or more.
struct CallScaleScenario: Scenario {
    let name: String
    let summary: String
    let inDefaultSet = false
    let codec: CodecName
    /// The input file, made once per process.
    let input: @Sendable () throws -> String
    /// Seconds each trial streams.
    static let trialSeconds = 3.0
    /// Where the doubling stops, far beyond what a few cores hold.
    static let maxCalls = 1024
    /// A call keeps up when 95% of its frames arrive and its end-to-end p95 is under this. End to end
    /// runs from each frame's due time on the paced source, so a source the busy workers left behind
    /// counts as late.
    static let lateness = ClockTime.milliseconds(250)

    static let all: [any Scenario] = [
        CallScaleScenario(name: "scale.video", summary: "concurrent VP8 160x90 calls over loopback SRTP until one falls behind real time",
                          codec: .vp8, input: { try smallVideo.get() }),
        CallScaleScenario(name: "scale.audio", summary: "concurrent Opus calls over loopback SRTP until one falls behind real time",
                          codec: .opus, input: { try audioClip.get() }),
    ]

    /// The sample at 160x90 as Y4M, written once to the temporary folder.
    static let smallVideo = Result<String, any Error> {
        let path = ScratchFolder.file("160x90.y4m")
        var options = TranscodeOptions()
        options.size = (160, 90)
        _ = try Transcoder(input: Sample.path, output: path, options: options).run()
        return path
    }

    /// Ten seconds of OpusClip's synthetic stereo as a WAV file, written once.
    static let audioClip = Result<String, any Error> {
        let path = ScratchFolder.file("clip.wav")
        let writer = try WAVWriter(path: path, format: OpusClip.format)
        for frame in OpusClip.frames { try writer.write(frame) }
        try writer.close()
        return path
    }

    /// What one trial of `count` calls showed.
    struct Trial {
        var count: Int
        var keptUp: Bool
        var cpuPerCall: Double
        var bytesPerCall: Double
        var threadsPerCall: Double
        var worstP95: ClockTime
        /// The smallest share of a call's delivered frames measured end to end: a call whose
        /// frames were not (records that never met) has no p95 to judge, not one of zero.
        var leastTraced: Double
        /// How much longer than the trial's media and its session's linger the slowest sending graph ran.
        var worstOverrun: ClockTime
        var worstDelivery: Double
        /// Heap in use once the trial's calls are gone, less before they were made: what they left behind.
        var heapKept = 0
        /// Resident memory once the calls are gone and glibc has given back what it can (malloc_trim).
        var residentAfter = 0

        var summary: String {
            "\(count) calls: \(keptUp ? "real time" : "behind"), worst end-to-end p95 "
                + "\(String(format: "%.1f", worstP95.seconds * 1000)) ms (least traced "
                + "\(String(format: "%.0f", leastTraced * 100))%), worst sender overrun "
                + "\(String(format: "%.0f", worstOverrun.seconds * 1000)) ms, worst delivery "
                + "\(String(format: "%.0f", worstDelivery * 100))%, \(String(format: "%.1f", cpuPerCall * 100))% CPU per call, "
                + "\(String(format: "%.1f", threadsPerCall)) threads per call; afterwards heap "
                + "\(String(format: "%+.1f", Double(heapKept) / 1_048_576)) MiB, resident "
                + "\(String(format: "%.0f", Double(residentAfter) / 1_048_576)) MiB"
        }
    }

    /// A search takes minutes: each trial is shown on standard error as it ends.
    static func showProgress(_ trial: Trial) {
        FileHandle.standardError.write(Data("  \(trial.summary)\n".utf8))
    }

    /// A trial, and what it left behind once its calls are gone.
    func trial(_ count: Int, input: String) throws -> Trial {
        let heapBefore = sluice_heap_bytes_in_use()
        var result = try streamCalls(count, input: input)
        result.heapKept = Int(sluice_heap_bytes_in_use()) - Int(heapBefore)
        _ = sluice_heap_trim()
        result.residentAfter = Self.residentBytes()
        return result
    }

    private func streamCalls(_ count: Int, input: String) throws -> Trial {
        // Video: 25 frames/s; audio: the WAV source's blocks of 960 samples, 20 ms each (the limit
        // counts them; at 100 a second, a trial streamed twice its length).
        let frames = Int(Self.trialSeconds * (codec == .opus ? 50 : 25))
        let rssBefore = Self.residentBytes()
        let threadsBefore = Self.threads()
        let calls = try (0..<count).map {
            try LoopbackCall(input: input, codec: codec, frames: frames, bitrate: codec == .opus ? 32_000 : 150_000,
                             impairment: nil, tag: "\(name)-\($0)")
        }
        var rssDuring = rssBefore
        var threadsDuring = threadsBefore
        let (sendingTimes, wall, cpu) = try ProcessClock.measure {
            try LoopbackCall.run(calls) {
                usleep(useconds_t(Self.trialSeconds / 2 * 1e6))
                rssDuring = Self.residentBytes()
                threadsDuring = Self.threads()
            }
        }
        var worstP95 = ClockTime.zero
        var worstDelivery = 1.0
        var leastTraced = 1.0
        for call in calls {
            let sent = call.sender.stats()?.framesSent ?? 0
            let delivered = call.receiver.stats().framesDecoded
            let endToEnd = call.tracer.latencies().endToEnd
            worstP95 = max(worstP95, endToEnd.p95)
            leastTraced = min(leastTraced, delivered > 0 ? Double(endToEnd.count) / Double(delivered) : 0)
            worstDelivery = min(worstDelivery, sent > 0 ? Double(delivered) / Double(sent) : 0)
        }
        let saturated = cpu / wall > Double(ProcessInfo.processInfo.activeProcessorCount) * 0.95
        // A sending graph runs its media, then its session's linger before the BYE (on a timer, not a worker).
        let worstOverrun = (sendingTimes.max() ?? .zero) - .seconds(Self.trialSeconds)
            - RTPSendSession<VP8Packetizer>.Configuration.defaultLinger
        let keptUp = worstP95 < Self.lateness && worstOverrun < Self.lateness && worstDelivery >= 0.95 && leastTraced >= 0.9
            && !saturated
        return Trial(count: count, keptUp: keptUp,
                     cpuPerCall: cpu / wall / Double(count), bytesPerCall: Double(rssDuring - rssBefore) / Double(count),
                     threadsPerCall: Double(threadsDuring - threadsBefore) / Double(count), worstP95: worstP95,
                     leastTraced: leastTraced, worstOverrun: worstOverrun, worstDelivery: worstDelivery)
    }

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let input = try self.input()
        // Timed first, before any trial's calls exist.
        let bound = codec == .opus ? Self.opusCodecBound() : nil
        var trials: [Trial] = []
        var good: Trial?
        if let calls = size.calls {
            let result = try trial(calls, input: input)
            trials.append(result)
            Self.showProgress(result)
            if result.keptUp { good = result }
        } else {
            // Doubling until a trial falls behind, then bisecting between the last good and the first bad.
            var bad: Int?
            var count = 1
            while bad == nil && count <= Self.maxCalls {
                let result = try trial(count, input: input)
                trials.append(result)
                Self.showProgress(result)
                if result.keptUp {
                    good = result
                    count = count == Self.maxCalls ? count + 1 : min(count * 2, Self.maxCalls)
                } else {
                    bad = count
                }
            }
            while let upper = bad, upper - (good?.count ?? 0) > 1 {
                let middle = ((good?.count ?? 0) + upper) / 2
                let result = try trial(middle, input: input)
                trials.append(result)
                Self.showProgress(result)
                if result.keptUp { good = result } else { bad = middle }
            }
        }
        var metrics = [Metric("calls in real time", Double(good?.count ?? 0), unit: "calls")]
        var boundNotes: [String] = []
        if let bound {
            metrics.append(Metric("codec-only bound", bound, unit: "calls"))
            metrics.append(Metric("share of the bound", Double(good?.count ?? 0) / bound * 100, unit: "%"))
            boundNotes.append("codec-only bound: the calls the cores would hold if each did only its 50 encodes and 50 decodes "
                + "a second in bare libopus loops (decode.opus's, and encode.opus's at the calls' 32 kbit/s and default complexity)")
        }
        if let good {
            metrics += [Metric("cpu per call", good.cpuPerCall * 100, unit: "% of a core", higherIsBetter: false),
                        Metric("memory per call", good.bytesPerCall / 1_048_576, unit: "MiB", higherIsBetter: false),
                        Metric("threads per call", good.threadsPerCall, unit: "threads", higherIsBetter: false)]
        }
        let notes = trials.map(\.summary) + ["\(Self.trialSeconds) s per trial; behind: <95% of frames delivered, end-to-end p95 (from each frame's due "
             + "time) or a sending graph's overrun >= \(Self.lateness.seconds * 1000) ms, <90% of a call's delivered frames "
             + "traced end to end, or CPU over 95% of the cores"] + boundNotes
        return ScenarioResult(scenario: name, metrics: metrics, notes: notes, seconds: ProcessClock.now() - start)
    }

    /// How many Opus calls (50 packets encoded and 50 decoded a second each) the machine's cores
    /// would hold if the calls cost only the bare libopus loops, timed here on the 10 s clip.
    static func opusCodecBound() -> Double {
        func seconds(_ body: () -> Void) -> Double {
            let start = ProcessClock.now()
            body()
            return ProcessClock.now() - start
        }
        let packets = Double(OpusClip.packets.count)
        // The calls' settings: 32 kbit/s, libopus's default complexity.
        let encodeRate = packets / seconds { _ = BareOpus.encode(OpusClip.samples[...], bitrate: 32_000, complexity: nil) }
        let decodeRate = packets / seconds { _ = BareOpus.decode(OpusClip.packets[...]) }
        let corePerCall = 50 / encodeRate + 50 / decodeRate
        return Double(ProcessInfo.processInfo.activeProcessorCount) / corePerCall
    }

    /// Threads of the process now (/proc/self/task).
    static func threads() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0 }

    /// Resident memory of the process (/proc/self/statm), in bytes.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }
}

extension StageLatency {
    /// The percentiles of a tracer's distribution, in milliseconds.
    init(label: String, _ distribution: LatencyDistribution) {
        self.init(stage: label, p50: distribution.p50.seconds * 1000, p90: distribution.p90.seconds * 1000,
                  p99: distribution.p99.seconds * 1000, max: distribution.max.seconds * 1000, count: distribution.count)
    }
}

extension Optional {
    func orThrow(_ message: String) throws -> Wrapped {
        guard let self else { throw CallScenarioError.failed(message) }
        return self
    }
}
