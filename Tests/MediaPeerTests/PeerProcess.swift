/// A reference WebRTC peer from tools/peers (aiortc or Chromium) run as a subprocess: SDP over its
/// stdin/stdout (an SDP's lines, then one empty line), one JSON line of results as its last line of
/// stdout, logs on stderr. Every wait is bounded and the process is killed when the test ends.
import Foundation
import Glibc
import MediaCore

/// Where the peers live: `tools/peers` of this checkout, with the venv `tools/peers/setup` makes
/// (or `SLUICE_PEERS_VENV`).
enum PeerTools {
    static let directory: URL = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools/peers")

    static var python: String {
        let venv = ProcessInfo.processInfo.environment["SLUICE_PEERS_VENV"]
            ?? directory.appendingPathComponent(".venv").path
        return venv + "/bin/python"
    }

    /// Why a peer cannot run here, or nil when it can.
    static func missing(_ script: String) -> String? {
        let files = FileManager.default
        if !files.isExecutableFile(atPath: python) {
            return "no Python venv for the test peers at \(python) (run tools/peers/setup)"
        }
        if script.hasPrefix("chromium"),
           !files.isExecutableFile(atPath: "/usr/lib/chromium/chromium") || !files.isExecutableFile(atPath: "/usr/bin/chromedriver")
        {
            return "no Chromium (/usr/lib/chromium/chromium) or chromedriver (/usr/bin/chromedriver)"
        }
        return nil
    }
}

enum PeerProcessError: Error, CustomStringConvertible {
    case timedOut(String, stderr: String)
    case exitedEarly(String, stderr: String)

    var description: String {
        switch self {
        case .timedOut(let what, let stderr): "timed out waiting for \(what); peer stderr tail:\n\(stderr)"
        case .exitedEarly(let what, let stderr): "peer exited before \(what); stderr tail:\n\(stderr)"
        }
    }
}

/// Bytes a reader thread appends to.
final class ByteSink: Sendable {
    let bytes = Locked<[UInt8]>([])
}

/// One running peer script.
final class PeerProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let stdoutBytes = ByteSink()
    private let stderrBytes = ByteSink()
    private let readers = DispatchGroup()
    /// Where the next SDP starts in stdout.
    private var consumed = 0

    /// Starts `tools/peers/<script> <arguments>` with the venv's Python.
    init(script: String, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: PeerTools.python)
        process.arguments = [PeerTools.directory.appendingPathComponent(script).path] + arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        Self.drain(output.fileHandleForReading, into: stdoutBytes, group: readers)
        Self.drain(errors.fileHandleForReading, into: stderrBytes, group: readers)
    }

    deinit { kill() }

    private static func drain(_ handle: FileHandle, into sink: ByteSink, group: DispatchGroup) {
        group.enter()
        Thread.detachNewThread {
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                sink.bytes.withLock { $0 += Array(data) }
            }
            group.leave()
        }
    }

    var isRunning: Bool { process.isRunning }

    /// The last `limit` characters of stderr, for failure messages.
    func stderrTail(_ limit: Int = 3000) -> String {
        let text = String(decoding: stderrBytes.bytes.withLock { $0 }, as: UTF8.self)
        return String(text.suffix(limit))
    }

    /// Waits up to `seconds` for the next SDP on stdout: lines up to an empty line.
    func readSDP(seconds: Double) throws -> String {
        let end = Date().addingTimeInterval(seconds)
        while true {
            let bytes = stdoutBytes.bytes.withLock { $0 }
            let text = String(decoding: bytes[consumed...], as: UTF8.self)
            if let range = text.range(of: "\n\n"), !text[..<range.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                consumed += text[..<range.upperBound].utf8.count
                return String(text[..<range.lowerBound]) + "\n"
            }
            if !process.isRunning { throw PeerProcessError.exitedEarly("its SDP", stderr: stderrTail()) }
            if Date() > end { throw PeerProcessError.timedOut("its SDP", stderr: stderrTail()) }
            usleep(5000)
        }
    }

    /// Writes an SDP (CRLF or LF lines) and the empty line that ends it.
    func writeSDP(_ sdp: String) {
        let lines = sdp.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .newlines)
        try? input.fileHandleForWriting.write(contentsOf: Data((lines + "\n\n").utf8))
    }

    /// Waits up to `seconds` for the peer to exit and returns its JSON line (nil if none), killing it
    /// on time out.
    func result(seconds: Double) -> [String: Any]? {
        let end = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < end { usleep(10000) }
        kill()
        _ = readers.wait(timeout: .now() + 2)
        let text = String(decoding: stdoutBytes.bytes.withLock { $0 }, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { return nil }
        return object
    }

    /// Kills the peer at once (SIGKILL): it vanishes from the network without a word.
    func vanish() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Kills the peer (and, for Chromium, its process group's browser) if it still runs.
    func kill() {
        try? input.fileHandleForWriting.close()
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGINT)
        let end = Date().addingTimeInterval(3)
        while process.isRunning, Date() < end { usleep(10000) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
