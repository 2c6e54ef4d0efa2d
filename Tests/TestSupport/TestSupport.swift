import Foundation
import MediaCore

/// Helpers shared by the test targets: temporary folders, external tools (ffmpeg, ffprobe),
/// the repository's sample media, and raw picture bytes.
public enum TestSupport {
    /// The repository root (two levels above this file's folder).
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The bundled natural-content clip: VP8, 640x360, 25 fps, 132 frames.
    public static var sampleIVF: String { repositoryRoot.appendingPathComponent("samples/big-buck-bunny-640x360.ivf").path }
    /// The same clip as H.264 (Main, with B-frames) and AAC in an MP4: what `tools/demo` starts from.
    public static var sampleMP4: String { repositoryRoot.appendingPathComponent("samples/big-buck-bunny-640x360.mp4").path }
    public static let sampleFrameCount = 132

    /// The bytes of a file under `Tests/Vectors/` (public packet and key vectors; origins and licences
    /// in its README), e.g. `vector("aiortc/rtp.bin")`.
    public static func vector(_ relativePath: String) throws -> [UInt8] {
        let url = repositoryRoot.appendingPathComponent("Tests/Vectors").appendingPathComponent(relativePath)
        return [UInt8](try Data(contentsOf: url))
    }

    /// Whether this process runs under AddressSanitizer (`tools/sanitize --address`): its allocator
    /// holds freed memory in quarantine, so resident memory grows with what is freed, and leaks are
    /// LeakSanitizer's to find (`detect_leaks=1`), not a resident-size bound's.
    public static let underAddressSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil

    /// Where this test run's executables (the `sluice` CLI) are built.
    public static var productsDirectory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// A fresh, empty folder, removed when `body` returns.
    public static func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
        let url = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        return try body(url)
    }

    /// As above, for an async body.
    public static func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
        let url = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        return try await body(url)
    }

    private static func makeTemporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    public struct ProcessResult: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    }

    public struct ToolFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `executable` (a path, or a name looked up in PATH) with `arguments`, killing it after
    /// `timeout` seconds. Both pipes are drained; a failing status is returned, not thrown.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], timeout: Double = 120) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try locate(executable))
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // The timeout runs on a thread of its own: Dispatch's global queues share their few threads
        // (one per core) with Swift's cooperative pool, which blocking tests may hold.
        let exited = NSCondition()
        let child = ChildState()
        Thread.detachNewThread {
            exited.lock()
            let deadline = Date().addingTimeInterval(timeout)
            while !child.hasExited && exited.wait(until: deadline) {}
            let expired = !child.hasExited
            exited.unlock()
            // SIGKILL: children of the test process may inherit SIGTERM blocked.
            if expired && process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        // Read both pipes concurrently so that neither fills up and blocks the child.
        // The semaphore orders the reader's write before the read below (polling `isFinished` did not,
        // as ThreadSanitizer showed).
        nonisolated(unsafe) var errData = Data()
        let errRead = DispatchSemaphore(value: 0)
        let errReader = Thread {
            errData = readToEnd(err.fileHandleForReading)
            errRead.signal()
        }
        errReader.start()
        let outData = readToEnd(out.fileHandleForReading)
        process.waitUntilExit()
        exited.lock()
        child.hasExited = true
        exited.signal()
        exited.unlock()
        errRead.wait()
        return ProcessResult(status: process.terminationStatus, stdout: outData,
                             stderr: String(decoding: errData, as: UTF8.self))
    }

    /// A tool running in the background (a network peer), started by `start`.
    public final class BackgroundProcess: @unchecked Sendable {
        private let done = NSCondition()
        private var result: Result<ProcessResult, any Error>?

        init(_ executable: String, _ arguments: [String], timeout: Double) {
            Thread.detachNewThread { [self] in
                let outcome = Result { try TestSupport.run(executable, arguments, timeout: timeout) }
                done.lock()
                result = outcome
                done.broadcast()
                done.unlock()
            }
        }

        /// Waits for the tool to end (it is killed at its timeout) and returns what it did.
        public func wait() throws -> ProcessResult {
            done.lock()
            defer { done.unlock() }
            while result == nil { done.wait() }
            return try result!.get()
        }
    }

    /// Starts `executable` in the background; `wait()` collects it. Killed after `timeout` seconds.
    public static func start(_ executable: String, _ arguments: [String], timeout: Double = 60) -> BackgroundProcess {
        BackgroundProcess(executable, arguments, timeout: timeout)
    }

    /// Everything `handle` yields up to end of file. Reads a signal interrupts are retried:
    /// Foundation's `readDataToEndOfFile` traps on EINTR, which child processes' SIGCHLD can cause.
    static func readToEnd(_ handle: FileHandle) -> Data {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                data.append(contentsOf: chunk[0..<count])
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    /// Runs a tool that must succeed; its failure becomes a thrown error with its stderr.
    @discardableResult
    public static func runChecked(_ executable: String, _ arguments: [String], timeout: Double = 120) throws -> ProcessResult {
        let result = try run(executable, arguments, timeout: timeout)
        guard result.status == 0 else {
            throw ToolFailure(description: "\(executable) \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        return result
    }

    /// ffmpeg with quiet, non-interactive defaults.
    @discardableResult
    public static func ffmpeg(_ arguments: [String]) throws -> ProcessResult {
        try runChecked("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
    }

    /// The `key=value` lines ffprobe prints for `entries` (e.g. "stream=width,height") of `path`;
    /// `extra` options go before them.
    public static func ffprobe(_ path: String, entries: String, extra: [String] = []) throws -> [String: String] {
        let result = try runChecked(
            "ffprobe", ["-v", "error"] + extra + ["-show_entries", entries, "-of", "default=noprint_wrappers=1", path])
        var fields: [String: String] = [:]
        for line in result.stdoutText.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    /// ffprobe's view of the first video stream: codec, size and the number of frames it decodes.
    public static func probeVideo(_ path: String) throws -> (codec: String, width: Int, height: Int, frames: Int) {
        let fields = try ffprobe(path, entries: "stream=codec_name,width,height,nb_read_frames",
                                 extra: ["-count_frames", "-select_streams", "v:0"])
        return (fields["codec_name"] ?? "", Int(fields["width"] ?? "") ?? 0, Int(fields["height"] ?? "") ?? 0,
                Int(fields["nb_read_frames"] ?? "") ?? 0)
    }

    /// The visible samples of `frame`, plane after plane and row after row without padding: the layout of
    /// raw I420 files and of ffmpeg's `-f rawvideo -pix_fmt yuv420p` output.
    public static func packed(_ frame: VideoFrame) -> [UInt8] {
        var bytes: [UInt8] = []
        for plane in 0..<frame.layout.planeCount {
            for row in 0..<frame.layout[plane].rows { bytes += frame.row(row, ofPlane: plane) }
        }
        return bytes
    }

    /// The first `count` pictures of the bundled clip, scaled by ffmpeg to `width`x`height`, as I420
    /// frames from `pool` with pts at 25 fps: natural content for codec tests.
    public static func sampleFrames(count: Int, width: Int, height: Int, pool: BufferPool) throws -> [VideoFrame] {
        let raw = try ffmpeg(["-i", sampleIVF, "-vf", "scale=\(width):\(height)", "-frames:v", "\(count)",
                              "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]).stdout
        let layout = PlaneLayout(.i420, width: width, height: height)
        let frameSize = (0..<3).map { layout[$0].width * layout[$0].rows }.reduce(0, +)
        guard raw.count >= count * frameSize else {
            throw ToolFailure(description: "ffmpeg gave \(raw.count) bytes for \(count) pictures of \(frameSize)")
        }
        return raw.withUnsafeBytes { bytes in
            var offset = 0
            return (0..<count).map { index in
                let frame = VideoFrame(width: width, height: height, pts: MediaTime(Int64(index), timebase: Rational(1, 25)),
                                       duration: MediaTime(1, timebase: Rational(1, 25)), pool: pool)
                for plane in 0..<3 {
                    for row in 0..<layout[plane].rows {
                        let line = frame.row(row, ofPlane: plane)
                        line.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + line.count)]))
                        offset += line.count
                    }
                }
                return frame
            }
        }
    }

    private static func locate(_ executable: String) throws -> String {
        if executable.contains("/") { return executable }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(dir)/\(executable)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw ToolFailure(description: "\(executable) not found in PATH (tools/bootstrap installs it)")
    }
}

extension URL {
    /// The path of the file `name` inside this folder (as `withTemporaryDirectory` hands out).
    public func file(_ name: String) -> String { appendingPathComponent(name).path }
}

/// FNV-1a (64 bits): a digest to compare a transfer with its source without printing either.
public func fnv1a(_ bytes: [UInt8]) -> UInt64 {
    bytes.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
}

/// SplitMix64: a small deterministic random number generator, so that randomised tests reproduce.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Whether a child process has exited, shared with its timeout thread; read and written only with
/// that thread's condition lock held.
private final class ChildState: @unchecked Sendable {
    var hasExited = false
}
