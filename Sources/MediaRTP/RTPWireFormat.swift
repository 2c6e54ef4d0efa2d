/// Network byte order (big-endian) loads and stores at byte offsets, shared by the RTP and RTCP
/// parsers and serializers (RFC 3550 §2: all fields go most significant byte first). Callers check
/// bounds before every load and store; these helpers only do the byte swapping.

extension UnsafeRawBufferPointer {
    @inline(__always)
    func networkUInt16(at offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inline(__always)
    func networkUInt32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// A 24-bit field (RTCP cumulative lost, REMB mantissa parts) as the low bits of a UInt32.
    @inline(__always)
    func networkUInt24(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 16 | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2])
    }

    /// The bytes at `range` as an owned array (used by RTCP, where allocation per packet is accepted).
    func copyBytes(_ range: Range<Int>) -> [UInt8] {
        Array(UnsafeRawBufferPointer(rebasing: self[range]))
    }
}

extension UnsafeMutableRawBufferPointer {
    @inline(__always)
    func storeNetwork(_ value: UInt16, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
    }

    @inline(__always)
    func storeNetwork(_ value: UInt32, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }

    @inline(__always)
    func storeNetworkUInt24(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 2] = UInt8(truncatingIfNeeded: value)
    }

    /// Copies `source` to `offset` (the regions may overlap).
    @inline(__always)
    func copy(_ source: UnsafeRawBufferPointer, to offset: Int) {
        guard !source.isEmpty, let base = baseAddress, let from = source.baseAddress else { return }
        (base + offset).copyMemory(from: from, byteCount: source.count)
    }

    /// Copies the bytes of `source` to `offset`, returning the offset just past them.
    @inline(__always)
    func copy<Bytes: Collection<UInt8>>(contentsOf source: Bytes, to offset: Int) -> Int {
        if let done = source.withContiguousStorageIfAvailable({ stored -> Int in
            copy(UnsafeRawBufferPointer(stored), to: offset)
            return offset + stored.count
        }) {
            return done
        }
        var position = offset
        for byte in source {
            self[position] = byte
            position += 1
        }
        return position
    }

    /// Writes `count` zero bytes from `offset`.
    @inline(__always)
    func zero(_ count: Int, at offset: Int) {
        guard count > 0, let base = baseAddress else { return }
        (base + offset).initializeMemory(as: UInt8.self, repeating: 0, count: count)
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` keeping the body's typed error (the standard one rethrows `any Error`).
    @inline(__always)
    func withUnsafeBytesTyped<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        try withUnsafeBytes { raw in Result { () throws(E) -> T in try body(raw) } }.get()
    }
}
