public import Hummingbird
public import Logging
import NIOCore
import ServiceLifecycle

/// The HTTP front of `sluice serve`: WHEP (draft-ietf-wish-whep, egress) and WHIP (RFC 9725, ingest) endpoints over
/// Hummingbird 2, with the peer sessions answered by a `WebRTCSessionHandler`.
///
/// Routes (NAME is a source or recording name, ID a random session id):
/// - `POST /whep/NAME`, `POST /whip/NAME` with an `application/sdp` offer: `201 Created`, the SDP answer, `Location`
///   of the session resource, `ETag`, and one `Link: <...>; rel="ice-server"` per configured ICE server (RFC 9725 §4.2,
///   §4.6).
/// - `DELETE /whep/NAME/ID`, `DELETE /whip/NAME/ID`: closes the session, `200 OK`; `404` once gone (RFC 9725 §4.2).
/// - `PATCH` on a session with `application/trickle-ice-sdpfrag`: `204` when the session takes Trickle ICE, else
///   `405 Method Not Allowed` (RFC 9725 §4.3).
/// - `OPTIONS` on the endpoints and sessions: `Accept-Post: application/sdp` and CORS, for browser pages on another
///   origin.
/// - `GET /`: one line saying what is served.
///
/// The CLI builds a handler and a `Configuration` and calls `run()`; tests call `makeApplication` to learn the port.
public struct WebRTCHTTPServer: Sendable {
    /// Where to listen and what to tell clients.
    public struct Configuration: Sendable {
        /// Address to bind; 127.0.0.1 by default, so nothing is exposed unless asked.
        public var host: String
        /// TCP port; 0 takes an ephemeral port (learn it through `onServerRunning`).
        public var port: Int
        /// STUN and TURN servers advertised in `Link` headers (RFC 9725 §4.6).
        public var iceServers: [ICEServerLink]
        /// The largest SDP offer or ICE fragment read, in bytes; larger bodies get `413 Content Too Large`.
        public var maxBodyBytes: Int
        /// The most sessions open at once; further offers get `503 Service Unavailable`.
        public var maxSessions: Int

        public init(
            host: String = "127.0.0.1", port: Int = 8080, iceServers: [ICEServerLink] = [],
            maxBodyBytes: Int = 256 * 1024, maxSessions: Int = 1000
        ) {
            self.host = host
            self.port = port
            self.iceServers = iceServers
            self.maxBodyBytes = maxBodyBytes
            self.maxSessions = maxSessions
        }
    }

    public let handler: any WebRTCSessionHandler
    public let configuration: Configuration
    public let logger: Logger

    public init(
        handler: any WebRTCSessionHandler, configuration: Configuration = .init(),
        logger: Logger = Logger(label: "sluice.serve")
    ) {
        self.handler = handler
        self.configuration = configuration
        self.logger = logger
    }

    /// Serves until SIGINT or SIGTERM (or the task is cancelled), then closes every open session.
    /// `onServerRunning` gets the bound port once the server listens.
    public func run(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await makeApplication(onServerRunning: onServerRunning).runService()
    }

    /// The Hummingbird application, for embedding in a `ServiceGroup` or for tests. Its graceful shutdown closes
    /// every open session (after the HTTP server stopped accepting).
    public func makeApplication(
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let sessions = SessionRegistry(maxSessions: configuration.maxSessions)
        let routes = WebRTCRoutes(
            handler: handler, sessions: sessions, iceServers: configuration.iceServers,
            maxBodyBytes: configuration.maxBodyBytes, logger: logger)
        let router = Router()
        router.add(middleware: CORSHeadersMiddleware())
        routes.register(on: router)
        return Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "Sluice"),
            services: [SessionCloser(sessions: sessions)],
            onServerRunning: { channel in
                await onServerRunning(channel.localAddress?.port ?? 0)
            },
            logger: logger)
    }
}

/// Closes every session when the application shuts down. The application runs its services and then the HTTP
/// server in one `ServiceGroup`, which stops them in reverse order: the server first, then this.
struct SessionCloser: Service {
    let sessions: SessionRegistry

    func run() async throws {
        // Returns on graceful shutdown, throws on cancellation: close the sessions either way.
        try? await gracefulShutdown()
        await sessions.closeAll()
    }
}

/// Adds the CORS response fields a browser page on another origin needs to read WHIP/WHEP answers
/// (`Access-Control-Allow-Origin: *`, `Location` and `Link` exposed), to every response, errors included.
struct CORSHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError {
            response = Response(status: error.status, headers: [.contentType: "text/plain; charset=utf-8"],
                                body: .init(byteBuffer: ByteBuffer(string: (error.body ?? error.status.reasonPhrase) + "\n")))
        }
        response.headers[.accessControlAllowOrigin] = "*"
        response.headers[.accessControlExposeHeaders] = "Location, Link, ETag"
        return response
    }
}
