// The transcode a user runs on a real file (issue 13's 720p target): Big Buck Bunny 720p H.264 to VP8
// at 2 Mbit/s on 2 codec threads, Sluice's Transcoder beside ffmpeg with the same libvpx settings.
import BenchLoops
import Foundation
import Sluice

/// "transcode.720p": the video of `../shared/media/bigbuckbunny.mp4` (1280x720, 25 fps, 132 frames; or
/// `$SLUICE_MEDIA_720P`) as Annex-B H.264, repeated 4 times, transcoded to VP8 IVF (CBR 2 Mbit/s,
/// realtime, cpu-used -6, lag 0, keyframe every 50, 2 threads) by Sluice (in this process) and by
/// ffmpeg (a child process), runs interleaved; ratio = Sluice's frames/s over ffmpeg's, with each one's
/// CPU seconds beside it. Beside them, the bound of any transcode with this encoder: bare libvpx on
/// 2 threads encoding the pictures, decoded beforehand into memory (the encode is about 85% of
/// the CPU of either transcode, and on 2 cores nothing can overlap it).
struct Transcode720pScenario: Scenario {
    let name = "transcode.720p"
    let summary = "Big Buck Bunny 720p H.264 -> VP8 2 Mbit/s, 2 threads, file to file: Sluice vs ffmpeg (same libvpx settings)"
    let inDefaultSet = false
    static let threads = 2
    static let kilobits = 2000
    static let keyframeInterval = 50
    static let repeats = 4

    /// The clip; nil: `$SLUICE_MEDIA_720P`, else `../shared/media/bigbuckbunny.mp4`.
    var mp4: String?

    struct Unavailable: Error, CustomStringConvertible { var description: String }

    /// The mp4's video as Annex B in the temporary folder, repeated: every copy starts at an IDR with
    /// its SPS and PPS. The caller removes the file.
    func input() throws -> (path: String, frames: Int) {
        let mp4 = self.mp4 ?? ProcessInfo.processInfo.environment["SLUICE_MEDIA_720P"] ?? "../shared/media/bigbuckbunny.mp4"
        guard FileManager.default.fileExists(atPath: mp4) else {
            throw Unavailable(description: "\(mp4) not found (run from the repository root, or set SLUICE_MEDIA_720P)")
        }
        let once = ScratchFolder.file("720p-once.h264")
        defer { try? FileManager.default.removeItem(atPath: once) }
        let status = try Self.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", mp4, "-an", "-c:v", "copy",
                                        "-bsf:v", "h264_mp4toannexb", "-f", "h264", once]).status
        guard status == 0 else { throw Unavailable(description: "ffmpeg could not extract the H.264 of \(mp4)") }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: once))
        let path = ScratchFolder.file("720p.h264")
        var looped = Data()
        for _ in 0..<Self.repeats { looped.append(bytes) }
        try looped.write(to: URL(fileURLWithPath: path))
        let frames = try ContainerReader(path: mp4).firstStream(.video).frameCount
        return (path, frames * Self.repeats)
    }

    /// The first `count` pictures of the Annex-B file at `path`, decoded by libavcodec.
    static func decodedPictures(of path: String, count: Int) throws -> [VideoFrame] {
        let reader = try AnnexBReader(path: path)
        let format = VideoFormat(encoding: .compressed(.h264), width: reader.width, height: reader.height, frameRate: reader.frameRate)
        let decoder = try FFmpegVideoDecoder(format: format)
        var pictures: [VideoFrame] = []
        while pictures.count < count, let frame = try reader.next(pool: nil) {
            try decoder.decode(frame) { pictures.append($0) }
        }
        try decoder.flush { pictures.append($0) }
        return Array(pictures.prefix(count))
    }

    /// Runs `executable` (found on PATH) to its end: its status, wall seconds and its CPU seconds
    /// (user + system, from the reaped children's usage).
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, wall: Double, cpu: Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [executable] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let cpu0 = ProcessClock.childrenCPUSeconds(), wall0 = ProcessClock.now()
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, ProcessClock.now() - wall0, ProcessClock.childrenCPUSeconds() - cpu0)
    }

    func run(_ size: RunSize) throws -> ScenarioResult {
        let start = ProcessClock.now()
        let (input, frames) = try self.input()
        let output = ScratchFolder.file("720p.ivf")
        defer {
            try? FileManager.default.removeItem(atPath: input)
            try? FileManager.default.removeItem(atPath: output)
        }
        var options = TranscodeOptions()
        options.codec = .vp8
        options.bitrate = Self.kilobits * 1000
        options.keyframeInterval = Self.keyframeInterval
        options.threads = Self.threads
        options.maxFrames = size.frames
        let ffmpegArguments = ["-nostdin", "-v", "error", "-y", "-threads", "\(Self.threads)", "-i", input]
            + (size.frames.map { ["-frames:v", "\($0)"] } ?? [])
            + ["-c:v", "libvpx", "-b:v", "\(Self.kilobits)k", "-minrate", "\(Self.kilobits)k", "-maxrate", "\(Self.kilobits)k",
               "-deadline", "realtime", "-cpu-used", "-6", "-lag-in-frames", "0", "-noise-sensitivity", "0",
               "-static-thresh", "1", "-drop-threshold", "0", "-g", "\(Self.keyframeInterval)",
               "-threads", "\(Self.threads)", "-f", "ivf", output]
        func sluice() throws -> (frames: Int, wall: Double, cpu: Double) {
            let transcoder = try Transcoder(input: input, output: output, options: options)
            let (report, wall, cpu) = try ProcessClock.measure { try transcoder.graph.run() }
            return (report.nodes.last?.itemsIn ?? 0, wall, cpu)
        }
        let pictures = try Self.decodedPictures(of: input, count: frames / Self.repeats)
        let bareSettings = VideoEncoderSettings(bitrate: Self.kilobits * 1000, keyframeInterval: Self.keyframeInterval,
                                                threads: Self.threads, realtime: true)
        let bareInput = (0..<(size.frames ?? frames)).map { pictures[$0 % pictures.count] }
        func encodeAlone() -> Double {
            let (_, wall, _) = ProcessClock.measure { BareVP8.encode(bareInput[...], settings: bareSettings) }
            return wall
        }
        func ffmpeg() throws -> (wall: Double, cpu: Double) {
            let run = try Self.run("ffmpeg", ffmpegArguments)
            guard run.status == 0 else { throw Unavailable(description: "ffmpeg exited with \(run.status)") }
            return (run.wall, run.cpu)
        }
        // One of each to warm up, then pairs in alternating order until the time is spent (3 pairs at least).
        _ = try sluice()
        _ = try ffmpeg()
        var ours: [(frames: Int, wall: Double, cpu: Double)] = [], theirs: [(wall: Double, cpu: Double)] = []
        var bound: [Double] = []
        while ours.count < 3 || ours.map(\.wall).reduce(0, +) + theirs.map(\.wall).reduce(0, +) < size.seconds {
            if ours.count.isMultiple(of: 2) {
                ours.append(try sluice())
                theirs.append(try ffmpeg())
            } else {
                theirs.append(try ffmpeg())
                ours.append(try sluice())
            }
            bound.append(encodeAlone())
        }
        let encoded = ours[0].frames
        let sluiceRate = HeadToHead.median(ours.map { Double($0.frames) / max($0.wall, 1e-9) })
        let ffmpegRate = HeadToHead.median(theirs.map { Double(encoded) / max($0.wall, 1e-9) })
        let sluiceCPU = HeadToHead.median(ours.map(\.cpu)), ffmpegCPU = HeadToHead.median(theirs.map(\.cpu))
        let boundRate = HeadToHead.median(bound.map { Double(bareInput.count) / max($0, 1e-9) })
        return ScenarioResult(
            scenario: name,
            metrics: [Metric("sluice", sluiceRate, unit: "frames/s"), Metric("ffmpeg", ffmpegRate, unit: "frames/s"),
                      Metric("encode alone", boundRate, unit: "frames/s"),
                      Metric("sluice cpu", sluiceCPU, unit: "s"), Metric("ffmpeg cpu", ffmpegCPU, unit: "s")],
            ratio: sluiceRate / ffmpegRate, target: 1.15,
            notes: ["\(ours.count) interleaved runs each of \(encoded) frames (\(frames) in the input), medians",
                    "CPU: Sluice \(String(format: "%.2f", sluiceCPU)) s, ffmpeg \(String(format: "%.2f", ffmpegCPU)) s "
                        + "(\(String(format: "%.2f", sluiceCPU / max(ffmpegCPU, 1e-9)))x)",
                    "encode alone: bare libvpx, same settings, on the pictures decoded into memory; its rate over "
                        + "ffmpeg's, \(String(format: "%.2f", boundRate / ffmpegRate))x, is as fast as a transcode with this encoder can go",
                    "ffmpeg \(ffmpegArguments.joined(separator: " "))"],
            seconds: ProcessClock.now() - start)
    }
}
