// DTLS certificates (self-signed, RFC 8827 §6.5) and their SDP fingerprints (RFC 8122 §5).
import MediaDTLS
import Testing

@Suite struct DTLSFingerprintTests {
    /// FIPS 180 test vectors: the digests of "abc".
    @Test(arguments: [
        ("sha-1", "A9:99:3E:36:47:06:81:6A:BA:3E:25:71:78:50:C2:6C:9C:D0:D8:9D"),
        ("sha-256", "BA:78:16:BF:8F:01:CF:EA:41:41:40:DE:5D:AE:22:23:B0:03:61:A3:96:17:7A:9C:B4:10:FF:61:F2:00:15:AD"),
    ])
    func digestsDER(algorithm: String, expected: String) throws {
        let fingerprint = try #require(DTLSFingerprint(algorithm: algorithm, digestingDER: Array("abc".utf8)))
        #expect(fingerprint.description == expected)
        #expect(fingerprint.algorithm == algorithm)
        #expect(DTLSFingerprint(algorithm: "md5", digestingDER: Array("abc".utf8)) == nil)
    }

    @Test func generatedCertificateHasSHA256FingerprintInSDPForm() throws {
        let certificate = try DTLSCertificate()
        let fingerprint = certificate.fingerprint
        #expect(fingerprint.algorithm == "sha-256")
        #expect(fingerprint.bytes.count == 32)
        #expect(fingerprint == DTLSFingerprint(algorithm: "sha-256", digestingDER: certificate.der))
        let text = fingerprint.description
        #expect(text.count == 95)                                   // 32 pairs and 31 colons
        #expect(text.allSatisfy { "0123456789ABCDEF:".contains($0) })
        #expect(text.split(separator: ":").count == 32)
        #expect(fingerprint.sdpValue == "sha-256 " + text)
    }

    @Test func parsesItsOwnSDPValueAndAnyCase() throws {
        let fingerprint = try DTLSCertificate().fingerprint
        #expect(try DTLSFingerprint(sdpValue: fingerprint.sdpValue) == fingerprint)
        #expect(try DTLSFingerprint(sdpValue: fingerprint.sdpValue.lowercased()) == fingerprint)
        #expect(try DTLSFingerprint(sdpValue: "SHA-256  " + fingerprint.description) == fingerprint)
        #expect(DTLSFingerprint(algorithm: "SHA-256", bytes: fingerprint.bytes) == fingerprint)
    }

    @Test(arguments: [("sha-1", 20), ("sha-384", 48), ("sha-512", 64)])
    func parsesOtherAlgorithms(algorithm: String, length: Int) throws {
        let hex = (0..<length).map { _ in "0F" }.joined(separator: ":")
        let fingerprint = try DTLSFingerprint(sdpValue: "\(algorithm) \(hex)")
        #expect(fingerprint.algorithm == algorithm)
        #expect(fingerprint.bytes == [UInt8](repeating: 0x0f, count: length))
    }

    @Test(arguments: [
        ("sha-256", DTLSFingerprintError.malformed),
        ("", .malformed),
        ("sha-256 AB:CD extra", .malformed),
        ("md5 AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89", .unsupportedAlgorithm("md5")),
        ("sha-256 AB:CD:G1", .badHexPair("G1")),
        ("sha-256 AB:CDE:01", .badHexPair("CDE")),
        ("sha-256 AB::CD", .badHexPair("")),
        ("sha-256 AB:CD", .wrongLength(algorithm: "sha-256", expected: 32, actual: 2)),
        ("sha-1 AB:CD", .wrongLength(algorithm: "sha-1", expected: 20, actual: 2)),
    ])
    func refusesMalformedValues(text: String, expected: DTLSFingerprintError) {
        #expect(throws: expected) { try DTLSFingerprint(sdpValue: text) }
    }
}

@Suite struct DTLSCertificateTests {
    @Test func eachGeneratedCertificateIsNew() throws {
        let first = try DTLSCertificate(), second = try DTLSCertificate()
        #expect(first.fingerprint != second.fingerprint)
        #expect(first.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(first.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(first.privateKeyPEM != second.privateKeyPEM)
    }

    @Test func loadsWhatItWritesAsPEM() throws {
        let generated = try DTLSCertificate()
        let loaded = try DTLSCertificate(certificatePEM: generated.certificatePEM, privateKeyPEM: generated.privateKeyPEM)
        #expect(loaded.der == generated.der)
        #expect(loaded.fingerprint == generated.fingerprint)
        #expect(loaded.privateKeyPEM == generated.privateKeyPEM)
    }

    @Test func refusesAKeyOfAnotherCertificate() throws {
        let one = try DTLSCertificate(), other = try DTLSCertificate()
        #expect(throws: DTLSCertificateError.keyMismatch) {
            try DTLSCertificate(certificatePEM: one.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        }
    }

    @Test func refusesTextThatIsNotPEM() throws {
        let certificate = try DTLSCertificate()
        #expect {
            try DTLSCertificate(certificatePEM: "not a certificate", privateKeyPEM: certificate.privateKeyPEM)
        } throws: { error in
            guard case DTLSCertificateError.pemInvalid(part: "certificate", _) = error else { return false }
            return (error as? DTLSCertificateError)?.reason == "pem-invalid"
        }
        #expect {
            try DTLSCertificate(certificatePEM: certificate.certificatePEM, privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        } throws: { error in
            guard case DTLSCertificateError.pemInvalid(part: "private key", _) = error else { return false }
            return true
        }
    }
}
