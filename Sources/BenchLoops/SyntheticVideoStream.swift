// A synthetic compressed video stream and its RTP packets, stored back to back: the input of the RTP
// benchmarks (no codec needed, the same bytes every run).
import MediaCore
import MediaRTP

/// Packets stored back to back, with where each lies.
public struct PacketList: Sendable {
    public var bytes: [UInt8] = []
    public var ranges: [Range<Int>] = []
    public var markers: [Bool] = []

    public init() {}

    public mutating func append(_ packet: UnsafeRawBufferPointer, marker: Bool = false) {
        ranges.append(bytes.count..<bytes.count + packet.count)
        markers.append(marker)
        bytes.append(contentsOf: packet)
    }
}

/// A synthetic stream at 30 fps and its VP8 RTP packets.
public enum SyntheticVideoStream {
    /// Frame `index`: a keyframe every 60 frames (about 25 KB, as an IDR at 1-2 Mbit/s), 4 KB delta
    /// frames between, bytes varied so nothing compresses into a pattern.
    public static func frame(_ index: Int, codec: CodecName) -> EncodedFrame {
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
    public static let vp8Frames = (0..<3_000).map { frame($0, codec: .vp8) }

    /// The VP8 sender of the benchmarks: PT 96, SSRC 1, sequence numbers and timestamps about to wrap.
    public static func vp8Sender() -> RTPSender<VP8Packetizer> {
        RTPSender(packetizer: try! VP8Packetizer(maxPayloadSize: 1200),
                  configuration: .init(payloadType: 96, ssrc: 1, initialSequenceNumber: 65_000, timestampOffset: 0xFFFF_0000))
    }

    /// The first `count` VP8 packets of the stream, whole frames only, and the frames' arrival times
    /// (33 ms apart).
    public static func vp8Packets(_ count: Int) -> (packets: PacketList, arrivals: [ClockTime]) {
        var sender = vp8Sender()
        var list = PacketList()
        var arrivals: [ClockTime] = []
        var index = 0
        while list.ranges.count < count {
            let arrival = ClockTime(nanoseconds: Int64(index) * 33_333_333)
            try! sender.send(frame(index, codec: .vp8), at: arrival) {
                list.append($0)
                arrivals.append(arrival)
            }
            index += 1
        }
        return (list, arrivals)
    }
}
