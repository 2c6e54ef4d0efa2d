/// `a=group:<semantics> <mid>...` (RFC 5888 §5), e.g. `BUNDLE 0 1` (RFC 9143) or `LS 1 2`.
public struct SDPGroup: SDPAttributeValue {
    public static let attributeName = "group"
    public var semantics: String
    /// The `a=mid` tags of the grouped sections, in order.
    public var mids: [String]

    public init(semantics: String, mids: [String]) {
        self.semantics = semantics
        self.mids = mids
    }

    public init(attributeValue: String) throws(SDPError) {
        let parts = fields(Substring(attributeValue))
        guard let semantics = parts.first else { throw Self.malformed(attributeValue, "expected a semantics") }
        self.init(semantics: String(semantics), mids: parts.dropFirst().map(String.init))
    }

    public var attributeValue: String { ([semantics] + mids).joined(separator: " ") }
}

/// `a=ssrc:<ssrc-id> <attribute>[:<value>]` (RFC 5576 §4.1), e.g. `cname:x` or `msid:stream track`.
public struct SDPSourceAttribute: SDPAttributeValue {
    public static let attributeName = "ssrc"
    public var ssrc: UInt32
    /// The source attribute's name, e.g. "cname" (RFC 5576 §6). Not `attribute`: that is the whole line.
    public var name: String
    /// The text after the attribute's colon; nil when it has none.
    public var value: String?

    public init(ssrc: UInt32, name: String, value: String? = nil) {
        self.ssrc = ssrc
        self.name = name
        self.value = value
    }

    public init(attributeValue: String) throws(SDPError) {
        var scanner = SDPScanner(attributeValue)
        guard let ssrc = scanner.integer(maxDigits: 10, max: Int(UInt32.max)) else {
            throw Self.malformed(attributeValue, "ssrc is not a 32-bit number")
        }
        guard scanner.skipSpaces() > 0 else { throw Self.malformed(attributeValue, "expected an attribute after the ssrc") }
        let name = scanner.take { $0 != 0x3A }
        guard !name.isEmpty else { throw Self.malformed(attributeValue, "expected an attribute after the ssrc") }
        self.init(ssrc: UInt32(ssrc), name: name, value: scanner.take(":") ? scanner.rest : nil)
    }

    public var attributeValue: String { "\(ssrc) \(name)" + (value.map { ":\($0)" } ?? "") }
}

/// `a=ssrc-group:<semantics> <ssrc-id>...` (RFC 5576 §4.2): `FID` pairs a stream with its
/// retransmission stream (RFC 4588 §8.3), `SIM` lists simulcast layers.
public struct SDPSourceGroup: SDPAttributeValue {
    public static let attributeName = "ssrc-group"
    public var semantics: String
    public var ssrcs: [UInt32]

    public init(semantics: String, ssrcs: [UInt32]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }

    public init(attributeValue: String) throws(SDPError) {
        let parts = fields(Substring(attributeValue))
        guard let semantics = parts.first else { throw Self.malformed(attributeValue, "expected a semantics") }
        var ssrcs: [UInt32] = []
        for part in parts.dropFirst() {
            guard let ssrc = UInt32(part) else { throw Self.malformed(attributeValue, "ssrc \(part) is not a 32-bit number") }
            ssrcs.append(ssrc)
        }
        self.init(semantics: String(semantics), ssrcs: ssrcs)
    }

    public var attributeValue: String { ([semantics] + ssrcs.map(String.init)).joined(separator: " ") }
}

/// An attribute whose value is one positive decimal number.
public protocol SDPDecimalAttribute: SDPAttributeValue {
    var value: Double { get }
    init(_ value: Double)
}

extension SDPDecimalAttribute {
    public init(attributeValue: String) throws(SDPError) {
        var scanner = SDPScanner(attributeValue.trimmingSpacesString)
        guard let value = scanner.decimal(), scanner.atEnd, value > 0 else {
            throw Self.malformed(attributeValue, "not a positive number")
        }
        self.init(value)
    }

    public var attributeValue: String { decimalText(value) }
}

/// `a=ptime:<packet time>` in milliseconds (RFC 8866 §6.4).
public struct SDPPacketTime: SDPDecimalAttribute {
    public static let attributeName = "ptime"
    public var value: Double
    public init(_ value: Double) { self.value = value }
}

/// `a=maxptime:<maximum packet time>` in milliseconds (RFC 8866 §6.5).
public struct SDPMaximumPacketTime: SDPDecimalAttribute {
    public static let attributeName = "maxptime"
    public var value: Double
    public init(_ value: Double) { self.value = value }
}

/// `a=framerate:<frame rate>`, the maximum video frame rate in frames per second (RFC 8866 §6.10).
public struct SDPFrameRate: SDPDecimalAttribute {
    public static let attributeName = "framerate"
    public var value: Double
    public init(_ value: Double) { self.value = value }
}

extension String {
    var trimmingSpacesString: String { String(self[...].trimmingSpaces) }
}
