import CSRTP
import Testing

/// The RFC vectors that are given as session keys, which no SRTP session takes (its keys come from the
/// RFC 3711 §4.3 key derivation): run on libsrtp's own ciphers, the ones the sessions use.
@Suite struct SRTPCipherTests {
    /// One libsrtp cipher of `type` with `key` (key and salt), freed after `body`.
    func withCipher<R>(_ type: UnsafePointer<srtp_cipher_type_t>, key: [UInt8], tagLength: Int32,
                       _ body: (UnsafeMutablePointer<srtp_cipher_t>) throws -> R) throws -> R {
        var cipher: UnsafeMutablePointer<srtp_cipher_t>?
        #expect(srtp_cipher_type_alloc(type, &cipher, Int32(key.count), tagLength) == srtp_err_status_ok)
        let made = try #require(cipher)
        defer { srtp_cipher_dealloc(made) }
        #expect(srtp_cipher_init(made, key) == srtp_err_status_ok)
        return try body(made)
    }

    /// RFC 3711 Appendix B.2: AES-CM keystream for session key 2b7e…, salt f0f1…fd, SSRC 0, index 0 —
    /// the counter blocks are the salt shifted left 16 bits plus the block number.
    @Test func aesCounterModeKeystreamIsRFC3711B2() throws {
        let vector = try SRTPVector("rfc3711_b2_aes_cm_keystream")
        let blocks = vector.fields["counter_blocks"] as! [[String: String]]
        let stream = try withCipher(sluice_srtp_aes_icm_128(), key: vector["session_key"] + vector["session_salt"], tagLength: 0) { cipher in
            var iv = [UInt8](repeating: 0, count: 16)                  // SSRC 0, index 0 (RFC 3711 §4.1.1)
            #expect(srtp_cipher_set_iv(cipher, &iv, Int32(srtp_direction_encrypt.rawValue)) == srtp_err_status_ok)
            var bytes = [UInt8](repeating: 0, count: 0xFF02 * 16)      // up to counter …ff01
            var count = UInt32(bytes.count)
            #expect(srtp_cipher_encrypt(cipher, &bytes, &count) == srtp_err_status_ok)
            return bytes
        }
        for block in blocks {
            let counter = hex(block["counter"]!)
            let number = Int(counter[14]) << 8 | Int(counter[15])
            #expect(hexString(Array(stream[number * 16..<(number + 1) * 16])) == block["keystream"]!, "block \(number)")
        }
    }

    /// RFC 7714 §16 (SRTP) and §17 (SRTCP, encrypted) with AES-128 and AES-256 GCM: the IVs are given
    /// (salt XOR SSRC, ROC, sequence or SRTCP index); AAD is the RTP header, or the first 8 bytes and E+index.
    @Test(arguments: ["aes_128", "aes_256"])
    func aesGCMIsRFC7714(keySize: String) throws {
        let vector = try SRTPVector("rfc7714_aead_aes_gcm")
        let keys = vector.fields[keySize] as! [String: String]
        let type = keySize == "aes_128" ? sluice_srtp_aes_gcm_128()! : sluice_srtp_aes_gcm_256()!
        let key = hex(keys["session_key"]!) + vector["session_salt"]
        let rtp = vector["rtp_plaintext"]
        let srtp = try seal(type, key: key, iv: vector["srtp_iv"], aad: Array(rtp[..<12]), plaintext: Array(rtp[12...]))
        #expect(hexString(Array(rtp[..<12]) + srtp) == keys["srtp_protected"]!)

        let rtcp = vector["rtcp_plaintext"]
        let eIndex: [UInt8] = [0x80, 0x00, 0x05, 0xD4]                // E=1, SRTCP index 0x5d4
        let srtcp = try seal(type, key: key, iv: vector["srtcp_iv"], aad: Array(rtcp[..<8]) + eIndex, plaintext: Array(rtcp[8...]))
        #expect(hexString(Array(rtcp[..<8]) + srtcp + eIndex) == keys["srtcp_protected"]!)
    }

    /// Ciphertext followed by the 16-byte tag.
    func seal(_ type: UnsafePointer<srtp_cipher_type_t>, key: [UInt8], iv: [UInt8], aad: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        try withCipher(type, key: key, tagLength: 16) { cipher in
            var iv = iv
            #expect(srtp_cipher_set_iv(cipher, &iv, Int32(srtp_direction_encrypt.rawValue)) == srtp_err_status_ok)
            #expect(srtp_cipher_set_aad(cipher, aad, UInt32(aad.count)) == srtp_err_status_ok)
            var bytes = plaintext + [UInt8](repeating: 0, count: 16)   // libsrtp's NSS GCM writes the tag after
            var count = UInt32(plaintext.count)
            #expect(srtp_cipher_encrypt(cipher, &bytes, &count) == srtp_err_status_ok)
            var tag = [UInt8](repeating: 0, count: 16)
            var tagLength: UInt32 = 16
            #expect(srtp_cipher_get_tag(cipher, &tag, &tagLength) == srtp_err_status_ok)
            return Array(bytes[..<Int(count)]) + tag[..<Int(tagLength)]
        }
    }
}
