import MediaCore
import TestSupport
import Testing

@testable import MediaRTP

/// Damaged payloads (seeded, so failures reproduce): the depacketizers answer with a named error or a
/// frame, never a crash, and what they say about a payload before assembling it holds.
@Suite struct PayloadFuzzTests {
    /// `payload` with random bytes changed, bits flipped, a random cut, or bytes added.
    static func mutate(_ payload: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = payload
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
        case 1 where !bytes.isEmpty:
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
            }
        case 2 where !bytes.isEmpty:
            bytes[Int.random(in: 0..<min(bytes.count, 4), using: &rng)] = UInt8.random(in: 0...255, using: &rng)
        default:
            bytes += (0..<Int.random(in: 1...4, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
        return bytes
    }

    /// Feeds mutated copies of `frames` (packet lists) to `depacketizer`, packet by packet: every
    /// payload either fails `inspect` with an `RTPPayloadError` or is appended in exactly the room
    /// `inspect` announced; every frame ends in a frame or a named error.
    func fuzz<D: RTPDepacketizer>(_ depacketizer: inout D, frames: [[TestPacket]], iterations: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var outcomes = (frames: 0, errors: 0)
        for _ in 0..<iterations {
            var packets = frames[Int.random(in: 0..<frames.count, using: &rng)]
            let damaged = Int.random(in: 0..<packets.count, using: &rng)
            packets[damaged].payload = Self.mutate(packets[damaged].payload, &rng)
            if packets.count > 1 && Bool.random(using: &rng) { packets.swapAt(0, Int.random(in: 1..<packets.count, using: &rng)) }
            depacketizer.startFrame()
            var failed = false
            var expectedCount = 0
            for packet in packets {
                do {
                    let info = try packet.payload.withUnsafeBytes { try depacketizer.inspect($0) }
                    // Exactly the announced room: appending must not need more.
                    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: expectedCount + info.mediaByteCount, alignment: 1)
                    defer { output.deallocate() }
                    try packet.payload.withUnsafeBytes {
                        try depacketizer.append($0, sequenceNumber: packet.sequenceNumber, marker: packet.marker, into: output)
                    }
                    expectedCount += info.mediaByteCount
                } catch is RTPPayloadError {
                    failed = true
                    break
                } catch {
                    Issue.record("unnamed error \(error)")
                }
            }
            if failed {
                outcomes.errors += 1
                continue
            }
            do {
                let info = try depacketizer.finishFrame()
                #expect(info.byteCount == expectedCount)
                outcomes.frames += 1
            } catch {
                outcomes.errors += 1  // an RTPPayloadError: finishFrame throws no other
            }
        }
        // Both outcomes happen: the mutations are neither all harmless nor all fatal.
        #expect(outcomes.frames > iterations / 20 && outcomes.errors > iterations / 20, "\(outcomes)")
    }

    /// Appends payloads, damaged or not, with the `RTPPayloadInfo` of other payloads or a made-up
    /// media byte count, as a caller that mixed them up would: every append ends in a frame or a named
    /// error, and nothing is written past the room that info announced (checked with guard bytes).
    func appendWithForeignInfo<D: RTPDepacketizer>(_ depacketizer: inout D, frames: [[TestPacket]], iterations: Int,
                                                   seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let all = frames.flatMap { $0 }
        let infos = all.compactMap { packet in try? packet.payload.withUnsafeBytes { try depacketizer.inspect($0) } }
        let guardByte: UInt8 = 0xA5, guardCount = 64
        var outcomes = (appended: 0, errors: 0)
        for _ in 0..<iterations {
            var packet = all[Int.random(in: 0..<all.count, using: &rng)]
            if Bool.random(using: &rng) { packet.payload = Self.mutate(packet.payload, &rng) }
            var info = infos[Int.random(in: 0..<infos.count, using: &rng)]
            if Int.random(in: 0..<4, using: &rng) == 0 {
                info.mediaByteCount = Int.random(in: -2...(packet.payload.count + 8), using: &rng)
            }
            let room = max(0, info.mediaByteCount)
            let output = UnsafeMutableRawBufferPointer.allocate(byteCount: room + guardCount, alignment: 1)
            defer { output.deallocate() }
            output.initializeMemory(as: UInt8.self, repeating: guardByte)
            depacketizer.startFrame()
            do {
                try packet.payload.withUnsafeBytes {
                    try depacketizer.append($0, inspected: info, sequenceNumber: packet.sequenceNumber, marker: packet.marker,
                                            into: UnsafeMutableRawBufferPointer(rebasing: output[0..<room]))
                }
                outcomes.appended += 1
            } catch {
                #expect(error is RTPPayloadError)
                outcomes.errors += 1
            }
            #expect(output[room...].allSatisfy { $0 == guardByte }, "written past the room of \(info) for \(packet.payload)")
        }
        #expect(outcomes.appended > iterations / 20 && outcomes.errors > iterations / 20, "\(outcomes)")
    }

    @Test func h264() throws {
        var packetizer = try H264Packetizer(maxPayloadSize: 40)
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0x8C, 0x8D], pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
        let idr: [UInt8] = [0x65, 0x88] + (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        var frames = [try packetize(frame(.h264, annexB([sps, pps, idr])), with: &packetizer)]
        frames.append(try packetize(frame(.h264, annexB([[0x41, 0x9A, 1, 2], [0x41, 0x1A, 3]])), with: &packetizer))
        frames += try [TestSupport.vector("aiortc/h264_0000.bin"), TestSupport.vector("aiortc/h264_0003.bin")]
            .map { packets([$0]) }
        var depacketizer = H264Depacketizer()
        fuzz(&depacketizer, frames: frames, iterations: 5000, seed: 6184)
        appendWithForeignInfo(&depacketizer, frames: frames, iterations: 5000, seed: 6185)
    }

    @Test func vp8() throws {
        var packetizer = try VP8Packetizer(maxPayloadSize: 12, firstPictureID: 4711)
        let key: [UInt8] = [0x50, 0x42, 0x00, 0x9D, 0x01, 0x2A] + (0..<30).map { UInt8($0) }
        var frames = [try packetize(frame(.vp8, key), with: &packetizer)]
        var sevenBit = try VP8Packetizer(maxPayloadSize: 8, pictureIDMode: .sevenBit)
        frames.append(try packetize(frame(.vp8, [0x31, 0x01, 0x00, 7, 8, 9, 10, 11]), with: &sevenBit))
        frames.append(packets([[0xB0, 0xF0, 0x92, 0x67, 0x81, 0x6B, 0x50, 1]]))
        var depacketizer = VP8Depacketizer()
        fuzz(&depacketizer, frames: frames, iterations: 5000, seed: 7741)
        appendWithForeignInfo(&depacketizer, frames: frames, iterations: 5000, seed: 7742)
    }

    @Test func vp8DescriptorRandomBytes() {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<5000 {
            let payload = (0..<Int.random(in: 0...7, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            do {
                let descriptor = try payload.withUnsafeBytes { try VP8PayloadDescriptor(parsing: $0) }
                #expect(descriptor.byteCount <= payload.count)
                // Written back, it reads the same.
                var buffer = [UInt8](repeating: 0, count: descriptor.byteCount)
                try buffer.withUnsafeMutableBytes { _ = try descriptor.write(into: $0) }
                #expect(try buffer.withUnsafeBytes { try VP8PayloadDescriptor(parsing: $0) } == descriptor)
            } catch {
                #expect(error is RTPPayloadError)
            }
        }
    }

    @Test func opus() throws {
        var depacketizer = OpusDepacketizer()
        let frames = [packets([[0x78, 1, 2]]), packets([[0xFC]])]
        fuzz(&depacketizer, frames: frames, iterations: 2000, seed: 7587)
        appendWithForeignInfo(&depacketizer, frames: frames, iterations: 2000, seed: 7588)
    }
}
