import Foundation
import MediaCore
import Testing

@testable import MediaFiles

/// A fresh directory for the duration of `body`, removed afterwards.
func withTemporaryDirectory<R>(_ body: (TemporaryDirectory) throws -> R) throws -> R {
    let directory = try TemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory.path) }
    return try body(directory)
}

struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/mediafiles-test-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - External tools

/// Runs ffmpeg (quiet, never reading stdin, overwriting outputs) with `arguments`.
func ffmpeg(_ arguments: [String]) throws {
    _ = try runTool("ffmpeg", ["-nostdin", "-loglevel", "error", "-y"] + arguments)
}

/// The `key=value` lines ffprobe prints for `entries` (e.g. "stream=width,height") of `path`.
func ffprobe(_ path: String, entries: String, extra: [String] = []) throws -> [String: String] {
    let output = try runTool(
        "ffprobe", ["-v", "error"] + extra + ["-show_entries", entries, "-of", "default=noprint_wrappers=1", path])
    var fields: [String: String] = [:]
    for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
        let parts = line.split(separator: "=", maxSplits: 1)
        if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
    }
    return fields
}

/// Runs `tool` found on PATH and returns its standard output; fails with its standard error otherwise.
func runTool(_ tool: String, _ arguments: [String]) throws -> Data {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? ""
    guard let executable = searchPath.split(separator: ":").map({ "\($0)/\(tool)" })
        .first(where: FileManager.default.isExecutableFile(atPath:))
    else {
        throw TestFailure("\(tool) not found on PATH: these tests need ffmpeg and ffprobe installed (CI installs them)")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe(), errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestFailure("\(tool) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus): \(errorText)")
    }
    return data
}

// MARK: - Files

func contents(of path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

func write(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Keeps the first `length` bytes of the file.
func cut(_ path: String, to length: Int) throws {
    try write(Array(try contents(of: path).prefix(length)), to: path)
}

func patch(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
    var data = try contents(of: path)
    data.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
    try write(data, to: path)
}

func littleEndian32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

// MARK: - Media

/// A picture whose every sample depends on its plane, position and `seed`; the row padding holds junk.
func testPicture(width: Int, height: Int, seed: Int, pool: BufferPool) -> VideoFrame {
    let frame = VideoFrame(width: width, height: height, pts: .zero(Rational(1, 25)), pool: pool)
    frame.buffer.storage.initializeMemory(as: UInt8.self, repeating: 0xEE)
    for plane in 0..<frame.layout.planeCount {
        for row in 0..<frame.layout[plane].rows {
            let bytes = frame.row(row, ofPlane: plane)
            for column in 0..<bytes.count {
                bytes[column] = UInt8(truncatingIfNeeded: seed &* 31 &+ plane &* 101 &+ row &* 7 &+ column &* 3)
            }
        }
    }
    return frame
}

/// The meaningful bytes of a picture, planes and rows without padding (the layout of raw I420 files).
func packed(_ frame: VideoFrame) -> [UInt8] {
    var bytes: [UInt8] = []
    for plane in 0..<frame.layout.planeCount {
        for row in 0..<frame.layout[plane].rows { bytes += frame.row(row, ofPlane: plane) }
    }
    return bytes
}

/// Audio whose bytes follow a pattern that depends on `seed`.
func testAudio(_ format: SampleFormat, sampleRate: Int, channels: Int, sampleCount: Int, seed: Int, pool: BufferPool)
    -> AudioFrame
{
    let frame = AudioFrame(
        sampleFormat: format, sampleRate: sampleRate, channels: channels, sampleCount: sampleCount,
        pts: .zero(Rational(1, sampleRate)), pool: pool)
    for i in 0..<frame.byteCount { frame.bytes[i] = UInt8(truncatingIfNeeded: seed &* 13 &+ i &* 5 &+ i / 7) }
    return frame
}
