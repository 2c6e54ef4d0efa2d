/// SDES `a=crypto` (RFC 4568 §9.1) and `a=imageattr` (RFC 6236 §3.1) with literal lines.
import MediaSDP
import Testing

@Suite struct CryptoTests {
    typealias Key = SDPCrypto.Key

    @Test(arguments: [
        ("1 AES_CM_128_HMAC_SHA1_80 inline:zRCambWi3kLHB4qWpQqmoimTJhFIjAvGtsWV2WHC",
         SDPCrypto(tag: 1, suite: "AES_CM_128_HMAC_SHA1_80", keys: [Key(keySalt: "zRCambWi3kLHB4qWpQqmoimTJhFIjAvGtsWV2WHC")])),
        // RFC 4568 §4: lifetime 2^20 packets, MKI 1 in 4 bytes, an FEC_ORDER session parameter.
        ("1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz|2^20|1:4 FEC_ORDER=FEC_SRTP",
         SDPCrypto(tag: 1, suite: "AES_CM_128_HMAC_SHA1_80",
                   keys: [Key(keySalt: "WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz", lifetime: .powerOfTwo(20),
                              mki: SDPCrypto.MKI(value: 1, length: 4))],
                   sessionParameters: ["FEC_ORDER=FEC_SRTP"])),
        ("2 AES_CM_128_HMAC_SHA1_32 inline:/GkYexB8Qgau4FAS4Igh+ufFddUkTIUnFRqv4K3E|1048576",
         SDPCrypto(tag: 2, suite: "AES_CM_128_HMAC_SHA1_32",
                   keys: [Key(keySalt: "/GkYexB8Qgau4FAS4Igh+ufFddUkTIUnFRqv4K3E", lifetime: .packets(1_048_576))])),
        ("3 AES_CM_128_HMAC_SHA1_80 inline:AAAA|5:128;inline:BBBB|2^31|6:128 KDR=1 UNENCRYPTED_SRTCP",
         SDPCrypto(tag: 3, suite: "AES_CM_128_HMAC_SHA1_80",
                   keys: [Key(keySalt: "AAAA", mki: SDPCrypto.MKI(value: 5, length: 128)),
                          Key(keySalt: "BBBB", lifetime: .powerOfTwo(31), mki: SDPCrypto.MKI(value: 6, length: 128))],
                   sessionParameters: ["KDR=1", "UNENCRYPTED_SRTCP"])),
    ])
    func parses(value: String, expected: SDPCrypto) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("", "expected <tag> <suite> <key-params>"),
        ("1 AES_CM_128_HMAC_SHA1_80", "expected <tag> <suite> <key-params>"),
        ("1234567890 AES_CM_128_HMAC_SHA1_80 inline:AAAA", "tag is not 1 to 9 digits"),
        ("x AES_CM_128_HMAC_SHA1_80 inline:AAAA", "tag is not 1 to 9 digits"),
        ("1 AES_CM_128_HMAC_SHA1_80 uri:AAAA", "key method is not inline"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:", "key and salt are not base64"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AA!A", "key and salt are not base64"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AAA", "key and salt are not base64"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:A=AA", "key and salt are not base64"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AAAA|2^x", "lifetime is not a number or 2^<number>"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AAAA|2^65", "lifetime is not a number or 2^<number>"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AAAA|1:4|2^20", "lifetime is not a number or 2^<number>"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AAAA|1:200", "MKI is not <value>:<length 1-128>"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AAAA|1:4|2:4", "MKI is not <value>:<length 1-128>"),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:AAAA;", "key method is not inline"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPCrypto.self, value, reason) }

    @Test func keyAndSaltBytes() throws {
        let crypto = try SDPCrypto(attributeValue: "1 AES_CM_128_HMAC_SHA1_80 inline:zRCambWi3kLHB4qWpQqmoimTJhFIjAvGtsWV2WHC")
        let bytes = try #require(crypto.keys[0].keySaltBytes)
        #expect(bytes.count == 30)  // 16-byte master key + 14-byte salt (RFC 4568 §6.2.1)
        #expect(Array(bytes.prefix(4)) == [0xCD, 0x10, 0x9A, 0x99])
        #expect(Key(keySalt: "AQID").keySaltBytes == [1, 2, 3])
        #expect(Key(keySalt: "AQI=").keySaltBytes == [1, 2])
        #expect(Key(keySalt: "AQ==").keySaltBytes == [1])
    }
}

@Suite struct ImageAttributeTests {
    typealias Set = SDPImageAttribute.ImageSet

    @Test(arguments: [
        // RFC 6236 §3.1.1 examples.
        ("97 send [x=800,y=640,sar=1.1,q=0.6] [x=480,y=320] recv [x=330,y=250]",
         SDPImageAttribute(payloadType: 97,
                           send: .sets([Set(x: .value(800), y: .value(640), sar: .value(1.1), q: 0.6),
                                        Set(x: .value(480), y: .value(320))]),
                           receive: .sets([Set(x: .value(330), y: .value(250))]))),
        ("97 send [x=[480:16:800],y=[320:16:640],par=[1.2-1.3],q=0.6] [x=[176:8:208],y=[144:8:176],par=[1.2-1.3]] recv *",
         SDPImageAttribute(payloadType: 97,
                           send: .sets([Set(x: .range(min: 480, step: 16, max: 800), y: .range(min: 320, step: 16, max: 640),
                                            par: 1.2...1.3, q: 0.6),
                                        Set(x: .range(min: 176, step: 8, max: 208), y: .range(min: 144, step: 8, max: 176),
                                            par: 1.2...1.3)]),
                           receive: .any)),
        ("* send * recv [x=[480:800],y=[320,480,640],sar=[0.9-1.1]]",
         SDPImageAttribute(payloadType: nil, send: .any,
                           receive: .sets([Set(x: .range(min: 480, step: nil, max: 800), y: .list([320, 480, 640]),
                                               sar: .range(0.9...1.1))]))),
        ("31 recv [x=176,y=144,sar=[0.5,1.1,1.3]]",
         SDPImageAttribute(payloadType: 31, receive: .sets([Set(x: .value(176), y: .value(144), sar: .list([0.5, 1.1, 1.3]))]))),
    ])
    func parses(value: String, expected: SDPImageAttribute) throws { try expectParses(value, to: expected) }

    @Test(arguments: [
        ("97", "expected send or recv after the payload type"),
        ("x send *", "payload type is not * or a number from 0 to 127"),
        ("97 send", "expected a space before the sets"),
        ("97 send ", "expected * or [x=...,y=...]"),
        ("97 fetch *", "expected send or recv once each"),
        ("97 send * send *", "expected send or recv once each"),
        ("97 send [x=800]", "expected x=<range>,y=<range>"),
        ("97 send [y=1,x=2]", "a set must start with [x="),
        ("97 send [x=0,y=1]", "expected a pixel count from 1 to 99999"),
        ("97 send [x=100000,y=1]", "expected a pixel count from 1 to 99999"),
        ("97 send [x=[800:480],y=320]", "range minimum exceeds maximum"),
        ("97 send [x=[800],y=320]", "a bracketed pixel list needs two values or a range"),
        ("97 send [x=[480:800,y=320]", "expected ] after a range"),
        ("97 send [x=800,y=640,q=1.5]", "expected sar=, par= or q= once each"),
        ("97 send [x=800,y=640,q=0.5,q=0.5]", "expected sar=, par= or q= once each"),
        ("97 send [x=800,y=640,fps=30]", "expected sar=, par= or q= once each"),
        ("97 send [x=800,y=640,par=1.2]", "par must be [min-max]"),
        ("97 send [x=800,y=640,sar=[1.3-1.1]]", "range minimum exceeds maximum"),
        ("97 send [x=800,y=640", "a set must end with ]"),
        ("97 send [x=800,y=640]recv *", "expected send or recv after the payload type"),
    ])
    func malformed(value: String, reason: String) { expectMalformed(SDPImageAttribute.self, value, reason) }

    /// Either direction may come first (RFC 6236 §3.1.1); writing puts send first.
    @Test func receiveFirst() throws {
        let parsed = try SDPImageAttribute(attributeValue: "97 recv [x=800,y=640,sar=1.1] send [x=330,y=250]")
        #expect(parsed == SDPImageAttribute(payloadType: 97, send: .sets([Set(x: .value(330), y: .value(250))]),
                                            receive: .sets([Set(x: .value(800), y: .value(640), sar: .value(1.1))])))
        #expect(parsed.attributeValue == "97 send [x=330,y=250] recv [x=800,y=640,sar=1.1]")
    }

    @Test func rangeContains() {
        let stepped = SDPImageAttribute.Range.range(min: 480, step: 16, max: 800)
        #expect(stepped.contains(480) && stepped.contains(496) && stepped.contains(800))
        #expect(!stepped.contains(490) && !stepped.contains(816) && !stepped.contains(464))
        #expect(SDPImageAttribute.Range.list([320, 640]).contains(640))
        #expect(!SDPImageAttribute.Range.value(320).contains(321))
    }
}
