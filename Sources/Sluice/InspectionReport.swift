import MediaCore

/// A JSON value whose objects keep their keys in the order given, so output is stable.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.text() == b.text() }

    /// The value as JSON text, indented two spaces per level when `pretty`.
    public func text(pretty: Bool = true, level: Int = 0) -> String {
        let pad = pretty ? String(repeating: "  ", count: level + 1) : ""
        let close = pretty ? String(repeating: "  ", count: level) : ""
        let newline = pretty ? "\n" : ""
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .number(let value): return value.isFinite ? String(value) : "null"
        case .string(let value): return Self.quoted(value)
        case .array(let items):
            if items.isEmpty { return "[]" }
            let body = items.map { pad + $0.text(pretty: pretty, level: level + 1) }.joined(separator: "," + newline)
            return "[" + newline + body + newline + close + "]"
        case .object(let fields):
            if fields.isEmpty { return "{}" }
            let separator = pretty ? ": " : ":"
            let body = fields.map { pad + Self.quoted($0.0) + separator + $0.1.text(pretty: pretty, level: level + 1) }
                .joined(separator: "," + newline)
            return "{" + newline + body + newline + close + "}"
        }
    }

    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension Optional where Wrapped == Int {
    var json: JSONValue { map { .int($0) } ?? .null }
}

/// Seconds rounded to microseconds, as ffprobe prints them.
private func rounded(_ seconds: Double?) -> JSONValue {
    seconds.map { .number(($0 * 1e6).rounded() / 1e6) } ?? .null
}

private func fixed(_ value: Double, _ digits: Int) -> String {
    let scale = (0..<digits).reduce(1.0) { value, _ in value * 10 }
    let whole = (value * scale).rounded()
    let sign = whole < 0 ? "-" : ""
    let magnitude = Int(abs(whole))
    guard digits > 0 else { return sign + String(magnitude) }
    let fraction = String(magnitude % Int(scale))
    return sign + String(magnitude / Int(scale)) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
}

extension MediaInspector.Result {
    /// The inspection as JSON with stable keys: `path`, `type` ("media" or "sdp"), then per type:
    /// media `format size duration bitrate streams error`, each stream `index kind codec width height
    /// frame_rate sample_rate channels duration frames keyframes payload_bytes bitrate notes`; SDP
    /// `session media`, each section `type port proto mid direction crypto fingerprint codecs answer`,
    /// each codec `payload_type name clock_rate channels fmtp accepted refusal`, the answer (what
    /// Sluice would answer to the section) `accepted chosen direction rejection`.
    public var json: JSONValue {
        switch self {
        case .media(let media):
            return .object([
                ("path", .string(media.path)), ("type", .string("media")), ("format", .string(media.format)),
                ("size", .int(media.fileSize)), ("duration", rounded(media.duration)), ("bitrate", media.bitrate.json),
                ("streams", .array(media.streams.map { stream in
                    .object([
                        ("index", .int(stream.index)), ("kind", .string(stream.kind)), ("codec", .string(stream.codec)),
                        ("width", stream.width.json), ("height", stream.height.json),
                        ("frame_rate", stream.frameRate.map { .string($0.description) } ?? .null),
                        ("sample_rate", stream.sampleRate.json), ("channels", stream.channels.json),
                        ("duration", rounded(stream.duration)), ("frames", .int(stream.frames)),
                        ("keyframes", .int(stream.keyframes)), ("payload_bytes", .int(stream.payloadBytes)),
                        ("bitrate", stream.bitrate.json), ("notes", .array(stream.notes.map { .string($0) })),
                    ])
                })),
                ("error", media.error.map { .string($0) } ?? .null),
            ])
        case .sdp(let sdp):
            return .object([
                ("path", .string(sdp.path)), ("type", .string("sdp")), ("session", .string(sdp.sessionName)),
                ("media", .array(sdp.media.map { section in
                    .object([
                        ("type", .string(section.type)), ("port", .int(section.port)), ("proto", .string(section.proto)),
                        ("mid", section.mid.map { .string($0) } ?? .null), ("direction", .string(section.direction)),
                        ("crypto", .bool(section.crypto)), ("fingerprint", .bool(section.fingerprint)),
                        ("codecs", .array(section.codecs.map { codec in
                            .object([
                                ("payload_type", .int(codec.payloadType)), ("name", .string(codec.name)),
                                ("clock_rate", codec.clockRate.json), ("channels", codec.channels.json),
                                ("fmtp", codec.parameters.map { .string($0) } ?? .null),
                                ("accepted", .bool(codec.accepted)), ("refusal", codec.refusal.map { .string($0) } ?? .null),
                            ])
                        })),
                        ("answer", .object([
                            ("accepted", .array(section.answer.accepted.map { .int($0) })),
                            ("chosen", section.answer.chosen.json),
                            ("direction", section.answer.direction.map { .string($0) } ?? .null),
                            ("rejection", section.answer.rejection.map { .string($0) } ?? .null),
                        ])),
                    ])
                })),
            ])
        }
    }

    /// The inspection as lines for a person (without `error`, which a caller reports on its own).
    public var text: String {
        switch self {
        case .media(let media):
            var lines = ["\(media.path): \(media.format), \(media.fileSize) bytes"
                         + (media.duration.map { ", \(fixed($0, 3)) s" } ?? "")
                         + (media.bitrate.map { ", \(fixed(Double($0) / 1000, 1)) kbit/s" } ?? "")]
            for stream in media.streams {
                var parts = ["stream \(stream.index): \(stream.kind) \(stream.codec)"]
                if let width = stream.width, let height = stream.height { parts.append("\(width)x\(height)") }
                if let rate = stream.frameRate { parts.append("\(rate) fps") }
                if let rate = stream.sampleRate { parts.append("\(rate) Hz") }
                if let channels = stream.channels { parts.append("\(channels) ch") }
                lines.append("  " + parts.joined(separator: ", "))
                var counts = ["\(stream.frames) frames", "\(stream.keyframes) keyframes"]
                if let duration = stream.duration { counts.append("\(fixed(duration, 3)) s") }
                if let bitrate = stream.bitrate { counts.append("\(fixed(Double(bitrate) / 1000, 1)) kbit/s") }
                lines.append("    " + counts.joined(separator: ", "))
                if !stream.notes.isEmpty { lines.append("    " + stream.notes.joined(separator: "; ")) }
            }
            return lines.joined(separator: "\n")
        case .sdp(let sdp):
            var lines = ["\(sdp.path): SDP session '\(sdp.sessionName)', \(sdp.media.count) media sections"]
            for (number, section) in sdp.media.enumerated() {
                var security: [String] = []
                if section.crypto { security.append("crypto (SDES)") }
                if section.fingerprint { security.append("fingerprint (DTLS)") }
                lines.append("  \(number): \(section.type) port \(section.port) \(section.proto)"
                             + (section.mid.map { ", mid \($0)" } ?? "") + ", \(section.direction)"
                             + (security.isEmpty ? "" : ", " + security.joined(separator: ", ")))
                for codec in section.codecs {
                    var name = "    \(codec.payloadType) \(codec.name)"
                    if let rate = codec.clockRate { name += "/\(rate)" + (codec.channels.map { "/\($0)" } ?? "") }
                    if let fmtp = codec.parameters { name += "  \(fmtp)" }
                    if codec.accepted {
                        name += codec.payloadType == section.answer.chosen ? "  [taken, chosen]" : "  [taken]"
                    } else if let refusal = codec.refusal {
                        name += "  [refused: \(refusal)]"
                    }
                    lines.append(name)
                }
                if let rejection = section.answer.rejection {
                    lines.append("    sluice would refuse the section: \(rejection)")
                } else if let chosen = section.answer.chosen, let codec = section.codecs.first(where: { $0.payloadType == chosen }) {
                    lines.append("    sluice would answer \(section.answer.direction ?? "?") with \(codec.name) (\(chosen))"
                                 + (section.answer.accepted.count > 1 ? ", also " + section.answer.accepted.dropFirst().map(String.init).joined(separator: " ") : ""))
                } else {
                    lines.append("    sluice would answer \(section.answer.direction ?? "?") (\(section.type == "application" ? "data channels" : "no codecs"))")
                }
            }
            return lines.joined(separator: "\n")
        }
    }

    /// The error that stopped reading a damaged file, if any.
    public var error: String? {
        if case .media(let media) = self { media.error } else { nil }
    }
}
