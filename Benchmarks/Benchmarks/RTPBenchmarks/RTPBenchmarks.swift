// RTP per packet: H.264 packetization through RTPSender, VP8 depacketization, RTP header parse and
// serialize, and jitter-buffer insert + release (in order, and with reordering). Each row handles
// 10,000 packets per run; a 5,000-packet row of each shows that mallocs per run do not grow with the
// packet count (the target: none per packet once warm, only the per-run setup). The SRTP paths: the
// send path (packetize + protect) and the receive path (unprotect + parse + jitter buffer + release),
// to set beside SRTPBenchmarks' bare libsrtp2 rows.
import Benchmark
import MediaCore
import MediaRTP
import MediaSRTP

let fullCount = 10_000

/// Packets stored back to back, with where each lies.
struct PacketList: Sendable {
    var bytes: [UInt8] = []
    var ranges: [Range<Int>] = []
    var markers: [Bool] = []

    mutating func append(_ packet: UnsafeRawBufferPointer, marker: Bool = false) {
        ranges.append(bytes.count..<bytes.count + packet.count)
        markers.append(marker)
        bytes.append(contentsOf: packet)
    }
}

/// A synthetic video stream at 30 fps: a keyframe every 60 frames (about 25 KB, as an IDR at 1-2
/// Mbit/s), 4 KB delta frames between, bytes varied so nothing compresses into a pattern.
func videoFrame(_ index: Int, codec: CodecName) -> EncodedFrame {
    let keyframe = index % 60 == 0
    let size = keyframe ? 25_000 : 3_000 + (index * 379) % 2_000
    var bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ index) | 0x01 }
    if codec == .h264 {
        // Annex B: SPS and PPS before an IDR slice (type 5), or one non-IDR slice (type 1).
        let sliceHeader: [UInt8] = [0, 0, 0, 1, keyframe ? 0x65 : 0x41, 0x88]
        bytes = (keyframe ? [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1F, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80] : []) + sliceHeader + bytes
    } else {
        bytes[0] = keyframe ? bytes[0] & 0xFE : bytes[0] | 0x01  // VP8 P bit (RFC 6386 §9.1)
    }
    return bytes.withUnsafeBytes {
        EncodedFrame(codec: codec, isKeyframe: keyframe, pts: MediaTime(Int64(index), timebase: Rational(1, 30)),
                     copying: $0, pool: nil)
    }
}

/// Frames enough for 10,000 packets of at most 1200 bytes.
let h264Frames = (0..<3_000).map { videoFrame($0, codec: .h264) }
let vp8Frames = (0..<3_000).map { videoFrame($0, codec: .vp8) }

func vp8Sender() -> RTPSender<VP8Packetizer> {
    RTPSender(packetizer: try! VP8Packetizer(maxPayloadSize: 1200),
              configuration: .init(payloadType: 96, ssrc: 1, initialSequenceNumber: 65_000, timestampOffset: 0xFFFF_0000))
}

/// The first `count` VP8 packets of the synthetic stream, whole frames only, and the frames' arrival times (33 ms apart).
func vp8Packets(_ count: Int) -> (packets: PacketList, arrivals: [ClockTime]) {
    var sender = vp8Sender()
    var list = PacketList()
    var arrivals: [ClockTime] = []
    var index = 0
    while list.ranges.count < count {
        let arrival = ClockTime(nanoseconds: Int64(index) * 33_333_333)
        try! sender.send(videoFrame(index, codec: .vp8), at: arrival) {
            list.append($0)
            arrivals.append(arrival)
        }
        index += 1
    }
    return (list, arrivals)
}

let vp8Stream = vp8Packets(fullCount)

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

/// The send path as `RTPSendSession` runs it: VP8 frames through `RTPSender`, each packet copied into
/// one buffer and protected there (the history keeps it plain).
func srtpSendPath(packets count: Int) -> Int {
    var sender = vp8Sender()
    let srtp = try! SRTPSession(profile: .aes128CmHmacSha1_80, key: srtpKey, direction: .sender)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    defer { buffer.deallocate() }
    var sent = 0, bytes = 0, index = 0
    while sent < count {
        try! sender.send(vp8Frames[index], at: .zero) { packet in
            buffer.copyMemory(from: packet)
            bytes &+= try! srtp.protect(buffer, length: packet.count)
            sent += 1
        }
        index += 1
    }
    return bytes
}

/// The VP8 stream's packets as SRTP, for the receive path.
let protectedVP8: PacketList = {
    let srtp = try! SRTPSession(profile: .aes128CmHmacSha1_80, key: srtpKey, direction: .sender)
    var list = PacketList()
    var buffer = [UInt8](repeating: 0, count: 2048)
    vp8Stream.packets.bytes.withUnsafeBytes { raw in
        for range in vp8Stream.packets.ranges {
            buffer.withUnsafeMutableBytes { out in
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[range]))
                let length = try! srtp.protect(out, length: range.count)
                list.append(UnsafeRawBufferPointer(rebasing: out[0..<length]))
            }
        }
    }
    return list
}()

/// The receive path as `RTPReceiveSession` runs it: each datagram copied in as from the socket,
/// unprotected in place, parsed, put in the jitter buffer, and the frames due released.
func srtpReceivePath(packets count: Int) -> Int {
    let srtp = try! SRTPSession(profile: .aes128CmHmacSha1_80, key: srtpKey, direction: .receiver)
    var buffer = JitterBuffer(depacketizer: VP8Depacketizer(), pool: BufferPool(name: "bench"))
    let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    defer { datagram.deallocate() }
    var released = 0
    protectedVP8.bytes.withUnsafeBytes { raw in
        for number in 0..<count {
            datagram.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[protectedVP8.ranges[number]]))
            let length = try! srtp.unprotect(datagram, length: protectedVP8.ranges[number].count)
            let bytes = UnsafeRawBufferPointer(rebasing: datagram[0..<length])
            let arrival = vp8Stream.arrivals[number]
            _ = buffer.insert(try! RTPPacket(parsing: bytes), in: bytes, arrival: arrival)
            while let frame = buffer.nextFrame(at: arrival) { released &+= frame.byteCount }
        }
    }
    return released
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
              + protectedVP8.ranges.count + vp8Frames.count)

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
