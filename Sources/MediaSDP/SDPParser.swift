/// Parsing of RFC 8866 §5 text, with the leniency real peers need:
/// - lines end in CRLF or LF; empty lines are skipped;
/// - session-level lines may come in any order after `v=`, as may a media section's lines after its
///   `m=`; lines that occur once (`o= s= i= u= c= z= k=` and a section's `i= k=`) may not repeat;
/// - a missing `t=` reads as `t=0 0` (an unbounded session, RFC 8866 §5.9): some RTSP servers omit it;
/// - fields may be separated by more than one space.
/// Unknown line types are rejected, as RFC 8866 §5 permits. Attribute values are kept verbatim and only
/// parsed when asked for (`SDPAttributeContainer.values(_:)`).
extension SessionDescription {
    public init(parsing text: String) throws(SDPError) {
        var parser = SDPParser()
        var number = 0
        // Split the bytes: a String sees CRLF as one Character, so splitting its Characters on "\n" would not.
        for bytes in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            let rawLine = Substring(bytes)
            let line = rawLine.last == "\r" ? rawLine.dropLast() : rawLine
            if line.isEmpty { continue }
            do {
                try parser.read(line, number: number)
            } catch {
                throw .malformedLine(line: number, text: String(line), reason: error.reason)
            }
        }
        self = try parser.finish()
    }
}

/// The state of a parse: what has been read so far.
private struct SDPParser {
    var version: Int?
    var origin: SDPOrigin?
    var sessionName: String?
    var session = SessionDescription(origin: SDPOrigin(sessionID: 0, sessionVersion: 0), timings: [])
    var current: MediaDescription?

    mutating func read(_ line: Substring, number: Int) throws(LineFault) {
        guard line.count >= 2, let type = line.first, type.isASCII, type.isLetter, type.isLowercase,
              line[line.index(after: line.startIndex)] == "="
        else { throw LineFault("expected <type>=<value>") }
        let value = line.dropFirst(2)
        guard version != nil else {
            guard type == "v" else { throw LineFault("the first line must be v=") }
            guard value == "0" else { throw LineFault("version must be 0") }
            version = 0
            return
        }
        if type == "m" {
            finishMedia()
            current = try Self.mediaSection(value)
        } else if type == "a" {
            let attribute = try Self.attribute(value, number: number)
            if current != nil { current!.attributes.append(attribute) } else { session.attributes.append(attribute) }
        } else if current != nil {
            try readMediaLine(type, value)
        } else {
            try readSessionLine(type, value)
        }
    }

    mutating func readSessionLine(_ type: Character, _ value: Substring) throws(LineFault) {
        switch type {
        case "v": throw LineFault("v= may appear only once")
        case "o": origin = try Self.once(origin, SDPOrigin(parsing: value), "o=")
        case "s": sessionName = try Self.once(sessionName, String(value), "s=")
        case "i": session.information = try Self.once(session.information, String(value), "i=")
        case "u": session.uri = try Self.once(session.uri, String(value), "u=")
        case "e": session.emails.append(String(value))
        case "p": session.phones.append(String(value))
        case "c": session.connection = try Self.once(session.connection, SDPConnection(parsing: value), "c=")
        case "b": session.bandwidths.append(try SDPBandwidth(parsing: value))
        case "t": session.timings.append(try SDPTiming(parsing: value))
        case "r":
            guard !session.timings.isEmpty else { throw LineFault("r= must follow a t= line") }
            session.timings[session.timings.count - 1].repeats.append(String(value))
        case "z": session.timeZones = try Self.once(session.timeZones, String(value), "z=")
        case "k": session.encryptionKey = try Self.once(session.encryptionKey, String(value), "k=")
        default: throw LineFault("unknown line type \(type)=")
        }
    }

    mutating func readMediaLine(_ type: Character, _ value: Substring) throws(LineFault) {
        switch type {
        case "i": current!.information = try Self.once(current!.information, String(value), "i=")
        case "c": current!.connections.append(try SDPConnection(parsing: value))
        case "b": current!.bandwidths.append(try SDPBandwidth(parsing: value))
        case "k": current!.encryptionKey = try Self.once(current!.encryptionKey, String(value), "k=")
        case "v", "o", "s", "u", "e", "p", "t", "r", "z": throw LineFault("\(type)= is not allowed in a media section")
        default: throw LineFault("unknown line type \(type)=")
        }
    }

    mutating func finishMedia() {
        if let current { session.media.append(current) }
        current = nil
    }

    mutating func finish() throws(SDPError) -> SessionDescription {
        finishMedia()
        guard version != nil else { throw .missingLine(type: "v") }
        guard let origin else { throw .missingLine(type: "o") }
        guard let sessionName else { throw .missingLine(type: "s") }
        session.origin = origin
        session.sessionName = sessionName
        if session.timings.isEmpty { session.timings = [SDPTiming()] }
        return session
    }

    /// A value that may be given only once.
    static func once<T>(_ existing: T?, _ new: @autoclosure () throws(LineFault) -> T, _ type: String) throws(LineFault) -> T {
        guard existing == nil else { throw LineFault("\(type) may appear only once here") }
        return try new()
    }

    static func mediaSection(_ value: Substring) throws(LineFault) -> MediaDescription {
        let parts = fields(value)
        guard parts.count >= 3 else { throw LineFault("media needs <media> <port> <proto> <fmt>...") }
        let portParts = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard portParts.count <= 2, let port = Int(portParts[0]), (0...65535).contains(port) else {
            throw LineFault("port is not a number")
        }
        var count: Int?
        if portParts.count == 2 {
            guard let value = Int(portParts[1]), value >= 1, value <= 65535 else { throw LineFault("port count is not a number") }
            count = value
        }
        return MediaDescription(type: String(parts[0]), port: port, portCount: count, proto: String(parts[2]),
                                formats: parts.dropFirst(3).map(String.init))
    }

    static func attribute(_ value: Substring, number: Int) throws(LineFault) -> SDPAttribute {
        guard let colon = value.firstIndex(of: ":") else {
            guard !value.isEmpty else { throw LineFault("attribute has no name") }
            return SDPAttribute(name: String(value), line: number)
        }
        guard colon != value.startIndex else { throw LineFault("attribute has no name") }
        return SDPAttribute(name: String(value[..<colon]), value: String(value[value.index(after: colon)...]), line: number)
    }
}
