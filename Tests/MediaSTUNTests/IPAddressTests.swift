import MediaSTUN
import Testing

/// Numeric address text: parsing (RFC 4291 §2.2 forms), canonical printing (RFC 5952) and rejects.
@Suite struct IPAddressTests {
    @Test(arguments: [
        // (input, canonical text, bytes)
        ("192.0.2.1", "192.0.2.1", [192, 0, 2, 1]),
        ("0.0.0.0", "0.0.0.0", [0, 0, 0, 0]),
        ("255.255.255.255", "255.255.255.255", [255, 255, 255, 255]),
        ("::", "::", [UInt8](repeating: 0, count: 16)),
        ("::1", "::1", [UInt8](repeating: 0, count: 15) + [1]),
        ("1::", "1::", [0, 1] + [UInt8](repeating: 0, count: 14)),
        ("2001:DB8:0:0:0:0:0:1", "2001:db8::1", [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]),
        ("2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:1",       // RFC 5952 §4.2.3: first of equal runs
         [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1",                       // §4.2.2: one zero group stays
         [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1", [0x20, 0x01, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]),  // §4.2.3: longest run
        ("fe80::1", "fe80::1", [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]),
        ("::ffff:192.0.2.1", "::ffff:192.0.2.1", [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 192, 0, 2, 1]),  // §5
        ("::192.0.2.1", "::c000:201", [UInt8](repeating: 0, count: 12) + [192, 0, 2, 1]),
        ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0", [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 0]),
        ("2001:db8:1234:5678:11:2233:4455:6677", "2001:db8:1234:5678:11:2233:4455:6677",
         [0x20, 0x01, 0x0D, 0xB8, 0x12, 0x34, 0x56, 0x78, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77]),
    ] as [(String, String, [UInt8])])
    func parsesAndPrintsCanonically(input: String, canonical: String, bytes: [UInt8]) throws {
        let address = try #require(IPAddress(input))
        #expect(address.bytes == bytes)
        #expect(address.description == canonical)
        #expect(IPAddress(canonical) == address)
        #expect(IPAddress(bytes: bytes) == address)
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.0.0.1", "01.2.3.4", "1.2.3.-4", "1.2.3.4 ", " 1.2.3.4", "1..3.4", "a.b.c.d",
        ":", ":::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1::2::3", "12345::", "g::1", ":1::2", "1::2:",
        "fe80::1%eth0", "[::1]", "::ffff:1.2.3", "::1.2.3.4:5", "1:2:3:4:5:6:7:8::", "::1.2.3.256", "localhost", "١.٢.٣.٤",
    ])
    func rejects(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func bytesMustBe4Or16() {
        #expect(IPAddress(bytes: []) == nil)
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 6)) == nil)
        #expect(IPAddress(bytes: [1, 2, 3, 4])?.isIPv4 == true)
    }

    @Test func classification() throws {
        #expect(try #require(IPAddress("127.0.0.1")).isLoopback)
        #expect(try #require(IPAddress("127.255.0.9")).isLoopback)
        #expect(try #require(IPAddress("::1")).isLoopback)
        #expect(try !#require(IPAddress("::2")).isLoopback)
        #expect(try #require(IPAddress("169.254.3.4")).isLinkLocal)
        #expect(try #require(IPAddress("fe80::1")).isLinkLocal)
        #expect(try #require(IPAddress("febf::1")).isLinkLocal)
        #expect(try !#require(IPAddress("fec0::1")).isLinkLocal)
        #expect(try !#require(IPAddress("192.168.1.1")).isLinkLocal)
        #expect(try #require(IPAddress("::")).isUnspecified)
        #expect(try #require(IPAddress("::ffff:10.0.0.1")).isIPv4Mapped)
        #expect(IPAddress.ipv4Loopback.description == "127.0.0.1")
        #expect(IPAddress.ipv6Loopback.description == "::1")
    }

    @Test func transportAddressText() throws {
        let v4 = try #require(TransportAddress(host: "192.0.2.1", port: 3478))
        #expect(v4.description == "192.0.2.1:3478")
        let v6 = try #require(TransportAddress(host: "2001:db8::1", port: 5))
        #expect(v6.description == "[2001:db8::1]:5")
        #expect(TransportAddress(host: "[2001:db8::1]", port: 5) == v6)
        #expect(TransportAddress("[2001:db8::1]:5") == v6)
        #expect(TransportAddress("192.0.2.1:3478") == v4)
        #expect(TransportAddress(host: "example.org", port: 1) == nil)
        for bad in ["2001:db8::1:5", "192.0.2.1", "192.0.2.1:", "192.0.2.1:65536", "192.0.2.1:+5", "[::1]", "[::1:5"] {
            #expect(TransportAddress(bad) == nil, "\(bad)")
        }
    }
}
