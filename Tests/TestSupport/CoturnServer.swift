// coturn's turnserver as a test peer for the TURN client, the ICE agent's relays and relay-only calls.
import Foundation
import Glibc
import MediaSTUN
import MediaTransport
import Testing

/// coturn's `turnserver` on 127.0.0.1 with one long-term user (sluice:secret, realm sluice.test), no TLS,
/// no CLI, no configuration file, loopback peers allowed, logging to a temporary file.
public final class CoturnServer {
    public static let executable: String? = ["/usr/bin/turnserver", "/usr/local/bin/turnserver", "/usr/sbin/turnserver"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    public let address: TransportAddress
    public let logFile: URL
    private let process = Process()

    public init() throws {
        guard let executable = Self.executable else { throw CoturnError.notInstalled }
        let port = try Self.freeUDPPort()
        // A small relay range of its own, away from the listening port.
        let relayBase = Int.random(in: 40_000...59_000)
        guard let address = TransportAddress(host: "127.0.0.1", port: port) else {
            throw CoturnError.noAddress
        }
        self.address = address
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-coturn-\(UUID().uuidString).log")
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "-n", "--lt-cred-mech", "--user", "sluice:secret", "--realm", "sluice.test",
            "--allow-loopback-peers", "--no-tls", "--no-dtls", "--no-cli",
            "--listening-ip", "127.0.0.1", "--relay-ip", "127.0.0.1", "--listening-port", "\(port)",
            "--min-port", "\(relayBase)", "--max-port", "\(relayBase + 20)",
            "--log-file", logFile.path, "--simple-log", "--no-stdout-log",
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Runs `body` with a fresh server, killed afterwards; when `body` throws, the server's log goes with
    /// the error into the test's issues.
    public static func with(_ body: (CoturnServer) throws -> Void) throws {
        let server = try CoturnServer()
        defer { server.stop() }
        do {
            try body(server)
        } catch {
            let log = (try? String(contentsOf: server.logFile, encoding: .utf8)) ?? "(no log)"
            Issue.record("\(error); turnserver's log ends:\n\(log.suffix(2000))")
            throw error
        }
    }

    /// Kills the server (SIGKILL: a child of the test process may have SIGTERM blocked) and removes its log.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: logFile)
    }

    /// A UDP port the kernel just gave out and that is free again.
    private static func freeUDPPort() throws -> UInt16 {
        let socket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        defer { socket.close() }
        return socket.localAddress.port
    }
}

public enum CoturnError: Error {
    case notInstalled
    case noAddress
}
