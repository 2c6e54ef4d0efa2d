import Glibc

/// An IPv4 or IPv6 address and UDP port, stored as the `sockaddr` the kernel takes, so that sending
/// to it converts nothing.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    private var storage = sockaddr_storage()
    /// The bytes of `storage` that are meaningful.
    public private(set) var length: socklen_t = 0

    /// `text` as `host:port`: a dotted IPv4 address, a bracketed IPv6 address (`[::1]:5004`) or a
    /// host name (resolved once, here).
    public init(parsing text: String) throws {
        var host = Substring(text), port = Substring("")
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw SocketError.invalidAddress(text)
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon else {
                throw SocketError.invalidAddress(text)
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let number = UInt16(port) else { throw SocketError.invalidAddress(text) }
        try self.init(host: String(host), port: number)
    }

    /// `host` (a numeric address or a name) and `port`.
    public init(host: String, port: UInt16) throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw SocketError.unresolved(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(results) }
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        length = first.pointee.ai_addrlen
    }

    /// 0.0.0.0:0, the IPv4 wildcard: "any address, any port" where an address is needed but not used
    /// (a session over a transport that knows its own addresses).
    public static let unspecified: SocketAddress = {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { target in
            withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
        }
        return SocketAddress(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
    }()

    /// The address the kernel filled in (`recvfrom`, `getsockname`).
    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    public var isIPv6: Bool { Int32(storage.ss_family) == AF_INET6 }

    public var port: UInt16 {
        get {
            withUnsafeBytes(of: storage) { raw in
                isIPv6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                       : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            }
        }
        set {
            let offset = isIPv6 ? MemoryLayout<sockaddr_in6>.offset(of: \.sin6_port)! : MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: newValue.bigEndian, toByteOffset: offset, as: UInt16.self) }
        }
    }

    /// The same host at another port (e.g. the RTCP port after an RTP port, RFC 3550 §11).
    public func withPort(_ port: UInt16) -> SocketAddress {
        var address = self
        address.port = port
        return address
    }

    /// The numeric host, e.g. `127.0.0.1` or `::1`.
    public var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        withUnsafeBytes(of: storage) { raw in
            if isIPv6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                _ = inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
            } else {
                var address = raw.load(as: sockaddr_in.self).sin_addr
                _ = inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
            }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Calls `body` with the address as the kernel takes it.
    @discardableResult
    func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: storage) { try body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        a.length == b.length && withUnsafeBytes(of: a.storage) { x in
            withUnsafeBytes(of: b.storage) { y in x.prefix(Int(a.length)).elementsEqual(y.prefix(Int(b.length))) }
        }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: storage) { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(Int(length)))) }
    }
}
