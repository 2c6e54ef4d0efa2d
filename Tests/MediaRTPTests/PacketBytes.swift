/// Helpers for the RTP and RTCP packet tests: writing through the caller-buffer APIs into arrays.
import MediaRTP

enum PacketBytes {
    /// Runs `body` on a buffer of `capacity` bytes pre-filled with 0xEE (so that bytes left unwritten
    /// show) and returns the bytes it says it wrote.
    static func written<E: Error>(capacity: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E)
        -> [UInt8]
    {
        var out = [UInt8](repeating: 0xEE, count: capacity)
        let count = try out.withUnsafeMutableBytes { raw in Result { () throws(E) in try body(raw) } }.get()
        return Array(out[..<count])
    }

    /// `packet` written into a buffer of exactly its `marshalSize`.
    static func serialized(_ packet: some RTCPSerializable) throws(RTCPError) -> [UInt8] {
        try written(capacity: packet.marshalSize) { out throws(RTCPError) in try packet.write(into: out) }
    }
}
