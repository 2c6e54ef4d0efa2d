// The RTP send and receive paths with SRTP as the RTP sessions run them, SRTP alone over the same packets,
// and the bound HMAC-SHA1 puts on an AES-CM profile: what pipebench's rtp.* and srtp.* compare.
import MediaCore
import MediaRTP
import MediaSRTP
import CSSL

/// Sluice's SRTP send and receive paths over the synthetic VP8 stream, and SRTP alone over its packets.
public enum SRTPPaths {
    /// The send path as `RTPSendSession` over `UDPRTPTransport` runs it: VP8 frames through
    /// `RTPSender`, each packet's header and payload descriptor written into one buffer and its
    /// payload encrypted from the frame after them (the history keeps the head and a reference to
    /// the frame). Returns the SRTP bytes of `count` packets.
    public static func send(packets count: Int, profile: SRTPProfile, key: SRTPKeyMaterial) -> Int {
        var sender = SyntheticVideoStream.vp8Sender()
        let srtp = try! SRTPSession(profile: profile, key: key, direction: .sender)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var sent = 0, bytes = 0, index = 0
        while sent < count {
            try! sender.send(SyntheticVideoStream.vp8Frames[index], at: .zero, into: buffer) { (packet: RTPPacketParts) in
                bytes &+= try! srtp.protect(buffer, length: packet.headLength, followedBy: packet.tail)
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

    /// The receive path as `RTPReceiveSession` over `UDPRTPTransport` runs it: each of the first `count`
    /// datagrams of `protected` copied in as from the socket, unprotected there in place, parsed, taken
    /// by the jitter buffer (arriving at `arrivals`: appended to its frame as it comes in order), and
    /// the frames due released. Returns the bytes of the frames released.
    public static func receive(_ protected: PacketList, arrivals: [ClockTime], count: Int, profile: SRTPProfile,
                               key: SRTPKeyMaterial) -> Int {
        let srtp = try! SRTPSession(profile: profile, key: key, direction: .receiver)
        var buffer = JitterBuffer(depacketizer: VP8Depacketizer(), pool: BufferPool(name: "bench"))
        let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { datagram.deallocate() }
        var released = 0
        var packet = RTPPacket()
        protected.bytes.withUnsafeBytes { raw in
            for number in 0..<count {
                datagram.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[protected.ranges[number]]))
                let length = try! srtp.unprotect(datagram, length: protected.ranges[number].count)
                let bytes = UnsafeRawBufferPointer(rebasing: datagram[0..<length])
                let arrival = arrivals[number]
                try! packet.parse(bytes)
                _ = buffer.insert(packet, in: bytes, arrival: arrival)
                while let frame = buffer.nextFrame(at: arrival) { released &+= frame.byteCount }
            }
        }
        return released
    }

    /// SRTP alone on the same work as the paths: each of the first `count` of `packets` copied into one
    /// buffer and transformed there by `transform` (an SRTPSession's protect or unprotect). Returns the
    /// bytes out.
    public static func alone(_ packets: PacketList, count: Int,
                             _ transform: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var total = 0
        packets.bytes.withUnsafeBytes { raw in
            for range in packets.ranges.prefix(count) {
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[range]))
                total &+= transform(buffer, range.count)
            }
        }
        return total
    }

    /// Packets per second that HMAC-SHA1 alone allows when each authenticates `bytes`, with the key's
    /// padded states computed once as the OpenSSL implementation does (the best of six tenths of a
    /// second): the bound on an AES-CM profile's packet rate, whatever the cipher costs.
    public static func hashBound(bytes: Int) -> Double {
        let data = [UInt8](repeating: 0xA5, count: bytes), key = [UInt8](repeating: 0x5A, count: 20)
        var state = sluice_hmac_sha1_key()
        sluice_hmac_sha1_key_init(&state, key, key.count)
        var mac = [UInt8](repeating: 0, count: 20)
        // The best of six tenths of a second: a bound, so the least disturbed try.
        return (0..<6).map { _ in
            let start = SystemClock().now
            var count = 0
            while (SystemClock().now - start).seconds < 0.1 {
                for _ in 0..<500 { sluice_hmac_sha1(&state, data, data.count, nil, 0, &mac) }
                count += 500
            }
            return Double(count) / (SystemClock().now - start).seconds
        }.max()!
    }
}
