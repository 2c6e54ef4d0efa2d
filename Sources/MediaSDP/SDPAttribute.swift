/// One `a=` line (RFC 8866 §5.13): `a=<name>` (a property flag) or `a=<name>:<value>`. The value is kept
/// verbatim, so attributes Sluice does not know survive a round trip unchanged.
public struct SDPAttribute: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    /// The text after the first colon; nil for a flag such as `a=rtcp-mux`.
    public var value: String?
    /// The 1-based line it was parsed from, for errors; nil when made in code. Not part of equality.
    public var line: Int?

    public init(name: String, value: String? = nil, line: Int? = nil) {
        self.name = name
        self.value = value
        self.line = line
    }

    /// The line without its ending: `a=name` or `a=name:value`.
    public var description: String { value.map { "a=\(name):\($0)" } ?? "a=\(name)" }

    public static func == (lhs: SDPAttribute, rhs: SDPAttribute) -> Bool {
        lhs.name == rhs.name && lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(value)
    }
}

/// An attribute with a typed value: parsed from, and written back to, the text after `a=<name>:`.
public protocol SDPAttributeValue: Sendable, Hashable {
    /// The attribute's name, e.g. "rtpmap".
    static var attributeName: String { get }
    /// Parses the value text; throws `SDPError.malformedAttribute` (with no line) naming what is wrong.
    init(attributeValue: String) throws(SDPError)
    /// The value text written after `a=<name>:`.
    var attributeValue: String { get }
}

extension SDPAttributeValue {
    /// The attribute line for this value.
    public var attribute: SDPAttribute { SDPAttribute(name: Self.attributeName, value: attributeValue) }

    /// The error for a value of this attribute that does not parse.
    static func malformed(_ value: String, _ reason: String) -> SDPError {
        .malformedAttribute(line: nil, text: "a=\(attributeName):\(value)", reason: reason)
    }
}

/// The media direction flags (RFC 8866 §6.7, RFC 3264 §5.1). Absent everywhere, a stream is sendrecv.
public enum SDPDirection: String, Sendable, Hashable, CaseIterable {
    case sendrecv, sendonly, recvonly, inactive

    /// The direction as the other side sees it (RFC 3264 §6.1: an answer to sendonly is recvonly).
    public var reversed: SDPDirection {
        switch self {
        case .sendonly: .recvonly
        case .recvonly: .sendonly
        case .sendrecv, .inactive: self
        }
    }
}

/// What holds an ordered attribute list: a session or a media section (RFC 8866 §5.13).
public protocol SDPAttributeContainer {
    var attributes: [SDPAttribute] { get set }
}

extension SDPAttributeContainer {
    /// The attributes called `name`, in order.
    public func attributes(named name: String) -> [SDPAttribute] { attributes.filter { $0.name == name } }

    /// Whether a property attribute such as `a=rtcp-mux` is present.
    public func hasAttribute(_ name: String) -> Bool { attributes.contains { $0.name == name } }

    /// The value of the first attribute called `name` (nil if absent or a flag).
    public func attributeValue(_ name: String) -> String? { attributes.first { $0.name == name }?.value }

    /// Every attribute of type `T`, parsed; a malformed one throws naming its line.
    public func values<T: SDPAttributeValue>(_ type: T.Type) throws(SDPError) -> [T] {
        var result: [T] = []
        for attribute in attributes where attribute.name == T.attributeName {
            result.append(try Self.parse(attribute, as: T.self))
        }
        return result
    }

    /// The first attribute of type `T`, parsed; nil when there is none.
    public func value<T: SDPAttributeValue>(_ type: T.Type) throws(SDPError) -> T? {
        guard let attribute = attributes.first(where: { $0.name == T.attributeName }) else { return nil }
        return try Self.parse(attribute, as: T.self)
    }

    /// The first parsed attribute of type `T` that `matches`; malformed ones before it throw.
    func firstValue<T: SDPAttributeValue>(_ type: T.Type, where matches: (T) -> Bool) throws(SDPError) -> T? {
        for attribute in attributes where attribute.name == T.attributeName {
            let value = try Self.parse(attribute, as: T.self)
            if matches(value) { return value }
        }
        return nil
    }

    private static func parse<T: SDPAttributeValue>(_ attribute: SDPAttribute, as type: T.Type) throws(SDPError) -> T {
        do {
            return try T(attributeValue: attribute.value ?? "")
        } catch {
            guard case .malformedAttribute(_, _, let reason) = error else { throw error }
            throw .malformedAttribute(line: attribute.line, text: attribute.description, reason: reason)
        }
    }

    /// Appends a typed attribute at the end.
    public mutating func append(_ value: some SDPAttributeValue) { attributes.append(value.attribute) }

    /// Appends a flag (`a=name`) or `a=name:value` at the end.
    public mutating func appendAttribute(_ name: String, value: String? = nil) {
        attributes.append(SDPAttribute(name: name, value: value))
    }

    /// The last direction flag present (RFC 8866 §6.7), nil when there is none.
    public var explicitDirection: SDPDirection? {
        attributes.last { $0.value == nil && SDPDirection(rawValue: $0.name) != nil }.flatMap { SDPDirection(rawValue: $0.name) }
    }

    /// Replaces any direction flags with `direction`, at the end (RFC 3264 §5.1, §6.1).
    public mutating func setDirection(_ direction: SDPDirection) {
        attributes.removeAll { $0.value == nil && SDPDirection(rawValue: $0.name) != nil }
        attributes.append(SDPAttribute(name: direction.rawValue))
    }

    /// The `a=mid` identification tag (RFC 5888 §4).
    public var mid: String? { attributeValue("mid") }

    /// The `a=extmap` header extension mappings (RFC 8285 §5), at session or media level.
    public func extensionMaps() throws(SDPError) -> [SDPExtensionMap] { try values(SDPExtensionMap.self) }
}
