import Glibc
import MediaCore
import Testing

@testable import MediaTransport

@Suite struct SocketAddressTests {
    @Test(arguments: [
        ("127.0.0.1:5004", "127.0.0.1", UInt16(5004), false),
        ("[::1]:6000", "::1", 6000, true),
        ("0.0.0.0:0", "0.0.0.0", 0, false),
    ])
    func parses(text: String, host: String, port: UInt16, isIPv6: Bool) throws {
        let address = try SocketAddress(parsing: text)
        #expect(address.host == host && address.port == port && address.isIPv6 == isIPv6)
        #expect(try SocketAddress(parsing: address.description) == address)
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.1:", ":5004", "127.0.0.1:65536", "::1:5004", "[::1]5004", "[::1", "a:b"])
    func refusesWhatIsNotHostColonPort(text: String) {
        #expect(throws: SocketError.invalidAddress(text)) { try SocketAddress(parsing: text) }
    }

    @Test func namesResolveOnce() throws {
        let address = try SocketAddress(parsing: "localhost:7")
        #expect(["127.0.0.1", "::1"].contains(address.host) && address.port == 7)
    }

    @Test func unresolvableHostSaysSo() {
        #expect {
            try SocketAddress(parsing: "no-such-host.invalid:5004")
        } throws: { error in
            guard case SocketError.unresolved(host: "no-such-host.invalid", _)? = error as? SocketError else { return false }
            return true
        }
    }
}

@Suite struct UDPSocketTests {
    static let loopback = try! SocketAddress(parsing: "127.0.0.1:0")

    @Test func datagramsTravelOverLoopbackWithTheirSender() throws {
        let a = try UDPSocket(bindingTo: Self.loopback), b = try UDPSocket(bindingTo: Self.loopback)
        #expect(a.localAddress.port != 0 && a.localAddress.port != b.localAddress.port)
        var buffer = [UInt8](repeating: 0, count: 1500)
        for size in [1, 172, 1200, 1472] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7 + size) }
            try payload.withUnsafeBytes { try a.send($0, to: b.localAddress) }
            let received = try buffer.withUnsafeMutableBytes { try b.receive(into: $0, timeout: .seconds(2)) }
            let datagram = try #require(received)
            #expect(datagram.count == size && !datagram.truncated && datagram.from == a.localAddress)
            #expect(Array(buffer.prefix(size)) == payload)
        }
    }

    @Test func receiveTimesOutWithNil() throws {
        let socket = try UDPSocket(bindingTo: Self.loopback)
        var buffer = [UInt8](repeating: 0, count: 100)
        let start = SystemClock().now
        let received = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: .seconds(0.05)) }
        let waited = (SystemClock().now - start).seconds
        #expect(received == nil)
        #expect(waited >= 0.045 && waited < 1, "waited \(waited) s")
    }

    /// Datagrams sent, then read 200 ms later: the kernel's stamps say when they came, not when
    /// they were read.
    @Test func arrivalTimesAreTheKernelsNotTheReads() throws {
        let a = try UDPSocket(bindingTo: Self.loopback), b = try UDPSocket(bindingTo: Self.loopback)
        try b.enableArrivalTimestamps()
        let clock = SystemClock()
        // When no other socket had stamps on (the first datagram of a fresh CI run read 260 ms late
        // was stamped at its read), the kernel turns them on from a work queue: wait until a datagram
        // read 20 ms after its send shows it, for a second at most.
        var buffer = [UInt8](repeating: 0, count: 100)
        for _ in 0..<50 {
            try [UInt8(0xFF)].withUnsafeBytes { try a.send($0, to: b.localAddress) }
            usleep(20_000)
            let probe = try #require(try buffer.withUnsafeMutableBytes { try b.receiveStamped(into: $0, timeout: .seconds(2)) })
            if let queued = probe.queuedFor, queued >= .milliseconds(10) { break }
        }
        var sent: [ClockTime] = []
        for index in 0..<3 {
            sent.append(clock.now)
            try [UInt8(index)].withUnsafeBytes { try a.send($0, to: b.localAddress) }
            usleep(20_000)
        }
        usleep(200_000)
        for index in 0..<3 {
            let received = try #require(try buffer.withUnsafeMutableBytes { try b.receiveStamped(into: $0, timeout: .seconds(2)) })
            let readAt = clock.now
            let queuedFor = try #require(received.queuedFor)
            let error = (readAt - queuedFor - sent[index]).seconds
            print(String(format: "datagram %d: read %.1f ms after its send, kernel arrival %.3f ms after it", index,
                         (readAt - sent[index]).seconds * 1000, error * 1000))
            #expect(abs(error) < 0.005, "datagram \(index): arrival \(error * 1000) ms from its send, read \((readAt - sent[index]).seconds * 1000) ms after")
            #expect(buffer[0] == UInt8(index) && received.count == 1)
        }
        // Without the option there is no stamp.
        try [UInt8(9)].withUnsafeBytes { try b.send($0, to: a.localAddress) }
        let plain = try #require(try buffer.withUnsafeMutableBytes { try a.receiveStamped(into: $0, timeout: .seconds(2)) })
        #expect(plain.queuedFor == nil && plain.from == b.localAddress)
    }

    /// 200 datagrams of 1 KB sent to a socket with the smallest receive buffer and not read: the
    /// kernel keeps a few and drops the rest. Read without waiting, the socket gives what was kept,
    /// then nil at once. The kernel stamps each datagram with the drops before it was queued, so
    /// the count shows with the next one: then it is what was not kept.
    @Test func datagramsTheKernelDroppedAreCounted() throws {
        let a = try UDPSocket(bindingTo: Self.loopback), b = try UDPSocket(bindingTo: Self.loopback)
        try b.setReceiveBufferSize(1)
        try b.enableDropCounts()
        #expect(b.kernelDrops == 0)
        let sent = 200
        for index in 0..<sent {
            try [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1000).withUnsafeBytes { try a.send($0, to: b.localAddress) }
        }
        var buffer = [UInt8](repeating: 0, count: 2000)
        var read = 0
        let start = SystemClock().now
        while try buffer.withUnsafeMutableBytes({ try b.receiveStamped(into: $0, timeout: .zero) }) != nil { read += 1 }
        #expect((SystemClock().now - start) < .seconds(1), "an empty queue answers at once")
        #expect(read > 0 && read < sent && b.kernelDrops == 0, "\(read) read of \(sent), none after the drops")
        try [UInt8(1)].withUnsafeBytes { try a.send($0, to: b.localAddress) }
        #expect(try buffer.withUnsafeMutableBytes({ try b.receiveStamped(into: $0, timeout: .seconds(2)) })?.count == 1)
        #expect(b.kernelDrops == sent - read, "\(read) read, \(b.kernelDrops) dropped of \(sent)")
    }

    @Test func aLongDatagramIsCutAndSaysSo() throws {
        let a = try UDPSocket(bindingTo: Self.loopback), b = try UDPSocket(bindingTo: Self.loopback)
        try [UInt8](repeating: 9, count: 1000).withUnsafeBytes { try a.send($0, to: b.localAddress) }
        var small = [UInt8](repeating: 0, count: 100)
        let received = try #require(try small.withUnsafeMutableBytes { try b.receive(into: $0, timeout: .seconds(2)) })
        #expect(received.count == 100 && received.truncated)
    }

    @Test func aPortInUseIsNamedByItsErrno() throws {
        let first = try UDPSocket(bindingTo: Self.loopback)
        #expect(throws: SocketError.system(operation: "bind to \(first.localAddress)", errno: EADDRINUSE)) {
            try UDPSocket(bindingTo: first.localAddress)
        }
    }

    @Test func aClosedSocketRefusesWork() throws {
        let socket = try UDPSocket(bindingTo: Self.loopback)
        socket.close()
        socket.close()
        #expect(throws: SocketError.closed) { try [UInt8](repeating: 0, count: 4).withUnsafeBytes { try socket.send($0, to: Self.loopback) } }
    }

    @Test func ipv6Loopback() throws {
        guard let any6 = try? SocketAddress(parsing: "[::1]:0"), let a = try? UDPSocket(bindingTo: any6) else {
            print("IPv6 loopback unavailable here; skipped")
            return
        }
        let b = try UDPSocket(bindingTo: any6)
        try [UInt8]([1, 2, 3]).withUnsafeBytes { try a.send($0, to: b.localAddress) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let received = try #require(try buffer.withUnsafeMutableBytes { try b.receive(into: $0, timeout: .seconds(2)) })
        #expect(received.count == 3 && received.from.isIPv6 && received.from.port == a.localAddress.port)
    }
}

@Suite struct SocketWaitingTests {
    @Test func waitingOnManySocketsNamesTheOnesWithADatagram() throws {
        let sockets = try (0..<4).map { _ in try UDPSocket(bindingTo: UDPSocketTests.loopback) }
        let sender = try UDPSocket(bindingTo: UDPSocketTests.loopback)
        #expect(try UDPSocket.waitForDatagram(on: sockets, timeout: .milliseconds(20)) == [])
        for index in [1, 3] { try [UInt8(index)].withUnsafeBytes { try sender.send($0, to: sockets[index].localAddress) } }
        var ready: [Int] = []
        for _ in 0..<50 where ready.count < 2 { ready = try UDPSocket.waitForDatagram(on: sockets, timeout: .seconds(1)) }
        #expect(ready == [1, 3])
    }
}

@Suite struct NetworkInterfacesTests {
    /// Every machine, even a namespace with only `lo`, has the IPv4 loopback once it is asked for.
    @Test func loopbackIsListedOnlyWhenAsked() throws {
        let all = try NetworkInterfaces.addresses(includeLoopback: true)
        let loopback = try #require(all.first { $0.address.host == "127.0.0.1" })
        #expect(loopback.isLoopback && loopback.address.port == 0 && !loopback.interface.isEmpty)
        let withoutLoopback = try NetworkInterfaces.addresses()
        #expect(withoutLoopback.allSatisfy { !$0.isLoopback && !$0.isLinkLocal })
        #expect(withoutLoopback.count <= all.count)
    }

    /// Each listed address can be bound, as the ICE adapter does for its host candidates.
    @Test func listedAddressesCanBeBound() throws {
        for entry in try NetworkInterfaces.addresses(includeLoopback: true) {
            let socket = try UDPSocket(bindingTo: entry.address)
            #expect(socket.localAddress.host == entry.address.host && socket.localAddress.port != 0, "\(entry)")
        }
    }
}

@Suite struct EventWakerTests {
    @Test func aWakeEndsTheWaitWithoutASocketReady() throws {
        let socket = try UDPSocket(bindingTo: UDPSocketTests.loopback)
        let waker = try EventWaker()
        waker.wake()
        waker.wake()
        let start = SystemClock().now
        #expect(try UDPSocket.waitForDatagram(on: [socket], waker: waker, timeout: .seconds(5)) == [])
        #expect((SystemClock().now - start).seconds < 1)
        // The two wakes folded into one: the next wait runs its time out.
        let again = SystemClock().now
        #expect(try UDPSocket.waitForDatagram(on: [socket], waker: waker, timeout: .milliseconds(30)) == [])
        #expect((SystemClock().now - again).seconds >= 0.025)
    }
}
