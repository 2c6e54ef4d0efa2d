/// What is wrong with one line's value; the parser adds the line number and text.
struct LineFault: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// `o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>` (RFC 8866 §5.2).
public struct SDPOrigin: Sendable, Hashable, CustomStringConvertible {
    /// "-" when the host has no user ids.
    public var username: String
    public var sessionID: UInt64
    /// Raised by the creator with each change (RFC 3264 §8).
    public var sessionVersion: UInt64
    public var networkType: String
    public var addressType: String
    public var address: String

    public init(username: String = "-", sessionID: UInt64, sessionVersion: UInt64, networkType: String = "IN",
                addressType: String = "IP4", address: String = "127.0.0.1")
    {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }

    public var description: String {
        "\(username) \(sessionID) \(sessionVersion) \(networkType) \(addressType) \(address)"
    }

    init(parsing value: Substring) throws(LineFault) {
        let parts = fields(value)
        guard parts.count == 6 else { throw LineFault("origin needs 6 fields, has \(parts.count)") }
        guard let id = UInt64(parts[1]) else { throw LineFault("session id is not a number") }
        guard let version = UInt64(parts[2]) else { throw LineFault("session version is not a number") }
        self.init(username: String(parts[0]), sessionID: id, sessionVersion: version, networkType: String(parts[3]),
                  addressType: String(parts[4]), address: String(parts[5]))
    }
}

/// `c=<nettype> <addrtype> <connection-address>` (RFC 8866 §5.7); an IP4 multicast address may carry
/// `/ttl[/count]`, an IP6 one `/count`.
public struct SDPConnection: Sendable, Hashable, CustomStringConvertible {
    public var networkType: String
    public var addressType: String
    /// The address (or FQDN) without its `/ttl` and `/count` suffixes.
    public var address: String
    /// IP4 multicast time to live.
    public var ttl: Int?
    /// Number of consecutive multicast addresses.
    public var addressCount: Int?

    public init(networkType: String = "IN", addressType: String = "IP4", address: String, ttl: Int? = nil,
                addressCount: Int? = nil)
    {
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
        self.ttl = ttl
        self.addressCount = addressCount
    }

    public var description: String {
        "\(networkType) \(addressType) \(address)" + (ttl.map { "/\($0)" } ?? "") + (addressCount.map { "/\($0)" } ?? "")
    }

    init(parsing value: Substring) throws(LineFault) {
        let parts = fields(value)
        guard parts.count == 3 else { throw LineFault("connection needs 3 fields, has \(parts.count)") }
        let pieces = parts[2].split(separator: "/", omittingEmptySubsequences: false)
        guard !pieces[0].isEmpty, pieces.count <= (parts[1] == "IP6" ? 2 : 3) else {
            throw LineFault("connection address is malformed")
        }
        var numbers: [Int] = []
        for piece in pieces.dropFirst() {
            guard let number = Int(piece), number >= 0, number <= 65535 else {
                throw LineFault("connection address suffix is not a number")
            }
            numbers.append(number)
        }
        let isIP6 = parts[1] == "IP6"
        self.init(networkType: String(parts[0]), addressType: String(parts[1]), address: String(pieces[0]),
                  ttl: isIP6 ? nil : numbers.first, addressCount: isIP6 ? numbers.first : numbers.dropFirst().first)
    }
}

/// `b=<bwtype>:<bandwidth>` (RFC 8866 §5.8): `AS` and `CT` in kbit/s, `TIAS` (RFC 3890) in bit/s,
/// `RS`/`RR` (RFC 3556) in bit/s.
public struct SDPBandwidth: Sendable, Hashable, CustomStringConvertible {
    public var type: String
    public var value: UInt64

    public init(type: String, value: UInt64) {
        self.type = type
        self.value = value
    }

    public var description: String { "\(type):\(value)" }

    init(parsing value: Substring) throws(LineFault) {
        guard let colon = value.firstIndex(of: ":"), colon != value.startIndex else {
            throw LineFault("bandwidth needs <type>:<value>")
        }
        guard let number = UInt64(value[value.index(after: colon)...]) else { throw LineFault("bandwidth is not a number") }
        self.init(type: String(value[..<colon]), value: number)
    }
}

/// `t=<start-time> <stop-time>` (RFC 8866 §5.9) in NTP seconds, 0 0 for an unbounded session, with the
/// `r=` lines (§5.10) that follow it kept as text.
public struct SDPTiming: Sendable, Hashable, CustomStringConvertible {
    public var start: UInt64
    public var stop: UInt64
    public var repeats: [String]

    public init(start: UInt64 = 0, stop: UInt64 = 0, repeats: [String] = []) {
        self.start = start
        self.stop = stop
        self.repeats = repeats
    }

    public var description: String { "\(start) \(stop)" }

    init(parsing value: Substring) throws(LineFault) {
        let parts = fields(value)
        guard parts.count == 2 else { throw LineFault("timing needs 2 fields, has \(parts.count)") }
        guard let start = UInt64(parts[0]), let stop = UInt64(parts[1]) else { throw LineFault("time is not a number") }
        self.init(start: start, stop: stop)
    }
}
