/// What can be read from an Opus packet's bytes without decoding it (RFC 6716 §3), so that file and RTP code
/// need not link libopus. Every function checks bounds and takes any bytes.
public enum OpusPacket {
    /// The longest packet, 120 ms, in 48 kHz samples (RFC 6716 §3.2.5 [R5]).
    public static let maxDuration = 5760
    /// The largest frame, in bytes (RFC 6716 §3.2.1 [R2]).
    public static let maxFrameBytes = 1275

    /// Samples per frame at 48 kHz for TOC configuration `config` (RFC 6716 §3.1, Table 2): SILK 10,
    /// 20, 40, 60 ms; hybrid 10, 20 ms; CELT 2.5, 5, 10, 20 ms.
    public static func frameSamples(config: Int) -> Int {
        switch config {
        case 0...11: return [480, 960, 1920, 2880][config & 3]
        case 12...15: return [480, 960][config & 1]
        default: return [120, 240, 480, 960][config & 3]
        }
    }

    /// The packet's duration in 48 kHz samples; `nil` unless it is a well-formed packet under
    /// RFC 6716 §3.4 [R1]-[R7]: not empty; frame lengths (code 1 equal halves, code 2 a 1-2 byte
    /// length, code 3 a frame count 1...48 with optional padding and VBR lengths) that fit the
    /// packet and 1275 bytes each; at most 120 ms.
    public static func duration(_ packet: UnsafeRawBufferPointer) -> Int? {
        guard let toc = packet.first else { return nil }  // [R1]
        let perFrame = frameSamples(config: Int(toc >> 3))
        let length = packet.count
        switch toc & 3 {
        case 0:
            return length - 1 <= maxFrameBytes ? perFrame : nil  // [R2]
        case 1:
            let payload = length - 1
            return payload % 2 == 0 && payload / 2 <= maxFrameBytes ? 2 * perFrame : nil  // [R3]
        case 2:
            guard let (first, used) = frameLength(packet, at: 1) else { return nil }  // [R4]
            let second = length - 1 - used - first
            return first <= maxFrameBytes && second >= 0 && second <= maxFrameBytes ? 2 * perFrame : nil
        default:
            // [R5]-[R7]: frame count byte, then padding lengths, then (VBR) M-1 frame lengths.
            guard length >= 2 else { return nil }
            let countByte = packet[1]
            let count = Int(countByte & 0x3F)
            guard count >= 1, count * perFrame <= maxDuration else { return nil }
            var offset = 2
            var padding = 0
            if countByte & 0x40 != 0 {
                while true {
                    guard offset < length else { return nil }
                    let byte = Int(packet[offset])
                    offset += 1
                    padding += byte == 255 ? 254 : byte
                    if byte != 255 { break }
                }
            }
            var remaining = length - offset - padding
            guard remaining >= 0 else { return nil }
            if countByte & 0x80 != 0 {
                for _ in 0..<(count - 1) {
                    guard let (size, used) = frameLength(packet, at: offset) else { return nil }
                    offset += used
                    remaining -= used + size
                    guard size <= maxFrameBytes, remaining >= 0 else { return nil }
                }
                return remaining <= maxFrameBytes ? count * perFrame : nil  // [R7]
            }
            return remaining % count == 0 && remaining / count <= maxFrameBytes ? count * perFrame : nil  // [R6]
        }
    }

    /// `duration(_:)` of an array of bytes.
    public static func duration(_ packet: [UInt8]) -> Int? {
        packet.withUnsafeBytes { duration($0) }
    }

    /// A frame length coded in one byte (0...251) or two (252...1275, RFC 6716 §3.2.1) at `offset`,
    /// and the bytes it took; `nil` when the packet ends first.
    private static func frameLength(_ packet: UnsafeRawBufferPointer, at offset: Int) -> (Int, Int)? {
        guard offset < packet.count else { return nil }
        let first = Int(packet[offset])
        if first < 252 { return (first, 1) }
        guard offset + 1 < packet.count else { return nil }
        return (first + 4 * Int(packet[offset + 1]), 2)
    }
}
