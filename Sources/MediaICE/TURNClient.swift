// A TURN client over UDP (RFC 8656) as a value: fed datagrams from the server and the time, it gives
// datagrams for the server, the next time it wants to be called and events.
import MediaCore
import MediaSTUN

/// A sans-I/O TURN client over UDP (RFC 8656): allocation with the long-term credential mechanism
/// (§7, RFC 8489 §9.2), refreshes, permissions (§9), Send and Data indications (§11) and channels (§12).
///
/// The owner's loop sends every datagram from `pollTransmit()` to `server`, gives every datagram that
/// comes from it to `handleReceive`, calls `handleTimeout` at `nextTimeout` and drains `pollEvent()`.
/// Requests are retransmitted on the RFC 8489 §6.2.1 schedule and matched by transaction ID.
public struct TURNClient: Sendable {
    /// The TURN server's address: every datagram from `pollTransmit()` goes there.
    public let server: TransportAddress
    public let configuration: TURNConfiguration
    public private(set) var state: TURNState = .idle
    /// Our relayed transport address on the server, once allocated.
    public private(set) var relayedAddress: TransportAddress?
    /// Our server-reflexive address as the server sees it (XOR-MAPPED-ADDRESS), once allocated.
    public private(set) var mappedAddress: TransportAddress?
    public private(set) var statistics = TURNStatistics()

    private let username: String
    private let password: String
    /// Realm, nonce and key once the server challenged us (RFC 8489 §9.2.3).
    private var credentials: Credentials?
    private var transactions: [Transaction] = []
    private var transmitQueue: [[UInt8]] = []
    private var eventQueue: [TURNEvent] = []
    /// When to send the next Refresh, and when the allocation runs out without one.
    private var allocationRefreshAt: ClockTime?
    private var allocationExpiresAt: ClockTime?
    private var permissions: [IPAddress: Permission] = [:]
    private var channels: [TransportAddress: ChannelBinding] = [:]
    private var peersByChannel: [UInt16: TransportAddress] = [:]
    private var nextChannelNumber: UInt16 = TURNClient.firstChannel

    /// RFC 8656 §12: channel numbers 0x4000 through 0x4FFF.
    static let firstChannel: UInt16 = 0x4000
    static let lastChannel: UInt16 = 0x4FFF
    /// REQUESTED-TRANSPORT value for UDP (RFC 8656 §18.7).
    static let udpTransport: UInt8 = 17
    /// The lifetime a server gives when its success response carries none (RFC 8656 §7.2).
    static let defaultLifetime: UInt32 = 600

    public init(server: TransportAddress, username: String, password: String,
                configuration: TURNConfiguration = TURNConfiguration()) {
        self.server = server
        self.username = username
        self.password = password
        self.configuration = configuration
    }

    // MARK: Driving

    /// Sends the first Allocate, without credentials (RFC 8656 §7.1): the server's 401 brings the realm
    /// and nonce. Does nothing unless the client is idle.
    public mutating func start(now: ClockTime) {
        guard state == .idle else { return }
        state = .allocating
        startTransaction(.allocate, now: now)
    }

    /// The next datagram to send to `server`, if any.
    public mutating func pollTransmit() -> [UInt8]? {
        transmitQueue.isEmpty ? nil : transmitQueue.removeFirst()
    }

    /// The next event, if any.
    public mutating func pollEvent() -> TURNEvent? {
        eventQueue.isEmpty ? nil : eventQueue.removeFirst()
    }

    /// When `handleTimeout` should be called next: a retransmission, a give-up, a refresh or the
    /// allocation's expiry. Nil when nothing is pending.
    public var nextTimeout: ClockTime? {
        var times = transactions.map(\.deadline)
        if state == .allocated {
            times += [allocationRefreshAt, allocationExpiresAt].compactMap { $0 }
            times += permissions.values.compactMap(\.refreshAt)
            times += channels.values.compactMap(\.refreshAt)
        }
        return times.min()
    }

    /// Retransmits requests whose RTO passed, fails those out of retransmissions and starts the refreshes
    /// that are due (RFC 8489 §6.2.1; RFC 8656 §7.2, §9, §12).
    public mutating func handleTimeout(now: ClockTime) {
        var index = 0
        while index < transactions.count {
            guard transactions[index].deadline <= now else { index += 1; continue }
            if transactions[index].transmissions >= configuration.maxTransmissions {
                let expired = transactions.remove(at: index)
                fail(expired.purpose, .timeout)
                continue
            }
            retransmit(at: index, now: now)
            index += 1
        }
        guard state == .allocated else { return }
        if let expiry = allocationExpiresAt, expiry <= now {
            failAllocation(.allocationExpired)
            return
        }
        if let refresh = allocationRefreshAt, refresh <= now {
            allocationRefreshAt = nil
            startTransaction(.refresh(lifetime: configuration.requestedLifetime), now: now)
        }
        for (ip, permission) in permissions {
            if let refresh = permission.refreshAt, refresh <= now {
                permissions[ip]?.refreshAt = nil
                startTransaction(.createPermission(ip), now: now)
            }
        }
        for (peer, binding) in channels {
            if let refresh = binding.refreshAt, refresh <= now {
                channels[peer]?.refreshAt = nil
                startTransaction(.channelBind(peer, channel: binding.channel), now: now)
            }
        }
    }

    /// Takes a datagram received from `source`. STUN responses and indications from the server are
    /// handled here; Data indications and ChannelData come out as `.peerData` (RFC 8656 §11.4, §12.6);
    /// anything not from the server, or whose first byte is neither STUN's (0-3) nor ChannelData's
    /// (64-79, RFC 7983), is `.notTURN`.
    public mutating func handleReceive(_ bytes: UnsafeRawBufferPointer, from source: TransportAddress,
                                       at now: ClockTime) -> TURNReceiveResult {
        guard source == server else { return .notTURN }
        if TURNChannelData.looksLikeChannelData(bytes) { return receiveChannelData(bytes) }
        // RFC 7983 §7: a first byte of 0-3 is STUN; from the server, one that does not parse is a drop.
        guard let first = bytes.first, first < 4 else { return .notTURN }
        let message: STUNMessage
        do { message = try STUNMessage(parsing: bytes) } catch { return drop(.malformed(error)) }
        switch message.messageClass {
        case .request:
            return drop(.unexpectedRequest)
        case .indication:
            return receiveIndication(message)
        case .successResponse, .errorResponse:
            return receiveResponse(message, bytes: bytes, now: now)
        }
    }

    /// `handleReceive` for a datagram in an array.
    public mutating func handleReceive(_ bytes: [UInt8], from source: TransportAddress, at now: ClockTime)
        -> TURNReceiveResult
    {
        bytes.withUnsafeBytes { handleReceive($0, from: source, at: now) }
    }

    // MARK: Peers

    /// Asks the server to let `peer`'s datagrams through (CreatePermission, RFC 8656 §9), now if allocated or
    /// as soon as the allocation succeeds; the permission is then renewed every
    /// `permissionRefreshInterval`. Does nothing if one exists or is asked for.
    public mutating func createPermission(for peer: IPAddress, now: ClockTime) {
        guard permissions[peer] == nil, isUsable else { return }
        permissions[peer] = Permission()
        if state == .allocated { startTransaction(.createPermission(peer), now: now) }
    }

    /// Binds a channel to `peer` (ChannelBind, RFC 8656 §12.1), now if allocated or as soon as the allocation
    /// succeeds; renewed every `channelRefreshInterval`. Returns the channel number (the one already bound
    /// to `peer` if any), or nil when the client failed or closed or all 4096 numbers are taken.
    @discardableResult
    public mutating func bindChannel(to peer: TransportAddress, now: ClockTime) -> UInt16? {
        guard isUsable else { return nil }
        if let binding = channels[peer] { return binding.channel }
        guard nextChannelNumber <= Self.lastChannel else { return nil }
        let channel = nextChannelNumber
        nextChannelNumber += 1
        channels[peer] = ChannelBinding(channel: channel)
        peersByChannel[channel] = peer
        if state == .allocated { startTransaction(.channelBind(peer, channel: channel), now: now) }
        return channel
    }

    /// The datagram that carries `bytes` to `peer` through the relay: ChannelData on the peer's bound
    /// channel (RFC 8656 §12.5), else a Send indication once the peer's permission exists (§11.1). Before
    /// that the bytes wait (and CreatePermission is sent if nobody asked for it) and come out of
    /// `pollTransmit()` when the permission is created; nil then, and when dropped (counted).
    public mutating func send(_ bytes: [UInt8], to peer: TransportAddress, now: ClockTime) -> [UInt8]? {
        guard isUsable else { return count(outgoingDrop: "not-allocated") }
        if let binding = channels[peer], binding.isBound {
            statistics.channelDataSent += 1
            return TURNChannelData(channel: binding.channel, data: bytes).serialized()
        }
        if let permission = permissions[peer.ip], permission.isInstalled {
            return sendIndication(bytes, to: peer)
        }
        createPermission(for: peer.ip, now: now)
        guard let queued = permissions[peer.ip]?.queued.count, queued < configuration.maxQueuedPerPeer else {
            return count(outgoingDrop: "queue-full")
        }
        permissions[peer.ip]?.queued.append(Queued(peer: peer, bytes: bytes))
        return nil
    }

    /// Ends the allocation: a Refresh with LIFETIME 0 (RFC 8656 §7.2); `.closed` follows its response or
    /// its timeout. Before any allocation it just closes. Requests in flight are abandoned.
    public mutating func close(now: ClockTime) {
        switch state {
        case .allocated:
            transactions.removeAll()
            state = .closing
            startTransaction(.refresh(lifetime: 0), now: now)
        case .idle, .allocating:
            transactions.removeAll()
            finishClosing()
        case .closing, .closed, .failed:
            break
        }
    }

    // MARK: Requests

    private mutating func startTransaction(_ purpose: Purpose, now: ClockTime, staleNonceRetries: Int = 0) {
        var message = STUNMessage(method: purpose.method, messageClass: .request, attributes: purpose.attributes)
        if let software = configuration.software { message.attributes.insert(.software(software), at: 0) }
        if purpose == .allocate, let lifetime = configuration.requestedLifetime { message.attributes.append(.lifetime(lifetime)) }
        let bytes: [UInt8]
        if let credentials {
            message.attributes += [.username(username), .realm(credentials.realm), .nonce(credentials.nonce)]
            bytes = message.serialized(integrity: credentials.key)
        } else {
            bytes = message.serialized()
        }
        transmitQueue.append(bytes)
        statistics.requestsSent += 1
        transactions.append(Transaction(
            id: message.transactionID, purpose: purpose, bytes: bytes, authenticated: credentials != nil,
            staleNonceRetries: staleNonceRetries, rto: configuration.initialRTO,
            deadline: now + configuration.initialRTO))
    }

    /// RFC 8489 §6.2.1: resend, double the RTO; after the last transmission wait Rm × the first RTO.
    private mutating func retransmit(at index: Int, now: ClockTime) {
        transmitQueue.append(transactions[index].bytes)
        statistics.retransmissions += 1
        transactions[index].transmissions += 1
        transactions[index].rto = ClockTime(nanoseconds: transactions[index].rto.nanoseconds * 2)
        let wait = transactions[index].transmissions >= configuration.maxTransmissions
            ? ClockTime(nanoseconds: configuration.initialRTO.nanoseconds * configuration.finalWaitMultiplier)
            : transactions[index].rto
        transactions[index].deadline = now + wait
    }

    // MARK: Receiving

    private mutating func receiveResponse(_ message: STUNMessage, bytes: UnsafeRawBufferPointer,
                                          now: ClockTime) -> TURNReceiveResult {
        guard let index = transactions.firstIndex(where: { $0.id == message.transactionID }),
              transactions[index].purpose.method == message.method
        else { return drop(.unmatchedTransaction) }
        let transaction = transactions[index]
        let isChallenge = message.messageClass == .errorResponse
            && [401, 438].contains(message.errorCode?.code ?? 0)
        if transaction.authenticated, let key = credentials?.key, !isChallenge {
            // RFC 8489 §9.2.5: a response to an authenticated request must carry a valid MESSAGE-INTEGRITY;
            // an error response without one is taken (servers send some unsigned), a forged one is not.
            do {
                try STUNMessage.verifyIntegrity(of: bytes, key: key)
            } catch {
                if message.messageClass == .successResponse || error.reason != "missing-integrity" {
                    return drop(.badIntegrity)
                }
            }
        }
        transactions.remove(at: index)
        statistics.responsesReceived += 1
        if message.messageClass == .successResponse {
            succeed(transaction.purpose, message, now: now)
        } else {
            handleErrorResponse(message, to: transaction, now: now)
        }
        return .handled
    }

    /// 401 and 438 bring credentials and a new try (RFC 8489 §9.2.5, RFC 8656 §7.3); other errors fail
    /// the request by name.
    private mutating func handleErrorResponse(_ message: STUNMessage, to transaction: Transaction, now: ClockTime) {
        let code = message.errorCode?.code ?? 0
        switch code {
        case 401:
            guard !transaction.authenticated else { return fail(transaction.purpose, .wrongCredentials) }
            guard let realm = message.realm, let nonce = message.nonce else {
                return fail(transaction.purpose, .missingRealmOrNonce)
            }
            credentials = Credentials(realm: realm, nonce: nonce,
                                      key: .longTerm(username: username, realm: realm, password: password))
            startTransaction(transaction.purpose, now: now)
        case 438:
            guard let nonce = message.nonce, var updated = credentials else {
                return fail(transaction.purpose, .missingRealmOrNonce)
            }
            guard transaction.staleNonceRetries < configuration.maxStaleNonceRetries else {
                return fail(transaction.purpose, .staleNonce)
            }
            updated.nonce = nonce
            if let realm = message.realm, realm != updated.realm {
                updated = Credentials(realm: realm, nonce: nonce,
                                      key: .longTerm(username: username, realm: realm, password: password))
            }
            credentials = updated
            startTransaction(transaction.purpose, now: now, staleNonceRetries: transaction.staleNonceRetries + 1)
        case 437:
            fail(transaction.purpose, .allocationMismatch)
        case 441:
            fail(transaction.purpose, .wrongCredentials)
        default:
            fail(transaction.purpose, .serverError(code: code))
        }
    }

    private mutating func succeed(_ purpose: Purpose, _ message: STUNMessage, now: ClockTime) {
        switch purpose {
        case .allocate:
            guard state == .allocating else { return }
            guard let relayed = message.xorRelayedAddress else { return failAllocation(.missingRelayedAddress) }
            let lifetime = message.lifetime ?? Self.defaultLifetime
            relayedAddress = relayed
            mappedAddress = message.xorMappedAddress
            state = .allocated
            scheduleAllocationRefresh(lifetime: lifetime, now: now)
            eventQueue.append(.allocated(relayed: relayed, mapped: message.xorMappedAddress, lifetime: lifetime))
            for ip in permissions.keys { startTransaction(.createPermission(ip), now: now) }
            for (peer, binding) in channels { startTransaction(.channelBind(peer, channel: binding.channel), now: now) }
        case .refresh(let requested):
            if requested == 0 { return finishClosing() }
            guard state == .allocated else { return }
            let lifetime = message.lifetime ?? Self.defaultLifetime
            scheduleAllocationRefresh(lifetime: lifetime, now: now)
            eventQueue.append(.refreshed(lifetime: lifetime))
        case .createPermission(let ip):
            installPermission(ip, now: now)
        case .channelBind(let peer, let channel):
            guard channels[peer]?.channel == channel else { return }
            let wasBound = channels[peer]?.isBound ?? false
            channels[peer]?.isBound = true
            channels[peer]?.refreshAt = now + configuration.channelRefreshInterval
            // RFC 8656 §12.2: a ChannelBind also installs or refreshes the permission for the peer's IP.
            installPermission(peer.ip, now: now)
            if !wasBound { eventQueue.append(.channelBound(peer, channel: channel)) }
        }
    }

    /// Marks `ip`'s permission installed, schedules its renewal and releases the datagrams that waited.
    private mutating func installPermission(_ ip: IPAddress, now: ClockTime) {
        var permission = permissions[ip] ?? Permission()
        let wasInstalled = permission.isInstalled
        permission.isInstalled = true
        if permission.refreshAt == nil || !wasInstalled {
            permission.refreshAt = now + configuration.permissionRefreshInterval
        }
        let queued = permission.queued
        permission.queued = []
        permissions[ip] = permission
        if !wasInstalled { eventQueue.append(.permissionCreated(ip)) }
        for datagram in queued {
            if let bytes = send(datagram.bytes, to: datagram.peer, now: now) { transmitQueue.append(bytes) }
        }
    }

    /// RFC 8656 §7.2: refresh a minute before the end, or at half the lifetime when it is short.
    private mutating func scheduleAllocationRefresh(lifetime: UInt32, now: ClockTime) {
        let seconds = Int64(lifetime)
        let delay = seconds > 120 ? seconds - 60 : seconds / 2
        allocationRefreshAt = now + ClockTime(nanoseconds: delay * 1_000_000_000)
        allocationExpiresAt = now + ClockTime(nanoseconds: seconds * 1_000_000_000)
    }

    private mutating func fail(_ purpose: Purpose, _ error: TURNError) {
        switch purpose {
        case .allocate:
            failAllocation(error)
        case .refresh(let requested):
            if requested == 0 { finishClosing() } else { failAllocation(error) }
        case .createPermission(let ip):
            let dropped = permissions.removeValue(forKey: ip)?.queued.count ?? 0
            if dropped > 0 { statistics.drops["permission-failed", default: 0] += dropped }
            eventQueue.append(.permissionFailed(ip, error))
        case .channelBind(let peer, let channel):
            channels[peer] = nil
            peersByChannel[channel] = nil
            eventQueue.append(.channelBindFailed(peer, error))
        }
    }

    private mutating func failAllocation(_ error: TURNError) {
        guard isUsable else { return }
        state = .failed(error)
        clearAllocation()
        eventQueue.append(.failed(error))
    }

    private mutating func finishClosing() {
        state = .closed
        clearAllocation()
        eventQueue.append(.closed)
    }

    private mutating func clearAllocation() {
        transactions.removeAll()
        allocationRefreshAt = nil
        allocationExpiresAt = nil
        let queued = permissions.values.reduce(0) { $0 + $1.queued.count }
        if queued > 0 { statistics.drops["not-allocated", default: 0] += queued }
        permissions.removeAll()
        channels.removeAll()
        peersByChannel.removeAll()
    }

    private mutating func receiveIndication(_ message: STUNMessage) -> TURNReceiveResult {
        guard message.method == .data else { return drop(.unexpectedIndication) }
        guard let peer = message.xorPeerAddress, let data = message.data else {
            return drop(.incompleteDataIndication)
        }
        statistics.peerDataReceived += 1
        return .peerData(data, from: peer)
    }

    private mutating func receiveChannelData(_ bytes: UnsafeRawBufferPointer) -> TURNReceiveResult {
        let channelData: TURNChannelData
        do { channelData = try TURNChannelData(parsing: bytes) } catch { return drop(.malformed(error)) }
        guard let peer = peersByChannel[channelData.channel], channels[peer]?.isBound == true else {
            return drop(.unknownChannel)
        }
        statistics.peerDataReceived += 1
        return .peerData(channelData.data, from: peer)
    }

    // MARK: Helpers

    /// Whether the client may still take requests: not failed, not closing or closed.
    private var isUsable: Bool {
        switch state {
        case .idle, .allocating, .allocated: true
        case .closing, .closed, .failed: false
        }
    }

    private mutating func sendIndication(_ bytes: [UInt8], to peer: TransportAddress) -> [UInt8] {
        statistics.sendIndicationsSent += 1
        return STUNMessage(method: .send, messageClass: .indication,
                           attributes: [.xorPeerAddress(peer), .data(bytes)]).serialized()
    }

    private mutating func drop(_ reason: TURNDropReason) -> TURNReceiveResult {
        statistics.drops[reason.reason, default: 0] += 1
        return .dropped(reason)
    }

    private mutating func count(outgoingDrop reason: String) -> [UInt8]? {
        statistics.drops[reason, default: 0] += 1
        return nil
    }
}

// MARK: - Private state

extension TURNClient {
    /// What a request is for; it decides the method, the attributes and what its answer does.
    enum Purpose: Hashable, Sendable {
        case allocate
        /// Refresh with this LIFETIME (nil: none, the server's default; 0: delete the allocation).
        case refresh(lifetime: UInt32?)
        case createPermission(IPAddress)
        case channelBind(TransportAddress, channel: UInt16)
    }

    struct Transaction: Sendable {
        var id: STUNTransactionID
        var purpose: Purpose
        /// The request as sent: retransmissions resend the same bytes (RFC 8489 §6.2.1).
        var bytes: [UInt8]
        /// Whether the request carried USERNAME, REALM, NONCE and MESSAGE-INTEGRITY.
        var authenticated: Bool
        var staleNonceRetries: Int
        var transmissions = 1
        var rto: ClockTime
        /// When to retransmit, or give up after the last transmission.
        var deadline: ClockTime

        init(id: STUNTransactionID, purpose: Purpose, bytes: [UInt8], authenticated: Bool, staleNonceRetries: Int,
             rto: ClockTime, deadline: ClockTime) {
            self.id = id
            self.purpose = purpose
            self.bytes = bytes
            self.authenticated = authenticated
            self.staleNonceRetries = staleNonceRetries
            self.rto = rto
            self.deadline = deadline
        }
    }

    struct Credentials: Sendable {
        var realm: String
        var nonce: String
        var key: STUNIntegrityKey
    }

    struct Queued: Sendable {
        var peer: TransportAddress
        var bytes: [UInt8]
    }

    struct Permission: Sendable {
        var isInstalled = false
        /// When to renew; nil while a CreatePermission is in flight.
        var refreshAt: ClockTime?
        /// Datagrams waiting for the permission.
        var queued: [Queued] = []
    }

    struct ChannelBinding: Sendable {
        var channel: UInt16
        var isBound = false
        /// When to renew; nil while a ChannelBind is in flight.
        var refreshAt: ClockTime?
    }
}

extension TURNClient.Purpose {
    var method: STUNMethod {
        switch self {
        case .allocate: .allocate
        case .refresh: .refresh
        case .createPermission: .createPermission
        case .channelBind: .channelBind
        }
    }

    /// The request's own attributes, before the credentials (RFC 8656 §7.1, §7.2, §9.1, §12.1).
    var attributes: [STUNAttribute] {
        switch self {
        case .allocate: [.requestedTransport(TURNClient.udpTransport)]
        case .refresh(let lifetime): lifetime.map { [.lifetime($0)] } ?? []
        case .createPermission(let ip): [.xorPeerAddress(TransportAddress(ip: ip, port: 0))]
        case .channelBind(let peer, let channel): [.channelNumber(channel), .xorPeerAddress(peer)]
        }
    }
}
