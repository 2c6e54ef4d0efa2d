import CSSL

/// The certificate and private key an endpoint presents in the DTLS handshake. WebRTC endpoints use
/// self-signed certificates and authenticate them by the fingerprint exchanged in SDP (RFC 8827 §6.5,
/// RFC 5763 §5).
///
/// A final class because it owns OpenSSL's `X509` and `EVP_PKEY` handles and frees them in `deinit`.
/// `@unchecked Sendable`: both are immutable once made and OpenSSL reference-counts them, so
/// associations on any thread may share one certificate.
public final class DTLSCertificate: @unchecked Sendable {
    let certificate: OpaquePointer
    let privateKey: OpaquePointer
    /// The certificate in DER, as hashed for fingerprints (RFC 8122 §5).
    public let der: [UInt8]
    /// SHA-256 of `der`, for the local `a=fingerprint` line.
    public let fingerprint: DTLSFingerprint

    /// The common name of generated certificates' subject and issuer.
    public static let defaultCommonName = "sluice"

    /// A fresh self-signed certificate: an ECDSA P-256 key, X.509 v3, a random 63-bit serial, subject and
    /// issuer CN=`commonName`, valid from a day before now for `validDays`, signed with ECDSA SHA-256.
    ///
    /// The validity reads the wall clock (OpenSSL's `X509_gmtime_adj`); the peer does not check it in
    /// WebRTC, where the fingerprint is the authentication.
    public convenience init(commonName: String = DTLSCertificate.defaultCommonName, validDays: Int = 30) throws(DTLSCertificateError) {
        ERR_clear_error()
        guard let key = sluice_ec_p256_key() else { throw .generationFailed(openSSLErrorText()) }
        guard let certificate = X509_new() else {
            EVP_PKEY_free(key)
            throw .generationFailed(openSSLErrorText())
        }
        var generator = SystemRandomNumberGenerator()
        let serial = UInt64.random(in: 1...UInt64(Int64.max), using: &generator)
        let made = X509_set_version(certificate, 2) == 1
            && ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial) == 1
            && X509_gmtime_adj(X509_getm_notBefore(certificate), -86_400) != nil
            && X509_gmtime_adj(X509_getm_notAfter(certificate), 86_400 * validDays) != nil
            && X509_NAME_add_entry_by_txt(X509_get_subject_name(certificate), "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1
            && X509_set_issuer_name(certificate, X509_get_subject_name(certificate)) == 1
            && X509_set_pubkey(certificate, key) == 1
            && X509_sign(certificate, key, EVP_sha256()) > 0
        guard made else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw .generationFailed(openSSLErrorText())
        }
        try self.init(taking: certificate, key: key)
    }

    /// A certificate and its private key from PEM text ("-----BEGIN CERTIFICATE-----…", and
    /// "-----BEGIN PRIVATE KEY-----…" or "-----BEGIN EC PRIVATE KEY-----…"), which must belong together.
    public convenience init(certificatePEM: String, privateKeyPEM: String) throws(DTLSCertificateError) {
        ERR_clear_error()
        guard let certificate = Self.readPEM(certificatePEM, PEM_read_bio_X509) else {
            throw .pemInvalid(part: "certificate", openSSLErrorText())
        }
        guard let key = Self.readPEM(privateKeyPEM, PEM_read_bio_PrivateKey) else {
            X509_free(certificate)
            throw .pemInvalid(part: "private key", openSSLErrorText())
        }
        try self.init(taking: certificate, key: key)
    }

    /// Takes ownership of both handles (freeing them if it throws).
    private init(taking certificate: OpaquePointer, key: OpaquePointer) throws(DTLSCertificateError) {
        guard X509_check_private_key(certificate, key) == 1 else {
            ERR_clear_error()
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw .keyMismatch
        }
        guard let der = Self.derEncoding(of: certificate),
              let fingerprint = DTLSFingerprint(algorithm: "sha-256", digestingDER: der) else {
            let text = openSSLErrorText()
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw .generationFailed(text)
        }
        self.certificate = certificate
        self.privateKey = key
        self.der = der
        self.fingerprint = fingerprint
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(privateKey)
    }

    /// The certificate as PEM text.
    public var certificatePEM: String { Self.writePEM { PEM_write_bio_X509($0, certificate) } }

    /// The private key as unencrypted PKCS#8 PEM text ("-----BEGIN PRIVATE KEY-----").
    public var privateKeyPEM: String { Self.writePEM { PEM_write_bio_PrivateKey($0, privateKey, nil, nil, 0, nil, nil) } }

    static func derEncoding(of certificate: OpaquePointer) -> [UInt8]? {
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509(certificate, &cursor)
        }
        return written == length ? der : nil
    }

    private static func readPEM(
        _ text: String,
        _ read: (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, (@convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32)?, UnsafeMutableRawPointer?) -> OpaquePointer?
    ) -> OpaquePointer? {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio, nil, nil, nil)
        }
    }

    private static func writePEM(_ write: (OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else {
            ERR_clear_error()
            return ""
        }
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        let read = BIO_read(bio, &bytes, Int32(bytes.count))
        return String(decoding: bytes[..<max(0, Int(read))], as: UTF8.self)
    }
}

/// Why a certificate could not be made or loaded.
public enum DTLSCertificateError: Error, Hashable, Sendable {
    /// OpenSSL failed to make the key, the certificate or its DER encoding; OpenSSL's error text.
    case generationFailed(String)
    /// The PEM text of `part` ("certificate" or "private key") could not be read; OpenSSL's error text.
    case pemInvalid(part: String, String)
    /// The private key is not the certificate's.
    case keyMismatch

    /// A stable name for counters and logs.
    public var reason: String {
        switch self {
        case .generationFailed: "generation-failed"
        case .pemInvalid: "pem-invalid"
        case .keyMismatch: "key-mismatch"
        }
    }
}

/// OpenSSL's queued errors as one line of text (most recent last), and the queue emptied: callers never
/// leave errors behind for the next OpenSSL user on the thread.
func openSSLErrorText() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        guard code != 0 else { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return messages.isEmpty ? "unknown OpenSSL error" : messages.joined(separator: "; ")
}
