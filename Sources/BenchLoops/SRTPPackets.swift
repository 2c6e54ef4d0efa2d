// Synthetic RTP packets of 1200 bytes protected and unprotected in a work buffer: the loops of the SRTP
// benchmarks, run through SRTPSession or bare libsrtp2 by the closure they are given.
import MediaSRTP

/// The SRTP benchmarks' packets and loops; the transform (Sluice's session or bare libsrtp2) is a closure.
public enum SRTPPackets {
    public static let packetLength = 1200

    /// One key per profile for the whole run, so that the bare and the Sluice sides do the same work.
    public static let keys = Dictionary(uniqueKeysWithValues: SRTPProfile.allCases.map { ($0, SRTPKeyMaterial.random(for: $0)) })

    /// Writes RTP packet `number` (RFC 3550 §5.1: V=2, PT 96, SSRC 1, 1188 bytes of payload) into `buffer`.
    public static func writePacket(_ number: Int, into buffer: UnsafeMutableRawBufferPointer) {
        let sequenceNumber = UInt16(truncatingIfNeeded: number)
        let header: [UInt8] = [0x80, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        header.withUnsafeBytes { buffer.copyMemory(from: $0) }
        buffer.storeBytes(of: sequenceNumber.bigEndian, toByteOffset: 2, as: UInt16.self)
        buffer.storeBytes(of: UInt32(truncatingIfNeeded: number * 3000).bigEndian, toByteOffset: 4, as: UInt32.self)
        for index in 12..<packetLength { buffer[index] = UInt8(truncatingIfNeeded: index &* 131 &+ number) }
    }

    /// A work buffer with room for the trailer, for one run.
    public static func withWorkBuffer<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: packetLength + 64, alignment: 16)
        defer { buffer.deallocate() }
        return body(buffer)
    }

    /// Protects `count` packets with `protect` (buffer, RTP length) -> SRTP length; returns the bytes made.
    public static func protectLoop(count: Int, _ protect: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
        withWorkBuffer { buffer in
            var total = 0
            for number in 0..<count {
                writePacket(number, into: buffer)
                total &+= protect(buffer, packetLength)
            }
            return total
        }
    }

    /// `count` packets protected by a session of `profile`, back to back, each `packetLength + rtpOverhead` bytes.
    public static func protectedPackets(_ profile: SRTPProfile, count: Int) -> [UInt8] {
        let sender = try! SRTPSession(profile: profile, key: keys[profile]!, direction: .sender)
        var packets: [UInt8] = []
        _ = protectLoop(count: count) { buffer, length in
            let protected = try! sender.protect(buffer, length: length)
            packets.append(contentsOf: buffer[..<protected])
            return protected
        }
        return packets
    }

    /// Unprotects the first `count` of `packets` (from `protectedPackets(profile, …)`) with `unprotect`
    /// (buffer, SRTP length) -> RTP length, each copied into the work buffer first.
    public static func unprotectLoop(_ packets: [UInt8], profile: SRTPProfile, count: Int,
                                     _ unprotect: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
        let length = packetLength + profile.rtpOverhead
        return withWorkBuffer { buffer in
            packets.withUnsafeBytes { packets in
                var total = 0
                for number in 0..<count {
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: packets[number * length..<(number + 1) * length]))
                    total &+= unprotect(buffer, length)
                }
                return total
            }
        }
    }
}
