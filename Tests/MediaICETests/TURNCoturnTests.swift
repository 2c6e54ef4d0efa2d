import Foundation
import MediaCore
import MediaSTUN
import MediaTransport
import Testing
import TestSupport

@testable import MediaICE

/// `TURNClient` against a real TURN server, coturn's `turnserver` on 127.0.0.1, over real UDP sockets and
/// the real clock. Each wait is bounded; the server is killed at the end of each test.
@Suite(.serialized, .enabled(if: CoturnServer.executable != nil, "turnserver (coturn) is not installed"))
struct TURNCoturnTests {
    @Test func allocateAndRelayBothWaysThroughIndicationsAndAChannel() throws {
        try CoturnServer.with { server in try relayBothWays(through: server) }
    }

    @Test func wrongPasswordIsRefusedAsWrongCredentials() throws {
        try CoturnServer.with { server in
            var driver = try TURNDriver(server: server.address, password: "not-the-secret")
            driver.client.start(now: SystemClock().now)
            let failure = try driver.waitForEvent(within: 5) { if case .failed = $0 { true } else { false } }
            #expect(failure == .failed(.wrongCredentials))
        }
    }

    func relayBothWays(through server: CoturnServer) throws {
        let peerSocket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let peer = try #require(TransportAddress(host: "127.0.0.1", port: peerSocket.localAddress.port))
        var driver = try TURNDriver(server: server.address, password: "secret")

        driver.client.start(now: SystemClock().now)
        let allocated = try driver.waitForEvent(within: 5) { if case .allocated = $0 { true } else { false } }
        guard case .allocated(let relayed, let mapped, let lifetime) = allocated else {
            Issue.record("expected .allocated, got \(String(describing: allocated))")
            return
        }
        #expect(relayed.ip == IPAddress("127.0.0.1"))
        #expect(mapped?.port == driver.socket.localAddress.port)
        #expect(lifetime > 0)

        driver.client.createPermission(for: peer.ip, now: SystemClock().now)
        let permission = try driver.waitForEvent(within: 5) { $0 == .permissionCreated(peer.ip) }
        #expect(permission == .permissionCreated(peer.ip))

        // Client → relay → peer, as a Send indication.
        try driver.send(Array("hello through coturn".utf8), to: peer)
        let atPeer = try receive(on: peerSocket, within: 3)
        #expect(atPeer.bytes == Array("hello through coturn".utf8))
        #expect(atPeer.from.port == relayed.port)

        // Peer → relay → client, as a Data indication.
        try peerSocket.sendBytes(Array("and back".utf8), to: SocketAddress(host: "127.0.0.1", port: relayed.port))
        let back = try driver.waitForPeerData(within: 3)
        #expect(back.bytes == Array("and back".utf8))
        #expect(back.from == peer)
        #expect(driver.lastFirstByteFromServer == 0x00)  // STUN

        // Through a channel: ChannelData both ways.
        let channelNumber = driver.client.bindChannel(to: peer, now: SystemClock().now)
        let channel = try #require(channelNumber)
        let bound = try driver.waitForEvent(within: 5) { $0 == .channelBound(peer, channel: channel) }
        #expect(bound == .channelBound(peer, channel: channel))
        let sent = try driver.send(Array("on a channel".utf8), to: peer)
        #expect(sent.first == 0x40)
        let onChannel = try receive(on: peerSocket, within: 3)
        #expect(onChannel.bytes == Array("on a channel".utf8))
        try peerSocket.sendBytes(Array("channel back".utf8), to: SocketAddress(host: "127.0.0.1", port: relayed.port))
        let channelBack = try driver.waitForPeerData(within: 3)
        #expect(channelBack.bytes == Array("channel back".utf8))
        #expect(channelBack.from == peer)
        #expect(driver.lastFirstByteFromServer == 0x40)

        driver.client.close(now: SystemClock().now)
        let closed = try driver.waitForEvent(within: 5) { $0 == .closed }
        #expect(closed == .closed)
        #expect(driver.client.statistics.dropCount == 0)
    }

    /// One datagram on `socket`, or a thrown `TURNTestTimeout` after `seconds`.
    func receive(on socket: UDPSocket, within seconds: Double) throws -> (bytes: [UInt8], from: SocketAddress) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let received = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: .seconds(seconds)) }
        guard let received else { throw TURNTestTimeout(what: "a datagram at the peer") }
        return (Array(buffer[..<received.count]), received.from)
    }
}

struct TURNTestTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// The owner's loop around a `TURNClient`: one UDP socket, the monotonic clock.
struct TURNDriver {
    var client: TURNClient
    let socket: UDPSocket
    let serverSocketAddress: SocketAddress
    var events: [TURNEvent] = []
    var peerData: [(bytes: [UInt8], from: TransportAddress)] = []
    var lastFirstByteFromServer: UInt8?

    init(server: TransportAddress, password: String) throws {
        client = TURNClient(server: server, username: "sluice", password: password)
        socket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        serverSocketAddress = try SocketAddress(host: server.ip.description, port: server.port)
    }

    /// Sends `bytes` to `peer` through the client; returns the datagram that went to the server.
    @discardableResult
    mutating func send(_ bytes: [UInt8], to peer: TransportAddress) throws -> [UInt8] {
        guard let datagram = client.send(bytes, to: peer, now: SystemClock().now) else {
            throw TURNTestTimeout(what: "a permission or channel to send on")
        }
        try socket.sendBytes(datagram, to: serverSocketAddress)
        return datagram
    }

    /// Runs the loop until an event matching `wanted` comes (returned), for at most `seconds`.
    mutating func waitForEvent(within seconds: Double, _ wanted: (TURNEvent) -> Bool) throws -> TURNEvent? {
        let deadline = SystemClock().now + .seconds(seconds)
        while SystemClock().now < deadline {
            if let index = events.firstIndex(where: wanted) { return events.remove(at: index) }
            try step(until: deadline)
        }
        throw TURNTestTimeout(what: "a TURN event")
    }

    /// Runs the loop until a peer's datagram comes, for at most `seconds`.
    mutating func waitForPeerData(within seconds: Double) throws -> (bytes: [UInt8], from: TransportAddress) {
        let deadline = SystemClock().now + .seconds(seconds)
        while SystemClock().now < deadline {
            if !peerData.isEmpty { return peerData.removeFirst() }
            try step(until: deadline)
        }
        throw TURNTestTimeout(what: "peer data through the relay")
    }

    /// One turn: send what the client has, wait for a datagram or its timer, feed it.
    private mutating func step(until deadline: ClockTime) throws {
        while let datagram = client.pollTransmit() { try socket.sendBytes(datagram, to: serverSocketAddress) }
        let now = SystemClock().now
        let wake = min(deadline, client.nextTimeout ?? deadline, now + .milliseconds(50))
        var buffer = [UInt8](repeating: 0, count: 2048)
        let received = try buffer.withUnsafeMutableBytes {
            try socket.receive(into: $0, timeout: ClockTime(nanoseconds: max(0, (wake - now).nanoseconds)))
        }
        if let received, let source = TransportAddress(host: received.from.host, port: received.from.port) {
            let bytes = Array(buffer[..<received.count])
            lastFirstByteFromServer = bytes.first
            if case .peerData(let data, let from) = client.handleReceive(bytes, from: source, at: SystemClock().now) {
                peerData.append((data, from))
            }
        }
        if let timeout = client.nextTimeout, timeout <= SystemClock().now { client.handleTimeout(now: SystemClock().now) }
        while let datagram = client.pollTransmit() { try socket.sendBytes(datagram, to: serverSocketAddress) }
        while let event = client.pollEvent() { events.append(event) }
    }
}

extension UDPSocket {
    fileprivate func sendBytes(_ bytes: [UInt8], to address: SocketAddress) throws {
        try bytes.withUnsafeBytes { try send($0, to: address) }
    }
}
