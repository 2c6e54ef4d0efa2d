import CSRTP

/// libsrtp's process-wide setup (`srtp_init`), run once by the first session: Swift initializes globals
/// lazily and thread-safely. A later `srtp_init` in libsrtp 2.5 returns `srtp_err_status_bad_param`
/// (its debug modules are registered already), so that status means another user of libsrtp in this
/// process initialized it first: ready all the same.
private let libraryReady: srtp_err_status_t = {
    let status = srtp_init()
    return status == srtp_err_status_bad_param ? srtp_err_status_ok : status
}()

/// What an `SRTPSession` has done, RTP and RTCP together. Failures are counted, never fatal.
public struct SRTPStatistics: Sendable, Hashable {
    public var protectedPackets = 0
    public var unprotectedPackets = 0
    /// Packets whose tag did not verify (RFC 3711 §3.3 step 6).
    public var authenticationFailures = 0
    /// Packets already seen or older than the replay window (RFC 3711 §3.3.2).
    public var replayedPackets = 0
    /// Any other failure: buffer too small, wrong direction, malformed packet, library error.
    public var otherErrors = 0

    public init() {}
}

/// Which code does an `SRTPSession`'s cryptography.
public enum SRTPImplementation: String, Sendable, Hashable, CaseIterable {
    /// Sluice's SRTP on OpenSSL 3's ciphers (`OpenSSLSRTP`): AES-NI for AES-CM and AES-GCM, HMAC-SHA1 with
    /// its key states computed once. The default; with an MKI, libsrtp2 is used instead.
    case openSSL
    /// libsrtp2 (Debian's is built on NSS, which sets up a context per packet): the reference the
    /// tests hold the OpenSSL code to.
    case libsrtp
}

/// One direction of an SRTP session (RFC 3711 §3.2.3): protects what this side sends, or unprotects what
/// it receives, for every SSRC, with one master key.
///
/// Packets are transformed in place in the caller's buffer (an RTP packet may also be protected or
/// unprotected from where it is into another); nothing is allocated per packet (a stream
/// is added when an SSRC is first seen). The rollover counter across sequence number wraps (RFC 3711
/// §3.3.1) and the replay list are kept per SSRC; the OpenSSL implementation decides both as libsrtp
/// does, and writes the same bytes. Use a session from one thread at a time.
///
/// ```swift
/// let sender = try SRTPSession(profile: .aes128CmHmacSha1_80, key: localKey, direction: .sender)
/// let length = try sender.protect(buffer, length: rtpLength)   // buffer has rtpOverhead bytes spare
/// ```
public final class SRTPSession {
    public enum Direction: Sendable, Hashable {
        /// Protects outgoing packets; sending the same packet again (a plain NACK retransmission) is allowed.
        case sender
        /// Unprotects incoming packets, with replay protection.
        case receiver
    }

    /// 1024 packets: a NACK retransmission (RFC 4585) of a packet a second or more old at video rates
    /// still falls inside the window; libsrtp's own default of 128 drops it.
    public static let defaultReplayWindow = 1024

    public let profile: SRTPProfile
    public let direction: Direction
    /// Packets behind the highest index received that are still accepted (RFC 3711 §3.3.2). SRTP only:
    /// libsrtp keeps a fixed 128-packet window for SRTCP.
    public let replayWindow: Int
    /// Bytes `protect` adds to an RTP packet: the tag and the MKI, if any.
    public let rtpOverhead: Int
    /// Bytes `protectRTCP` adds to an RTCP packet: E flag and index, MKI, tag.
    public let rtcpOverhead: Int
    /// One user at a time (see above): counted with no exclusivity check per packet.
    @exclusivity(unchecked) public private(set) var statistics = SRTPStatistics()
    /// Which code does the cryptography: `.openSSL` unless asked otherwise or the key has an MKI.
    public let implementation: SRTPImplementation

    /// The code doing the cryptography: Sluice's on OpenSSL, or a libsrtp session freed in `deinit`.
    /// The implementation at work: one of the two is set. Two constants rather than an enum with
    /// payloads, whose `switch` would retain the OpenSSL object on every packet.
    private let openSSL: OpenSSLSRTP?
    private let libsrtp: srtp_t?
    private let usesMKI: UInt32

    /// A session for `direction` with `key`, whose lengths must be `profile`'s.
    /// `replayWindow` may be 64 to 32767 packets.
    public init(profile: SRTPProfile, key: SRTPKeyMaterial, direction: Direction,
                replayWindow: Int = SRTPSession.defaultReplayWindow,
                implementation: SRTPImplementation = .openSSL) throws(SRTPError) {
        guard (64...32767).contains(replayWindow) else { throw .invalidReplayWindow(replayWindow) }
        guard key.keyLength == profile.masterKeyLength else {
            throw .badKey(.wrongLength(part: .key, expected: profile.masterKeyLength, actual: key.keyLength))
        }
        guard key.saltLength == profile.masterSaltLength else {
            throw .badKey(.wrongLength(part: .salt, expected: profile.masterSaltLength, actual: key.saltLength))
        }
        self.profile = profile
        self.direction = direction
        self.replayWindow = replayWindow
        let mki = key.mkiBytes
        usesMKI = mki.isEmpty ? 0 : 1
        rtpOverhead = profile.rtpOverhead + mki.count
        rtcpOverhead = profile.rtcpOverhead + mki.count
        if implementation == .openSSL && mki.isEmpty {
            self.implementation = .openSSL
            openSSL = try OpenSSLSRTP(profile: profile, key: key, protects: direction == .sender, replayWindow: replayWindow)
            libsrtp = nil
            return
        }
        self.implementation = .libsrtp
        openSSL = nil
        libsrtp = try Self.libsrtpContext(profile: profile, key: key, direction: direction, replayWindow: replayWindow)
    }

    private static func libsrtpContext(profile: SRTPProfile, key: SRTPKeyMaterial, direction: Direction,
                                       replayWindow: Int) throws(SRTPError) -> srtp_t {
        guard libraryReady == srtp_err_status_ok else { throw SRTPError(status: libraryReady, operation: "srtp_init") }
        var policy = srtp_policy_t()
        profile.configure(rtp: &policy.rtp, rtcp: &policy.rtcp)
        policy.ssrc.type = direction == .sender ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = UInt(replayWindow)
        policy.allow_repeat_tx = direction == .sender ? 1 : 0
        let mki = key.mkiBytes
        var created: srtp_t?
        // libsrtp copies the key and MKI into the session and writes to neither.
        let status = key.keyAndSalt.withUnsafeBufferPointer { keyBuffer in
            mki.withUnsafeBufferPointer { mkiBuffer in
                let keyPointer = keyBuffer.baseAddress.map(UnsafeMutablePointer.init(mutating:))
                guard let mkiPointer = mkiBuffer.baseAddress, !mkiBuffer.isEmpty else {
                    policy.key = keyPointer
                    return srtp_create(&created, &policy)
                }
                // With an MKI, the key goes in libsrtp's list of master keys instead (RFC 3711 §8.1).
                var master = srtp_master_key_t(key: keyPointer, mki_id: UnsafeMutablePointer(mutating: mkiPointer),
                                               mki_size: UInt32(mkiBuffer.count))
                return withUnsafeMutablePointer(to: &master) { masterPointer in
                    var list: UnsafeMutablePointer<srtp_master_key_t>? = masterPointer
                    return withUnsafeMutablePointer(to: &list) { listPointer in
                        policy.keys = listPointer
                        policy.num_master_keys = 1
                        return srtp_create(&created, &policy)
                    }
                }
            }
        }
        guard status == srtp_err_status_ok, let created else { throw SRTPError(status: status, operation: "srtp_create") }
        return created
    }

    deinit {
        if let libsrtp { srtp_dealloc(libsrtp) }
    }

    /// Protects the RTP packet in `buffer[0..<length]` in place (RFC 3711 §3.3; RFC 7714 §8): returns the
    /// SRTP length, `length + rtpOverhead`, which `buffer` must have room for.
    public func protect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(.protectRTP, buffer, length)
    }

    /// Protects the RTP packet `packet` into `buffer` (RFC 3711 §3.3; RFC 7714 §8), leaving `packet`
    /// plain: returns the SRTP length, `packet.count + rtpOverhead`, which `buffer` must have room for.
    /// The cipher reads the plain payload and writes the encrypted one, so sending from a packet that
    /// must stay plain (a retransmission history) costs no copy first. The two must not overlap
    /// (unless they start at the same byte: then it is `protect(_:length:)`).
    public func protect(_ packet: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        guard let source = packet.baseAddress else { throw .bufferTooSmall(needed: rtpOverhead, available: buffer.count) }
        return try transform(.protectRTP, buffer, packet.count, from: source)
    }

    /// Protects the RTP packet made of `buffer[0..<length]` and then `tail` (bytes elsewhere, which
    /// must not overlap `buffer`) into `buffer` (RFC 3711 §3.3; RFC 7714 §8): returns the SRTP length,
    /// `length + tail.count + rtpOverhead`, which `buffer` must have room for. The cipher reads `tail`
    /// where it is and writes it encrypted after `length`: a sender that packetized a frame into a
    /// header and a slice of the frame (`RTPSender.send(_:at:into:emitParts:)`) copies nothing. The
    /// RTP header must lie within `length`. The bytes are those of `protect(_:length:)` on the whole
    /// packet.
    public func protect(_ buffer: UnsafeMutableRawBufferPointer, length: Int,
                        followedBy tail: UnsafeRawBufferPointer) throws(SRTPError) -> Int {
        try transform(.protectRTP, buffer, length, followedBy: tail)
    }

    /// Verifies and decrypts the SRTP packet in `buffer[0..<length]` in place (RFC 3711 §3.3): returns the
    /// RTP length.
    public func unprotect(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(.unprotectRTP, buffer, length)
    }

    /// Verifies the SRTP packet `packet` and decrypts it into `buffer` (RFC 3711 §3.3; RFC 7714 §8.2),
    /// leaving `packet` as it came: returns the RTP length. `buffer` must have room for all of
    /// `packet`. The cipher reads the protected payload and writes the plain one, so a receiver can
    /// decrypt from its read buffer straight to where the packet is kept (a jitter buffer's slot) with
    /// no copy. The same checks, counts and replay window as `unprotect(_:length:)`; after a failure
    /// `buffer` holds nothing of use (AES-GCM decrypts before its tag is checked). The two must not
    /// overlap (unless they start at the same byte: then it is `unprotect(_:length:)`).
    public func unprotect(_ packet: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        // No bytes (no address either): refused as too short, and counted, as in place.
        try transform(.unprotectRTP, buffer, packet.count, from: packet.baseAddress)
    }

    /// Protects the (compound) RTCP packet in `buffer[0..<length]` in place (RFC 3711 §3.4; RFC 7714 §9):
    /// returns the SRTCP length, `length + rtcpOverhead`, which `buffer` must have room for.
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(.protectRTCP, buffer, length)
    }

    /// Verifies and decrypts the SRTCP packet in `buffer[0..<length]` in place (RFC 3711 §3.4): returns the
    /// RTCP length.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(.unprotectRTCP, buffer, length)
    }

    private enum Operation {
        case protectRTP, unprotectRTP, protectRTCP, unprotectRTCP

        var protects: Bool { self == .protectRTP || self == .protectRTCP }
    }

    /// Runs `operation` and counts its outcome in `statistics`.
    /// `source`: where the packet is when not in `buffer` already (RTP only); `tail`: the bytes that
    /// follow the packet's first `length` (protecting RTP only).
    private func transform(_ operation: Operation, _ buffer: UnsafeMutableRawBufferPointer, _ length: Int,
                           from source: UnsafeRawPointer? = nil,
                           followedBy tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) throws(SRTPError) -> Int {
        do {
            let result = try call(operation, buffer, length, from: source, followedBy: tail)
            if operation.protects { statistics.protectedPackets += 1 } else { statistics.unprotectedPackets += 1 }
            return result
        } catch {
            switch error {
            case .authenticationFailed: statistics.authenticationFailures += 1
            case .replayed: statistics.replayedPackets += 1
            default: statistics.otherErrors += 1
            }
            throw error
        }
    }

    private func call(_ operation: Operation, _ buffer: UnsafeMutableRawBufferPointer, _ length: Int,
                      from source: UnsafeRawPointer?, followedBy tail: UnsafeRawBufferPointer) throws(SRTPError) -> Int {
        guard operation.protects == (direction == .sender) else { throw .wrongDirection }
        let added = switch operation {
        case .protectRTP: tail.count + rtpOverhead
        case .protectRTCP: rtcpOverhead
        case .unprotectRTP, .unprotectRTCP: 0
        }
        guard length >= 0, length + added <= buffer.count, length + tail.count <= Int32.max, let base = buffer.baseAddress else {
            throw .bufferTooSmall(needed: max(length, 0) + added, available: buffer.count)
        }
        guard let libsrtp else {
            let bytes = base.assumingMemoryBound(to: UInt8.self)
            let packet = source?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bytes)
            return switch operation {
            case .protectRTP: try openSSL!.protectRTP(packet, into: bytes, length: length, followedBy: tail)
            case .unprotectRTP: try openSSL!.unprotectRTP(packet, into: bytes, length: length)
            case .protectRTCP: try openSSL!.protectRTCP(bytes, length: length)
            case .unprotectRTCP: try openSSL!.unprotectRTCP(bytes, length: length)
            }
        }
        // libsrtp transforms in place only: a packet elsewhere is copied in first.
        if let source, source != UnsafeRawPointer(base) { base.copyMemory(from: source, byteCount: length) }
        if let bytes = tail.baseAddress { (base + length).copyMemory(from: bytes, byteCount: tail.count) }
        return try callLibsrtp(libsrtp, operation, base, length + tail.count)
    }

    private func callLibsrtp(_ context: srtp_t, _ operation: Operation, _ base: UnsafeMutableRawPointer,
                             _ length: Int) throws(SRTPError) -> Int {
        var octets = Int32(length)
        let status = switch operation {
        case .protectRTP: srtp_protect_mki(context, base, &octets, usesMKI, 0)
        case .unprotectRTP: srtp_unprotect_mki(context, base, &octets, usesMKI)
        case .protectRTCP: srtp_protect_rtcp_mki(context, base, &octets, usesMKI, 0)
        case .unprotectRTCP: srtp_unprotect_rtcp_mki(context, base, &octets, usesMKI)
        }
        guard status == srtp_err_status_ok else {
            throw SRTPError(status: status, operation: Self.name(of: operation))
        }
        return Int(octets)
    }

    private static func name(of operation: Operation) -> String {
        switch operation {
        case .protectRTP: "srtp_protect"
        case .unprotectRTP: "srtp_unprotect"
        case .protectRTCP: "srtp_protect_rtcp"
        case .unprotectRTCP: "srtp_unprotect_rtcp"
        }
    }
}
