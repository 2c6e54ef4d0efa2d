/// Facts of the H.264 RTP payload format (RFC 6184) and of H.264 NAL units (ITU-T H.264 §7.3.1,
/// §7.4.1) that the packetizer and depacketizer share.
enum H264Payload {
    // NAL unit types (H.264 Table 7-1).
    static let idrSlice = 5
    static let sps = 7
    static let pps = 8
    static let accessUnitDelimiter = 9

    // RTP packet types in the payload header's type field (RFC 6184 Table 3).
    static let stapA = 24
    static let fuA = 28

    /// The NAL unit type in a NAL unit header or RTP payload header byte: |F|NRI|Type| (§5.3).
    @inline(__always)
    static func type(_ header: UInt8) -> Int { Int(header & 0x1F) }

    /// Whether NAL units of `type` carry slice data (VCL NAL units, types 1 to 5).
    static func isVCL(_ type: Int) -> Bool { (1...5).contains(type) }

    /// Whether a NAL unit of `type` whose payload begins with `firstByte` must begin an access unit
    /// that follows one with a slice (H.264 §7.4.1.2.3): an access unit delimiter, SPS, PPS, SEI and
    /// types 14-18 do; a slice does when it is its picture's first, its first_mb_in_slice being 0 (ue(v)
    /// coded as a single 1 bit).
    static func startsAccessUnit(type: Int, firstByte: UInt8?) -> Bool {
        switch type {
        case 6...9, 14...18: return true
        case 1, 2, 5: return (firstByte ?? 0) & 0x80 != 0
        default: return false
        }
    }

    /// The length of the Annex-B start code `00 00 00 01` the depacketizer writes before every NAL unit.
    static let startCodeLength = 4

    /// Writes the 4-byte start code at `offset`.
    @inline(__always)
    static func writeStartCode(to output: UnsafeMutableRawBufferPointer, at offset: Int) {
        output[offset] = 0
        output[offset + 1] = 0
        output[offset + 2] = 0
        output[offset + 3] = 1
    }
}

/// The NAL units of an Annex-B byte stream in memory (ITU-T H.264 Annex B): each one's range from its
/// header byte to its last non-zero byte, without start codes and trailing zero bytes; empty units
/// (a start code right after another) are skipped. Reads the caller's bytes in place.
struct AnnexBNALUnits: Sequence, IteratorProtocol {
    private let bytes: UnsafeRawBufferPointer
    /// The header byte of the next unit, or `bytes.count` when there is none.
    private var position: Int

    /// Fails unless `bytes` begins with a start code (`00 00 01`, after any number of zero bytes).
    init?(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        var first = 0
        while first < bytes.count && bytes[first] == 0 { first += 1 }
        guard first >= 2, first < bytes.count, bytes[first] == 1 else { return nil }
        position = first + 1
    }

    mutating func next() -> Range<Int>? {
        while position < bytes.count {
            let start = position
            let prefix = Self.startCodePrefix(in: bytes, from: start)
            var end = prefix ?? bytes.count
            position = prefix.map { $0 + 3 } ?? bytes.count
            while end > start && bytes[end - 1] == 0 { end -= 1 }
            if end > start { return start..<end }
        }
        return nil
    }

    /// Where the next `00 00 01` at or after `start` begins.
    private static func startCodePrefix(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var zeros = 0
        for index in start..<bytes.count {
            let byte = bytes[index]
            if byte == 1 && zeros >= 2 { return index - 2 }
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return nil
    }
}
