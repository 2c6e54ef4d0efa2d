// What answers the WHIP and WHEP offers: the peer connection layer, behind a protocol so that the HTTP layer
// can be built and tested without it.

/// The direction of a WebRTC-over-HTTP session, which is also the first path segment of its URLs.
public enum WebRTCSessionKind: String, Sendable, CaseIterable {
    /// WHEP (draft-ietf-wish-whep): the server sends media to a viewer. `POST /whep/NAME`.
    case egress = "whep"
    /// WHIP (RFC 9725): the server receives media from a publisher. `POST /whip/NAME`.
    case ingest = "whip"
}

/// One negotiated peer session, created by a `WebRTCSessionHandler` from an SDP offer.
///
/// The HTTP layer holds it from the `201 Created` until the client's `DELETE` on its resource (RFC 9725 §4.2) or the
/// server's shutdown, and then calls `close()` exactly once.
public protocol WebRTCSession: Sendable {
    /// The SDP answer returned in the body of the `201 Created` (RFC 9725 §4.2).
    var answer: String { get }
    /// Whether the session takes Trickle ICE fragments (RFC 8840) in `PATCH` requests (RFC 9725 §4.3.1).
    /// When false, a `PATCH` is answered `405 Method Not Allowed`, as RFC 9725 §4.3 requires of a session that
    /// supports neither Trickle ICE nor ICE restarts.
    var supportsTrickleICE: Bool { get }
    /// Applies a Trickle ICE SDP fragment (`application/trickle-ice-sdpfrag`, RFC 8840 §9) sent in a `PATCH`:
    /// nil when its candidates were taken (`204 No Content`), or, when its ICE credentials are new (an ICE
    /// restart, RFC 9725 §4.3.2), the fragment answering them (`200 OK` with a new entity-tag).
    /// Throws `WebRTCSessionError.malformedFragment` for a fragment it cannot read.
    func addRemoteCandidates(sdpFragment: String) async throws -> String?
    /// Ends the session: stops media, releases sockets. Called once; must not throw.
    func close() async
}

extension WebRTCSession {
    public var supportsTrickleICE: Bool { false }
    public func addRemoteCandidates(sdpFragment: String) async throws -> String? {
        throw WebRTCSessionError.trickleICENotSupported
    }
}

/// The names a handler serves, for the one-line description at `GET /`.
public struct WebRTCStreamNames: Sendable, Equatable {
    /// Names that can be watched through WHEP.
    public var egress: [String]
    /// Names that can be published through WHIP.
    public var ingest: [String]

    public init(egress: [String], ingest: [String]) {
        self.egress = egress
        self.ingest = ingest
    }
}

/// Answers SDP offers for the WHEP and WHIP endpoints: the peer connection layer implements it, tests fake it.
///
/// Errors thrown as `WebRTCSessionError` become the HTTP status that names them (404, 400, 503) with the message in
/// the body; any other error becomes `500 Internal Server Error` with a generic body (and is logged).
public protocol WebRTCSessionHandler: Sendable {
    /// Starts sending what NAME names to the peer that made `offer` (WHEP). Returns once the answer is ready.
    func startEgress(name: String, offer: String) async throws -> any WebRTCSession
    /// Starts receiving from the peer that made `offer` into what NAME names (WHIP, RFC 9725 §4.2).
    func startIngest(name: String, offer: String) async throws -> any WebRTCSession
    /// The names this handler serves, or nil if it cannot list them (the default).
    func streamNames() async -> WebRTCStreamNames?
}

extension WebRTCSessionHandler {
    public func streamNames() async -> WebRTCStreamNames? { nil }

    /// Starts a session of the given kind.
    func start(_ kind: WebRTCSessionKind, name: String, offer: String) async throws -> any WebRTCSession {
        switch kind {
        case .egress: try await startEgress(name: name, offer: offer)
        case .ingest: try await startIngest(name: name, offer: offer)
        }
    }
}

/// The failures a handler or a session reports to the HTTP client, each with a stable `reason` (for counters) and
/// a message for people.
public enum WebRTCSessionError: Error, Sendable, Equatable {
    /// No source (WHEP) or recording target (WHIP) has this name: `404 Not Found`.
    case unknownName(String)
    /// The offer is not a readable SDP (RFC 8866) session description: `400 Bad Request`.
    case malformedOffer(String)
    /// The offer is readable but cannot be answered (no common codec, no ICE credentials, no fingerprint, ...):
    /// `400 Bad Request`.
    case unacceptableOffer(String)
    /// A Trickle ICE fragment (RFC 8840) that cannot be read: `400 Bad Request`.
    case malformedFragment(String)
    /// The session does not take Trickle ICE: `405 Method Not Allowed` (RFC 9725 §4.3).
    case trickleICENotSupported
    /// The server cannot take more sessions now (a limit, or shutting down): `503 Service Unavailable`.
    case unavailable(String)

    /// A stable name for counters and logs.
    public var reason: String {
        switch self {
        case .unknownName: "unknown-name"
        case .malformedOffer: "malformed-offer"
        case .unacceptableOffer: "unacceptable-offer"
        case .malformedFragment: "malformed-fragment"
        case .trickleICENotSupported: "trickle-ice-not-supported"
        case .unavailable: "unavailable"
        }
    }

    /// The message sent to the client in the response body.
    public var message: String {
        switch self {
        case .unknownName(let name): "no stream named '\(name)'"
        case .malformedOffer(let detail): "malformed SDP offer: \(detail)"
        case .unacceptableOffer(let detail): "SDP offer cannot be answered: \(detail)"
        case .malformedFragment(let detail): "malformed trickle ICE fragment: \(detail)"
        case .trickleICENotSupported: "this session does not support trickle ICE or ICE restarts"
        case .unavailable(let detail): "service unavailable: \(detail)"
        }
    }

    /// The HTTP status code that carries this error.
    public var statusCode: Int {
        switch self {
        case .unknownName: 404
        case .malformedOffer, .unacceptableOffer, .malformedFragment: 400
        case .trickleICENotSupported: 405
        case .unavailable: 503
        }
    }
}
