import Glibc
import MediaCore
import MediaRTP
import Testing

@testable import MediaTransport

/// A receive session over UDP when it cannot keep up: a flood faster than it reads, or its thread
/// away for longer than a frame's deadline. Found by running HostileTrafficTests' flood under CPU
/// load: the receive loop read until the socket was empty, which a flood never lets happen, so no
/// frame was released and no NACK sent for seconds (the receiver ended on its silence timeout).
@Suite struct ReceiveUnderLoadTests {
    static let ssrc: UInt32 = 0x5EED_0010

    static func receiver(clock: any MediaClock = SystemClock()) throws -> RTPReceiveSession<VP8Depacketizer> {
        let configuration = RTPReceiveSession<VP8Depacketizer>.Configuration(
            local: try SocketAddress(parsing: "127.0.0.1:0"), multiplexed: true, payloadType: 96, ssrc: ssrc)
        return try RTPReceiveSession(depacketizer: VP8Depacketizer(), configuration: configuration, clock: clock)
    }

    /// Runs `body` with a receive session on `clock` and a function that sends a datagram to its RTP
    /// port from a socket of its own; closes both after.
    static func withReceiver(clock: any MediaClock,
                             _ body: (RTPReceiveSession<VP8Depacketizer>, ([UInt8]) throws -> Void) throws -> Void) throws {
        let session = try receiver(clock: clock)
        defer { session.close() }
        let socket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        defer { socket.close() }
        let address = try #require(session.sockets).rtp.localAddress
        try body(session) { packet in try packet.withUnsafeBytes { try socket.send($0, to: address) } }
    }

    /// Every packet of `frames` VP8 frames (the first a keyframe), three packets a frame.
    static func packets(frames: Int) throws -> [[[UInt8]]] {
        var sender = RTPSender(packetizer: try VP8Packetizer(maxPayloadSize: 500),
                               configuration: .init(payloadType: 96, ssrc: ssrc))
        return try (0..<frames).map { index in
            var packets: [[UInt8]] = []
            try sender.send(RTPSessionTransportTests.frame(index, keyframe: index == 0), at: .zero) { packets.append(Array($0)) }
            return packets
        }
    }

    @Test func aFloodIsReadOneBatchAtATime() throws {
        let session = try Self.receiver()
        defer { session.close() }
        let transport = try #require(session.transport as? UDPRTPTransport)
        let attacker = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        defer { attacker.close() }
        let garbage = [UInt8](repeating: 0x01, count: 20)  // version 0: not RTP
        let queued = UDPRTPTransport.batchLimit * 2 + 10
        for _ in 0..<queued { try garbage.withUnsafeBytes { try attacker.send($0, to: transport.sockets.rtp.localAddress) } }
        var batches: [Int] = []
        for _ in 0..<3 {
            var count = 0
            _ = try transport.receive(timeout: .zero) { _ in count += 1; return false }
            batches.append(count)
        }
        #expect(batches == [UDPRTPTransport.batchLimit, UDPRTPTransport.batchLimit, 10])
    }

    /// The thread comes back after the frame's give-up time with the missing packet waiting in the
    /// socket: the packet is taken in first, and the frame comes out whole instead of being given up.
    @Test func aPacketQueuedWhileTheThreadWasAwayCountsBeforeItsFrameIsJudged() throws {
        let clock = ManualClock(start: .seconds(10))
        try Self.withReceiver(clock: clock) { session, send in
            let frames = try Self.packets(frames: 2)
            for packet in frames[0] { try send(packet) }
            try send(frames[1][0])
            try send(frames[1][2])
            var released: [EncodedFrame] = []
            while released.isEmpty, clock.now < .seconds(11) {
                if case .frame(let frame) = try session.next(until: clock.now) { released.append(frame) }
                clock.advance(by: .milliseconds(10))
            }
            #expect(released.count == 1, "the keyframe")
            // Away for two seconds, past the second frame's deadline; meanwhile its missing packet came.
            clock.advance(by: .seconds(2))
            try send(frames[1][1])
            // Loopback delivers within `send`: the packet is in the socket now.
            let event = try session.next(until: clock.now)
            guard case .frame(let frame) = event else {
                Issue.record("the second frame was not released: \(event), \(String(describing: session.statistics.jitterBuffer))")
                return
            }
            let sent = RTPSessionTransportTests.frame(1, keyframe: false)
            #expect(Array(frame.bytes) == Array(sent.bytes), "the second frame, whole")
            #expect(session.statistics.jitterBuffer?.lost == 0 && session.statistics.jitterBuffer?.late == 0)
        }
    }

    /// A stream paced at 30 frames a second, read only every 200 ms (the thread away): each packet is
    /// timed by the kernel's arrival stamp, so the interarrival jitter (RFC 3550 §6.4.1) is the
    /// network's, near zero on loopback. Timed by the reads, the bursts made it some 15 ms.
    @Test func aStreamReadLateInBurstsKeepsItsJitterSmall() throws {
        let clock = SystemClock()
        try Self.withReceiver(clock: clock) { session, send in
            let frames = try Self.packets(frames: 24)
            var released = 0
            func drain() throws {
                while case .frame = try session.next(until: clock.now) { released += 1 }
            }
            let start = clock.now
            for (index, packets) in frames.enumerated() {
                let due = start + ClockTime.milliseconds(33 * Int64(index))
                if due > clock.now { usleep(UInt32((due - clock.now).nanoseconds / 1000)) }
                for packet in packets { try send(packet) }
                if index % 6 == 5 { try drain() }  // every sixth frame, about 200 ms
            }
            usleep(300_000)
            try drain()
            let statistics = try #require(session.statistics.jitterBuffer)
            print("read in bursts every 200 ms: interarrival jitter \(String(format: "%.2f", statistics.jitterSeconds * 1000)) ms")
            #expect(statistics.received == 72 && released == 24)
            #expect(statistics.jitterSeconds < 0.005, "jitter \(statistics.jitterSeconds * 1000) ms")
        }
    }

    /// Starved past a frame's last chance, the receiver comes back to a queue longer than one read
    /// takes: the frame's first packet, a flood's garbage, then its other packets. Judged at the
    /// arrival of the last datagram read (the queue is not empty), not at now, the frame waits for
    /// the next read and comes out whole, where it used to be given up with its packets unread.
    @Test func aFrameWhosePacketsWaitBehindMoreThanOneReadIsNotGivenUp() throws {
        let clock = SystemClock()
        try Self.withReceiver(clock: clock) { session, send in
            let frames = try Self.packets(frames: 2)
            for packet in frames[0] { try send(packet) }
            var released: [EncodedFrame] = []
            let start = clock.now
            while released.isEmpty, clock.now < start + .seconds(1) {
                if case .frame(let frame) = try session.next(until: clock.now + .milliseconds(10)) { released.append(frame) }
            }
            try #require(released.count == 1, "the keyframe")
            try send(frames[1][0])
            for _ in 0..<UDPRTPTransport.batchLimit + 40 { try send([0x01, 0x02, 0x03, 0x04]) }  // not RTP
            try send(frames[1][1])
            try send(frames[1][2])
            usleep(1_500_000)  // away past the frame's last chance (its expected arrival plus the 1 s maximum delay)
            let deadline = clock.now + .milliseconds(500)
            while released.count < 2, clock.now < deadline {
                if case .frame(let frame) = try session.next(until: clock.now + .milliseconds(10)) { released.append(frame) }
            }
            let statistics = session.statistics
            #expect(released.count == 2 && statistics.malformedPackets == UDPRTPTransport.batchLimit + 40)
            #expect(statistics.jitterBuffer?.framesDropped == 0 && statistics.jitterBuffer?.lost == 0)
        }
    }
}
