// Cases shared by the RTP payload targets: a depacketizer fed payloads as a jitter buffer feeds it, and a
// jitter buffer fed a sequence of packets.
import FuzzSupport
import MediaCore
import MediaRTP

/// Feeds `depacketizer` the input's payloads as the jitter buffer does: each is a flags byte (bit 0 the
/// marker, bit 1 a gap in the sequence numbers before it, bit 2 a new frame before it), a length byte
/// and the payload. A payload goes in only when `inspect` takes it; a finished frame must be as long as
/// the `mediaByteCount`s of its payloads say.
public func fuzzDepacketizer<Depacketizer: RTPDepacketizer>(_ depacketizer: Depacketizer, _ bytes: UnsafeRawBufferPointer) {
    var depacketizer = depacketizer
    var reader = FuzzReader(bytes)
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    defer { output.deallocate() }
    var sequenceNumber: UInt16 = 0xFFF0
    var expected = 0
    depacketizer.startFrame()
    while reader.hasMore {
        let flags = reader.byte()
        let payload = reader.bytes(Int(reader.byte()))
        sequenceNumber &+= flags & 2 != 0 ? 2 : 1
        if flags & 4 != 0 {
            depacketizer.startFrame()
            expected = 0
        }
        guard let info = try? depacketizer.inspect(payload) else { continue }
        do {
            try depacketizer.append(payload, sequenceNumber: sequenceNumber, marker: flags & 1 != 0, into: output)
            expected += info.mediaByteCount
        } catch .outputTooSmall {
            continue
        } catch {
            depacketizer.startFrame()
            expected = 0
            continue
        }
        guard flags & 1 != 0 || Depacketizer.eachPayloadIsAFrame else { continue }
        if let frame = try? depacketizer.finishFrame() {
            precondition(frame.byteCount == expected, "a frame is as long as its payloads' mediaByteCount")
            _ = Depacketizer.duration(ofFrame: UnsafeRawBufferPointer(rebasing: output[..<frame.byteCount]))
        }
        depacketizer.startFrame()
        expected = 0
    }
}

/// Feeds a jitter buffer (NACK on, RTX as payload type 97 on SSRC 2, a small window) the input's packets
/// as a receive session does, taking the frames due, the feedback and the reports after each. A packet
/// is a flags byte (bit 0 marker, bit 1 RTX, bit 2 the next frame's timestamp, bit 5 a jump of the
/// timestamp by a 32-bit step read next, bit 6 read into the buffer's receive slot), a sequence number step (signed), an arrival step in
/// milliseconds, a length byte and the payload.
public func fuzzJitterBuffer<Depacketizer: RTPDepacketizer>(_ depacketizer: Depacketizer, _ bytes: UnsafeRawBufferPointer) {
    var buffer = JitterBuffer(depacketizer: depacketizer,
                              configuration: .init(capacity: 64, maxPacketSize: 200, rtx: (payloadType: 97, ssrc: 2)),
                              pool: BufferPool(name: "fuzz"))
    var reader = FuzzReader(bytes)
    let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: 12 + 255, alignment: 4)
    defer { datagram.deallocate() }
    var sequenceNumber: UInt16 = 0xFFC0
    var timestamp: UInt32 = 0xFFFF_0000
    var now = ClockTime.milliseconds(1000)
    while reader.hasMore {
        let flags = reader.byte()
        if flags & 0x20 != 0 { timestamp &+= reader.uint32() }
        sequenceNumber &+= UInt16(bitPattern: Int16(Int8(bitPattern: reader.byte())))
        now = now + .milliseconds(Int64(reader.byte()))
        if flags & 4 != 0 { timestamp &+= 3000 }
        let payload = reader.bytes(Int(reader.byte()))
        let isRTX = flags & 2 != 0
        let header = RTPHeader(marker: flags & 1 != 0, payloadType: isRTX ? 97 : 96, sequenceNumber: sequenceNumber,
                               timestamp: timestamp, ssrc: isRTX ? 2 : 1)
        // Flag 0x40: the packet is read into the buffer's receive slot, which it then keeps.
        let into = flags & 0x40 != 0 ? buffer.receiveSlot : datagram
        guard let start = try? header.write(into: into), start + payload.count <= into.count else {
            preconditionFailure("a header and 255 bytes fit")
        }
        UnsafeMutableRawBufferPointer(rebasing: into[start...]).copyMemory(from: payload)
        let bytes = UnsafeRawBufferPointer(rebasing: into[..<(start + payload.count)])
        guard let packet = try? RTPPacket(parsing: bytes) else { preconditionFailure("a written packet parses") }
        _ = buffer.insert(packet, in: bytes, arrival: now)
        while let frame = buffer.nextFrame(at: now) {
            precondition(frame.codec == Depacketizer.codec)
        }
        _ = buffer.feedback(at: now).genericNACK(senderSSRC: 3, mediaSSRC: 1)
        if flags & 8 != 0 { _ = buffer.receptionReport(at: now) }
        if flags & 16 != 0 { buffer.updateRoundTripTime(.milliseconds(Int64(flags))) }
        if let deadline = buffer.nextDeadline { precondition(deadline >= .zero) }
    }
    while buffer.nextFrame(at: .max) != nil {}
}
