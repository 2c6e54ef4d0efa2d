// HTTP/1.1 responses as the WHIP/WHEP client reads them from a server (RFC 9112): the whole input
// parsed at once, and fed again in pieces of a size set by its length. Both give the same response or
// the same named error (TCP may cut a response anywhere), and a response stays within the limits.
import FuzzSupport
import MediaHTTP

/// Small limits, so that inputs of a few KB reach each of them.
private let limits = HTTPResponseParser.Limits(lineBytes: 256, headerCount: 16, bodyBytes: 4_096)

private func inPieces(_ bytes: UnsafeRawBufferPointer, size: Int) -> Result<HTTPResponse, HTTPResponseError> {
    var parser = HTTPResponseParser(limits: limits)
    var start = 0
    do throws(HTTPResponseError) {
        while start < bytes.count {
            let end = min(bytes.count, start + size)
            if let response = try parser.feed(bytes[start..<end]) { return .success(response) }
            start = end
        }
        return .success(try parser.finish())
    } catch {
        return .failure(error)
    }
}

@_cdecl("FuzzHTTPResponse_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        let whole = Result { () throws(HTTPResponseError) in try HTTPResponseParser.parse(bytes, limits: limits) }
        let pieces = inPieces(bytes, size: bytes.count % 61 + 1)
        precondition(whole == pieces, "a response fed in pieces reads as the whole: \(whole) vs \(pieces)")
        guard case .success(let response) = whole else { return }
        precondition((200...599).contains(response.status), "a final response's status is 2xx to 5xx (RFC 9110 §15)")
        precondition(response.body.count <= limits.bodyBytes, "a body within the limit")
        precondition(response.headers.count <= limits.headerCount, "headers within the limit")
    }
}
