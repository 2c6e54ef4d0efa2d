import Foundation
import Sluice
import Synchronization
import Testing
import TestSupport

/// A receive pipeline (`RTPReceivePipeline`, what `sluice receive` runs) fed its real stream from a
/// real sender with garbage mixed in on 127.0.0.1: it decodes the same pictures as without the
/// garbage, and counts each kind it dropped by its reason. Serialized: each run streams in real time.
@Suite(.serialized) struct HostileTrafficTests {
    /// What an attacker on the path mixes in after each real RTP packet.
    enum Garbage: String, CaseIterable, Sendable {
        /// Random bytes that are not RTP (version 0).
        case randomBytes
        /// A real packet cut inside its header.
        case truncated
        /// A real packet under another SSRC, numbered in sequence: a well-formed foreign stream.
        case foreignSSRC
        /// A real packet sent again, ten packets later.
        case replayed
        /// A real packet with one payload byte flipped, sent ahead of it (SRTP only: plain RTP cannot
        /// tell). A tampered copy of a packet already received would be refused as a replay first
        /// (RFC 3711 §3.3 checks the index before the tag).
        case tampered
        /// The real header with a 3000-byte payload.
        case oversized
        /// An RTCP compound of reports, SDES and BYE from sources that are not the stream's.
        case rtcpBomb
    }

    /// A relay on 127.0.0.1 that the sender sends to and that forwards everything both ways between
    /// it and the receiver, and, after each real RTP packet, sends `perPacket` garbage datagrams
    /// (kinds in turn) from a socket of its own to the receiver.
    final class HostileRelay: @unchecked Sendable {
        let socket: UDPSocket
        private let attacker: UDPSocket
        private let kinds: [Garbage]
        private let perPacket: Int
        private let stopped = Atomic(false)
        private let counts = Locked([Garbage: Int]())
        private let earlyCounts = Locked([Garbage: Int]())
        private var thread: WorkerThread?

        init(kinds: [Garbage], perPacket: Int) throws {
            socket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
            attacker = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
            try? socket.setReceiveBufferSize(4 << 20)  // the relay's own lag must not lose real packets
            self.kinds = kinds
            self.perPacket = perPacket
        }

        /// Sends a first burst of garbage to `receiver` before any real packet (of `early` kinds, four
        /// rounds, each made from a packet of a foreign SSRC with the stream's payload type), then
        /// starts relaying. The burst is what a receiver that takes the first packet heard as its
        /// stream locks onto.
        func start(receiver: SocketAddress, early: [Garbage]) {
            var random = SplitMix64(seed: 41)
            var foreignSequence: UInt16 = 0
            let template: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 0, 0xBA, 0xD0, 0xBA, 0xD0, 0x65] + [UInt8](repeating: 0x88, count: 500)
            for _ in 0..<4 {
                for kind in early {
                    let garbage = Self.make(kind, from: [template], random: &random, foreignSequence: &foreignSequence)
                    try? garbage.withUnsafeBytes { try attacker.send($0, to: receiver) }
                    counts.withLock { $0[kind, default: 0] += 1 }
                    earlyCounts.withLock { $0[kind, default: 0] += 1 }
                }
            }
            thread = WorkerThread { [self] in run(receiver: receiver) }
        }

        /// How many of each kind the first burst sent.
        var early: [Garbage: Int] { earlyCounts.withLock { $0 } }

        /// Stops relaying; returns how many datagrams of each kind were injected.
        func stop() -> [Garbage: Int] {
            stopped.store(true, ordering: .relaxed)
            thread?.join()
            thread = nil
            socket.close()
            attacker.close()
            return counts.withLock { $0 }
        }

        private func run(receiver: SocketAddress) {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var sender: SocketAddress?
            var recent: [[UInt8]] = []
            var random = SplitMix64(seed: 14)
            var turn = 0, foreignSequence: UInt16 = 1000
            while !stopped.load(ordering: .relaxed) {
                let got = try? buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: .milliseconds(20)) }
                guard let received = got ?? nil else { continue }
                let bytes = Array(buffer[0..<received.count])
                if received.from == receiver {
                    if let sender { try? bytes.withUnsafeBytes { try socket.send($0, to: sender) } }
                    continue
                }
                sender = received.from
                let isRTCP = bytes.withUnsafeBytes { RTPSessionSockets.isRTCP($0) }
                if !isRTCP && kinds.contains(.tampered) {
                    let tampered = Self.make(.tampered, from: [bytes], random: &random, foreignSequence: &foreignSequence)
                    try? tampered.withUnsafeBytes { try attacker.send($0, to: receiver) }
                    counts.withLock { $0[.tampered, default: 0] += 1 }
                }
                try? bytes.withUnsafeBytes { try socket.send($0, to: receiver) }
                guard !isRTCP else { continue }
                recent.append(bytes)
                if recent.count > 64 { recent.removeFirst() }
                let rotation = kinds.filter { $0 != .tampered }
                for _ in 0..<(rotation.isEmpty ? 0 : perPacket) {
                    let kind = rotation[turn % rotation.count]
                    turn += 1
                    var garbage = Self.make(kind, from: recent, random: &random, foreignSequence: &foreignSequence)
                    try? garbage.withUnsafeMutableBytes { try attacker.send(UnsafeRawBufferPointer($0), to: receiver) }
                    counts.withLock { $0[kind, default: 0] += 1 }
                }
            }
        }

        static func make(_ kind: Garbage, from recent: [[UInt8]], random: inout SplitMix64, foreignSequence: inout UInt16) -> [UInt8] {
            let latest = recent[recent.count - 1]
            switch kind {
            case .randomBytes:
                var bytes = (0..<Int.random(in: 1...1400, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                bytes[0] &= 0x3F  // version 0: not RTP
                if bytes.count > 1 { bytes[1] &= 0x3F }  // and not RTCP either (RFC 5761 §4)
                return bytes
            case .truncated:
                if Bool.random(using: &random) { return Array(latest[0..<Int.random(in: 1...11, using: &random)]) }
                var header = Array(latest[0..<20])
                header[0] = 0x8F  // 15 CSRCs announced, 2 present
                return header
            case .foreignSSRC:
                var packet = latest
                packet.replaceSubrange(8..<12, with: [0xBA, 0xD0, 0xBA, 0xD0])
                foreignSequence &+= 1
                packet.replaceSubrange(2..<4, with: [UInt8(foreignSequence >> 8), UInt8(foreignSequence & 0xFF)])
                return packet
            case .replayed:
                return recent[max(0, recent.count - 10)]
            case .tampered:
                var packet = latest
                packet[min(20, packet.count - 1)] ^= 0x40
                return packet
            case .oversized:
                return Array(latest[0..<12]) + (0..<3000).map { _ in UInt8.random(in: 0...255, using: &random) }
            case .rtcpBomb:
                let blocks = (0..<31).map { _ in ReportBlock(ssrc: UInt32.random(in: 1...UInt32.max, using: &random), fractionLost: 255, cumulativeLost: 1 << 20) }
                let compound = RTCPCompoundPacket([
                    .receiverReport(ReceiverReport(ssrc: UInt32.random(in: 1...UInt32.max, using: &random), reportBlocks: blocks)),
                    .sourceDescription(SourceDescription(chunks: (0..<8).map { _ in
                        .init(source: UInt32.random(in: 1...UInt32.max, using: &random), items: [SourceDescriptionItem(type: .cname, text: String(repeating: "x", count: 40))])
                    })),
                    .goodbye(Goodbye(sources: (0..<5).map { _ in UInt32.random(in: 1...UInt32.max, using: &random) })),
                ])
                var bytes = [UInt8](repeating: 0, count: compound.marshalSize)
                _ = bytes.withUnsafeMutableBytes { try? compound.write(into: $0) }
                return bytes
            }
        }
    }

    /// A 90-frame H.264 stream (25 fps, 320x240), encoded once, so that every run sends the same packets.
    static func makeStream(in dir: URL) throws -> String {
        let reference = try TranscodeTests.makeReference(in: dir, frames: 90)
        let stream = dir.file("stream.h264")
        var options = TranscodeOptions()
        options.codec = .h264
        options.keyframeInterval = 30
        _ = try Transcoder(input: reference, output: stream, options: options).run()
        return stream
    }

    /// Sends `stream` through a relay that mixes in `kinds` (`perPacket` after each real packet) to a
    /// receive pipeline opened from the SDP the sender writes (minus its `a=ssrc` when not `named`);
    /// returns the receiver, the decoded file's bytes, what was injected, and how many packets the
    /// sender sent again for NACKs (a loaded machine delays a frame's last packets past the receiver's
    /// reorder allowance; its tail NACK then brings a copy of a packet that was only late).
    static func run(_ stream: String, in dir: URL, name: String, kinds: [Garbage], perPacket: Int = 3,
                    srtp: Bool = false, named: Bool = true)
        throws -> (RTPReceivePipeline, Data, [Garbage: Int], early: [Garbage: Int], retransmitted: Int)
    {
        let relay = try HostileRelay(kinds: kinds, perPacket: perPacket)
        var injected: [Garbage: Int] = [:]
        var retransmitted = 0
        let receiver: RTPReceivePipeline
        do {
            var destination = RTPDestination(address: relay.socket.localAddress)
            destination.multiplexed = true
            destination.srtp = srtp ? .random(.aes128CmHmacSha1_80) : nil
            let sender = try Transcoder(input: stream, sendingTo: destination)
            // The receiver opens the SDP the sender writes, as `sluice receive` does (on a port of its
            // own: the relay forwards to it), with or without the a=ssrc that names the stream.
            let sdp = try SessionDescription(parsing: SessionDescription(describing: sender.rtpSender!, frameRate: Samples.frameRate).serialized())
            var description = try RTPStreamDescription(media: sdp.media[0], in: sdp)
            #expect(description.ssrc == sender.rtpSender!.ssrc && description.multiplexed && (description.srtp != nil) == srtp)
            description.local = try SocketAddress(parsing: "127.0.0.1:0")
            if !named { description.ssrc = nil }
            var options = ReceiveOptions()
            options.limits.silence = .seconds(5)
            receiver = try RTPReceivePipeline(stream: description, output: dir.file("\(name).y4m"), options: options)
            // Unnamed, a foreign stream in sequence before the real one would rightly win probation
            // (RFC 3550 §A.1): the first burst then has only sources that never prove themselves.
            relay.start(receiver: receiver.localAddress, early: named ? kinds : kinds.filter { $0 != .foreignSSRC })
            _ = try RTPStreamingTests.stream(into: receiver) { _ = try sender.run() }
            injected = relay.stop()
            retransmitted = sender.stats()?.retransmittedPacketsSent ?? 0
        } catch {
            _ = relay.stop()
            throw error
        }
        return (receiver, try Data(contentsOf: URL(fileURLWithPath: dir.file("\(name).y4m"))), injected, relay.early, retransmitted)
    }

    static func summary(_ receiver: RTPReceivePipeline, _ injected: [Garbage: Int]) -> String {
        let s = receiver.statistics()
        let jitter = s.jitterBuffer ?? JitterBufferStatistics()
        return "injected \(injected.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")); "
            + "received \(s.packetsReceived), malformed \(s.malformedPackets), oversized \(s.oversizedPackets), "
            + "foreign \(s.foreignPackets), probation \(s.probationPackets), foreignRTCP \(s.foreignRTCP), "
            + "malformedRTCP \(s.malformedRTCP), unprotectFailures \(s.unprotectFailures), "
            + "srtp auth \(s.srtp?.authenticationFailures ?? 0) replay \(s.srtp?.replayedPackets ?? 0) other \(s.srtp?.otherErrors ?? 0); "
            + "jitter duplicates \(jitter.duplicates) late \(jitter.late) lost \(jitter.lost); frames \(receiver.framesDone)"
    }

    @Test func threeGarbagePacketsPerRealOneChangeNoPictureAndEachIsCountedByItsReason() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let stream = try Self.makeStream(in: dir)
            let (clean, cleanBytes, _, _, _) = try Self.run(stream, in: dir, name: "clean", kinds: [])
            #expect(clean.framesDone == 90)

            let plainKinds: [Garbage] = [.randomBytes, .truncated, .foreignSSRC, .replayed, .oversized, .rtcpBomb]
            for named in [true, false] {
                let (receiver, bytes, injected, early, retransmitted) = try Self.run(stream, in: dir, name: "hostile-\(named)", kinds: plainKinds, named: named)
                let s = receiver.statistics()
                print("hostile, plain RTP, SSRC \(named ? "named by the SDP" : "by probation"): \(Self.summary(receiver, injected)); first burst \(early)")
                #expect(receiver.framesDone == 90 && bytes == cleanBytes, "the same 90 pictures, bit for bit")
                #expect(injected.values.reduce(0, +) >= 3 * 90, "three per real packet")
                #expect(s.malformedPackets == injected[.randomBytes]! + injected[.truncated]!)
                #expect(s.oversizedPackets == injected[.oversized]!)
                // The first burst's replays are copies of a foreign packet: foreign, or on probation.
                #expect(s.foreignPackets + s.probationPackets == injected[.foreignSSRC]! + early[.replayed]!)
                if named { #expect(s.probationPackets == 0) }
                let jitter = try #require(s.jitterBuffer)
                // Every copy is a replay, or a packet the sender sent again for a NACK.
                let replays = injected[.replayed]! - early[.replayed]!
                #expect((replays...(replays + retransmitted)).contains(jitter.duplicates + jitter.late) && jitter.lost == 0,
                        "\(jitter.duplicates) duplicates and \(jitter.late) late for \(replays) replays and \(retransmitted) retransmissions")
                #expect(s.foreignRTCP == injected[.rtcpBomb]! && s.malformedRTCP == 0 && s.senderReports > 0)
            }
        }
    }

    @Test func withSRTPReplayedAndTamperedPacketsAreCountedAsSuchAndChangeNoPicture() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let stream = try Self.makeStream(in: dir)
            let (clean, cleanBytes, _, _, _) = try Self.run(stream, in: dir, name: "clean", kinds: [], srtp: true)
            #expect(clean.framesDone == 90)
            let (receiver, bytes, injected, early, retransmitted) = try Self.run(stream, in: dir, name: "hostile", kinds: Garbage.allCases, srtp: true)
            let s = receiver.statistics()
            print("hostile, SRTP: \(Self.summary(receiver, injected)); first burst \(early)")
            #expect(receiver.framesDone == 90 && bytes == cleanBytes, "the same 90 pictures, bit for bit")
            let srtp = try #require(s.srtp)
            // Copies of packets already received (replays, and the oversized ones under a real
            // header) are refused as replays (RFC 3711 §3.3.2); the tampered ones, sent ahead of the
            // real packet, and those under another SSRC fail authentication (§3.3 step 5).
            let late = { (kind: Garbage) in injected[kind, default: 0] - early[kind, default: 0] }
            #expect(srtp.replayedPackets >= late(.replayed)
                    && srtp.replayedPackets <= late(.replayed) + late(.oversized) + late(.truncated) + retransmitted)
            #expect(srtp.authenticationFailures >= injected[.tampered]! + late(.foreignSSRC))
            let injectedCount = injected.values.reduce(0, +)
            #expect((injectedCount...(injectedCount + retransmitted)).contains(s.unprotectFailures),
                    "every injected datagram is refused, RTCP too, and so is a second copy sent for a NACK")
            #expect(s.malformedPackets == 0 && s.foreignPackets == 0 && s.jitterBuffer?.lost == 0)
        }
    }

    /// The resident set of process `pid` (VmRSS of /proc/PID/status), in KiB; nil once it has gone.
    static func residentKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    /// The process whose command line contains `text`, waiting up to 10 s for it to appear.
    static func process(withArgument text: String) throws -> Int32 {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = Int32(entry), let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
                if String(decoding: line, as: UTF8.self).contains(text) { return pid }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw FixtureError(description: "no process with \(text) in its command line")
    }

    /// `sluice receive` (a process of its own, so that its memory is its own) receives a 10 s stream
    /// while garbage arrives on its ports at up to 100,000 datagrams a second, each foreign RTP
    /// packet with an SSRC never seen before (with SRTP: a stream context libsrtp must not create).
    /// Its resident memory after a 2 s warm-up must stay within 4 MiB while some 800,000 datagrams
    /// arrive: 5 bytes kept per datagram would show. (Frames in flight may vary by a few pictures of
    /// 112 KiB when the machine is busy; the garbage must add nothing.) The flood's rate is what the
    /// machine reaches, printed; at least a fifth of the target is required for the run to count.
    @Test(arguments: [false, true])
    func aFloodOfGarbageDoesNotGrowTheReceiversMemory(srtp: Bool) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let stream = try Self.makeStream(in: dir)
            let port = try RTPInteropTests.freePortPair()
            let target = try SocketAddress(host: "127.0.0.1", port: port)
            var destination = RTPDestination(address: target)
            destination.srtp = srtp ? .random(.aes128CmHmacSha1_80) : nil
            var options = TranscodeOptions()
            options.loop = true
            options.maxFrames = 250
            let sender = try Transcoder(input: stream, sendingTo: destination, options: options)
            let sdp = dir.file("flood-\(srtp).sdp"), output = dir.file("flood.y4m")
            try SessionDescription(describing: sender.rtpSender!, frameRate: Samples.frameRate).serialized()
                .write(toFile: sdp, atomically: true, encoding: .utf8)
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let receiving = TestSupport.start(sluice, ["receive", sdp, output, "--quiet", "--timeout", "5"], timeout: 60)
            let pid = try Self.process(withArgument: sdp)
            // Nothing is sent before it has bound its ports: on a busy machine a fixed half second was
            // sometimes too short, and the stream's first keyframe went to a closed port (220 of 250
            // frames: the rest waited for the next keyframe).
            for _ in 0..<400 where ![port, port + 1].allSatisfy(RTPInteropTests.isBound(udpPort:)) { usleep(25_000) }
            try #require([port, port + 1].allSatisfy(RTPInteropTests.isBound(udpPort:)), "sluice receive bound its ports")

            let stop = Atomic(false), sent = Atomic(0)
            let flood = WorkerThread {
                guard let socket = try? UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0)),
                      let rtcp = try? SocketAddress(host: "127.0.0.1", port: port + 1) else { return }
                defer { socket.close() }
                var random = SplitMix64(seed: 100)
                let template: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0x41, count: 1000)
                let recent = [template]
                var foreignSequence: UInt16 = 0
                var garbage = Garbage.allCases.map { HostileRelay.make($0, from: recent, random: &random, foreignSequence: &foreignSequence) }
                let start = ContinuousClock.now
                var count = 0
                while !stop.load(ordering: .relaxed) {
                    let elapsed = ContinuousClock.now - start
                    let due = Int(Double(elapsed.components.seconds) * 100_000 + Double(elapsed.components.attoseconds) / 1e13)
                    if count >= due { usleep(200); continue }
                    let index = count % garbage.count
                    if Garbage.allCases[index] == .foreignSSRC {
                        // A source never seen before, every time.
                        let ssrc = UInt32.random(in: 1...UInt32.max, using: &random)
                        for byte in 0..<4 { garbage[index][8 + byte] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * byte)) }
                    }
                    let to = Garbage.allCases[index] == .rtcpBomb ? rtcp : target
                    try? garbage[index].withUnsafeBytes { try socket.send($0, to: to) }
                    count += 1
                    if count % 1000 == 0 { sent.store(count, ordering: .relaxed) }
                }
                sent.store(count, ordering: .relaxed)
            }
            let floodStart = Date()
            let samples = Locked([(Double, Int)]())
            let sampler = WorkerThread {
                while !stop.load(ordering: .relaxed), let kib = Self.residentKiB(pid) {
                    samples.withLock { $0.append((Date().timeIntervalSince(floodStart), kib)) }
                    Thread.sleep(forTimeInterval: 0.25)
                }
            }
            _ = try? sender.run()
            let elapsed = Date().timeIntervalSince(floodStart)
            stop.store(true, ordering: .relaxed)
            flood.join()
            sampler.join()
            let result = try receiving.wait()
            let floodRate = Double(sent.load(ordering: .relaxed)) / elapsed
            let warm = samples.withLock { $0.filter { $0.0 >= 2 } }
            let growth = (warm.map(\.1).max() ?? 0) - (warm.first?.1 ?? 0)
            print("flood (SRTP \(srtp)): \(sent.load(ordering: .relaxed)) garbage datagrams in \(String(format: "%.1f", elapsed)) s "
                  + "(\(Int(floodRate)) a second); receiver RSS \(warm.first?.1 ?? 0) KiB after warm-up, max \(warm.map(\.1).max() ?? 0) KiB "
                  + "(growth \(growth) KiB over \(warm.count) samples)\n\(result.stdoutText)")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(warm.count >= 20, "sampled through the run")
            #expect(growth <= 4096, "resident memory flat under the flood")
            #expect(floodRate >= 20_000, "a flood, even on a busy machine")
            // A receiver that falls behind what arrives (a flood beyond one core of a debug build, or a
            // starved thread on a busy machine) loses what its kernel buffer could not hold, stream
            // included, and its report says so; what it read it must have handled without loss.
            let kernelDrops = result.stdoutText.firstMatch(of: /; (\d+) by the kernel/).flatMap { Int($0.1) } ?? 0
            #expect(result.stdoutText.contains("250 written") || kernelDrops > 0,
                    "every frame decoded through the flood, unless the kernel dropped datagrams unread")
        }
    }
}
