// File-to-file transcodes through `Transcoder`: throughput, and how much the stages overlap on several
// cores (process CPU time over wall time).
import BenchLoops
import Foundation
import Sluice

/// "transcode.<from>-<to>": the sample transcoded to another codec at another size; frames/s and
/// parallelism = CPU seconds / wall seconds (1 = no overlap between the graph's threads).
struct TranscodeScenario: Scenario {
    let name: String
    let summary: String
    let inDefaultSet: Bool
    /// The input, made once per process (the sample as it is, or re-encoded).
    let input: @Sendable () throws -> String
    let output: String
    let options: TranscodeOptions

    static let all: [any Scenario] = [
        TranscodeScenario(name: "transcode.h264-vp8", summary: "H.264 (preferred decoder: libavcodec) -> scale to 320x180 -> VP8 (libvpx), file to file",
                          inDefaultSet: true, input: { try h264Sample.get() }, output: "pipebench-out.ivf",
                          options: options(codec: .vp8, width: 320, height: 180)),
        TranscodeScenario(name: "transcode.vp8-h264", summary: "VP8 (libvpx decode) -> scale to 480x270 -> H.264 (libx264), file to file",
                          inDefaultSet: false, input: { Sample.path }, output: "pipebench-out.h264",
                          options: options(codec: .h264, width: 480, height: 270)),
    ]

    static func options(codec: CodecName, width: Int, height: Int) -> TranscodeOptions {
        var options = TranscodeOptions()
        options.codec = codec
        options.size = (width, height)
        options.inputFrameRate = Sample.frameRate
        return options
    }

    /// The sample as a raw Annex-B `.h264` file (OpenH264, 800 kbit/s), written once to the temporary folder.
    static let h264Sample = Result<String, any Error> {
        let path = ScratchFolder.file("sample.h264")
        var data = Data()
        for frame in Sample.h264Frames { data.append(contentsOf: frame.bytes) }
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let inputPath = try input()
        let outputPath = ScratchFolder.file(output)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var options = self.options
        options.maxFrames = size.frames
        /// One transcode: the frames read, wall and CPU seconds.
        func once() throws -> (frames: Int, wall: Double, cpu: Double) {
            let transcoder = try Transcoder(input: inputPath, output: outputPath, options: options)
            let (report, wall, cpu) = try ProcessClock.measure { try transcoder.graph.run() }
            return (report.nodes.first?.itemsOut ?? 0, wall, cpu)
        }
        _ = try once()
        var runs: [(frames: Int, wall: Double, cpu: Double)] = []
        while runs.count < (size.seconds > 0 ? 2 : 1) || runs.map(\.wall).reduce(0, +) < size.seconds {
            runs.append(try once())
        }
        let rates = runs.map { Double($0.frames) / max($0.wall, 1e-9) }
        let parallelism = runs.map { $0.cpu / max($0.wall, 1e-9) }
        return ScenarioResult(
            scenario: name,
            metrics: [Metric("sluice", HeadToHead.median(rates), unit: "frames/s"),
                      Metric("parallelism", HeadToHead.median(parallelism), unit: "cpu/wall")],
            notes: ["\(runs.count) runs of \(runs[0].frames) frames",
                    "GraphReport has no per-node busy time: stage overlap is process CPU over wall time"],
            seconds: ProcessClock.now() - start)
    }
}
