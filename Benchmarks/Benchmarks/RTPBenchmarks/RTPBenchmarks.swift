// RTP per packet: H.264 packetization through RTPSender, VP8 depacketization, RTP header parse and
// serialize, and jitter-buffer insert + release (in order, and with reordering). Each row handles
// 10,000 packets per run; a 5,000-packet row of each shows that mallocs per run do not grow with the
// packet count (the target: none per packet once warm, only the per-run setup). The SRTP paths: the
// send path (packetize + protect) and the receive path (unprotect + parse + jitter buffer + release),
// to set beside SRTPBenchmarks' bare libsrtp2 rows.
import Benchmark
import BenchLoops
import MediaCore
import MediaRTP
import MediaSRTP

let fullCount = 10_000

// The synthetic stream, its packets and the SRTP paths are BenchLoops' (SyntheticVideoStream, SRTPPaths),
// shared with pipebench.
let h264Frames = (0..<3_000).map { SyntheticVideoStream.frame($0, codec: .h264) }
let vp8Stream = SyntheticVideoStream.vp8Packets(fullCount)

/// Every packet's payload (after the header), for the depacketizer.
let vp8Payloads: PacketList = {
    var payloads = PacketList()
    vp8Stream.packets.bytes.withUnsafeBytes { raw in
        for range in vp8Stream.packets.ranges {
            let packet = UnsafeRawBufferPointer(rebasing: raw[range])
            let parsed = try! RTPPacket(parsing: packet)
            payloads.append(UnsafeRawBufferPointer(rebasing: packet[parsed.payloadRange]), marker: parsed.header.marker)
        }
    }
    return payloads
}()

let inOrder = Array(0..<fullCount)

/// The same packets with every 8th pair swapped, as a reordering network delivers them.
let reorderedOrder: [Int] = {
    var order = Array(0..<fullCount)
    for start in stride(from: 0, to: fullCount - 1, by: 8) { order.swapAt(start, start + 1) }
    return order
}()

func packetizeH264(packets count: Int) -> Int {
    var sender = RTPSender(packetizer: try! H264Packetizer(maxPayloadSize: 1200),
                           configuration: .init(payloadType: 102, ssrc: 2, initialSequenceNumber: 0, timestampOffset: 0))
    var sent = 0, bytes = 0
    var index = 0
    while sent < count {
        try! sender.send(h264Frames[index], at: .zero) { packet in
            sent += 1
            bytes &+= packet.count
        }
        index += 1
    }
    return bytes
}

func depacketizeVP8(packets count: Int) -> Int {
    var depacketizer = VP8Depacketizer()
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    defer { output.deallocate() }
    var total = 0
    vp8Payloads.bytes.withUnsafeBytes { raw in
        for (number, range) in vp8Payloads.ranges.prefix(count).enumerated() {
            let payload = UnsafeRawBufferPointer(rebasing: raw[range])
            let marker = vp8Payloads.markers[number]
            if try! depacketizer.inspect(payload).startsFrame { depacketizer.startFrame() }
            try! depacketizer.append(payload, sequenceNumber: UInt16(truncatingIfNeeded: number), marker: marker, into: output)
            if marker { total &+= try! depacketizer.finishFrame().byteCount }
        }
    }
    return total
}

func parseAndSerialize(packets count: Int) -> Int {
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    defer { output.deallocate() }
    var total = 0
    vp8Stream.packets.bytes.withUnsafeBytes { raw in
        for range in vp8Stream.packets.ranges.prefix(count) {
            var packet = try! RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: raw[range]))
            packet.header.ssrc = 0xABCD  // as a forwarder rewrites it
            total &+= try! packet.write(from: UnsafeRawBufferPointer(rebasing: raw[range]), into: output)
        }
    }
    return total
}

func jitterBuffer(packets count: Int, order: [Int]) -> Int {
    var buffer = JitterBuffer(depacketizer: VP8Depacketizer(), pool: BufferPool(name: "bench"))
    var released = 0
    var arrival = ClockTime.zero
    vp8Stream.packets.bytes.withUnsafeBytes { raw in
        for number in order.prefix(count) where number < count {
            let bytes = UnsafeRawBufferPointer(rebasing: raw[vp8Stream.packets.ranges[number]])
            arrival = max(arrival, vp8Stream.arrivals[number])
            _ = buffer.insert(try! RTPPacket(parsing: bytes), in: bytes, arrival: arrival)
            _ = buffer.feedback(at: arrival)
            while let frame = buffer.nextFrame(at: arrival) { released &+= frame.byteCount }
        }
    }
    return released
}

let srtpKey = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)

/// The VP8 stream's packets as SRTP, for the receive path.
let protectedVP8 = SRTPPaths.protect(vp8Stream.packets, profile: .aes128CmHmacSha1_80, key: srtpKey)

func srtpSendPath(packets count: Int) -> Int {
    SRTPPaths.send(packets: count, profile: .aes128CmHmacSha1_80, key: srtpKey)
}

func srtpReceivePath(packets count: Int) -> Int {
    SRTPPaths.receive(protectedVP8, arrivals: vp8Stream.arrivals, count: count, profile: .aes128CmHmacSha1_80, key: srtpKey)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
        warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(5), maxIterations: 30,
        // The allocation budget (Thresholds/): a run's setup only; one malloc per packet would be 10,000.
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 8])])

    // Build the inputs before any measurement.
    blackHole(h264Frames.count + vp8Stream.packets.ranges.count + vp8Payloads.ranges.count + reorderedOrder.count + inOrder.count
              + protectedVP8.ranges.count + SyntheticVideoStream.vp8Frames.count)

    for count in [fullCount, fullCount / 2] {
        let suffix = count == fullCount ? "10k" : "5k"
        Benchmark("H264Packetize\(suffix)") { _ in blackHole(packetizeH264(packets: count)) }
        Benchmark("VP8Depacketize\(suffix)") { _ in blackHole(depacketizeVP8(packets: count)) }
        Benchmark("RTPParseSerialize\(suffix)") { _ in blackHole(parseAndSerialize(packets: count)) }
        Benchmark("JitterBufferInOrder\(suffix)") { _ in blackHole(jitterBuffer(packets: count, order: inOrder)) }
        Benchmark("JitterBufferReordered\(suffix)") { _ in blackHole(jitterBuffer(packets: count, order: reorderedOrder)) }
        // libsrtp2 on NSS allocates inside each protect and unprotect (see SRTPBenchmarks): these budgets
        // are mostly NSS's, with slack for its variations; Sluice's own per-packet malloc would be 10,000.
        let srtpBudget = Benchmark.Configuration(thresholds: [.mallocCountTotal: .init(absolute: [.p90: 200])])
        Benchmark("SRTPSendPath\(suffix)", configuration: srtpBudget) { _ in blackHole(srtpSendPath(packets: count)) }
        Benchmark("SRTPReceivePath\(suffix)", configuration: srtpBudget) { _ in blackHole(srtpReceivePath(packets: count)) }
    }
}
