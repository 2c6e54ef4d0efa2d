import Foundation
import Glibc
import MediaCodecs
import MediaCore
import MediaHTTP
import MediaPeer

/// Why publishing over WHIP (RFC 9725) failed; each case names the URL.
public enum WHIPError: Error, Equatable, CustomStringConvertible {
    /// Not `http://HOST[:PORT]/PATH` (TLS is not spoken here).
    case unsupportedURL(String)
    case cannotConnect(url: String, reason: String)
    /// The endpoint answered the offer with something other than 201 Created (RFC 9725 §4.2).
    case refused(url: String, status: Int, body: String)
    case malformedResponse(url: String, reason: String)
    /// The answer could not be applied, or the connection failed.
    case negotiation(url: String, reason: String)
    /// The connection took no frame for `seconds`: it did not come up, or stopped.
    case stalled(url: String, seconds: Int)

    public var description: String {
        switch self {
        case .unsupportedURL(let url): "\(url): not an http://HOST[:PORT]/PATH URL (https is not supported)"
        case .cannotConnect(let url, let reason): "\(url): cannot connect: \(reason)"
        case .refused(let url, let status, let body):
            "\(url): the endpoint answered \(status)" + (body.isEmpty ? "" : ": \(body.prefix(200))")
        case .malformedResponse(let url, let reason): "\(url): malformed HTTP response: \(reason)"
        case .negotiation(let url, let reason): "\(url): \(reason)"
        case .stalled(let url, let seconds): "\(url): the connection took no frame for \(seconds) s (it did not come up, or stopped)"
        }
    }
}

/// One HTTP/1.1 request and its response over a connection of its own (`Connection: close`): what a
/// WHIP client needs (RFC 9725 §4.2: POST the offer, DELETE the session), nothing more.
struct HTTPExchange {
    struct Response {
        var status: Int
        /// Header names in lower case.
        var headers: [String: String]
        var body: String

        init(_ response: HTTPResponse) {
            status = response.status
            headers = response.headers
            body = String(decoding: response.body, as: UTF8.self)
        }
    }

    /// `http://HOST[:PORT]/PATH` split up; nil for anything else.
    static func split(_ url: String) -> (host: String, port: UInt16, target: String)? {
        guard let parsed = URL(string: url), parsed.scheme?.lowercased() == "http", let host = parsed.host, !host.isEmpty else { return nil }
        let port = parsed.port ?? 80
        guard (1...65_535).contains(port) else { return nil }
        var target = parsed.path.isEmpty ? "/" : parsed.path
        if let query = parsed.query { target += "?" + query }
        return (host, UInt16(port), target)
    }

    static func send(_ method: String, to url: String, contentType: String? = nil, body: String = "",
                     timeout: Int = 10) throws(WHIPError) -> Response {
        guard let (host, port, target) = split(url) else { throw .unsupportedURL(url) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw .cannotConnect(url: url, reason: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        var descriptor: Int32 = -1
        var reason = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let candidate = entry, descriptor < 0 {
            let made = socket(candidate.pointee.ai_family, candidate.pointee.ai_socktype, candidate.pointee.ai_protocol)
            if made >= 0 {
                var limit = timeval(tv_sec: timeout, tv_usec: 0)
                setsockopt(made, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                setsockopt(made, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                if connect(made, candidate.pointee.ai_addr, candidate.pointee.ai_addrlen) == 0 {
                    descriptor = made
                } else {
                    reason = String(cString: strerror(errno))
                    close(made)
                }
            }
            entry = candidate.pointee.ai_next
        }
        guard descriptor >= 0 else { throw .cannotConnect(url: url, reason: reason) }
        defer { close(descriptor) }
        let payload = Array(body.utf8)
        var request = "\(method) \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        if let contentType { request += "Content-Type: \(contentType)\r\n" }
        request += "Content-Length: \(payload.count)\r\n\r\n"
        let bytes = Array(request.utf8) + payload
        var sent = 0
        while sent < bytes.count {
            let wrote = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard wrote > 0 else { throw .cannotConnect(url: url, reason: "sending: \(String(cString: strerror(errno)))") }
            sent += wrote
        }
        return try receiveResponse(from: descriptor, url: url)
    }

    /// Reads the response as it arrives, up to its end or the connection's close; what is kept is
    /// bounded by `HTTPResponseParser.Limits`, whatever the server sends.
    private static func receiveResponse(from descriptor: Int32, url: String) throws(WHIPError) -> Response {
        var parser = HTTPResponseParser()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else { throw .malformedResponse(url: url, reason: "reading: \(String(cString: strerror(errno)))") }
            let response = try naming(url) { () throws(HTTPResponseError) in
                count == 0 ? try parser.finish() : try parser.feed(buffer[..<count])
            }
            if let response { return Response(response) }
        }
    }

    /// What `read` gives, its error named as a malformed response from `url`.
    private static func naming<Result>(_ url: String, _ read: () throws(HTTPResponseError) -> Result) throws(WHIPError) -> Result {
        do throws(HTTPResponseError) {
            return try read()
        } catch {
            throw .malformedResponse(url: url, reason: error.description)
        }
    }

    /// A peer connection's configuration for an endpoint at `url`: loopback candidates only when
    /// the server is on this machine.
    static func configuration(for url: String) -> PeerConnection.Configuration {
        var configuration = PeerConnection.Configuration()
        if let host = split(url)?.host, ["127.0.0.1", "localhost"].contains(host) {
            configuration.localAddresses = ["127.0.0.1:0"]
            configuration.includeLoopback = true
        }
        return configuration
    }

    /// WHIP's and WHEP's exchange (RFC 9725 §4.2, the WHEP draft §4): `connection`'s offer POSTed as
    /// `application/sdp`, the 201's answer applied. Returns the session's URL (its Location), which
    /// a DELETE ends.
    static func offer(_ connection: PeerConnection, to url: String) throws -> String? {
        let response = try send("POST", to: url, contentType: "application/sdp", body: try connection.createOffer())
        guard response.status == 201 else { throw WHIPError.refused(url: url, status: response.status, body: response.body) }
        do { try connection.setRemoteDescription(response.body, type: .answer) } catch {
            throw WHIPError.negotiation(url: url, reason: "the answer: \(error)")
        }
        return response.headers["location"].flatMap { URL(string: $0, relativeTo: URL(string: url))?.absoluteString }
    }

    /// The status line, headers and body (RFC 9112 framing) of a whole response up to the close.
    static func parse(_ bytes: [UInt8], url: String) throws(WHIPError) -> Response {
        Response(try naming(url) { () throws(HTTPResponseError) in try HTTPResponseParser.parse(bytes) })
    }
}

/// Hands raw frames from one graph (a `sluice run` pipeline) to another (a peer connection's
/// sending pipeline): a bounded queue whose producer waits when it is full, so the pipeline runs
/// no further ahead of the connection than `capacity` frames (and waits for it to connect).
final class FrameHandOver<Frame: MediaPayload>: @unchecked Sendable {
    let capacity = 8
    private let lock = ConditionLock()
    private var frames: [Frame] = []
    private var format: MediaFormat?
    private var ended = false
    private var abandoned = false
    /// The consumer has taken the end.
    private var drained = false

    func setFormat(_ format: MediaFormat) { lock.withLock { self.format = format; lock.broadcast() } }

    /// The format, once the producing graph has started; nil after `timeout`.
    func waitForFormat(timeout: ClockTime) -> MediaFormat? {
        let deadline = SystemClock().now + timeout
        return lock.withLock {
            while format == nil, !abandoned, SystemClock().now < deadline { lock.wait(until: deadline) }
            return format
        }
    }

    /// Adds `frame`, waiting while the queue is full, at most `patience`; false if the consumer is
    /// gone or took nothing for that long.
    func put(_ frame: Frame, patience: ClockTime) -> Bool {
        let deadline = SystemClock().now + patience
        return lock.withLock {
            while frames.count >= capacity, !abandoned, SystemClock().now < deadline { lock.wait(until: deadline) }
            guard !abandoned, frames.count < capacity else { return false }
            frames.append(frame)
            lock.broadcast()
            return true
        }
    }

    func end() { lock.withLock { ended = true; lock.broadcast() } }
    /// The consumer stops taking: a waiting producer goes on (dropping what it has).
    func abandon() { lock.withLock { abandoned = true; lock.broadcast() } }

    enum Taken { case frame(Frame), end, none }

    func take(waiting: ClockTime) -> Taken {
        let deadline = SystemClock().now + waiting
        return lock.withLock {
            while frames.isEmpty, !ended, SystemClock().now < deadline { lock.wait(until: deadline) }
            if !frames.isEmpty {
                lock.broadcast()
                return .frame(frames.removeFirst())
            }
            if ended { drained = true; lock.broadcast(); return .end }
            return .none
        }
    }

    /// Waits until the consumer has taken everything and the end, up to `timeout`; whether it did.
    func waitUntilDrained(timeout: ClockTime) -> Bool {
        let deadline = SystemClock().now + timeout
        return lock.withLock {
            while !drained, !abandoned, SystemClock().now < deadline { lock.wait(until: deadline) }
            return drained
        }
    }
}

/// The end of a `sluice run` pipeline that feeds a `FrameHandOver`.
final class HandOverSink<Frame: MediaPayload>: MediaSink {
    let name: String
    let inputCaps: Caps
    let handOver: FrameHandOver<Frame>
    /// The endpoint, for the error when the connection takes nothing for `patience`.
    let url: String
    static var patience: Int { 20 }

    init(handOver: FrameHandOver<Frame>, caps: Caps, url: String, name: String) {
        self.handOver = handOver
        inputCaps = caps
        self.url = url
        self.name = name
    }

    /// `consume` waits for the connection to take frames.
    var execution: NodeExecution { .ownThread }
    func start(input: MediaFormat, context: NodeContext) throws { handOver.setFormat(input) }
    func consume(_ frame: Frame) throws {
        guard handOver.put(frame, patience: .seconds(Double(Self.patience))) else { throw WHIPError.stalled(url: url, seconds: Self.patience) }
    }
    func finish() throws { handOver.end() }
    func close() { handOver.end() }
}

/// The start of a pipeline fed by another graph's `HandOverSink`: a peer connection's sending
/// pipeline (`whip`), or a `sluice run` pipeline fed by a remote track (`whep`).
final class HandOverSource<Frame: MediaPayload>: MediaSource {
    let name: String
    let handOver: FrameHandOver<Frame>
    /// Frames after which the source ends (a `whep` source's `frames`); nil: at the producer's end.
    let maxFrames: Int?
    private var produced = 0
    private var clock: (any MediaClock)?

    init(handOver: FrameHandOver<Frame>, name: String, maxFrames: Int? = nil) {
        self.handOver = handOver
        self.name = name
        self.maxFrames = maxFrames
    }

    var execution: NodeExecution { .ownThread }

    func outputCaps() throws -> Caps {
        guard let format = handOver.waitForFormat(timeout: .seconds(10)) else { throw WHIPError.negotiation(url: name, reason: "the pipeline gave no format") }
        return Caps(format)
    }

    func start(output: MediaFormat, context: NodeContext) throws { clock = context.clock }

    func produce() throws -> Production<Frame> {
        if let maxFrames, produced >= maxFrames { return .end }
        switch handOver.take(waiting: .milliseconds(100)) {
        case .frame(let frame):
            produced += 1
            return .item(frame)
        case .end: return .end
        case .none: return .wait(until: clock!.now)
        }
    }

    func close() { handOver.abandon() }
}

/// Publishes one raw track of a `sluice run` pipeline to a WHIP endpoint (RFC 9725): a peer
/// connection with the track, its offer POSTed as `application/sdp`, the 201's answer applied; at
/// the end the connection is closed and the session DELETEd at its Location (§4.2).
final class WHIPPublisher: @unchecked Sendable {
    let url: String
    let track: LocalTrack
    private let finishHandOver: (ClockTime) -> Bool
    private let abandonHandOver: () -> Void
    private let registry: CodecRegistry
    private let bitrate: Int?
    private let isVideo: Bool
    private var connection: PeerConnection?
    private var session: String?

    /// Publishes what `handOver` (of video or audio frames) carries.
    init<Frame: MediaPayload>(url: String, handOver: FrameHandOver<Frame>, bitrate: Int?, registry: CodecRegistry) {
        self.url = url
        self.registry = registry
        self.bitrate = bitrate
        if let pictures = handOver as? FrameHandOver<VideoFrame> {
            isVideo = true
            track = LocalTrack(.video { graph in graph.add(HandOverSource(handOver: pictures, name: "whip-input")) })
        } else if let samples = handOver as? FrameHandOver<AudioFrame> {
            isVideo = false
            track = LocalTrack(.audio { graph in graph.add(HandOverSource(handOver: samples, name: "whip-input")) })
        } else {
            preconditionFailure("a WHIP track carries video or audio frames, not \(Frame.self)")
        }
        finishHandOver = { handOver.waitUntilDrained(timeout: $0) }
        abandonHandOver = { handOver.abandon() }
    }

    /// Makes the connection and negotiates it with the endpoint; media flows once it connects.
    func start() throws {
        var configuration = HTTPExchange.configuration(for: url)
        configuration.receive = []
        if let bitrate { if isVideo { configuration.videoBitrate = bitrate } else { configuration.audioBitrate = bitrate } }
        let connection = try PeerConnectionFactory(registry: registry, capabilities: registry.capabilities).makePeerConnection(configuration)
        self.connection = connection
        do {
            try connection.addTrack(track)
            session = try HTTPExchange.offer(connection, to: url)
        } catch {
            stop()
            throw error
        }
    }

    /// After the pipeline's end: lets the connection send what is queued, then closes it and ends
    /// the session.
    func finish() {
        _ = finishHandOver(.seconds(10))
        // The last frames' packets, and answers to NACKs for them.
        Thread.sleep(forTimeInterval: 0.5)
        stop()
    }

    func stop() {
        abandonHandOver()
        connection?.close()
        connection = nil
        if let session {
            _ = try? HTTPExchange.send("DELETE", to: session)
            self.session = nil
        }
    }
}
