/// Feedback messages (RFC 4585 §6.1) and the transport-layer one this module decodes: Generic NACK
/// (RTPFB, FMT 1, RFC 4585 §6.2.1), which lists lost RTP packets as (PID, BLP) pairs. Helpers expand
/// pairs to sequence numbers and build pairs from a list of lost sequence numbers.
///
/// ```
/// V=2|P|  FMT  | PT=205/206 | length
/// SSRC of packet sender (32)
/// SSRC of media source (32)
/// feedback control information (FCI) ...
/// Generic NACK FCI entry:  PID (16) | BLP (16)
/// ```

/// Bytes of a feedback message's two SSRCs, before its FCI (RFC 4585 §6.1).
let feedbackSSRCsLength = 8

/// Writes a feedback message (RFC 4585 §6.1): header with `format` as FMT, the two SSRCs, then lets
/// `fci` fill `fciLength` bytes (its buffer starts at the FCI).
func writeRTCPFeedback(into buffer: UnsafeMutableRawBufferPointer, type: RTCPPacketType, format: UInt8,
                       senderSSRC: UInt32, mediaSSRC: UInt32, fciLength: Int,
                       fci: (UnsafeMutableRawBufferPointer) -> Void) throws(RTCPError) -> Int
{
    try writeRTCPPacket(into: buffer, type: type, count: Int(format), bodyLength: feedbackSSRCsLength + fciLength) {
        body in
        body.storeNetwork(senderSSRC, at: 0)
        body.storeNetwork(mediaSSRC, at: 4)
        fci(UnsafeMutableRawBufferPointer(rebasing: body[feedbackSSRCsLength...]))
    }
}

/// Generic NACK (RFC 4585 §6.2.1): the receiver of `mediaSSRC` reports lost packets.
public struct GenericNACK: RTCPSerializable, Hashable {
    /// FMT of Generic NACK in an RTPFB packet.
    public static let format: UInt8 = 1

    /// One FCI entry: packet `packetID` is lost, and so is `packetID + i + 1` for every bit i (least
    /// significant first) set in `lostBitmask`.
    public struct Pair: Sendable, Hashable {
        /// PID.
        public var packetID: UInt16
        /// BLP, bitmask of following lost packets.
        public var lostBitmask: UInt16

        public init(packetID: UInt16, lostBitmask: UInt16 = 0) {
            self.packetID = packetID
            self.lostBitmask = lostBitmask
        }

        /// Calls `body` with each lost sequence number in order (PID first), wrapping after 65535.
        public func forEachLost(_ body: (UInt16) throws -> Void) rethrows {
            try body(packetID)
            for bit in 0..<16 where lostBitmask & (1 << bit) != 0 { try body(packetID &+ UInt16(bit + 1)) }
        }

        /// The lost sequence numbers this pair stands for (1 to 17 of them).
        public var lostSequenceNumbers: [UInt16] {
            var lost: [UInt16] = []
            forEachLost { lost.append($0) }
            return lost
        }
    }

    /// "SSRC of packet sender".
    public var senderSSRC: UInt32
    /// "SSRC of media source": the stream the packets were lost from.
    public var mediaSSRC: UInt32
    public var pairs: [Pair]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, pairs: [Pair]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.pairs = pairs
    }

    /// A NACK for `lostSequenceNumbers`, compacted into as few pairs as their spacing allows.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lostSequenceNumbers: some Sequence<UInt16>) {
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, pairs: Self.pairs(lost: lostSequenceNumbers))
    }

    /// Every lost sequence number, pair after pair.
    public var lostSequenceNumbers: [UInt16] { pairs.flatMap(\.lostSequenceNumbers) }

    /// The fewest (PID, BLP) pairs covering `lost`: numbers are put in RTP order (across wrap-around,
    /// with `SequenceUnwrapper`, so they must span less than half the number space), duplicates dropped,
    /// and each pair covers its PID and the 16 numbers after it.
    public static func pairs(lost: some Sequence<UInt16>) -> [Pair] {
        var unwrapper = SequenceUnwrapper()
        let ordered = lost.map { unwrapper.unwrap($0) }.sorted()
        var pairs: [Pair] = []
        var first: Int64 = 0
        for number in ordered {
            if let last = pairs.indices.last, number - first <= 16 {
                if number > first { pairs[last].lostBitmask |= 1 << (number - first - 1) }
            } else {
                first = number
                pairs.append(Pair(packetID: UInt16(truncatingIfNeeded: number)))
            }
        }
        return pairs
    }

    init(fci: UnsafeRawBufferPointer, senderSSRC: UInt32, mediaSSRC: UInt32) throws(RTCPError) {
        guard fci.count % 4 == 0 else { throw .transportFeedbackLengthInvalid }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, pairs: stride(from: 0, to: fci.count, by: 4).map {
            Pair(packetID: fci.networkUInt16(at: $0), lostBitmask: fci.networkUInt16(at: $0 + 2))
        })
    }

    public var marshalSize: Int { RTCPHeader.size + feedbackSSRCsLength + 4 * pairs.count }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try writeRTCPFeedback(into: buffer, type: .transportFeedback, format: Self.format, senderSSRC: senderSSRC,
                              mediaSSRC: mediaSSRC, fciLength: 4 * pairs.count) { fci in
            for (index, pair) in pairs.enumerated() {
                fci.storeNetwork(pair.packetID, at: 4 * index)
                fci.storeNetwork(pair.lostBitmask, at: 4 * index + 2)
            }
        }
    }
}
