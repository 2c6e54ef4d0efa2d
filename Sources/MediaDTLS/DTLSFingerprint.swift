// DTLS 1.2 (RFC 6347) with the SRTP extension (RFC 5764) through OpenSSL: takes datagrams and a time,
// gives datagrams, timers, and the SRTP keys when the handshake completes.
import CSSL

/// A certificate fingerprint as SDP's `a=fingerprint` carries it (RFC 8122 §5): a hash function name and
/// the digest of the certificate's DER encoding.
///
/// `description` is the digest in upper-case hex pairs joined by colons ("AB:CD:…", 95 characters for
/// SHA-256); `sdpValue` prefixes the algorithm ("sha-256 AB:CD:…").
public struct DTLSFingerprint: Hashable, Sendable, CustomStringConvertible {
    /// The hash function's name from the IANA "Hash Function Textual Names" registry, lower case:
    /// one of `supportedAlgorithms`.
    public let algorithm: String
    public let bytes: [UInt8]

    /// The hash functions Sluice can check a fingerprint with, and their digest lengths. SHA-256 is the
    /// one WebRTC endpoints send (RFC 8827 §6.5); the others are accepted from peers.
    public static let supportedAlgorithms: [String: Int] = ["sha-1": 20, "sha-256": 32, "sha-384": 48, "sha-512": 64]

    /// A fingerprint of `bytes` made with `algorithm` (matched case-insensitively).
    public init(algorithm: String, bytes: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.bytes = bytes
    }

    /// The value of an `a=fingerprint` attribute, "sha-256 AB:CD:…" (RFC 8122 §5): algorithm and hex digits
    /// in any case, one or more spaces between them.
    public init(sdpValue: some StringProtocol) throws(DTLSFingerprintError) {
        let parts = sdpValue.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else { throw .malformed }
        let algorithm = parts[0].lowercased()
        guard let length = Self.supportedAlgorithms[algorithm] else { throw .unsupportedAlgorithm(algorithm) }
        var bytes: [UInt8] = []
        for pair in parts[1].split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.count == 2, let byte = UInt8(pair, radix: 16) else { throw .badHexPair(String(pair)) }
            bytes.append(byte)
        }
        guard bytes.count == length else { throw .wrongLength(algorithm: algorithm, expected: length, actual: bytes.count) }
        self.init(algorithm: algorithm, bytes: bytes)
    }

    /// The digest of `der` with `algorithm`, or nil if the algorithm is not one of `supportedAlgorithms`.
    public init?(algorithm: String, digestingDER der: [UInt8]) {
        guard let digest = Self.messageDigest(algorithm) else { return nil }
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let succeeded = der.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &output, &length, digest, nil) == 1
        }
        ERR_clear_error()
        guard succeeded else { return nil }
        self.init(algorithm: algorithm, bytes: Array(output[..<Int(length)]))
    }

    /// The digest in upper-case hex pairs joined by colons (RFC 8122 §5 `fingerprint`).
    public var description: String {
        bytes.map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + text : text
        }.joined(separator: ":")
    }

    /// The `a=fingerprint` attribute value: "sha-256 AB:CD:…".
    public var sdpValue: String { "\(algorithm) \(description)" }

    static func messageDigest(_ algorithm: String) -> OpaquePointer? {
        switch algorithm.lowercased() {
        case "sha-1": EVP_sha1()
        case "sha-256": EVP_sha256()
        case "sha-384": EVP_sha384()
        case "sha-512": EVP_sha512()
        default: nil
        }
    }
}

/// Why an `a=fingerprint` value was refused (RFC 8122 §5).
public enum DTLSFingerprintError: Error, Hashable, Sendable {
    /// Not "<algorithm> <hex pairs>".
    case malformed
    /// A hash function other than SHA-1, SHA-256, SHA-384 or SHA-512 (e.g. md5, refused by RFC 8122 §5).
    case unsupportedAlgorithm(String)
    /// A group between colons that is not two hex digits.
    case badHexPair(String)
    /// A digest of the wrong length for its algorithm.
    case wrongLength(algorithm: String, expected: Int, actual: Int)

    /// A stable name for counters and logs.
    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported-algorithm"
        case .badHexPair: "bad-hex-pair"
        case .wrongLength: "wrong-length"
        }
    }
}
