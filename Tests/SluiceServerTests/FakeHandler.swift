import Hummingbird
import SluiceServer

/// What the fake handler and its sessions saw.
actor CallLog {
    struct Start: Equatable {
        let kind: String
        let name: String
        let offer: String
    }

    private(set) var starts: [Start] = []
    private(set) var closedSessions: [Int] = []
    private(set) var fragments: [String] = []
    private var nextSession = 0

    func recordStart(_ kind: String, _ name: String, _ offer: String) -> Int {
        starts.append(Start(kind: kind, name: name, offer: offer))
        nextSession += 1
        return nextSession
    }

    func recordClose(_ session: Int) { closedSessions.append(session) }
    func recordFragment(_ fragment: String) { fragments.append(fragment) }
}

/// Lets `count` callers through together: each waits until all have arrived, which only concurrent requests can do.
actor Barrier {
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private let count: Int

    init(count: Int) { self.count = count }

    func arrive() async {
        if waiting.count + 1 >= count {
            for continuation in waiting { continuation.resume() }
            waiting.removeAll()
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}

struct FakeSession: WebRTCSession {
    let number: Int
    let answer: String
    let supportsTrickleICE: Bool
    let log: CallLog

    func addRemoteCandidates(sdpFragment: String) async throws -> String? {
        guard sdpFragment.hasPrefix("a=") else { throw WebRTCSessionError.malformedFragment("expected a= lines") }
        await log.recordFragment(sdpFragment)
        // A fragment with new credentials is an ICE restart: answered with the server's new ones.
        return sdpFragment.contains("a=ice-ufrag:") ? "a=ice-ufrag:srv2\r\na=ice-pwd:server-password-of-22chars\r\n" : nil
    }

    func close() async { await log.recordClose(number) }
}

/// An internal failure whose text must not reach the client.
struct SecretInternalFailure: Error, CustomStringConvertible {
    var description: String { "open /var/secret/key.pem failed" }
}

/// Answers a canned SDP for known names, refuses the rest with the errors the real handler will use, records calls.
struct FakeHandler: WebRTCSessionHandler {
    static let answer = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=fake-answer\r\n"

    let log = CallLog()
    var egressNames = ["cam", "loop file"]
    var ingestNames = ["studio"]
    var trickle = false
    var listsNames = true
    var barrier: Barrier?

    func startEgress(name: String, offer: String) async throws -> any WebRTCSession {
        try await start("whep", name: name, offer: offer, known: egressNames)
    }

    func startIngest(name: String, offer: String) async throws -> any WebRTCSession {
        try await start("whip", name: name, offer: offer, known: ingestNames)
    }

    func streamNames() async -> WebRTCStreamNames? {
        listsNames ? WebRTCStreamNames(egress: egressNames, ingest: ingestNames) : nil
    }

    private func start(_ kind: String, name: String, offer: String, known: [String]) async throws -> any WebRTCSession {
        await barrier?.arrive()
        guard known.contains(name) else { throw WebRTCSessionError.unknownName(name) }
        guard offer.hasPrefix("v=0") else { throw WebRTCSessionError.malformedOffer("first line is not v=0") }
        if offer.contains("a=explode") { throw SecretInternalFailure() }
        let number = await log.recordStart(kind, name, offer)
        return FakeSession(number: number, answer: Self.answer, supportsTrickleICE: trickle, log: log)
    }
}
