import MediaSDP
import Testing

@testable import MediaSRTP

@Suite struct SRTPKeyMaterialTests {
    /// The key parameter of RFC 4568 §9.1's example offer: 30 bytes, lifetime 2^20, MKI 1 in 4 bytes.
    static let rfc4568Inline = "inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20|1:4"

    @Test func sdesInlineWithLifetimeAndMKIParses() throws {
        let key = try SRTPKeyMaterial(sdesInline: Self.rfc4568Inline, profile: .aes128CmHmacSha1_80)
        #expect(key.masterKey == Array("=-n@%^x!Bjufr9)?".utf8))
        #expect(key.masterSalt == Array(",#5h\\`=&]{qiPQ".utf8))
        #expect(key.lifetime == .powerOfTwo(20))
        #expect(key.mki == SDPCrypto.MKI(value: 1, length: 4))
        #expect(key.sdesKey == SDPCrypto.Key(keySalt: "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR", lifetime: .powerOfTwo(20),
                                             mki: SDPCrypto.MKI(value: 1, length: 4)))
    }

    @Test(arguments: SRTPProfile.allCases)
    func sdesKeyRoundTripsThroughText(profile: SRTPProfile) throws {
        let key = SRTPKeyMaterial.random(for: profile)
        let text = key.sdesKey
        // RFC 7714 §14.2: 28 bytes (AES-128-GCM) and 44 bytes (AES-256-GCM) of key and salt in base64.
        #expect(text.keySalt.count == [30: 40, 28: 40, 44: 60][profile.masterKeyLength + profile.masterSaltLength])
        let parsed = try SRTPKeyMaterial(sdesInline: "inline:\(text.keySalt)|2147483648", profile: profile)
        #expect(parsed.masterKey == key.masterKey && parsed.masterSalt == key.masterSalt)
        #expect(parsed.lifetime == .packets(2_147_483_648))
        #expect(parsed.mki == nil)
    }

    @Test func keyMaterialFromAnSDPCryptoAttribute() throws {
        let crypto = try SDPCrypto(attributeValue: "1 AEAD_AES_256_GCM inline:" + String(repeating: "QUJD", count: 14) + "REU=")
        let profile = try #require(SRTPProfile(sdesName: crypto.suite))
        let key = try SRTPKeyMaterial(crypto.keys[0], profile: profile)
        #expect(key.keyLength == 32 && key.saltLength == 12)
    }

    @Test func malformedSDESKeysNameTheirFault() {
        let valid = "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR"
        let cases: [(String, SRTPProfile, SRTPKeyError)] = [
            ("uri:sip:keys.example.com", .aes128CmHmacSha1_80, .sdes(.notInline)),
            ("inline:", .aes128CmHmacSha1_80, .sdes(.keySaltNotBase64)),
            ("inline:PS1u!CVe", .aes128CmHmacSha1_80, .sdes(.keySaltNotBase64)),
            ("inline:PS1uQ", .aes128CmHmacSha1_80, .sdes(.keySaltNotBase64)),             // not a multiple of 4
            ("inline:\(valid)|2^x", .aes128CmHmacSha1_80, .sdes(.invalidLifetime)),
            ("inline:\(valid)|2^65", .aes128CmHmacSha1_80, .sdes(.invalidLifetime)),
            ("inline:\(valid)|1:4|2^20", .aes128CmHmacSha1_80, .sdes(.invalidLifetime)),   // lifetime after MKI
            ("inline:\(valid)|1:200", .aes128CmHmacSha1_80, .sdes(.invalidMKI)),          // MKI length over 128
            ("inline:\(valid)|1:4|2:4", .aes128CmHmacSha1_80, .sdes(.invalidMKI)),
            ("inline:\(valid)|256:1", .aes128CmHmacSha1_80, .mkiTooLarge(value: 256, length: 1)),
            ("inline:\(valid)", .aeadAes128Gcm, .wrongLength(part: .keyAndSalt, expected: 28, actual: 30)),
            ("inline:QUJD", .aes128CmHmacSha1_80, .wrongLength(part: .keyAndSalt, expected: 30, actual: 3)),
        ]
        for (text, profile, reason) in cases {
            #expect(throws: SRTPError.badKey(reason), "\(text)") { try SRTPKeyMaterial(sdesInline: text, profile: profile) }
        }
    }

    @Test func rawKeyLengthsAreChecked() {
        #expect(throws: SRTPError.badKey(.wrongLength(part: .key, expected: 16, actual: 15))) {
            try SRTPKeyMaterial(key: [UInt8](repeating: 1, count: 15), salt: [UInt8](repeating: 2, count: 14), profile: .aes128CmHmacSha1_32)
        }
        #expect(throws: SRTPError.badKey(.wrongLength(part: .salt, expected: 12, actual: 14))) {
            try SRTPKeyMaterial(key: [UInt8](repeating: 1, count: 32), salt: [UInt8](repeating: 2, count: 14), profile: .aeadAes256Gcm)
        }
    }

    /// Key material is never printed or logged: not by description, debugDescription, dump or Mirror.
    @Test(arguments: SRTPProfile.allCases)
    func printingKeyMaterialShowsNoKeyBytes(profile: SRTPProfile) throws {
        let key = try SRTPKeyMaterial(keyAndSalt: SRTPKeyMaterial.random(for: profile).masterKey
                                          + SRTPKeyMaterial.random(for: profile).masterSalt,
                                      profile: profile, lifetime: .powerOfTwo(31), mki: SDPCrypto.MKI(value: 7, length: 1))
        var dumped = ""
        dump(key, to: &dumped)
        var dumpedInside = ""
        dump([key], to: &dumpedInside)
        let printed = [String(describing: key), String(reflecting: key), dumped, dumpedInside, "\(Optional(key) as Any)",
                       String(describing: Mirror(reflecting: key).children.map { "\($0.label ?? ""): \($0.value)" })]
        let secrets = [key.sdesKey.keySalt, hexString(key.masterKey), hexString(key.masterSalt),
                       key.masterKey.map(String.init).joined(separator: ", "), key.masterSalt.map(String.init).joined(separator: ", ")]
        for text in printed {
            #expect(text.contains("redacted"), "\(text)")
            for secret in secrets { #expect(!text.contains(secret), "\(text)") }
        }
        #expect(String(describing: key).contains("\(profile.masterKeyLength)-byte key"))
        #expect(String(describing: key).contains("lifetime 2^31"))
    }
}
