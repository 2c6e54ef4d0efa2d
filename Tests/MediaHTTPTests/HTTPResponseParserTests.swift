import MediaHTTP
import Testing

/// The WHIP/WHEP client's response reader: RFC 9112 framing (Content-Length, chunked, to the close),
/// responses split across reads anywhere, and a named error with bounded memory for what it cannot use.
@Suite struct HTTPResponseParserTests {
    static let answer = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

    static func parse(_ text: String, limits: HTTPResponseParser.Limits = .init()) throws(HTTPResponseError) -> HTTPResponse {
        try HTTPResponseParser.parse(Array(text.utf8), limits: limits)
    }

    /// Feeds `text` in pieces of `size` bytes; the response and how many bytes went in before it came.
    static func feedInPieces(_ text: String, size: Int) throws -> (HTTPResponse?, fed: Int) {
        var parser = HTTPResponseParser()
        let bytes = Array(text.utf8)
        var fed = 0
        while fed < bytes.count {
            let piece = bytes[fed..<min(bytes.count, fed + size)]
            fed += piece.count
            if let response = try parser.feed(piece) { return (response, fed) }
        }
        return (try parser.finish(), fed)
    }

    @Test func aCreatedAnswerHasItsLocationAndSDPBody() throws {
        let text = "HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: /whip/cam/42\r\n"
            + "Content-Length: \(Self.answer.utf8.count)\r\n\r\n" + Self.answer
        let response = try Self.parse(text)
        #expect(response.status == 201)
        #expect(response.headers["location"] == "/whip/cam/42" && response.headers["content-type"] == "application/sdp")
        #expect(response.body == Array(Self.answer.utf8))
    }

    /// RFC 9110 §15.3.5: a 204 has no body, so it is complete at the blank line, before any close.
    @Test func noContentIsCompleteAtTheEndOfItsHeaders() throws {
        var parser = HTTPResponseParser()
        let response = try parser.feed(Array("HTTP/1.1 204 No Content\r\nContent-Length: 99\r\n\r\n".utf8))
        #expect(response?.status == 204 && response?.body == [])
    }

    @Test func aChunkedBodyIsPutBackTogetherWithItsExtensionsAndTrailersDropped() throws {
        let text = "HTTP/1.1 201 Created\r\nLocation: /whip/cam/42\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5\r\nv=0\r\n\r\n3;ext=1\r\nabc\r\nA \r\n0123456789\r\n0\r\nExpires: never\r\n\r\n"
        let response = try Self.parse(text)
        #expect(response.status == 201 && response.headers["location"] == "/whip/cam/42")
        #expect(response.body == Array("v=0\r\nabc0123456789".utf8))
        #expect(response.headers["expires"] == nil)
    }

    /// A server's writes may be cut anywhere by TCP: every piece size gives the same response, as soon as
    /// its last byte is in.
    @Test(arguments: [1, 2, 3, 7, 64])
    func aResponseSplitAcrossReadsReadsTheSame(pieceSize: Int) throws {
        let sized = "HTTP/1.1 201 Created\r\nLocation: /s/1\r\nContent-Length: \(Self.answer.utf8.count)\r\n\r\n" + Self.answer
        let chunked = "HTTP/1.1 201 Created\r\nLocation: /s/1\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "\(String(Self.answer.utf8.count, radix: 16))\r\n\(Self.answer)\r\n0\r\n\r\n"
        for text in [sized, chunked] {
            let (response, fed) = try Self.feedInPieces(text + "ignored after the end", size: pieceSize)
            #expect(response?.body == Array(Self.answer.utf8) && response?.headers["location"] == "/s/1")
            #expect(fed < text.utf8.count + pieceSize)
        }
    }

    @Test func headerNamesAreCaseInsensitiveAndRepeatedOnesJoined() throws {
        let text = "HTTP/1.1 201 Created\r\nLOCATION: /a\r\nLink: <stun:a>\r\nlink:  <turn:b> \r\ncOnTeNt-LeNgTh: 2\r\n\r\nokmore"
        let response = try Self.parse(text)
        #expect(response.headers["location"] == "/a" && response.headers["link"] == "<stun:a>, <turn:b>")
        #expect(response.body == Array("ok".utf8))
    }

    /// RFC 9112 §6.3 rule 8: no Content-Length and no chunking, the body ends with the connection; an
    /// interim 100 is skipped (RFC 9110 §15.2); bare LF line ends are taken (RFC 9112 §2.2).
    @Test func aBodyWithoutLengthEndsAtTheCloseAfterAnyInterimResponse() throws {
        let response = try Self.parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 Not Found\nServer: x\n\nno stream")
        #expect(response.status == 404 && response.body == Array("no stream".utf8) && response.headers["server"] == "x")
    }

    @Test func aBadStatusLineIsNamed() {
        for line in ["SSH-2.0-OpenSSH", "HTTP/1.1 2015 Created", "HTTP/2 201", "HTTP/1.1 20x OK", "HTTP/1.1201 Created"] {
            #expect(throws: HTTPResponseError.badStatusLine(line)) { try Self.parse(line + "\r\n\r\n") }
        }
    }

    /// Found by tools/fuzz: a status of three digits below 100 was taken as a final response (RFC 9110
    /// §15: only 100 to 599 are valid).
    @Test func aStatusOutsideTheValidRangeIsABadStatusLine() {
        for line in ["HTTP/1.1 016 OK", "HTTP/1.1 000", "HTTP/1.1 600 Custom"] {
            #expect(throws: HTTPResponseError.badStatusLine(line)) { try Self.parse(line + "\r\ncontent-length: 0\r\n\r\n") }
        }
    }

    @Test func aHeaderOverTheLineLimitIsNamedBeforeItsEndArrives() throws {
        var parser = HTTPResponseParser(limits: .init(lineBytes: 100))
        #expect(try parser.feed(Array("HTTP/1.1 201 Created\r\nX: ".utf8)) == nil)
        #expect(throws: HTTPResponseError.headerTooLong(limit: 100)) {
            try parser.feed([UInt8](repeating: 65, count: 200))
        }
    }

    @Test func tooManyHeadersAreNamed() {
        let headers = (0..<11).map { "X-\($0): 1\r\n" }.joined()
        #expect(throws: HTTPResponseError.tooManyHeaders(limit: 10)) {
            try Self.parse("HTTP/1.1 200 OK\r\n\(headers)\r\n", limits: .init(headerCount: 10))
        }
        let trailers = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + headers + "\r\n"
        #expect(throws: HTTPResponseError.tooManyHeaders(limit: 10)) { try Self.parse(trailers, limits: .init(headerCount: 10)) }
    }

    @Test func aLineThatIsNotAFieldIsNamed() {
        for line in ["no colon here", ": empty name", "Bad Name: 1", " folded before any field"] {
            #expect(throws: HTTPResponseError.badHeaderLine(line)) { try Self.parse("HTTP/1.1 200 OK\r\n\(line)\r\n\r\n") }
        }
    }

    @Test func aBadContentLengthIsNamed() {
        for value in ["-1", "12a", "", "+5", "3, 4", "99999999999999999999"] {
            #expect(throws: HTTPResponseError.badContentLength(value)) {
                try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\nabc")
            }
        }
        #expect((try? Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabcd"))?.body == Array("abc".utf8))
    }

    @Test func aBadChunkSizeIsNamed() {
        for line in ["x", "", "-1", "+1", "1 2", "1000000000000000"] {
            #expect(throws: HTTPResponseError.badChunkSize(line)) {
                try Self.parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(line)\r\nabc\r\n0\r\n\r\n")
            }
        }
        #expect(throws: HTTPResponseError.badChunkSize("data past the chunk's size: 'c'")) {
            try Self.parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n")
        }
    }

    /// However the body is framed, a server cannot make the client keep more than the limit.
    @Test func aBodyOverTheLimitIsNamed() {
        let limits = HTTPResponseParser.Limits(bodyBytes: 1_000)
        let big = String(repeating: "a", count: 1_001)
        let tooLarge = HTTPResponseError.bodyTooLarge(limit: 1_000)
        #expect(throws: tooLarge) { try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n", limits: limits) }
        #expect(throws: tooLarge) { try Self.parse("HTTP/1.1 200 OK\r\n\r\n" + big, limits: limits) }
        #expect(throws: tooLarge) {
            try Self.parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1F4\r\n\(big.prefix(500))\r\n1F5\r\n", limits: limits)
        }
        #expect((try? Self.parse("HTTP/1.1 200 OK\r\n\r\n" + big.dropLast(), limits: limits))?.body.count == 1_000)
    }

    @Test func aResponseCutShortNamesWhereItStopped() {
        #expect(throws: HTTPResponseError.truncated("status line")) { try Self.parse("garbage") }
        #expect(throws: HTTPResponseError.truncated("headers")) { try Self.parse("HTTP/1.1 201 Created\r\nLocation: /a") }
        #expect(throws: HTTPResponseError.truncated("body")) { try Self.parse("HTTP/1.1 201 Created\r\nContent-Length: 9\r\n\r\nv=0") }
        #expect(throws: HTTPResponseError.truncated("chunked body")) {
            try Self.parse("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nv=0")
        }
    }
}
