/// What a datagram on the bundled 5-tuple carries, told by its first byte (RFC 7983 §7, updating
/// RFC 5764 §5.1.2) and, for RTP and RTCP sharing the port, by the second (RFC 5761 §4):
///
/// ```
///            +----------------+
///            |        [0..3] -+--> STUN
///            |      [16..19] -+--> ZRTP (not used by WebRTC: unknown)
/// packet --> |      [20..63] -+--> DTLS
///            |      [64..79] -+--> TURN ChannelData
///            |    [128..191] -+--> RTP or RTCP (second byte's payload type 192...223 is RTCP)
///            +----------------+
/// ```
public enum BundledPacketKind: Sendable, Hashable {
    case stun
    case dtls
    case turnChannelData
    case rtp
    case rtcp
    /// Empty, or a first byte in no range above: dropped and counted by the transport.
    case unknown

    /// Classifies `bytes` without copying them.
    public init(classifying bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else {
            self = .unknown
            return
        }
        switch first {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 64...79: self = .turnChannelData
        case 128...191:
            // RTCP packet types 192-223 (RFC 5761 §4): FIR/NACK (192-193), SR/RR/SDES/BYE/APP
            // (200-204), RTPFB/PSFB/XR (205-207); RTP payload types with the marker bit land at 128+.
            guard bytes.count >= 2 else {
                self = .unknown
                return
            }
            self = (192...223).contains(bytes[1]) ? .rtcp : .rtp
        default: self = .unknown
        }
    }

    public init(classifying bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { BundledPacketKind(classifying: $0) }
    }
}
