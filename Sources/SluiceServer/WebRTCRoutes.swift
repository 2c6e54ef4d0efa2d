import Hummingbird
import HTTPTypes
import Logging
import NIOCore

/// The WHIP and WHEP request handlers, mapping HTTP to `WebRTCSessionHandler` calls and `WebRTCSessionError`s to
/// statuses.
struct WebRTCRoutes: Sendable {
    let handler: any WebRTCSessionHandler
    let sessions: SessionRegistry
    let iceServers: [ICEServerLink]
    let maxBodyBytes: Int
    let logger: Logger

    static let sdpMediaType = "application/sdp"
    static let trickleMediaType = "application/trickle-ice-sdpfrag"
    static let acceptPost = HTTPField.Name("Accept-Post")!
    static let acceptPatch = HTTPField.Name("Accept-Patch")!
    static let link = HTTPField.Name("Link")!
    static let endpointMethods = "POST, OPTIONS"
    static let sessionMethods = "DELETE, PATCH, OPTIONS"

    func register<Context: RequestContext>(on router: Router<Context>) {
        router.get("/") { _, _ in await self.describe() }
        for kind in WebRTCSessionKind.allCases {
            let endpoint = RouterPath("\(kind.rawValue)/:name")
            let resource = RouterPath("\(kind.rawValue)/:name/:id")
            router.post(endpoint) { request, context in
                await self.createSession(kind, request: request, name: context.parameters.get("name") ?? "")
            }
            router.on(endpoint, method: .options) { request, _ in
                self.options(request, allow: Self.endpointMethods, advertisesICEServers: true)
            }
            router.delete(resource) { _, context in
                await self.deleteSession(
                    kind, name: context.parameters.get("name") ?? "", id: context.parameters.get("id") ?? "")
            }
            router.patch(resource) { request, context in
                await self.patchSession(
                    kind, request: request, name: context.parameters.get("name") ?? "",
                    id: context.parameters.get("id") ?? "")
            }
            router.on(resource, method: .options) { request, _ in
                self.options(request, allow: Self.sessionMethods, advertisesICEServers: false)
            }
        }
        // Room for the rooms' WebSocket endpoint (signalling between the peers of a room), to come with
        // hummingbird-websocket: `router.group("rooms")` with a `ws` upgrade route. Nothing is served there yet.
        _ = router.group("rooms")
    }

    /// `GET /`: one line naming the protocols and, when the handler can list them, the names.
    func describe() async -> Response {
        var line = "Sluice WebRTC server: WHEP egress at POST /whep/NAME, WHIP ingest at POST /whip/NAME"
        if let names = await handler.streamNames() {
            line += "; whep: " + (names.egress.isEmpty ? "(none)" : names.egress.joined(separator: ", "))
            line += "; whip: " + (names.ingest.isEmpty ? "(none)" : names.ingest.joined(separator: ", "))
        }
        return Self.text(.ok, line)
    }

    /// `POST /KIND/NAME` with an SDP offer (RFC 9725 §4.2).
    func createSession(_ kind: WebRTCSessionKind, request: Request, name rawName: String) async -> Response {
        guard Self.mediaType(of: request) == Self.sdpMediaType else {
            return Self.text(.unsupportedMediaType, "the offer must be sent as \(Self.sdpMediaType)")
        }
        let offer: String
        switch await readBody(request) {
        case .success(let text): offer = text
        case .failure(let refusal): return refusal.response
        }
        guard !offer.isEmpty else { return Self.text(.badRequest, "empty SDP offer") }
        guard let name = PercentEncoding.decode(rawName), !name.isEmpty else {
            return Self.text(.badRequest, "stream name is not valid percent-encoded UTF-8")
        }
        let session: any WebRTCSession
        do {
            session = try await handler.start(kind, name: name, offer: offer)
        } catch {
            return errorResponse(error, during: "start \(kind.rawValue) \(name)")
        }
        let id: String
        let eTag: String
        do {
            (id, eTag) = try await sessions.register(kind, name: name, session: session)
        } catch {
            await session.close()
            let detail = error == .shuttingDown ? "server is shutting down" : "too many sessions"
            return errorResponse(WebRTCSessionError.unavailable(detail), during: "register")
        }
        var headers: HTTPFields = [
            .contentType: Self.sdpMediaType,
            .location: "/\(kind.rawValue)/\(PercentEncoding.encode(name))/\(id)",
            .eTag: eTag,
        ]
        for server in iceServers {
            headers.append(HTTPField(name: Self.link, value: server.linkFieldValue))
        }
        logger.info("session started", metadata: ["kind": "\(kind.rawValue)", "name": "\(name)", "id": "\(id)"])
        return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(string: session.answer)))
    }

    /// `DELETE /KIND/NAME/ID`: ends the session (RFC 9725 §4.2).
    func deleteSession(_ kind: WebRTCSessionKind, name rawName: String, id: String) async -> Response {
        guard let name = PercentEncoding.decode(rawName),
            let entry = await sessions.remove(kind, name: name, id: id)
        else {
            return Self.text(.notFound, "no such session")
        }
        await entry.session.close()
        logger.info("session ended", metadata: ["kind": "\(kind.rawValue)", "name": "\(name)", "id": "\(id)"])
        return Response(status: .ok)
    }

    /// `PATCH /KIND/NAME/ID` with a Trickle ICE fragment (RFC 9725 §4.3.1, RFC 8840).
    func patchSession(_ kind: WebRTCSessionKind, request: Request, name rawName: String, id: String) async -> Response {
        guard let name = PercentEncoding.decode(rawName), let entry = await sessions.entry(kind, name: name, id: id)
        else {
            return Self.text(.notFound, "no such session")
        }
        guard entry.session.supportsTrickleICE else {
            var response = errorResponse(WebRTCSessionError.trickleICENotSupported, during: "patch")
            response.headers[.allow] = "DELETE, OPTIONS"
            return response
        }
        guard Self.mediaType(of: request) == Self.trickleMediaType else {
            return Self.text(.unsupportedMediaType, "trickle ICE fragments must be sent as \(Self.trickleMediaType)")
        }
        // An If-Match other than "*" must name this session's entity-tag (RFC 9725 §4.3.1, RFC 9110 §13.1.1).
        if let ifMatch = request.headers[.ifMatch], ifMatch != "*", ifMatch != entry.eTag {
            return Self.text(.preconditionFailed, "If-Match does not match the session's ETag")
        }
        let fragment: String
        switch await readBody(request) {
        case .success(let text): fragment = text
        case .failure(let refusal): return refusal.response
        }
        let restartAnswer: String?
        do {
            restartAnswer = try await entry.session.addRemoteCandidates(sdpFragment: fragment)
        } catch {
            return errorResponse(error, during: "patch")
        }
        guard let restartAnswer else { return Response(status: .noContent) }
        // An ICE restart: the answer's fragment and the session's new entity-tag (RFC 9725 §4.3.2).
        let eTag = await sessions.renewETag(id) ?? entry.eTag
        return Response(status: .ok, headers: [.contentType: Self.trickleMediaType, .eTag: eTag],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: restartAnswer)))
    }

    /// `OPTIONS`: what the resource accepts, and the CORS preflight answer (Fetch standard). ICE servers are
    /// advertised only on a plain OPTIONS, not on a CORS preflight, which carries no credentials.
    func options(_ request: Request, allow: String, advertisesICEServers: Bool) -> Response {
        var headers: HTTPFields = [
            .allow: allow,
            .accessControlAllowMethods: allow,
            .accessControlAllowHeaders: "Content-Type, Authorization, If-Match",
            .accessControlMaxAge: "86400",
        ]
        if allow.contains("POST") {
            headers[Self.acceptPost] = Self.sdpMediaType
        }
        if allow.contains("PATCH") {
            headers[Self.acceptPatch] = Self.trickleMediaType
        }
        let isPreflight = request.headers[.accessControlRequestMethod] != nil
        if advertisesICEServers && !isPreflight {
            for server in iceServers {
                headers.append(HTTPField(name: Self.link, value: server.linkFieldValue))
            }
        }
        return Response(status: .noContent, headers: headers)
    }

    /// Maps a handler error to its status; an unknown error becomes a 500 that tells nothing of the internals.
    func errorResponse(_ error: any Error, during action: String) -> Response {
        if let error = error as? WebRTCSessionError {
            logger.notice("\(action) refused", metadata: ["reason": "\(error.reason)"])
            return Self.text(HTTPResponse.Status(code: error.statusCode), error.message)
        }
        logger.error("\(action) failed", metadata: ["error": "\(String(reflecting: error))"])
        return Self.text(.internalServerError, "internal server error")
    }

    /// The body as UTF-8 text, or the response to send when it is too large or not UTF-8.
    func readBody(_ request: Request) async -> Result<String, BodyRefusal> {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBodyBytes)
        } catch {
            return .failure(BodyRefusal(response: Self.text(.contentTooLarge, "body larger than \(maxBodyBytes) bytes")))
        }
        guard let text = buffer.getString(at: buffer.readerIndex, length: buffer.readableBytes),
            text.utf8.elementsEqual(buffer.readableBytesView)
        else {
            return .failure(BodyRefusal(response: Self.text(.badRequest, "body is not UTF-8 text")))
        }
        return .success(text)
    }

    /// A response that ends a request early.
    struct BodyRefusal: Error {
        let response: Response
    }

    /// The media type of the request's Content-Type, lowercased, without parameters.
    static func mediaType(of request: Request) -> String? {
        guard let value = request.headers[.contentType] else { return nil }
        let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingSpaces().lowercased()
    }

    /// A plain-text response of one line.
    static func text(_ status: HTTPResponse.Status, _ line: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: line + "\n")))
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}

/// URI percent-encoding of one path segment (RFC 3986 §2.1): names in URLs may hold any UTF-8 text.
enum PercentEncoding {
    /// Decodes `%XX` escapes; nil when an escape is broken or the bytes are not UTF-8.
    static func decode(_ segment: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Escapes every byte but the unreserved characters (RFC 3986 §2.3).
    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let digits = Array("0123456789ABCDEF".utf8)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte & 0xF)]))
            }
        }
        return out
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
