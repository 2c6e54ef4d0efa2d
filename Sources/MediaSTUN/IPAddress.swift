// IP addresses and transport addresses as plain values, with numeric text parsing and canonical printing
// (RFC 5952 for IPv6). No resolver, no sockets.

/// An IPv4 or IPv6 address as its network-order bytes (4 or 16).
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6, in network order.
    public let bytes: [UInt8]

    /// An address from its bytes: 4 (IPv4) or 16 (IPv6); nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// A numeric address: dotted decimal IPv4 ("192.0.2.1", four parts, no leading zeros) or IPv6 text
    /// (RFC 4291 §2.2: "2001:db8::1", "::ffff:192.0.2.1"). Zone indices ("fe80::1%eth0"), brackets and
    /// host names give nil.
    public init?(_ text: String) {
        if let v4 = IPAddress.parseIPv4(Substring(text)) {
            bytes = v4
        } else if let v6 = IPAddress.parseIPv6(text) {
            bytes = v6
        } else {
            return nil
        }
    }

    /// The IPv4 address a.b.c.d.
    public static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> IPAddress {
        IPAddress(validBytes: [a, b, c, d])
    }

    /// The IPv6 loopback address ::1.
    public static let ipv6Loopback = IPAddress(validBytes: [UInt8](repeating: 0, count: 15) + [1])
    /// The IPv4 loopback address 127.0.0.1.
    public static let ipv4Loopback = IPAddress.ipv4(127, 0, 0, 1)

    private init(validBytes: [UInt8]) { bytes = validBytes }

    public var isIPv4: Bool { bytes.count == 4 }

    /// 127.0.0.0/8 or ::1 (RFC 1122 §3.2.1.3, RFC 4291 §2.5.3).
    public var isLoopback: Bool {
        isIPv4 ? bytes[0] == 127 : bytes == IPAddress.ipv6Loopback.bytes
    }

    /// 169.254.0.0/16 or fe80::/10 (RFC 3927, RFC 4291 §2.5.6).
    public var isLinkLocal: Bool {
        isIPv4 ? bytes[0] == 169 && bytes[1] == 254 : bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
    }

    /// 0.0.0.0 or ::.
    public var isUnspecified: Bool { bytes.allSatisfy { $0 == 0 } }

    /// ::ffff:a.b.c.d (RFC 4291 §2.5.5.2).
    public var isIPv4Mapped: Bool {
        !isIPv4 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
    }

    /// Canonical text: dotted decimal for IPv4; RFC 5952 §4 for IPv6 (lowercase, no leading zeros, the
    /// longest run of two or more zero groups as "::", the first on a tie; IPv4-mapped as ::ffff:a.b.c.d).
    public var description: String {
        if isIPv4 { return IPAddress.dotted(bytes[0..<4]) }
        if isIPv4Mapped { return "::ffff:" + IPAddress.dotted(bytes[12..<16]) }
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        // The longest run of zero groups of length 2 or more (RFC 5952 §4.2.2, §4.2.3).
        var best: Range<Int>? = nil
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            var end = index
            while end < 8 && groups[end] == 0 { end += 1 }
            if end - index >= 2 && end - index > (best?.count ?? 0) { best = index..<end }
            index = end
        }
        let hex = groups.map { String($0, radix: 16) }
        guard let run = best else { return hex.joined(separator: ":") }
        return hex[..<run.lowerBound].joined(separator: ":") + "::" + hex[run.upperBound...].joined(separator: ":")
    }

    private static func dotted(_ four: ArraySlice<UInt8>) -> String {
        four.map { String($0) }.joined(separator: ".")
    }

    /// Four decimal parts 0-255, no leading zeros (which some parsers read as octal), no empty parts.
    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  part.utf8.count == 1 || part.utf8.first != 0x30,
                  let value = UInt8(part) else { return nil }
            out.append(value)
        }
        return out
    }

    /// RFC 4291 §2.2 text forms: eight groups of 1-4 hex digits, at most one "::", optionally ending in
    /// a dotted IPv4 address that stands for the last two groups.
    private static func parseIPv6(_ text: String) -> [UInt8]? {
        guard text.contains(":"), text.utf8.count <= 45, let pieces = splitAtDoubleColon(text) else { return nil }
        let groups: [UInt16]
        switch pieces.count {
        case 1:
            guard let all = parseGroups(pieces[0], allowIPv4Tail: true), all.count == 8 else { return nil }
            groups = all
        case 2:
            guard let head = parseGroups(pieces[0], allowIPv4Tail: false),
                  let tail = parseGroups(pieces[1], allowIPv4Tail: true),
                  head.count + tail.count <= 7 else { return nil }
            groups = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        default:
            return nil
        }
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// The text before and after each "::"; nil when ":::" makes the split ambiguous.
    private static func splitAtDoubleColon(_ text: String) -> [Substring]? {
        var pieces: [Substring] = []
        var start = text.startIndex
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(after: index)
            if text[index] == ":", next < text.endIndex, text[next] == ":" {
                let afterPair = text.index(after: next)
                if afterPair < text.endIndex, text[afterPair] == ":" { return nil }
                pieces.append(text[start..<index])
                start = afterPair
                index = afterPair
            } else {
                index = next
            }
        }
        pieces.append(text[start...])
        return pieces
    }

    /// Colon-separated hex groups ("" for none); a dotted IPv4 address may end them when allowed.
    private static func parseGroups(_ text: Substring, allowIPv4Tail: Bool) -> [UInt16]? {
        if text.isEmpty { return [] }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (index, part) in parts.enumerated() {
            if index == parts.count - 1, allowIPv4Tail, part.contains(".") {
                guard let v4 = parseIPv4(part) else { return nil }
                groups.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                groups.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                continue
            }
            guard (1...4).contains(part.utf8.count), part.utf8.allSatisfy(isHexDigit),
                  let value = UInt16(part, radix: 16) else { return nil }
            groups.append(value)
        }
        return groups
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}

/// An IP address and a UDP port: RFC 8489's "transport address" (§3).
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    public var ip: IPAddress
    public var port: UInt16

    public init(ip: IPAddress, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// A numeric host ("192.0.2.1", "2001:db8::1" or "[2001:db8::1]") and a port; nil for other hosts.
    public init?(host: String, port: UInt16) {
        var host = Substring(host)
        if host.hasPrefix("[") && host.hasSuffix("]") && host.count >= 2 { host = host.dropFirst().dropLast() }
        guard let ip = IPAddress(String(host)) else { return nil }
        self.init(ip: ip, port: port)
    }

    /// "192.0.2.1:3478" or "[2001:db8::1]:3478", as `description` prints them.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let host = text[..<colon]
        let portText = text[text.index(after: colon)...]
        guard let port = UInt16(portText), portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        if host.contains(":") && !(host.hasPrefix("[") && host.hasSuffix("]")) { return nil }
        self.init(host: String(host), port: port)
    }

    /// "1.2.3.4:5" or "[::1]:5".
    public var description: String {
        ip.isIPv4 ? "\(ip):\(port)" : "[\(ip)]:\(port)"
    }
}
