// The RTP send and receive paths with SRTP as the RTP sessions run them, and bare libsrtp2 over the same
// packets: the comparison of Sluice's SRTP media path with libsrtp2 alone.
import CSRTP
import MediaCore
import MediaRTP
import MediaSRTP

/// Sluice's SRTP send and receive paths over the synthetic VP8 stream, and libsrtp2 alone over its packets.
public enum SRTPPaths {
    /// The send path as `RTPSendSession` runs it: VP8 frames through `RTPSender`, each packet copied into
    /// one buffer and protected there (the history keeps it plain). Returns the SRTP bytes of `count` packets.
    public static func send(packets count: Int, profile: SRTPProfile, key: SRTPKeyMaterial) -> Int {
        var sender = SyntheticVideoStream.vp8Sender()
        let srtp = try! SRTPSession(profile: profile, key: key, direction: .sender)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var sent = 0, bytes = 0, index = 0
        while sent < count {
            try! sender.send(SyntheticVideoStream.vp8Frames[index], at: .zero) { packet in
                buffer.copyMemory(from: packet)
                bytes &+= try! srtp.protect(buffer, length: packet.count)
                sent += 1
            }
            index += 1
        }
        return bytes
    }

    /// `packets` protected with a session of `profile` and `key`.
    public static func protect(_ packets: PacketList, profile: SRTPProfile, key: SRTPKeyMaterial) -> PacketList {
        let srtp = try! SRTPSession(profile: profile, key: key, direction: .sender)
        var list = PacketList()
        var buffer = [UInt8](repeating: 0, count: 2048)
        packets.bytes.withUnsafeBytes { raw in
            for range in packets.ranges {
                buffer.withUnsafeMutableBytes { out in
                    out.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[range]))
                    let length = try! srtp.protect(out, length: range.count)
                    list.append(UnsafeRawBufferPointer(rebasing: out[0..<length]))
                }
            }
        }
        return list
    }

    /// The receive path as `RTPReceiveSession` runs it: each of the first `count` datagrams of `protected`
    /// copied in as from the socket, unprotected in place, parsed, put in the jitter buffer (arriving at
    /// `arrivals`), and the frames due released. Returns the bytes of the frames released.
    public static func receive(_ protected: PacketList, arrivals: [ClockTime], count: Int, profile: SRTPProfile,
                               key: SRTPKeyMaterial) -> Int {
        let srtp = try! SRTPSession(profile: profile, key: key, direction: .receiver)
        var buffer = JitterBuffer(depacketizer: VP8Depacketizer(), pool: BufferPool(name: "bench"))
        let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { datagram.deallocate() }
        var released = 0
        protected.bytes.withUnsafeBytes { raw in
            for number in 0..<count {
                datagram.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[protected.ranges[number]]))
                let length = try! srtp.unprotect(datagram, length: protected.ranges[number].count)
                let bytes = UnsafeRawBufferPointer(rebasing: datagram[0..<length])
                let arrival = arrivals[number]
                _ = buffer.insert(try! RTPPacket(parsing: bytes), in: bytes, arrival: arrival)
                while let frame = buffer.nextFrame(at: arrival) { released &+= frame.byteCount }
            }
        }
        return released
    }

    /// libsrtp2 alone on the same work: each of the first `count` of `packets` copied into one buffer
    /// and transformed there by `transform` (BareSRTP.protect or .unprotect on a session of the right
    /// direction). Returns the bytes out.
    public static func bare(_ packets: PacketList, count: Int, session: srtp_t,
                            _ transform: (srtp_t, UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var total = 0
        packets.bytes.withUnsafeBytes { raw in
            for range in packets.ranges.prefix(count) {
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[range]))
                total &+= transform(session, buffer, range.count)
            }
        }
        return total
    }
}
