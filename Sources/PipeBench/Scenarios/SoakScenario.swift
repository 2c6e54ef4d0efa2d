// A long impaired call: does Sluice keep working, lose nothing and stay the same size (issue 14).
import BenchLoops
import Foundation
import Sluice

/// "soak": a video call (the sample looped, decoded and encoded again as VP8) and an audio call (Opus)
/// over 127.0.0.1 with SRTP, NACK and RTX, through 5% loss with reordering and jitter, for
/// `--seconds` (default 120; the hour-long run is `--seconds 3600`). Samples the process every few
/// seconds and checks, after a warm-up of a fifth of the run: frames delivered ≥ 99% of those sent,
/// no corrupt frame decoded, resident memory and open files within 5% of the warm-up's, the thread
/// count constant. `failed` lists what did not hold; pipebench exits non-zero on it.
struct SoakScenario: Scenario {
    let name = "soak"
    let summary = "a looped VP8 + Opus call through 5% loss, reordering and jitter with NACK/RTX: delivery, corruption, RSS, files, threads"
    let inDefaultSet = false

    static let impairment = ImpairmentProfile(lossPercent: 5, reorderPercent: 2, delay: .milliseconds(20), jitter: .milliseconds(10), seed: 14)

    /// One sample of the process.
    struct ProcessSample {
        var seconds: Double
        var residentBytes: Int
        var openFiles: Int
        /// The engine's threads that stay.
        var threads: Int
        /// The scheduler's extra workers ("sluice-extra"): started while a worker is blocked, ended
        /// after two idle seconds; bounded, so not a leak, but counted.
        var extraWorkers: Int
    }

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let seconds = size.seconds >= 10 ? size.seconds : 120
        let audio = try CallScaleScenario.audioClip.get()
        let video = try LoopbackCall(input: Sample.path, codec: .vp8, frames: Int(seconds * 25), bitrate: 800_000,
                                     impairment: Self.impairment, tag: "soak-video", soak: true)
        // The limit counts the encoder's 20 ms packets.
        let voice = try LoopbackCall(input: audio, codec: .opus, frames: Int(seconds * 50), bitrate: 32_000,
                                     impairment: Self.impairment, tag: "soak-audio", soak: true)
        var samples: [ProcessSample] = []
        let interval = max(2.0, seconds / 40)
        try LoopbackCall.run([video, voice]) {
            let begin = ProcessClock.now()
            while ProcessClock.now() - begin < seconds + 1 {
                usleep(useconds_t(interval * 1e6))
                samples.append(Self.sample(at: ProcessClock.now() - begin))
            }
        }
        var metrics: [Metric] = [], notes: [String] = [], failed: [String] = []
        for (label, call) in [("video", video), ("audio", voice)] {
            let sent = try call.sender.stats().orThrow("no RTP statistics")
            let received = call.receiver.stats()
            let corrupt = call.receiver.decoderStatistics().corrupt
            let delivered = Double(received.framesDecoded) / Double(max(1, sent.framesSent))
            metrics += [Metric("\(label) delivered", delivered * 100, unit: "% of frames sent"),
                        Metric("\(label) corrupt", Double(corrupt), unit: "frames", higherIsBetter: false)]
            notes.append("\(label): \(sent.framesSent) frames sent, \(received.framesDecoded) decoded, \(corrupt) corrupt; "
                + "\(sent.packetsSent) packets sent (\(sent.retransmittedPacketsSent) retransmitted), \(received.nackCount) NACKs, "
                + "\(received.retransmittedPacketsReceived) RTX received, \(received.packetsLost) packets lost (W3C: RTX and duplicates count against it), \(received.pliCount) PLIs")
            if delivered < 0.99 { failed.append("\(label): \(String(format: "%.2f", delivered * 100))% of frames delivered (< 99%)") }
            if corrupt > 0 { failed.append("\(label): \(corrupt) corrupt frames decoded") }
        }
        // From the end of the warm-up to before the calls wind down (the sender stops at `seconds`).
        let warm = samples.filter { $0.seconds >= seconds / 5 && $0.seconds <= seconds - interval }
        notes.append("threads by sample (+ extra workers): "
            + samples.map { "\(Int($0.seconds))s:\($0.threads)+\($0.extraWorkers)" }.joined(separator: " "))
        if let first = warm.first, let last = warm.last {
            let peak = warm.map(\.residentBytes).max() ?? 0
            let growth = Double(peak - first.residentBytes) / Double(max(1, first.residentBytes))
            metrics += [Metric("RSS growth after warm-up", growth * 100, unit: "%", higherIsBetter: false),
                        Metric("open files", Double(last.openFiles), unit: "files", higherIsBetter: false),
                        Metric("threads", Double(last.threads), unit: "threads", higherIsBetter: false)]
            notes.append("after warm-up (\(warm.count) samples every \(String(format: "%.0f", interval)) s): RSS \(first.residentBytes >> 20)-\(peak >> 20) MiB, "
                + "open files \(Set(warm.map(\.openFiles)).sorted()), threads \(Set(warm.map(\.threads)).sorted())")
            if growth > 0.05 { failed.append("RSS grew \(String(format: "%.1f", growth * 100))% after warm-up (> 5%)") }
            if Double(warm.map(\.openFiles).max()! - first.openFiles) > Double(first.openFiles) * 0.05 {
                failed.append("open files grew from \(first.openFiles) to \(warm.map(\.openFiles).max()!)")
            }
            if Set(warm.map(\.threads)).count > 1 { failed.append("the thread count changed: \(Set(warm.map(\.threads)).sorted())") }
            // The scheduler starts at most a few (`maxWorkers`); more would be workers blocked for good.
            let extra = warm.map(\.extraWorkers).max() ?? 0
            metrics.append(Metric("extra workers at most", Double(extra), unit: "threads", higherIsBetter: false))
            if extra > 2 { failed.append("\(extra) extra workers at once: workers stay blocked") }
        } else {
            failed.append("no sample after the warm-up")
        }
        notes.append("impairment: \(Self.impairment); \(String(format: "%.0f", seconds)) s of media")
        notes.append(failed.isEmpty ? "every check held" : "FAILED: " + failed.joined(separator: "; "))
        return ScenarioResult(scenario: name, metrics: metrics, notes: notes, seconds: ProcessClock.now() - start, failed: failed)
    }

    static func sample(at seconds: Double) -> ProcessSample {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        // The engine's threads (named "sluice…"), not those the Swift and Foundation runtimes start and
        // retire on their own (libdispatch's).
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        let extra = names.count { $0.hasPrefix("sluice-extra") }
        let threads = names.count { $0.hasPrefix("sluice") } - extra
        return ProcessSample(seconds: seconds, residentBytes: CallScaleScenario.residentBytes(), openFiles: files, threads: threads,
                             extraWorkers: extra)
    }
}
