import CSSL
import MediaCore
import MediaSRTP

/// One DTLS 1.2 association (RFC 6347) negotiating SRTP keys (RFC 5764), sans I/O: datagrams and the time
/// go in through `start`, `handleDatagram` and `handleTimeout`; datagrams to send, events and the next
/// timer come out through `pollTransmit`, `pollEvent` and `nextTimeout`.
///
/// OpenSSL runs the handshake over a BIO that keeps datagram boundaries, with the largest datagram set to
/// `mtu` (a flight may take several datagrams; OpenSSL fragments handshake messages and reassembles the
/// peer's, RFC 6347 §4.2.3). Only DTLS 1.2 is offered and accepted: a peer offering DTLS 1.3 as well
/// (Chromium) negotiates 1.2.
///
/// The peer must present a certificate; any certificate is accepted by OpenSSL, self-signed included, and
/// authenticated by its digest against the remote fingerprint from SDP (RFC 8122 §5, RFC 5763 §5). The
/// fingerprint may come after the handshake has started or even completed: `.connected` is reported only
/// once it matches.
///
/// Timers, honestly: OpenSSL's retransmission timer (RFC 6347 §4.2.4) reads the real clock inside
/// `DTLSv1_get_timeout` and `DTLSv1_handle_timeout`. `nextTimeout` is the last time given plus what
/// OpenSSL says is left, and `handleTimeout` retransmits only once the real time has passed too, so
/// retransmissions follow real time whatever clock drives the association. The timer starts at
/// `initialRetransmissionTimeout` and doubles on each expiry up to 60 s (RFC 6347 §4.2.4.1). The handshake
/// timeout, by contrast, is measured on the given clock only.
///
/// A final class because it owns OpenSSL's `SSL_CTX` and `SSL` handles, freed in `deinit`; use it from one
/// thread at a time.
public final class DTLSAssociation {
    /// Where an association is.
    public enum State: Sendable, Hashable {
        /// Before `start`.
        case new
        case handshaking
        /// The handshake completed; the remote fingerprint has not been given yet.
        case awaitingFingerprint
        case connected
        /// Either side sent close_notify.
        case closed
        case failed
    }

    /// AES-GCM first (RFC 7714), then the mandatory AES-CM with HMAC-SHA1-80 (RFC 5764 §4.1.2).
    public static let defaultSRTPProfiles: [SRTPProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80, .aeadAes256Gcm]
    /// The retransmission timer's ceiling (RFC 6347 §4.2.4.1).
    public static let maximumRetransmissionTimeout = ClockTime.seconds(60)

    public let role: DTLSRole
    public let certificate: DTLSCertificate
    /// The profiles offered (client) or accepted (server), most preferred first; the server's order decides.
    public let srtpProfiles: [SRTPProfile]
    /// The largest datagram written, in bytes (the UDP payload).
    public let mtu: Int
    public let initialRetransmissionTimeout: ClockTime
    /// How long after `start` the handshake and the remote fingerprint may take.
    public let handshakeTimeout: ClockTime

    public private(set) var remoteFingerprint: DTLSFingerprint?
    public private(set) var state = State.new
    public private(set) var statistics = DTLSStatistics()
    /// The keys once connected.
    public private(set) var srtpKeys: DTLSSRTPKeys?

    private let context: OpaquePointer
    private let connection: OpaquePointer
    private let pipe = DatagramPipe()
    private var events = PollQueue<DTLSEvent>()
    /// Application data received after the handshake and before the fingerprint matched.
    private var heldApplicationData: [[UInt8]] = []
    private var peerCertificateDER: [UInt8]?
    private var handshakeDeadline = ClockTime.max
    /// The latest time given: OpenSSL's timer is reported relative to it.
    private var lastNow = ClockTime.zero
    private var readBuffer = [UInt8](repeating: 0, count: 16_384 + 2048)

    /// An association playing `role` with `certificate`. `remoteFingerprint` may be given now or later
    /// with `setRemoteFingerprint`. `mtu` must be at least 256 (OpenSSL's minimum for DTLS).
    public init(role: DTLSRole, certificate: DTLSCertificate, remoteFingerprint: DTLSFingerprint? = nil,
                srtpProfiles: [SRTPProfile] = DTLSAssociation.defaultSRTPProfiles, mtu: Int = 1200,
                initialRetransmissionTimeout: ClockTime = .seconds(1),
                handshakeTimeout: ClockTime = .seconds(30)) throws(DTLSError) {
        guard !srtpProfiles.isEmpty else { throw .setupFailed("no SRTP profile offered") }
        ERR_clear_error()
        guard let context = SSL_CTX_new(DTLS_method()) else { throw .setupFailed(openSSLErrorText()) }
        let profileNames = srtpProfiles.map(\.openSSLName).joined(separator: ":")
        let configured = sluice_ssl_ctx_set_proto_versions(context, DTLS1_2_VERSION, DTLS1_2_VERSION) == 1
            && SSL_CTX_use_certificate(context, certificate.certificate) == 1
            && SSL_CTX_use_PrivateKey(context, certificate.privateKey) == 1
            && SSL_CTX_set_tlsext_use_srtp(context, profileNames) == 0  // 0 is success here
        guard configured, let connection = SSL_new(context) else {
            let text = openSSLErrorText()
            SSL_CTX_free(context)
            throw .setupFailed(text)
        }
        // The peer must present a certificate. Self-signed ones pass; the fingerprint authenticates it,
        // checked here when already known so that a mismatch ends the handshake with a bad_certificate
        // alert the peer sees (RFC 5246 §7.2.2), and after the handshake otherwise.
        SSL_set_verify(connection, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, store in
            guard let store, let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
                  let pipe = datagramPipe(of: SSL_get_rbio(OpaquePointer(ssl))) else { return 0 }
            let der = X509_STORE_CTX_get0_cert(store).flatMap(DTLSCertificate.derEncoding(of:)) ?? []
            guard pipe.acceptsPeerCertificate(der: der) else {
                X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
                return 0
            }
            return 1
        }
        guard let bio = makeDatagramBIO(pipe) else {
            let text = openSSLErrorText()
            SSL_free(connection)
            SSL_CTX_free(context)
            throw .setupFailed(text)
        }
        SSL_set_bio(connection, bio, bio)
        guard sluice_ssl_set_fixed_mtu(connection, mtu) == 1 else {
            ERR_clear_error()
            SSL_free(connection)
            SSL_CTX_free(context)
            throw .setupFailed("MTU \(mtu) refused by OpenSSL (minimum 256)")
        }
        pipe.expectedFingerprint = remoteFingerprint
        pipe.initialTimeoutMicroseconds = UInt32(clamping: max(1, initialRetransmissionTimeout.nanoseconds / 1000))
        DTLS_set_timer_cb(connection) { ssl, previousMicroseconds in
            let initial = datagramPipe(of: SSL_get_rbio(ssl))?.initialTimeoutMicroseconds ?? 1_000_000
            guard previousMicroseconds > 0 else { return initial }
            let ceiling = UInt32(DTLSAssociation.maximumRetransmissionTimeout.nanoseconds / 1000)
            return previousMicroseconds >= ceiling / 2 ? ceiling : previousMicroseconds * 2
        }
        switch role {
        case .client: SSL_set_connect_state(connection)
        case .server: SSL_set_accept_state(connection)
        }
        self.context = context
        self.connection = connection
        self.role = role
        self.certificate = certificate
        self.remoteFingerprint = remoteFingerprint
        self.srtpProfiles = srtpProfiles
        self.mtu = mtu
        self.initialRetransmissionTimeout = initialRetransmissionTimeout
        self.handshakeTimeout = handshakeTimeout
    }

    deinit {
        SSL_free(connection)  // frees the BIO too
        SSL_CTX_free(context)
        ERR_clear_error()
    }

    /// Starts the handshake at `now`: the client writes its ClientHello (RFC 6347 §4.2.1), the server
    /// waits for one. A datagram arriving before `start` starts the association too.
    public func start(at now: ClockTime) {
        guard state == .new else { return }
        lastNow = now
        state = .handshaking
        handshakeDeadline = now + handshakeTimeout
        advance()
    }

    /// The remote fingerprint from SDP. If the handshake already completed, the peer's certificate is
    /// checked now: `.connected` or `.failed(.fingerprintMismatch)` follows.
    public func setRemoteFingerprint(_ fingerprint: DTLSFingerprint) {
        remoteFingerprint = fingerprint
        pipe.expectedFingerprint = fingerprint
        if state == .awaitingFingerprint { checkFingerprint() }
    }

    /// A datagram from the peer. Datagrams that cannot be DTLS (RFC 7983 §7) are counted and dropped;
    /// records OpenSSL rejects (bad MAC, replays) it drops silently (RFC 6347 §4.1.2.7).
    public func handleDatagram(_ bytes: [UInt8], at now: ClockTime) {
        lastNow = max(lastNow, now)
        statistics.datagramsReceived += 1
        guard bytes.count >= 13 else { return drop(.tooShort) }
        guard (20...63).contains(bytes[0]) else { return drop(.notDTLS) }
        if state == .new { start(at: now) }
        guard state == .handshaking || state == .awaitingFingerprint || state == .connected else {
            return drop(.notRunning)
        }
        if expireHandshake(at: now) { return }
        pipe.incoming = bytes
        advance()
        pipe.incoming = nil
    }

    /// Runs the timers due at `now`: the handshake timeout, and OpenSSL's retransmission of its last
    /// flight when its real-time timer has expired.
    public func handleTimeout(at now: ClockTime) {
        lastNow = max(lastNow, now)
        guard state == .handshaking || state == .awaitingFingerprint || state == .connected else { return }
        if expireHandshake(at: now) { return }
        ERR_clear_error()
        let result = sluice_dtls_handle_timeout(connection)
        if result > 0 {
            statistics.retransmissionTimeouts += 1
        } else if result < 0 {
            fail(.handshakeFailed(openSSLErrorText()))
        } else {
            ERR_clear_error()
        }
    }

    /// When `handleTimeout` should next be called, or nil if no timer runs.
    public var nextTimeout: ClockTime? {
        guard state == .handshaking || state == .awaitingFingerprint || state == .connected else { return nil }
        var next: ClockTime?
        let microseconds = sluice_dtls_timeout_microseconds(connection)
        if microseconds >= 0 { next = lastNow + ClockTime(nanoseconds: microseconds * 1000) }
        if state != .connected { next = min(next ?? handshakeDeadline, handshakeDeadline) }
        return next
    }

    /// The next datagram to send to the peer, oldest first.
    public func pollTransmit() -> [UInt8]? {
        guard let datagram = pipe.outgoing.poll() else { return nil }
        statistics.datagramsSent += 1
        return datagram
    }

    /// The next event, oldest first.
    public func pollEvent() -> DTLSEvent? {
        events.poll()
    }

    /// The largest application data `send` takes: one record within the MTU.
    public var maximumApplicationDataLength: Int { DTLS_get_data_mtu(connection) }

    /// Sends `bytes` to the peer in one application data record (RFC 6347 §4.1), for SCTP over DTLS
    /// (RFC 8261).
    public func send(applicationData bytes: [UInt8]) throws(DTLSError) {
        guard state == .connected else { throw .notConnected }
        let limit = maximumApplicationDataLength
        guard bytes.count <= limit else { throw .applicationDataTooLarge(length: bytes.count, limit: limit) }
        guard !bytes.isEmpty else { return }
        ERR_clear_error()
        let written = SSL_write(connection, bytes, Int32(bytes.count))
        guard written == Int32(bytes.count) else { throw .connectionFailed(openSSLErrorText()) }
    }

    /// Sends close_notify (RFC 5246 §7.2.1) and stops: later datagrams are dropped.
    public func close() {
        guard state == .handshaking || state == .awaitingFingerprint || state == .connected else {
            if state == .new { state = .closed }
            return
        }
        ERR_clear_error()
        _ = SSL_shutdown(connection)
        ERR_clear_error()
        state = .closed
    }

    // MARK: - Driving OpenSSL

    private func advance() {
        if state == .handshaking {
            ERR_clear_error()
            let result = SSL_do_handshake(connection)
            guard result == 1 else {
                guard !isWaiting(result) else { return }
                if let expected = remoteFingerprint, let actual = pipe.refusedFingerprint {
                    fail(.fingerprintMismatch(expected: expected, actual: actual))
                } else {
                    fail(.handshakeFailed(openSSLErrorText()))
                }
                return
            }
            completeHandshake()
        }
        if state == .awaitingFingerprint || state == .connected { readApplicationData() }
    }

    /// True when OpenSSL only waits for more datagrams; its error queue is emptied then.
    private func isWaiting(_ result: Int32) -> Bool {
        let code = SSL_get_error(connection, result)
        guard code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE else { return false }
        ERR_clear_error()
        return true
    }

    /// The handshake finished: the peer's certificate, the selected profile and the keys (RFC 5764 §4.2).
    private func completeHandshake() {
        guard let peer = SSL_get1_peer_certificate(connection) else { return fail(.peerCertificateMissing) }
        peerCertificateDER = DTLSCertificate.derEncoding(of: peer)
        X509_free(peer)
        guard let selected = SSL_get_selected_srtp_profile(connection),
              let profile = SRTPProfile.allCases.first(where: { UInt($0.dtlsProtectionProfile) == selected.pointee.id }),
              srtpProfiles.contains(profile) else { return fail(.noSRTPProfile) }
        do {
            srtpKeys = try exportKeys(profile)
        } catch {
            return fail(error)
        }
        state = .awaitingFingerprint
        checkFingerprint()
    }

    /// The keying material exporter with label "EXTRACTOR-dtls_srtp" (RFC 5705, RFC 5764 §4.2): client
    /// key, server key, client salt, server salt.
    private func exportKeys(_ profile: SRTPProfile) throws(DTLSError) -> DTLSSRTPKeys {
        let keyLength = profile.masterKeyLength, saltLength = profile.masterSaltLength
        var material = [UInt8](repeating: 0, count: 2 * (keyLength + saltLength))
        let label = "EXTRACTOR-dtls_srtp"
        ERR_clear_error()
        guard SSL_export_keying_material(connection, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 else {
            throw .keyExportFailed(openSSLErrorText())
        }
        let saltStart = 2 * keyLength
        do {
            let client = try SRTPKeyMaterial(key: Array(material[0..<keyLength]),
                                              salt: Array(material[saltStart..<saltStart + saltLength]), profile: profile)
            let server = try SRTPKeyMaterial(key: Array(material[keyLength..<saltStart]),
                                              salt: Array(material[(saltStart + saltLength)...]), profile: profile)
            return role == .client
                ? DTLSSRTPKeys(profile: profile, local: client, remote: server)
                : DTLSSRTPKeys(profile: profile, local: server, remote: client)
        } catch {
            throw .keyExportFailed("\(error)")
        }
    }

    /// Reports `.connected` if the remote fingerprint is known and the peer's certificate matches it.
    private func checkFingerprint() {
        guard state == .awaitingFingerprint, let expected = remoteFingerprint, let keys = srtpKeys else { return }
        guard let der = peerCertificateDER else { return fail(.peerCertificateMissing) }
        guard pipe.acceptsPeerCertificate(der: der) else {
            return fail(.fingerprintMismatch(expected: expected, actual: pipe.refusedFingerprint ?? expected))
        }
        state = .connected
        events.append(.connected(keys))
        events.append(contentsOf: heldApplicationData.map(DTLSEvent.applicationData))
        heldApplicationData.removeAll()
    }

    /// Reads every record OpenSSL has: application data, close_notify, or a retransmitted last flight of
    /// the peer, which OpenSSL answers by resending its own (RFC 6347 §4.2.4).
    private func readApplicationData() {
        while state == .awaitingFingerprint || state == .connected {
            ERR_clear_error()
            let count = readBuffer.withUnsafeMutableBytes { buffer in
                SSL_read(connection, buffer.baseAddress, Int32(buffer.count))
            }
            if count > 0 {
                let data = Array(readBuffer[..<Int(count)])
                if state == .connected { events.append(.applicationData(data)) } else { heldApplicationData.append(data) }
                continue
            }
            if isWaiting(count) { return }
            if SSL_get_error(connection, count) == SSL_ERROR_ZERO_RETURN {
                ERR_clear_error()
                state = .closed
                events.append(.closed)
                return
            }
            return fail(.connectionFailed(openSSLErrorText()))
        }
    }

    /// Fails with `.handshakeTimeout` if the handshake (with the fingerprint) is not done by `now`.
    private func expireHandshake(at now: ClockTime) -> Bool {
        guard state == .handshaking || state == .awaitingFingerprint, now >= handshakeDeadline else { return false }
        fail(.handshakeTimeout)
        return true
    }

    private func fail(_ error: DTLSError) {
        ERR_clear_error()
        state = .failed
        events.append(.failed(error))
    }

    private func drop(_ reason: DTLSDropReason) {
        statistics.dropped[reason, default: 0] += 1
    }
}

extension SRTPProfile {
    /// The profile's name in OpenSSL's use_srtp list (`SSL_CTX_set_tlsext_use_srtp`).
    var openSSLName: String {
        switch self {
        case .aes128CmHmacSha1_80: "SRTP_AES128_CM_SHA1_80"
        case .aes128CmHmacSha1_32: "SRTP_AES128_CM_SHA1_32"
        case .aeadAes128Gcm: "SRTP_AEAD_AES_128_GCM"
        case .aeadAes256Gcm: "SRTP_AEAD_AES_256_GCM"
        }
    }
}
