// Data channel throughput between two Sluice peer connections over 127.0.0.1, beside the same
// transfer between two aiortc peers (tools/peers/aiortc_dc_bench.py) in the same run.
import Foundation
import Sluice

/// "datachannel.throughput": one reliable ordered channel; 16 MiB in 64 KiB binary messages (MB/s)
/// and 20000 messages of 100 bytes (messages/s), each timed from the first send to the last byte
/// received, the sender keeping at most 1 MiB buffered (`bufferedAmountLow`). The ratio is Sluice's
/// throughput over aiortc's, when tools/peers/.venv exists.
struct DataChannelThroughputScenario: Scenario {
    let name = "datachannel.throughput"
    let summary = "data channel MB/s (64 KiB messages) and messages/s (100 B) Sluice to Sluice over 127.0.0.1, beside two aiortc peers"
    let inDefaultSet = false
    static let highWater = 1 << 20

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let bulkBytes = 16 << 20, bulkMessage = 64 << 10, smallCount = 20_000, smallMessage = 100
        let pair = try ChannelPair()
        defer { pair.close() }
        let bulk = try pair.transfer(message: [UInt8](repeating: 7, count: bulkMessage), count: bulkBytes / bulkMessage)
        let small = try pair.transfer(message: [UInt8](repeating: 7, count: smallMessage), count: smallCount)
        let megabytesPerSecond = Double(bulkBytes) / bulk / 1e6, messagesPerSecond = Double(smallCount) / small
        var metrics = [Metric("throughput", megabytesPerSecond, unit: "MB/s"), Metric("message rate", messagesPerSecond, unit: "messages/s")]
        var notes = ["one process, both peers; DTLS and SCTP (usrsctp) on both; at most \(Self.highWater >> 10) KiB buffered"]
        var ratio: Double?
        switch Self.aiortc(bytes: bulkBytes, messageSize: bulkMessage, count: smallCount, smallSize: smallMessage) {
        case .success(let theirs):
            metrics += [Metric("aiortc throughput", theirs.throughput, unit: "MB/s"),
                        Metric("aiortc message rate", theirs.messages, unit: "messages/s")]
            ratio = megabytesPerSecond / theirs.throughput
            notes.append("aiortc: two peers in one Python process, the same transfers (tools/peers/aiortc_dc_bench.py); ratio = Sluice MB/s over aiortc's; message rate \(String(format: "%.2f", messagesPerSecond / theirs.messages))x aiortc's")
        case .failure(let reason):
            notes.append("aiortc not measured: \(reason)")
        }
        return ScenarioResult(scenario: name, metrics: metrics, ratio: ratio, notes: notes, seconds: ProcessClock.now() - start)
    }

    struct Unavailable: Error, CustomStringConvertible { var description: String }

    /// Runs the aiortc pair through tools/peers/.venv, found from the working directory.
    static func aiortc(bytes: Int, messageSize: Int, count: Int, smallSize: Int) -> Result<(throughput: Double, messages: Double), Unavailable> {
        let python = "tools/peers/.venv/bin/python", script = "tools/peers/aiortc_dc_bench.py"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return .failure(Unavailable(description: "no \(python) here (run tools/peers/setup from the repository root)"))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, "--bytes", "\(bytes)", "--message-size", "\(messageSize)", "--count", "\(count)", "--small-size", "\(smallSize)"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return .failure(Unavailable(description: "\(script): \(error)")) }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
              let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let throughput = json["throughput_mb_s"] as? Double, let messages = json["messages_per_s"] as? Double
        else { return .failure(Unavailable(description: "\(script) exited \(process.terminationStatus) without a result")) }
        return .success((throughput, messages))
    }
}

/// Two connected peer connections and one channel from the offerer to the answerer.
private final class ChannelPair: @unchecked Sendable {
    let offerer: PeerConnection, answerer: PeerConnection
    let sending: PeerDataChannel
    private let progress = NSCondition()
    private var receivedBytes = 0
    private var lows = 0
    private var receiving: PeerDataChannel?

    struct Timeout: Error, CustomStringConvertible { var description: String }

    init() throws {
        let factory = PeerConnectionFactory()
        let configuration = PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true, receive: [])
        offerer = try factory.makePeerConnection(configuration)
        answerer = try factory.makePeerConnection(configuration)
        sending = try offerer.createDataChannel("bench")
        sending.setBufferedAmountLowThreshold(DataChannelThroughputScenario.highWater / 2)
        sending.onEvent = { [unowned self] event in
            guard event == .bufferedAmountLow else { return }
            self.update { self.lows += 1 }
        }
        answerer.onDataChannel = { [unowned self] channel in
            channel.onEvent = { [unowned self] event in
                guard case .message(let message) = event else { return }
                self.update { self.receivedBytes += message.byteCount }
            }
            self.update { self.receiving = channel }
        }
        try answerer.setRemoteDescription(try offerer.createOffer(), type: .offer)
        try offerer.setRemoteDescription(try answerer.createAnswer(), type: .answer)
        try wait(seconds: 20, "the channel to open") { sending.readyState == .open && receiving != nil }
    }

    private func update(_ change: () -> Void) {
        progress.lock()
        change()
        progress.broadcast()
        progress.unlock()
    }

    private func wait(seconds: Double, _ what: String, until condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        progress.lock()
        defer { progress.unlock() }
        while !condition() {
            // Channel state changes (open) come without a broadcast: look again every 10 ms.
            _ = progress.wait(until: min(deadline, Date().addingTimeInterval(0.01)))
            if Date() >= deadline && !condition() { throw Timeout(description: "waited \(seconds) s for \(what)") }
        }
    }

    /// Sends `message` `count` times with back-pressure; seconds until the answerer had every byte.
    func transfer(message: [UInt8], count: Int) throws -> Double {
        let expected = receivedBytesNow() + message.count * count
        let begin = ProcessClock.now()
        for _ in 0..<count {
            if sending.bufferedAmount > DataChannelThroughputScenario.highWater {
                let seen = lowsNow()
                try wait(seconds: 30, "bufferedAmountLow") { lows > seen || sending.bufferedAmount <= DataChannelThroughputScenario.highWater }
            }
            try sending.send(message)
        }
        try wait(seconds: 60, "\(expected) bytes") { receivedBytes >= expected }
        return ProcessClock.now() - begin
    }

    private func receivedBytesNow() -> Int { progress.lock(); defer { progress.unlock() }; return receivedBytes }
    private func lowsNow() -> Int { progress.lock(); defer { progress.unlock() }; return lows }

    func close() {
        offerer.close()
        answerer.close()
    }
}
