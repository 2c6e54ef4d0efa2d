/// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<encoding parameters>]` (RFC 8866 §6.6).
public struct SDPRTPMap: SDPAttributeValue {
    public static let attributeName = "rtpmap"
    public var payloadType: UInt8
    /// E.g. "H264", "VP8", "opus", "rtx"; compare case-insensitively (RFC 4855 §3).
    public var encodingName: String
    public var clockRate: Int
    /// The encoding parameters: the channel count for audio, e.g. 2 in `opus/48000/2`.
    public var channels: Int?

    public init(payloadType: UInt8, encodingName: String, clockRate: Int, channels: Int? = nil) {
        self.payloadType = payloadType
        self.encodingName = encodingName
        self.clockRate = clockRate
        self.channels = channels
    }

    public init(attributeValue: String) throws(SDPError) {
        var scanner = SDPScanner(attributeValue)
        guard let payloadType = scanner.integer(maxDigits: 3, max: 127) else {
            throw Self.malformed(attributeValue, "payload type is not a number from 0 to 127")
        }
        guard scanner.skipSpaces() > 0 else { throw Self.malformed(attributeValue, "expected a space after the payload type") }
        let encoding = scanner.take { $0 != 0x2F && $0 != 0x20 }
        guard !encoding.isEmpty, scanner.take("/") else { throw Self.malformed(attributeValue, "expected <encoding name>/<clock rate>") }
        guard let clockRate = scanner.integer(maxDigits: 10, max: Int(UInt32.max)), clockRate > 0 else {
            throw Self.malformed(attributeValue, "clock rate is not a positive number")
        }
        var channels: Int?
        if scanner.take("/") {
            guard let value = scanner.integer(maxDigits: 3), value > 0 else {
                throw Self.malformed(attributeValue, "encoding parameters are not a channel count")
            }
            channels = value
        }
        scanner.skipSpaces()
        guard scanner.atEnd else { throw Self.malformed(attributeValue, "unexpected text after the rtpmap") }
        self.init(payloadType: UInt8(payloadType), encodingName: encoding, clockRate: clockRate, channels: channels)
    }

    public var attributeValue: String {
        "\(payloadType) \(encodingName)/\(clockRate)" + (channels.map { "/\($0)" } ?? "")
    }

    private static let staticTable: [UInt8: (String, Int, Int?)] = [
        0: ("PCMU", 8000, 1), 3: ("GSM", 8000, 1), 4: ("G723", 8000, 1), 5: ("DVI4", 8000, 1),
        6: ("DVI4", 16000, 1), 7: ("LPC", 8000, 1), 8: ("PCMA", 8000, 1), 9: ("G722", 8000, 1),
        10: ("L16", 44100, 2), 11: ("L16", 44100, 1), 12: ("QCELP", 8000, 1), 13: ("CN", 8000, 1),
        14: ("MPA", 90000, nil), 15: ("G728", 8000, 1), 16: ("DVI4", 11025, 1), 17: ("DVI4", 22050, 1),
        18: ("G729", 8000, 1), 25: ("CelB", 90000, nil), 26: ("JPEG", 90000, nil), 28: ("nv", 90000, nil),
        31: ("H261", 90000, nil), 32: ("MPV", 90000, nil), 33: ("MP2T", 90000, nil), 34: ("H263", 90000, nil),
    ]

    /// The static payload types of RFC 3551 §6 (Tables 4 and 5).
    public static func staticMapping(_ payloadType: UInt8) -> SDPRTPMap? {
        guard let (name, rate, channels) = staticTable[payloadType] else { return nil }
        return SDPRTPMap(payloadType: payloadType, encodingName: name, clockRate: rate, channels: channels)
    }
}

/// `a=fmtp:<format> <format specific parameters>` (RFC 8866 §6.15). The parameter text is kept as
/// written; `parameters` reads the usual `key=value;key=value` form.
public struct SDPFormatParameters: SDPAttributeValue {
    public static let attributeName = "fmtp"
    /// The format, a payload type for RTP.
    public var format: String
    public var parameterText: String

    public init(format: String, parameterText: String) {
        self.format = format
        self.parameterText = parameterText
    }

    /// Parameters from a dictionary, written in key order as `key=value;key=value`.
    public init(payloadType: UInt8, parameters: [String: String]) {
        self.init(format: String(payloadType), parameterText: parameters.sorted { $0.key < $1.key }
            .map { $0.value.isEmpty ? $0.key : "\($0.key)=\($0.value)" }.joined(separator: ";"))
    }

    public init(attributeValue: String) throws(SDPError) {
        guard let space = attributeValue.firstIndex(of: " "), space != attributeValue.startIndex else {
            throw Self.malformed(attributeValue, "expected <format> <parameters>")
        }
        self.init(format: String(attributeValue[..<space]),
                  parameterText: String(attributeValue[attributeValue.index(after: space)...].drop { $0 == " " }))
    }

    public var attributeValue: String { "\(format) \(parameterText)" }

    /// The format as an RTP payload type, nil when it is not one.
    public var payloadType: UInt8? { UInt8(format).flatMap { $0 < 128 ? $0 : nil } }

    /// `key=value` pairs split on `;`, with spaces around them dropped (ffmpeg writes `; `); a key
    /// without `=` maps to "". Later keys win.
    public var parameters: [String: String] {
        var result: [String: String] = [:]
        for pair in parameterText.split(separator: ";") {
            let trimmed = pair.trimmingSpaces
            guard !trimmed.isEmpty else { continue }
            if let equals = trimmed.firstIndex(of: "=") {
                result[String(trimmed[..<equals].trimmingSpaces)] = String(trimmed[trimmed.index(after: equals)...].trimmingSpaces)
            } else {
                result[String(trimmed)] = ""
            }
        }
        return result
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}

/// `a=rtcp-fb:<payload type or *> <type> [<parameters>]` (RFC 4585 §4.2), e.g. `nack pli`, `ccm fir`,
/// `goog-remb`, `transport-cc`, `trr-int 100`.
public struct SDPRTCPFeedback: SDPAttributeValue {
    public static let attributeName = "rtcp-fb"
    /// nil for `*`: every payload type of the section.
    public var payloadType: UInt8?
    /// "ack", "nack", "trr-int", "ccm", or an extension such as "transport-cc".
    public var type: String
    /// What follows the type, e.g. "pli" after "nack"; nil when nothing does.
    public var parameter: String?

    public init(payloadType: UInt8?, type: String, parameter: String? = nil) {
        self.payloadType = payloadType
        self.type = type
        self.parameter = parameter
    }

    public init(attributeValue: String) throws(SDPError) {
        var scanner = SDPScanner(attributeValue)
        let payloadType = try SDPPayloadTypeSelector.read(&scanner, attributeValue, as: Self.self)
        guard scanner.skipSpaces() > 0, let type = scanner.token() else {
            throw Self.malformed(attributeValue, "expected a feedback type")
        }
        scanner.skipSpaces()
        self.init(payloadType: payloadType, type: type, parameter: scanner.atEnd ? nil : scanner.rest)
    }

    public var attributeValue: String {
        "\(payloadType.map(String.init) ?? "*") \(type)" + (parameter.map { " \($0)" } ?? "")
    }
}

/// Reading the `<payload type> / "*"` that starts `a=rtcp-fb` and `a=imageattr`.
enum SDPPayloadTypeSelector {
    static func read<T: SDPAttributeValue>(_ scanner: inout SDPScanner, _ value: String, as: T.Type) throws(SDPError) -> UInt8? {
        if scanner.take("*") { return nil }
        guard let payloadType = scanner.integer(maxDigits: 3, max: 127) else {
            throw T.malformed(value, "payload type is not * or a number from 0 to 127")
        }
        return UInt8(payloadType)
    }
}

/// `a=rtcp:<port> [<nettype> <addrtype> <address>]` (RFC 3605 §2.1).
public struct SDPRTCPAddress: SDPAttributeValue {
    public static let attributeName = "rtcp"
    public var port: Int
    public var connection: SDPConnection?

    public init(port: Int, connection: SDPConnection? = nil) {
        self.port = port
        self.connection = connection
    }

    public init(attributeValue: String) throws(SDPError) {
        let parts = fields(Substring(attributeValue))
        guard let first = parts.first, let port = Int(first), (0...65535).contains(port) else {
            throw Self.malformed(attributeValue, "port is not a number")
        }
        var connection: SDPConnection?
        if parts.count > 1 {
            guard parts.count == 4 else { throw Self.malformed(attributeValue, "expected <port> <nettype> <addrtype> <address>") }
            connection = SDPConnection(networkType: String(parts[1]), addressType: String(parts[2]), address: String(parts[3]))
        }
        self.init(port: port, connection: connection)
    }

    public var attributeValue: String { "\(port)" + (connection.map { " \($0)" } ?? "") }
}

/// `a=extmap:<id>[/<direction>] <URI> [<extension attributes>]` (RFC 8285 §5).
public struct SDPExtensionMap: SDPAttributeValue {
    public static let attributeName = "extmap"
    /// 1-14 for one-byte headers, 1-255 for two-byte ones, 4096-4351 in offers (RFC 8285 §5).
    public var id: Int
    public var direction: SDPDirection?
    /// E.g. `urn:ietf:params:rtp-hdrext:sdes:mid`.
    public var uri: String
    public var extensionAttributes: String?

    public init(id: Int, direction: SDPDirection? = nil, uri: String, extensionAttributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.extensionAttributes = extensionAttributes
    }

    public init(attributeValue: String) throws(SDPError) {
        var scanner = SDPScanner(attributeValue)
        guard let id = scanner.integer(maxDigits: 4), (1...255).contains(id) || (4096...4351).contains(id) else {
            throw Self.malformed(attributeValue, "id is not a number from 1 to 255 or 4096 to 4351")
        }
        var direction: SDPDirection?
        if scanner.take("/") {
            guard let value = SDPDirection(rawValue: scanner.take { $0 != 0x20 }) else {
                throw Self.malformed(attributeValue, "direction is not sendrecv, sendonly, recvonly or inactive")
            }
            direction = value
        }
        guard scanner.skipSpaces() > 0, let uri = scanner.token() else { throw Self.malformed(attributeValue, "expected a URI") }
        scanner.skipSpaces()
        self.init(id: id, direction: direction, uri: uri, extensionAttributes: scanner.atEnd ? nil : scanner.rest)
    }

    public var attributeValue: String {
        "\(id)" + (direction.map { "/\($0.rawValue)" } ?? "") + " \(uri)" + (extensionAttributes.map { " \($0)" } ?? "")
    }
}
