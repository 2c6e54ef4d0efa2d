import Testing

@testable import MediaSTUN

/// The hashes under MESSAGE-INTEGRITY(-SHA256) and FINGERPRINT against published known answers, and
/// the message-type bit layout.
@Suite struct STUNCryptoTests {
    @Test func crc32CheckValue() {
        // The CRC-32 (ISO-HDLC) catalogue's check value: CRC of the ASCII "123456789".
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
        // "The quick brown fox jumps over the lazy dog" is 0x414FA339 in every CRC-32 listing.
        #expect(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x414F_A339)
    }

    @Test func hmacSHA1MatchesRFC2202() {
        // RFC 2202 §3 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mac = Crypto.hmac(.sha1, key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(mac == hex("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"))
    }

    @Test func hmacSHA256MatchesRFC4231() {
        // RFC 4231 §4.3 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mac = Crypto.hmac(.sha256, key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(mac == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    @Test func md5MatchesRFC1321() {
        // RFC 1321 §A.5: MD5("abc") and MD5("").
        #expect(Crypto.hash(.md5, Array("abc".utf8)) == hex("900150983cd24fb0d6963f7d28e17f72"))
        #expect(Crypto.hash(.md5, []) == hex("d41d8cd98f00b204e9800998ecf8427e"))
    }

    @Test func emptyKeyAndMessageDoNotTrap() {
        #expect(Crypto.hmac(.sha1, key: [], data: []).count == 20)
        #expect(Crypto.hmac(.sha1, key: [], data: []) != Crypto.hmac(.sha1, key: [1], data: []))
    }

    @Test func constantTimeComparison() {
        #expect(Crypto.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(Crypto.constantTimeEqual([], []))
    }

    @Test(arguments: [
        // (method, class, type): RFC 8489 §5 and §6.
        (STUNMethod.binding, STUNClass.request, UInt16(0x0001)),
        (.binding, .indication, 0x0011),
        (.binding, .successResponse, 0x0101),
        (.binding, .errorResponse, 0x0111),
        (.allocate, .request, 0x0003),
        (.allocate, .errorResponse, 0x0113),
        (.send, .indication, 0x0016),
        (.data, .indication, 0x0017),
        (.channelBind, .successResponse, 0x0109),
        (STUNMethod(rawValue: 0xFFF), .errorResponse, 0x3FFF),
        (STUNMethod(rawValue: 0x080), .request, 0x0200),  // M7 sits above C1, at bit 9
    ])
    func messageTypeBits(method: STUNMethod, messageClass: STUNClass, type: UInt16) {
        #expect(stunMessageType(method, messageClass) == type)
        let (parsedMethod, parsedClass) = splitSTUNMessageType(type)
        #expect(parsedMethod == method)
        #expect(parsedClass == messageClass)
    }

    @Test func shortTermKeyIsThePassword() {
        #expect(STUNIntegrityKey.shortTerm(password: "VOkJxbRl1RmTxUk/WvJxBt").bytes == Array("VOkJxbRl1RmTxUk/WvJxBt".utf8))
        // OpaqueString maps non-ASCII spaces to U+0020 (RFC 8265 §4.2.2).
        #expect(STUNIntegrityKey.shortTerm(password: "a\u{00A0}b\u{3000}c").bytes == Array("a b c".utf8))
        #expect(STUNIntegrityKey.shortTerm(password: "é").bytes == [0xC3, 0xA9])
        // ... and normalizes to NFC: "e" + U+0301 (combining acute) keys as "é", U+212B (Angstrom sign) as "Å".
        #expect(STUNIntegrityKey.shortTerm(password: "e\u{0301}").bytes == [0xC3, 0xA9])
        #expect(STUNIntegrityKey.shortTerm(password: "\u{212B}").bytes == [0xC3, 0x85])
        let composed = STUNIntegrityKey.longTerm(username: "user", realm: "r\u{E9}alm", password: "p\u{E4}ss")
        let decomposed = STUNIntegrityKey.longTerm(username: "user", realm: "re\u{0301}alm", password: "pa\u{0308}ss")
        #expect(composed == decomposed)
        #expect(composed.bytes == Crypto.hash(.md5, Array("user:r\u{E9}alm:p\u{E4}ss".utf8)))
    }

    @Test func longTermSHA256KeyDiffersFromMD5() {
        let md5 = STUNIntegrityKey.longTerm(username: "user", realm: "realm", password: "pass")
        let sha = STUNIntegrityKey.longTerm(username: "user", realm: "realm", password: "pass", algorithm: .sha256)
        #expect(sha.bytes.count == 32)
        #expect(sha.bytes == Crypto.hash(.sha256, Array("user:realm:pass".utf8)))
        #expect(md5.bytes != Array(sha.bytes.prefix(16)))
    }
}

/// Bytes from hex digits (whitespace ignored); test input only.
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.unicodeScalars.filter { !$0.properties.isWhitespace })
    return stride(from: 0, to: digits.count - 1, by: 2).compactMap { index in
        UInt8(String(digits[index]) + String(digits[index + 1]), radix: 16)
    }
}
