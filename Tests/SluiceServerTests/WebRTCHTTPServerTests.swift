import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import TestSupport

@testable import SluiceServer

/// A minimal offer the fake accepts: only its first line is checked.
let offer = "v=0\r\no=- 42 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
let sdpHeaders: HTTPFields = [.contentType: "application/sdp"]

/// Runs `body` against a live server on 127.0.0.1, ephemeral port, over real TCP.
func withLiveServer<Value: Sendable>(
    _ handler: FakeHandler, iceServers: [ICEServerLink] = [],
    _ body: @Sendable (any TestClientProtocol) async throws -> Value
) async throws -> Value {
    let server = WebRTCHTTPServer(
        handler: handler, configuration: .init(host: "127.0.0.1", port: 0, iceServers: iceServers), logger: quietLogger)
    return try await server.makeApplication().test(.live, body)
}

/// Logs only what would be a test harness failure, so refused requests do not fill the test output.
let quietLogger: Logger = {
    var logger = Logger(label: "sluice.serve.test")
    logger.logLevel = .critical
    return logger
}()

func post(_ client: any TestClientProtocol, _ uri: String, _ body: String, headers: HTTPFields = sdpHeaders)
    async throws -> TestResponse
{
    try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
}

extension TestResponse {
    var text: String { String(buffer: body) }
}

@Suite("WHEP and WHIP endpoints over live HTTP", .onDedicatedThreads)
struct WebRTCHTTPServerTests {
    @Test("POST /whep/NAME: 201, Location, ETag, the answer as application/sdp; the handler saw the offer")
    func egressCreated() async throws {
        let handler = FakeHandler()
        let response = try await withLiveServer(handler) { try await post($0, "/whep/cam", offer) }
        #expect(response.status == .created)
        #expect(response.headers[.contentType] == "application/sdp")
        #expect(response.text == FakeHandler.answer)
        let location = try #require(response.headers[.location])
        #expect(location.hasPrefix("/whep/cam/"))
        let id = location.dropFirst("/whep/cam/".count)
        #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
        #expect(response.headers[.eTag]?.hasPrefix("\"") == true)
        #expect(response.headers[.accessControlAllowOrigin] == "*")
        #expect(await handler.log.starts == [.init(kind: "whep", name: "cam", offer: offer)])
    }

    @Test("POST /whip/NAME reaches startIngest; a percent-encoded name is decoded, and encoded back in Location")
    func ingestAndEncodedName() async throws {
        let handler = FakeHandler()
        let (ingest, spaced) = try await withLiveServer(handler) { client in
            (try await post(client, "/whip/studio", offer), try await post(client, "/whep/loop%20file", offer))
        }
        #expect(ingest.status == .created)
        #expect(ingest.headers[.location]?.hasPrefix("/whip/studio/") == true)
        #expect(spaced.status == .created)
        #expect(spaced.headers[.location]?.hasPrefix("/whep/loop%20file/") == true)
        #expect(await handler.log.starts.map(\.kind) == ["whip", "whep"])
        #expect(await handler.log.starts.map(\.name) == ["studio", "loop file"])
    }

    @Test("DELETE on the Location closes the session (200), a second DELETE is 404")
    func deleteEndsSession() async throws {
        let handler = FakeHandler()
        let (first, second) = try await withLiveServer(handler) { client in
            let created = try await post(client, "/whep/cam", offer)
            let location = try #require(created.headers[.location])
            let first = try await client.execute(uri: location, method: .delete)
            #expect(await handler.log.closedSessions == [1])
            let second = try await client.execute(uri: location, method: .delete)
            return (first.status, second.status)
        }
        #expect(first == .ok)
        #expect(second == .notFound)
        #expect(await handler.log.closedSessions == [1], "closed once, not again at shutdown")
    }

    @Test("DELETE with the wrong kind, name or id is 404 and closes nothing")
    func deleteMismatch() async throws {
        let handler = FakeHandler()
        let statuses = try await withLiveServer(handler) { client in
            let created = try await post(client, "/whep/cam", offer)
            let id = try #require(created.headers[.location]?.split(separator: "/").last)
            var statuses: [HTTPResponse.Status] = []
            for uri in ["/whip/cam/\(id)", "/whep/other/\(id)", "/whep/cam/0123"] {
                statuses.append(try await client.execute(uri: uri, method: .delete).status)
            }
            #expect(await handler.log.closedSessions.isEmpty)
            return statuses
        }
        #expect(statuses == [.notFound, .notFound, .notFound])
    }

    /// Each refused request, the status it must get and a piece of the body.
    static let refusals: [(uri: String, contentType: String?, body: String, status: Int, bodyContains: String)] = [
        ("/whep/nosuch", "application/sdp", offer, 404, "no stream named 'nosuch'"),
        ("/whip/cam", "application/sdp", offer, 404, "no stream named 'cam'"),  // cam is egress only
        ("/whep/cam", "application/sdp", "hello", 400, "malformed SDP offer: first line is not v=0"),
        ("/whep/cam", "application/sdp", "", 400, "empty SDP offer"),
        ("/whep/cam", "text/plain", offer, 415, "application/sdp"),
        ("/whep/cam", nil, offer, 415, "application/sdp"),
        ("/whep/cam", "application/sdp", offer + "a=explode\r\n", 500, "internal server error"),
    ]

    @Test("refused offers get their status and reason", arguments: refusals.indices)
    func refusedOffer(_ index: Int) async throws {
        let refusal = Self.refusals[index]
        let handler = FakeHandler()
        var headers: HTTPFields = [:]
        if let type = refusal.contentType { headers[.contentType] = type }
        let requestHeaders = headers
        let response = try await withLiveServer(handler) {
            try await post($0, refusal.uri, refusal.body, headers: requestHeaders)
        }
        #expect(response.status.code == refusal.status)
        #expect(response.text.contains(refusal.bodyContains))
        #expect(!response.text.contains("secret"), "internals never leak")
        #expect(response.headers[.location] == nil)
        #expect(await handler.log.starts.isEmpty)
    }

    @Test("Content-Type with parameters and other case is accepted")
    func contentTypeParameters() async throws {
        let response = try await withLiveServer(FakeHandler()) {
            try await post($0, "/whep/cam", offer, headers: [.contentType: "Application/SDP; charset=utf-8"])
        }
        #expect(response.status == .created)
    }

    @Test("an offer over the size limit is 413")
    func oversizedOffer() async throws {
        let big = offer + String(repeating: "a=x\r\n", count: 60_000)
        let response = try await withLiveServer(FakeHandler()) { try await post($0, "/whep/cam", big) }
        #expect(response.status == .contentTooLarge)
    }

    @Test("OPTIONS on an endpoint: Accept-Post, CORS fields, ICE-server links; a preflight gets no links")
    func optionsEndpoint() async throws {
        let ice = [ICEServerLink(url: "stun:stun.example.net")]
        let (plain, preflight) = try await withLiveServer(FakeHandler(), iceServers: ice) { client in
            (
                try await client.execute(uri: "/whep/cam", method: .options),
                try await client.execute(
                    uri: "/whip/studio", method: .options,
                    headers: [.origin: "http://page.example", .accessControlRequestMethod: "POST"])
            )
        }
        for response in [plain, preflight] {
            #expect(response.status == .noContent)
            #expect(response.headers[HTTPField.Name("Accept-Post")!] == "application/sdp")
            #expect(response.headers[.accessControlAllowOrigin] == "*")
            #expect(response.headers[.accessControlAllowMethods] == "POST, OPTIONS")
            #expect(response.headers[.accessControlAllowHeaders]?.hasPrefix("Content-Type, Authorization") == true)
            #expect(response.headers[.accessControlExposeHeaders]?.hasPrefix("Location, Link") == true)
        }
        #expect(plain.headers[values: HTTPField.Name("Link")!] == ["<stun:stun.example.net>; rel=\"ice-server\""])
        #expect(preflight.headers[values: HTTPField.Name("Link")!].isEmpty)
    }

    @Test("OPTIONS on a session resource allows DELETE and PATCH")
    func optionsSession() async throws {
        let response = try await withLiveServer(FakeHandler()) { client in
            try await client.execute(uri: "/whep/cam/abc", method: .options)
        }
        #expect(response.status == .noContent)
        #expect(response.headers[.allow] == "DELETE, PATCH, OPTIONS")
        #expect(response.headers[HTTPField.Name("Accept-Patch")!] == "application/trickle-ice-sdpfrag")
    }

    @Test("the 201 carries one Link per ICE server, with TURN credentials quoted (RFC 9725 §4.6)")
    func iceServerLinks() async throws {
        let ice = [
            ICEServerLink(url: "stun:stun.example.net"),
            ICEServerLink(url: "turn:turn.example.net?transport=udp", username: "user", credential: "pa\"ss"),
        ]
        let response = try await withLiveServer(FakeHandler(), iceServers: ice) { try await post($0, "/whep/cam", offer) }
        #expect(response.status == .created)
        #expect(
            response.headers[values: HTTPField.Name("Link")!] == [
                "<stun:stun.example.net>; rel=\"ice-server\"",
                "<turn:turn.example.net?transport=udp>; rel=\"ice-server\"; username=\"user\"; "
                    + "credential=\"pa\\\"ss\"; credential-type=\"password\"",
            ])
    }

    @Test("PATCH on a session without trickle ICE is 405 with Allow (RFC 9725 §4.3); unknown session 404")
    func patchWithoutTrickle() async throws {
        let (patched, unknown) = try await withLiveServer(FakeHandler()) { client in
            let location = try #require(try await post(client, "/whep/cam", offer).headers[.location])
            let fragment: HTTPFields = [.contentType: "application/trickle-ice-sdpfrag"]
            return (
                try await client.execute(
                    uri: location, method: .patch, headers: fragment, body: ByteBuffer(string: "a=candidate:1\r\n")),
                try await client.execute(uri: "/whep/cam/ffff", method: .patch, headers: fragment)
            )
        }
        #expect(patched.status == .methodNotAllowed)
        #expect(patched.headers[.allow] == "DELETE, OPTIONS")
        #expect(unknown.status == .notFound)
    }

    @Test("PATCH on a trickle session: 204 and the fragment reaches it; wrong type 415; bad fragment 400; stale If-Match 412")
    func patchWithTrickle() async throws {
        var handler = FakeHandler()
        handler.trickle = true
        let statuses = try await withLiveServer(handler) { client in
            let created = try await post(client, "/whep/cam", offer)
            let location = try #require(created.headers[.location])
            let eTag = try #require(created.headers[.eTag])
            let cases: [(String, String, String)] = [
                ("application/trickle-ice-sdpfrag", eTag, "a=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n"),
                ("application/sdp", "*", "a=candidate:2\r\n"),
                ("application/trickle-ice-sdpfrag", "*", "garbage"),
                ("application/trickle-ice-sdpfrag", "\"stale\"", "a=candidate:3\r\n"),
            ]
            var statuses: [HTTPResponse.Status] = []
            for (type, ifMatch, body) in cases {
                let response = try await client.execute(
                    uri: location, method: .patch, headers: [.contentType: type, .ifMatch: ifMatch],
                    body: ByteBuffer(string: body))
                statuses.append(response.status)
            }
            return statuses
        }
        #expect(statuses == [.noContent, .unsupportedMediaType, .badRequest, .preconditionFailed])
        #expect(await handler.log.fragments == ["a=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n"])
    }

    @Test("PATCH with new ICE credentials restarts ICE: 200, the answer fragment and a new ETag (RFC 9725 §4.3.2)")
    func patchRestartsICE() async throws {
        var handler = FakeHandler()
        handler.trickle = true
        let (created, restarted, stale) = try await withLiveServer(handler) { client in
            let created = try await post(client, "/whep/cam", offer)
            let location = try #require(created.headers[.location])
            let headers: HTTPFields = [.contentType: "application/trickle-ice-sdpfrag", .ifMatch: "*"]
            let restarted = try await client.execute(uri: location, method: .patch, headers: headers,
                                                     body: ByteBuffer(string: "a=ice-ufrag:new1\r\na=ice-pwd:new-password-of-22-chars\r\n"))
            let stale = try await client.execute(
                uri: location, method: .patch,
                headers: [.contentType: "application/trickle-ice-sdpfrag", .ifMatch: created.headers[.eTag] ?? ""],
                body: ByteBuffer(string: "a=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n"))
            return (created, restarted, stale)
        }
        #expect(restarted.status == .ok)
        #expect(restarted.headers[.contentType] == "application/trickle-ice-sdpfrag")
        #expect(restarted.text.hasPrefix("a=ice-ufrag:srv2\r\n"))
        #expect(restarted.headers[.eTag] != nil && restarted.headers[.eTag] != created.headers[.eTag])
        #expect(stale.status == .preconditionFailed, "the entity-tag from before the restart is stale")
    }

    @Test("GET / tells what is served and the handler's names")
    func describe() async throws {
        var silent = FakeHandler()
        silent.listsNames = false
        let listed = try await withLiveServer(FakeHandler()) { try await $0.execute(uri: "/", method: .get) }
        let unlisted = try await withLiveServer(silent) { try await $0.execute(uri: "/", method: .get) }
        #expect(listed.status == .ok)
        #expect(listed.text.hasSuffix("; whep: cam, loop file; whip: studio\n"))
        #expect(listed.text.contains("WHEP") && listed.text.contains("WHIP"))
        #expect(unlisted.text.split(separator: "\n").count == 1)
        #expect(!unlisted.text.contains("cam"))
    }

    @Test("10 concurrent POSTs on 10 connections are answered together, with 10 distinct Locations")
    func concurrentSessions() async throws {
        var handler = FakeHandler()
        // Every start waits for the other nine: only requests served concurrently can all complete.
        handler.barrier = Barrier(count: 10)
        let locations = try await withLiveServer(handler) { client in
            let port = try #require(client.port)
            return try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        try await TestClient.withClient(host: "127.0.0.1", port: port) { connection in
                            let response = try await connection.post(
                                "/whep/cam", headers: sdpHeaders, body: ByteBuffer(string: offer))
                            return response.status == .created ? response.headers[.location] : nil
                        }
                    }
                }
                var locations: [String?] = []
                for try await location in group { locations.append(location) }
                return locations
            }
        }
        let created = locations.compactMap { $0 }
        #expect(created.count == 10)
        #expect(Set(created).count == 10)
        #expect(await handler.log.starts.count == 10)
    }

    @Test("stopping the server closes every open session, and only those")
    func shutdownClosesSessions() async throws {
        let handler = FakeHandler()
        try await withLiveServer(handler) { client in
            var locations: [String] = []
            for uri in ["/whep/cam", "/whep/cam", "/whip/studio"] {
                locations.append(try #require(try await post(client, uri, offer).headers[.location]))
            }
            #expect(try await client.execute(uri: locations[0], method: .delete).status == .ok)
            #expect(await handler.log.closedSessions == [1])
        }
        #expect(await handler.log.closedSessions.sorted() == [1, 2, 3])
    }
}

@Suite("WebRTCHTTPServer.run, as the CLI will call it", .onDedicatedThreads)
struct WebRTCHTTPServerRunTests {
    @Test("run reports the ephemeral port, serves on it, and closes open sessions when cancelled")
    func runUntilCancelled() async throws {
        let handler = FakeHandler()
        let server = WebRTCHTTPServer(
            handler: handler, configuration: .init(host: "127.0.0.1", port: 0), logger: quietLogger)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let running = Task(executorPreference: DedicatedThreadsExecutor.shared) { try await server.run(onServerRunning: { portSink.yield($0) }) }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        #expect(port > 0 && port != 8080)
        let status = try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            try await client.post("/whip/studio", headers: sdpHeaders, body: ByteBuffer(string: offer)).status
        }
        #expect(status == .created)
        #expect(await handler.log.closedSessions.isEmpty)
        running.cancel()
        _ = await running.result
        #expect(await handler.log.closedSessions == [1])
    }

    @Test("the defaults are 127.0.0.1:8080, no ICE servers")
    func defaults() {
        let configuration = WebRTCHTTPServer.Configuration()
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.iceServers.isEmpty)
    }
}

@Suite("ICE-server links, percent-encoding and session ids")
struct WebRTCHTTPServerUnitTests {
    @Test("a Link value without credentials names only the URL and the relation")
    func stunLink() {
        #expect(ICEServerLink(url: "stun:a.example:3478").linkFieldValue == "<stun:a.example:3478>; rel=\"ice-server\"")
    }

    @Test("quoted-string drops control characters and escapes quotes and backslashes")
    func quoting() {
        #expect(ICEServerLink.quoted("a\\b\"c\r\nd") == "\"a\\\\b\\\"cd\"")
    }

    @Test(
        "percent-decoding of path segments",
        arguments: [
            ("cam", "cam"), ("loop%20file", "loop file"), ("%C3%A9t%C3%A9", "été"), ("%zz", nil), ("%4", nil),
            ("%FF", nil),
        ] as [(String, String?)])
    func decoding(_ segment: String, _ expected: String?) {
        #expect(PercentEncoding.decode(segment) == expected)
    }

    @Test("percent-encoding keeps unreserved characters and round-trips")
    func encoding() {
        #expect(PercentEncoding.encode("a-b_c.d~e f/été") == "a-b_c.d~e%20f%2F%C3%A9t%C3%A9")
        #expect(PercentEncoding.decode(PercentEncoding.encode("a/b c?#")) == "a/b c?#")
    }

    @Test("the registry refuses sessions past its limit and after closeAll")
    func registryLimits() async throws {
        let handler = FakeHandler()
        let registry = SessionRegistry(maxSessions: 1)
        let session = try await handler.startEgress(name: "cam", offer: offer)
        _ = try await registry.register(.egress, name: "cam", session: session)
        await #expect(throws: SessionRegistry.RegistrationRefusal.full) {
            try await registry.register(.egress, name: "cam", session: session)
        }
        await registry.closeAll()
        #expect(await registry.count == 0)
        #expect(await handler.log.closedSessions == [1])
        await #expect(throws: SessionRegistry.RegistrationRefusal.shuttingDown) {
            try await registry.register(.egress, name: "cam", session: session)
        }
    }

    @Test("random tokens are 32 hex digits and differ")
    func tokens() {
        let tokens = (0..<100).map { _ in SessionRegistry.randomToken() }
        #expect(Set(tokens).count == 100)
        #expect(tokens.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }
}
