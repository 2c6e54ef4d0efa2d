/// The H.264 byte-stream format (ITU-T H.264 Annex B): each NAL unit follows a start code prefix
/// `00 00 01`, itself often after one `00` (the zero_byte, making the 4-byte `00 00 00 01`).
///
/// Sluice's H.264 `EncodedFrame`s hold one access unit in this format (see `AnnexBReader`).
public enum AnnexB {
    /// Where the first start code prefix (`00 00 01`) at or after `start` begins, or `nil`.
    public static func startCodePrefix(in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        var i = Swift.max(0, start)
        // Look at the third byte of each candidate: anything above 1 rules out three positions at once.
        while i + 2 < bytes.count {
            let third = bytes[i + 2]
            if third > 1 {
                i += 3
            } else if third == 0 {
                i += 1
            } else if bytes[i] == 0 && bytes[i + 1] == 0 {
                return i
            } else {
                i += 3
            }
        }
        return nil
    }

    /// Whether `bytes` begins with a start code: `00 00 01` or `00 00 00 01`.
    public static func startsWithStartCode(_ bytes: UnsafeRawBufferPointer) -> Bool {
        startCodePrefix(in: UnsafeRawBufferPointer(rebasing: bytes.prefix(4))).map { prefix in
            prefix == 0 || (prefix == 1 && bytes[0] == 0)
        } ?? false
    }

    /// The NAL units of a byte stream in memory (one access unit, say): the range of each from its
    /// header byte to its last non-zero byte, without start codes and trailing zeros. Bytes before the
    /// first start code are ignored.
    public static func nalUnits(in bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
        var units: [Range<Int>] = []
        guard var prefix = startCodePrefix(in: bytes) else { return units }
        while true {
            let header = prefix + 3
            let next = startCodePrefix(in: bytes, from: header)
            var end = next ?? bytes.count
            while end > header && bytes[end - 1] == 0 { end -= 1 }
            if end > header { units.append(header..<end) }
            guard let next else { return units }
            prefix = next
        }
    }

    /// The NAL unit types (§7.4.1, Table 7-1) of the NAL units in `bytes`, in order.
    public static func nalUnitTypes(in bytes: UnsafeRawBufferPointer) -> [Int] {
        nalUnits(in: bytes).map { H264NALType.type(ofHeader: bytes[$0.lowerBound]) }
    }

    /// The raw byte sequence payload (§7.3.1, §7.4.1) of NAL unit bytes: every emulation prevention
    /// byte (the `03` in `00 00 03`) removed.
    public static func rbsp(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var zeros = 0
        for byte in bytes {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            result.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return result
    }
}
