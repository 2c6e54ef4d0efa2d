/// APP (RFC 3550 §6.7): application-defined RTCP, named by four ASCII characters, with a 5-bit
/// subtype and opaque data in whole 32-bit words.
///
/// ```
/// V=2|P| subtype | PT=204 | length
/// SSRC/CSRC (32) | name, 4 ASCII characters (32) | application-dependent data ...
/// ```

public struct ApplicationDefined: RTCPSerializable, Hashable {
    /// The four-character name, stored as its 32 bits in network order.
    public struct Name: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        public var rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Four ASCII characters, e.g. "NAME"; nil for anything else.
        public init?(ascii text: String) {
            let bytes = Array(text.utf8)
            guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            rawValue = bytes.reduce(0) { $0 << 8 | UInt32($1) }
        }

        /// A literal must be four ASCII characters.
        public init(stringLiteral value: String) {
            guard let name = Name(ascii: value) else { preconditionFailure("an APP name is 4 ASCII characters: \(value)") }
            self = name
        }

        public var description: String {
            String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * $0)) }, as: UTF8.self)
        }
    }

    /// The 5-bit subtype (0-31).
    public var subtype: UInt8
    /// "SSRC/CSRC".
    public var ssrc: UInt32
    public var name: Name
    /// "application-dependent data", whole 32-bit words.
    public var data: [UInt8]

    public init(subtype: UInt8 = 0, ssrc: UInt32, name: Name, data: [UInt8] = []) {
        self.subtype = subtype
        self.ssrc = ssrc
        self.name = name
        self.data = data
    }

    init(body: UnsafeRawBufferPointer, header: RTCPHeader) throws(RTCPError) {
        guard body.count >= 8 else { throw .applicationLengthInvalid }
        self.init(subtype: header.count, ssrc: body.networkUInt32(at: 0), name: Name(rawValue: body.networkUInt32(at: 4)),
                  data: body.copyBytes(8..<body.count))
    }

    public var marshalSize: Int { RTCPHeader.size + 8 + data.count }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try writeRTCPPacket(into: buffer, type: .applicationDefined, count: Int(subtype),
                            bodyLength: marshalSize - RTCPHeader.size) { body in
            body.storeNetwork(ssrc, at: 0)
            body.storeNetwork(name.rawValue, at: 4)
            _ = body.copy(contentsOf: data, to: 8)
        }
    }
}
