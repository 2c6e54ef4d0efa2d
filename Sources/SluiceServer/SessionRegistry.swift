/// The open sessions of a server, by resource id: each `201 Created` adds one, each `DELETE` and the shutdown
/// remove them. Once closed, it refuses new sessions so none outlives the server.
actor SessionRegistry {
    /// One open session and the URL path segments it lives under.
    struct Entry: Sendable {
        let kind: WebRTCSessionKind
        let name: String
        let session: any WebRTCSession
        var eTag: String
    }

    private var entries: [String: Entry] = [:]
    private var isClosed = false
    private let maxSessions: Int

    init(maxSessions: Int) {
        self.maxSessions = maxSessions
    }

    /// Why a session could not be added.
    enum RegistrationRefusal: Error {
        case shuttingDown
        case full
    }

    /// Adds a session under a new random id and returns the id; refuses when closed or full.
    func register(_ kind: WebRTCSessionKind, name: String, session: any WebRTCSession) throws(RegistrationRefusal)
        -> (id: String, eTag: String)
    {
        if isClosed { throw .shuttingDown }
        if entries.count >= maxSessions { throw .full }
        var id = Self.randomToken()
        while entries[id] != nil { id = Self.randomToken() }
        let eTag = "\"\(Self.randomToken())\""
        entries[id] = Entry(kind: kind, name: name, session: session, eTag: eTag)
        return (id, eTag)
    }

    /// The session at `/KIND/NAME/ID`, if open.
    func entry(_ kind: WebRTCSessionKind, name: String, id: String) -> Entry? {
        guard let entry = entries[id], entry.kind == kind, entry.name == name else { return nil }
        return entry
    }

    /// Removes the session at `/KIND/NAME/ID` and returns it, so that the caller closes it once.
    func remove(_ kind: WebRTCSessionKind, name: String, id: String) -> Entry? {
        guard entry(kind, name: name, id: id) != nil else { return nil }
        return entries.removeValue(forKey: id)
    }

    /// A new entity-tag for the session `id` (after an ICE restart, RFC 9725 §4.3.2); nil if it is gone.
    func renewETag(_ id: String) -> String? {
        guard entries[id] != nil else { return nil }
        let eTag = "\"\(Self.randomToken())\""
        entries[id]?.eTag = eTag
        return eTag
    }

    /// The number of open sessions.
    var count: Int { entries.count }

    /// Refuses new sessions from now on and closes every open one, concurrently.
    func closeAll() async {
        isClosed = true
        let open = entries.values.map(\.session)
        entries.removeAll()
        await withTaskGroup(of: Void.self) { group in
            for session in open {
                group.addTask { await session.close() }
            }
        }
    }

    /// 128 random bits as 32 lowercase hex digits: URL-safe, unguessable.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return hex16(high) + hex16(low)
    }

    private static func hex16(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
