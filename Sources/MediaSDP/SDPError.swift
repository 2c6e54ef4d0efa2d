/// Why text is not a session description (RFC 8866 §5), or an attribute value not its typed form.
public enum SDPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Line `line` (1-based, its `text` without the line ending) is not what RFC 8866 §5 allows there.
    case malformedLine(line: Int, text: String, reason: String)
    /// A line that RFC 8866 §5 requires is absent; `type` is its letter, e.g. "o".
    case missingLine(type: String)
    /// An attribute does not parse as its typed form. `text` is the whole `a=` line; `line` is where it
    /// was parsed from, nil for an attribute made in code.
    case malformedAttribute(line: Int?, text: String, reason: String)

    public var description: String {
        switch self {
        case .malformedLine(let line, let text, let reason): "SDP line \(line) \"\(text)\": \(reason)"
        case .missingLine(let type): "SDP has no \(type)= line"
        case .malformedAttribute(let line, let text, let reason):
            "SDP \(line.map { "line \($0) " } ?? "")attribute \"\(text)\": \(reason)"
        }
    }
}
