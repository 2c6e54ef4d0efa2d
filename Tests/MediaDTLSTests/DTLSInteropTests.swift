// DTLS-SRTP against a foreign implementation: OpenSSL's s_client and s_server tools over real UDP on
// the loopback, bounded in time, the tool killed at its timeout.
import Foundation
import MediaCore
import MediaDTLS
import MediaSRTP
import MediaTransport
import Testing
import TestSupport

@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: OpenSSLTool.path)))
struct DTLSInteropTests {
    /// The tool offers only SRTP_AES128_CM_SHA1_80, we offer the default list (AES-GCM first): the
    /// handshake completes, the profile is that one, and the tool's own RFC 5705 export with the
    /// RFC 5764 label equals our keys laid out client key, server key, client salt, server salt.
    @Test(arguments: [DTLSRole.server, .client])
    func handshakeWithOpenSSLTool(ourRole: DTLSRole) throws {
        let ours = try DTLSCertificate(), theirs = try DTLSCertificate()
        try TestSupport.withTemporaryDirectory { directory in
            let certificatePath = directory.appendingPathComponent("cert.pem").path
            let keyPath = directory.appendingPathComponent("key.pem").path
            try theirs.certificatePEM.write(toFile: certificatePath, atomically: true, encoding: .utf8)
            try theirs.privateKeyPEM.write(toFile: keyPath, atomically: true, encoding: .utf8)
            let socket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { socket.close() }
            let common = ["-dtls1_2", "-use_srtp", "SRTP_AES128_CM_SHA1_80", "-cert", certificatePath, "-key", keyPath,
                          "-keymatexport", "EXTRACTOR-dtls_srtp", "-keymatexportlen", "60"]
            var peer: SocketAddress?
            let tool: OpenSSLTool
            switch ourRole {
            case .server:
                tool = try OpenSSLTool(["s_client", "-connect", "127.0.0.1:\(socket.localAddress.port)"] + common)
            case .client:
                // A free port for s_server; until it listens, our retransmissions repeat the ClientHello.
                let probe = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
                let port = probe.localAddress.port
                probe.close()
                peer = try SocketAddress(host: "127.0.0.1", port: port)
                tool = try OpenSSLTool(["s_server", "-accept", "127.0.0.1:\(port)", "-naccept", "1", "-verify", "1"] + common)
            }

            let association = try DTLSAssociation(role: ourRole, certificate: ours, remoteFingerprint: theirs.fingerprint,
                                                  initialRetransmissionTimeout: .milliseconds(200))
            let outcome = try drive(association, over: socket, to: peer)
            let output = tool.finish(within: .seconds(3))
            let connected = try #require(outcome.keys, "no handshake (\(String(describing: outcome.failure))); tool said: \(output)")
            #expect(connected.profile == .aes128CmHmacSha1_80)
            #expect(output.contains("SRTP Extension negotiated, profile=SRTP_AES128_CM_SHA1_80"))
            let (client, server) = ourRole == .client ? (connected.local, connected.remote) : (connected.remote, connected.local)
            let expected = (client.masterKey + server.masterKey + client.masterSalt + server.masterSalt)
                .map { String(format: "%02X", $0) }.joined()
            let line = output.split(separator: "\n").first { $0.contains("Keying material:") }
            #expect(line?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces).uppercased() == expected)
        }
    }

    /// s_client without a certificate: our server requires one (RFC 5763 §5), so the handshake fails.
    @Test func serverRefusesAClientWithoutCertificate() throws {
        let socket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        defer { socket.close() }
        let tool = try OpenSSLTool(["s_client", "-dtls1_2", "-use_srtp", "SRTP_AES128_CM_SHA1_80",
                                    "-connect", "127.0.0.1:\(socket.localAddress.port)"])
        let association = try DTLSAssociation(role: .server, certificate: try DTLSCertificate(),
                                              remoteFingerprint: try DTLSCertificate().fingerprint)
        let outcome = try drive(association, over: socket, to: nil)
        _ = tool.finish(within: .seconds(3))
        #expect(outcome.keys == nil)
        guard case .handshakeFailed(let text) = outcome.failure else {
            Issue.record("expected handshakeFailed, got \(String(describing: outcome.failure))")
            return
        }
        #expect(text.contains("peer did not return a certificate"))
    }

    /// Runs `association` over `socket` in real time until it connects or fails (at most 8 s), then
    /// closes it. `peer` is where to send; nil until the first datagram comes (when we are the server).
    func drive(_ association: DTLSAssociation, over socket: UDPSocket, to peer: SocketAddress?) throws
        -> (keys: DTLSSRTPKeys?, failure: DTLSError?)
    {
        var peer = peer
        let clock = SystemClock()
        association.start(at: clock.now)
        let deadline = clock.now + .seconds(8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var keys: DTLSSRTPKeys?
        var failure: DTLSError?
        func flush() throws {
            guard let peer else { return }
            while let datagram = association.pollTransmit() { try datagram.withUnsafeBytes { try socket.send($0, to: peer) } }
        }
        while keys == nil, failure == nil, clock.now < deadline {
            try flush()
            let wait = min((association.nextTimeout ?? deadline) - clock.now, .milliseconds(50))
            if let received = try buffer.withUnsafeMutableBytes({ try socket.receive(into: $0, timeout: max(wait, .zero)) }) {
                peer = peer ?? received.from
                association.handleDatagram(Array(buffer[..<received.count]), at: clock.now)
            }
            if let next = association.nextTimeout, clock.now >= next { association.handleTimeout(at: clock.now) }
            for event in association.events() {
                switch event {
                case .connected(let connected): keys = connected
                case .failed(let error): failure = error
                case .applicationData, .closed: break
                }
            }
        }
        association.close()
        try flush()
        return (keys, failure)
    }
}

/// `openssl` with its standard input held open (s_server ends at end of input), output and errors read
/// once it has ended. `finish` kills it if it has not ended in time.
final class OpenSSLTool {
    static let path = "/usr/bin/openssl"
    private let process = Process()
    private let input = Pipe(), output = Pipe()

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Self.path)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    /// Waits up to `limit` for the tool to end, kills it otherwise, and returns what it wrote.
    func finish(within limit: Duration) -> String {
        let started = ContinuousClock.now
        while process.isRunning, ContinuousClock.now - started < limit { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        let text = String(decoding: (try? output.fileHandleForReading.readToEnd()) ?? Data(), as: UTF8.self)
        return text
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
