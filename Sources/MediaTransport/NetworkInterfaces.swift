import Glibc

/// The host's own addresses, where an ICE agent gathers its host candidates (RFC 8445 §5.1.1.1).
public enum NetworkInterfaces {
    /// One address of an interface that is up.
    public struct Address: Hashable, Sendable, CustomStringConvertible {
        /// The interface's name, e.g. `eth0` or `lo`.
        public var interface: String
        /// The address with port 0.
        public var address: SocketAddress
        public var isLoopback: Bool
        /// IPv6 link-local (fe80::/10): usable only with a scope id, so ICE leaves them out by default.
        public var isLinkLocal: Bool

        public var description: String { "\(interface) \(address.host)" }
    }

    /// The IPv4 and IPv6 addresses of the interfaces that are up and running, in the kernel's order.
    /// Loopback addresses only with `includeLoopback` (RFC 8445 §5.1.1.1 leaves them out; tests on one
    /// machine need them), IPv6 link-local ones only with `includeLinkLocal`.
    public static func addresses(includeLoopback: Bool = false, includeLinkLocal: Bool = false) throws -> [Address] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { throw SocketError.system(operation: "getifaddrs", errno: errno) }
        defer { freeifaddrs(list) }
        var found: [Address] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            let flags = Int32(bitPattern: current.pointee.ifa_flags)
            guard let raw = current.pointee.ifa_addr, flags & Int32(IFF_UP) != 0,
                  flags & Int32(IFF_RUNNING) != 0 else { continue }
            let family = Int32(raw.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var storage = sockaddr_storage()
            let length = family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: length)) }
            var address = SocketAddress(storage: storage, length: socklen_t(length))
            address.port = 0
            let isLoopback = flags & Int32(IFF_LOOPBACK) != 0
            let isLinkLocal = address.isIPv6 && address.host.lowercased().hasPrefix("fe80:")
            guard includeLoopback || !isLoopback, includeLinkLocal || !isLinkLocal else { continue }
            found.append(Address(interface: String(cString: current.pointee.ifa_name), address: address,
                                 isLoopback: isLoopback, isLinkLocal: isLinkLocal))
        }
        return found
    }
}
