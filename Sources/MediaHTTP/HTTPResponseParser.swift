/// Why an HTTP/1.1 response could not be read (RFC 9112); each case names what is wrong.
public enum HTTPResponseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not `HTTP/1.x NNN [reason]` (RFC 9112 §4).
    case badStatusLine(String)
    /// A status, header or trailer line longer than the limit, in bytes.
    case headerTooLong(limit: Int)
    /// More header and trailer lines than the limit.
    case tooManyHeaders(limit: Int)
    /// A field line that is not `name: value` (RFC 9112 §5).
    case badHeaderLine(String)
    /// A Content-Length that is not one decimal number (RFC 9112 §6.3, RFC 9110 §8.6).
    case badContentLength(String)
    /// A chunk-size line that is not hexadecimal, or a chunk not followed by CRLF (RFC 9112 §7.1).
    case badChunkSize(String)
    /// A body longer than the limit, in bytes.
    case bodyTooLarge(limit: Int)
    /// The connection closed before the response's end; names the part being read.
    case truncated(String)

    public var description: String {
        switch self {
        case .badStatusLine(let line): "bad status line '\(line.prefix(80))'"
        case .headerTooLong(let limit): "a header line longer than \(limit) bytes"
        case .tooManyHeaders(let limit): "more than \(limit) header lines"
        case .badHeaderLine(let line): "bad header line '\(line.prefix(80))'"
        case .badContentLength(let value): "bad Content-Length '\(value.prefix(80))'"
        case .badChunkSize(let line): "bad chunk size '\(line.prefix(80))'"
        case .bodyTooLarge(let limit): "a body longer than \(limit) bytes"
        case .truncated(let part): "the connection closed in the \(part)"
        }
    }
}

/// A final (non-1xx) HTTP response.
public struct HTTPResponse: Equatable, Sendable {
    public var status: Int
    /// Field values by lower-case name; a repeated field's values joined with ", " (RFC 9110 §5.3).
    public var headers: [String: String]
    public var body: [UInt8]
}

/// Reads one HTTP/1.1 response from bytes as they arrive, without I/O: `feed` what the connection
/// gives until it returns the response, and call `finish` when the connection closes first. What it
/// keeps is bounded by `Limits`, whatever the server sends.
public struct HTTPResponseParser: Sendable {
    public struct Limits: Sendable {
        /// The longest status, header, trailer or chunk-size line, CRLF included.
        public var lineBytes: Int
        /// The most header lines of a response, trailer lines included.
        public var headerCount: Int
        /// The longest body, after chunked decoding.
        public var bodyBytes: Int

        public init(lineBytes: Int = 8_192, headerCount: Int = 100, bodyBytes: Int = 1 << 20) {
            self.lineBytes = lineBytes
            self.headerCount = headerCount
            self.bodyBytes = bodyBytes
        }
    }

    private enum Stage: Sendable {
        case statusLine, headers
        /// A body of known length (RFC 9112 §6.3 rule 6): the bytes still to come.
        case sizedBody(remaining: Int)
        /// A body delimited by the connection's close (RFC 9112 §6.3 rule 8).
        case bodyUntilClose
        case chunkSize
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data.
        case chunkEnd
        case trailers
        case complete
    }

    public let limits: Limits
    private var stage = Stage.statusLine
    /// Received bytes not yet consumed: at most one line, or what one `feed` brought.
    private var pending: [UInt8] = []
    /// How far `pending` has been searched for a line feed.
    private var searched = 0
    private var status = 0
    private var headers: [String: String] = [:]
    private var lastHeaderName: String?
    private var headerLines = 0
    private var body: [UInt8] = []

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// The response of `bytes`, a whole exchange up to the connection's close.
    public static func parse(_ bytes: some Collection<UInt8>, limits: Limits = Limits()) throws(HTTPResponseError) -> HTTPResponse {
        var parser = HTTPResponseParser(limits: limits)
        if let response = try parser.feed(bytes) { return response }
        return try parser.finish()
    }

    /// Takes the next bytes from the connection; the response once it is complete (bytes after it
    /// are ignored), nil while more are needed.
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(HTTPResponseError) -> HTTPResponse? {
        if case .complete = stage { return response }
        pending.append(contentsOf: bytes)
        var position = 0
        defer {
            pending.removeFirst(position)
            searched = max(0, searched - position)
        }
        while position < pending.count {
            switch stage {
            case .statusLine, .headers, .chunkSize, .chunkEnd, .trailers:
                guard let line = try nextLine(from: &position) else { return nil }
                try take(line)
            case .sizedBody(let remaining):
                let left = takeBodyBytes(remaining, from: &position)
                stage = left == 0 ? .complete : .sizedBody(remaining: left)
            case .bodyUntilClose:
                try appendToBody(pending[position...])
                position = pending.count
            case .chunkData(let remaining):
                let left = takeBodyBytes(remaining, from: &position)
                stage = left == 0 ? .chunkEnd : .chunkData(remaining: left)
            case .complete:
                position = pending.count
            }
            if case .complete = stage { return response }
        }
        if case .complete = stage { return response }
        return nil
    }

    /// The connection has closed: the response if its end is the close (RFC 9112 §6.3 rule 8),
    /// otherwise `truncated` naming what was being read.
    public mutating func finish() throws(HTTPResponseError) -> HTTPResponse {
        switch stage {
        case .complete, .bodyUntilClose:
            stage = .complete
            return response
        case .statusLine: throw .truncated("status line")
        case .headers: throw .truncated("headers")
        case .sizedBody: throw .truncated("body")
        case .chunkSize, .chunkData, .chunkEnd, .trailers: throw .truncated("chunked body")
        }
    }

    private var response: HTTPResponse { HTTPResponse(status: status, headers: headers, body: body) }

    /// The next line of `pending` from `position` without its CRLF (or bare LF, RFC 9112 §2.2), moving
    /// `position` past it; nil when its end has not arrived.
    private mutating func nextLine(from position: inout Int) throws(HTTPResponseError) -> ArraySlice<UInt8>? {
        let start = max(position, searched)
        guard let lineFeed = pending[start...].firstIndex(of: 10) else {
            searched = pending.count
            if pending.count - position > limits.lineBytes { throw lineTooLong(pending[position...]) }
            return nil
        }
        if lineFeed + 1 - position > limits.lineBytes { throw lineTooLong(pending[position..<lineFeed]) }
        var end = lineFeed
        if end > position, pending[end - 1] == 13 { end -= 1 }
        let line = pending[position..<end]
        position = lineFeed + 1
        searched = position
        return line
    }

    private func lineTooLong(_ start: ArraySlice<UInt8>) -> HTTPResponseError {
        switch stage {
        case .chunkSize, .chunkEnd: .badChunkSize(text(start.prefix(32)) + "... (over \(limits.lineBytes) bytes)")
        default: .headerTooLong(limit: limits.lineBytes)
        }
    }

    private mutating func take(_ line: ArraySlice<UInt8>) throws(HTTPResponseError) {
        switch stage {
        case .statusLine:
            // RFC 9112 §2.2: empty lines before the status line are ignored.
            guard !line.isEmpty else { return }
            status = try Self.statusCode(of: line)
            stage = .headers
        case .headers:
            if line.isEmpty { try startBody() } else { try addHeader(line) }
        case .chunkSize:
            let size = try Self.chunkSize(of: line)
            if size == 0 {
                stage = .trailers
            } else {
                guard size <= limits.bodyBytes - body.count else { throw .bodyTooLarge(limit: limits.bodyBytes) }
                stage = .chunkData(remaining: size)
            }
        case .chunkEnd:
            guard line.isEmpty else { throw .badChunkSize("data past the chunk's size: '\(text(line))'") }
            stage = .chunkSize
        case .trailers:
            // RFC 9112 §7.1.2: trailer fields are counted against the limit, then dropped.
            if line.isEmpty { stage = .complete } else { try countHeaderLine() }
        case .sizedBody, .bodyUntilClose, .chunkData, .complete:
            preconditionFailure("a line taken while reading a body")
        }
    }

    /// `HTTP/1.x NNN [reason]` (RFC 9112 §4), NNN from 100 to 599 (RFC 9110 §15: others are invalid);
    /// the reason phrase is not kept.
    private static func statusCode(of line: ArraySlice<UInt8>) throws(HTTPResponseError) -> Int {
        let bytes = Array(line)
        let version = Array("HTTP/1.".utf8)
        guard bytes.count >= 12, bytes.starts(with: version), isDigit(bytes[7]), bytes[8] == 32,
              bytes[9...11].allSatisfy(isDigit), bytes.count == 12 || bytes[12] == 32 else {
            throw .badStatusLine(text(line))
        }
        let code = bytes[9...11].reduce(0) { $0 * 10 + Int($1 - 48) }
        guard (100...599).contains(code) else { throw .badStatusLine(text(line)) }
        return code
    }

    private mutating func countHeaderLine() throws(HTTPResponseError) {
        headerLines += 1
        guard headerLines <= limits.headerCount else { throw .tooManyHeaders(limit: limits.headerCount) }
    }

    /// `name: value` (RFC 9112 §5), or a continuation of the last value (obs-fold, §5.2: joined
    /// with a space).
    private mutating func addHeader(_ line: ArraySlice<UInt8>) throws(HTTPResponseError) {
        try countHeaderLine()
        guard !line.contains(where: { $0 == 0 || $0 == 13 }) else { throw .badHeaderLine(text(line)) }
        if Self.isSpace(line.first!) {
            guard let name = lastHeaderName else { throw .badHeaderLine(text(line)) }
            headers[name, default: ""] += " " + Self.trimmed(line)
            return
        }
        guard let colon = line.firstIndex(of: 58), colon > line.startIndex,
              !line[..<colon].contains(where: { $0 <= 32 || $0 >= 127 }) else {
            throw .badHeaderLine(text(line))
        }
        let name = text(line[..<colon]).lowercased()
        let value = Self.trimmed(line[(colon + 1)...])
        headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        lastHeaderName = name
    }

    /// After the headers: how the body is delimited (RFC 9112 §6.3).
    private mutating func startBody() throws(HTTPResponseError) {
        if (100...199).contains(status) {
            // RFC 9110 §15.2: interim responses come before the final one and are skipped.
            headers = [:]
            lastHeaderName = nil
            headerLines = 0
            stage = .statusLine
        } else if status == 204 || status == 304 {
            stage = .complete
        } else if let codings = headers["transfer-encoding"] {
            let last = codings.split(separator: ",").last.map { $0.trimmingSpaces().lowercased() }
            stage = last == "chunked" ? .chunkSize : .bodyUntilClose
        } else if let value = headers["content-length"] {
            let length = try contentLength(value)
            guard length <= limits.bodyBytes else { throw .bodyTooLarge(limit: limits.bodyBytes) }
            stage = length == 0 ? .complete : .sizedBody(remaining: length)
        } else {
            stage = .bodyUntilClose
        }
    }

    /// One decimal number, or a list of the same number (RFC 9110 §8.6).
    private func contentLength(_ value: String) throws(HTTPResponseError) -> Int {
        let numbers = Set(value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces() })
        guard numbers.count == 1, let number = numbers.first, !number.isEmpty, number.utf8.count <= 18,
              number.utf8.allSatisfy(Self.isDigit), let length = Int(number) else {
            throw .badContentLength(value)
        }
        return length
    }

    /// `chunk-size [; chunk-ext]` (RFC 9112 §7.1): hexadecimal, the extensions ignored.
    private static func chunkSize(of line: ArraySlice<UInt8>) throws(HTTPResponseError) -> Int {
        let digits = line.prefix { $0 != 59 }.drop { isSpace($0) }.reversed().drop { isSpace($0) }.reversed()
        guard !digits.isEmpty, digits.count <= 15, let size = Int(text(digits), radix: 16), size >= 0,
              digits.allSatisfy({ isDigit($0) || (65...70).contains($0) || (97...102).contains($0) }) else {
            throw .badChunkSize(text(line))
        }
        return size
    }

    /// Moves up to `remaining` bytes of `pending` from `position` into the body (the limit was checked
    /// when their length was read); how many are still to come.
    private mutating func takeBodyBytes(_ remaining: Int, from position: inout Int) -> Int {
        let count = min(remaining, pending.count - position)
        body += pending[position..<position + count]
        position += count
        return remaining - count
    }

    private mutating func appendToBody(_ bytes: ArraySlice<UInt8>) throws(HTTPResponseError) {
        guard bytes.count <= limits.bodyBytes - body.count else { throw .bodyTooLarge(limit: limits.bodyBytes) }
        body += bytes
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (48...57).contains(byte) }
    private static func isSpace(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        text(bytes.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}

private func text(_ bytes: some Collection<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }

private extension Substring {
    func trimmingSpaces() -> String { String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()) }
}
