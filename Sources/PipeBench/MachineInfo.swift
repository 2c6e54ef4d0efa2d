// The machine and software a run was measured on, for the JSON report.
import BenchLoops
import Foundation

/// Where and with what a run was made.
public struct MachineInfo: Codable, Sendable, Equatable {
    public var cores: Int
    public var cpuModel: String
    public var swiftVersion: String
    /// Codec and SRTP library versions, by library name.
    public var libraries: [String: String]
    /// ISO 8601 time the run started.
    public var date: String
    /// `git rev-parse HEAD` of the working directory, if it is a repository.
    public var gitCommit: String?

    public init(cores: Int, cpuModel: String, swiftVersion: String, libraries: [String: String], date: String,
                gitCommit: String?) {
        self.cores = cores
        self.cpuModel = cpuModel
        self.swiftVersion = swiftVersion
        self.libraries = libraries
        self.date = date
        self.gitCommit = gitCommit
    }

    /// This machine, now.
    public static func current() -> MachineInfo {
        MachineInfo(cores: ProcessInfo.processInfo.activeProcessorCount, cpuModel: cpuModel(),
                    swiftVersion: firstLine(of: ["swift", "--version"]) ?? "unknown",
                    libraries: LibraryVersions.all, date: ISO8601DateFormatter().string(from: Date()),
                    gitCommit: firstLine(of: ["git", "rev-parse", "HEAD"]))
    }

    /// The "model name" of the first processor in /proc/cpuinfo.
    static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
              let colon = line.firstIndex(of: ":") else { return "unknown" }
        return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }

    /// The first line `command` prints on stdout or stderr, or nil if it cannot run or fails.
    static func firstLine(of command: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }
}
