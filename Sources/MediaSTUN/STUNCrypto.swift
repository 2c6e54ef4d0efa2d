// The hashes STUN needs: CRC-32 for FINGERPRINT (written here, table-driven), and HMAC-SHA1,
// HMAC-SHA256, MD5 and SHA-256 through libcrypto for MESSAGE-INTEGRITY(-SHA256) and long-term keys.
import CSSL

/// CRC-32 as ISO 3309 / ITU-T V.42 define it (RFC 8489 §14.7 refers to it): reflected polynomial
/// 0xEDB88320, initial value and final xor 0xFFFFFFFF. The check value of "123456789" is 0xCBF43926.
enum CRC32 {
    /// One entry per byte value: the CRC register after shifting that byte through.
    static let table: [UInt32] = (0..<256).map { byte in
        var crc = UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}

/// libcrypto's one-shot digests and HMACs over byte arrays.
enum Crypto {
    enum Digest {
        case md5, sha1, sha256

        var evp: OpaquePointer? {
            switch self {
            case .md5: EVP_md5()
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            }
        }

        var size: Int {
            switch self {
            case .md5: 16
            case .sha1: 20
            case .sha256: 32
            }
        }
    }

    /// The HMAC of `data` under `key` (RFC 2104) with `digest`.
    static func hmac(_ digest: Digest, key: [UInt8], data: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digest.size)
        var outLength: UInt32 = 0
        // A one-byte stand-in keeps the pointers non-nil for an empty key or message; the length says 0.
        let keyBytes = key.isEmpty ? [0] : key
        let dataStandIn: [UInt8] = [0]
        keyBytes.withUnsafeBytes { keyPointer in
            dataStandIn.withUnsafeBytes { standIn in
                let dataPointer = data.count == 0 ? standIn : data
                out.withUnsafeMutableBytes { outPointer in
                    _ = HMAC(digest.evp, keyPointer.baseAddress, Int32(key.count),
                             dataPointer.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count,
                             outPointer.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLength)
                }
            }
        }
        return out
    }

    static func hmac(_ digest: Digest, key: [UInt8], data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hmac(digest, key: key, data: $0) }
    }

    /// The digest of `data`.
    static func hash(_ digest: Digest, _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digest.size)
        var outLength: UInt32 = 0
        let input = data.isEmpty ? [0] : data
        input.withUnsafeBytes { inputPointer in
            out.withUnsafeMutableBytes { outPointer in
                _ = EVP_Digest(inputPointer.baseAddress, data.count,
                               outPointer.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLength, digest.evp, nil)
            }
        }
        return out
    }

    /// Whether the two are equal, in time that depends only on the length (libcrypto's CRYPTO_memcmp).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }
}
