import CSSL

/// SRTP and SRTCP (RFC 3711; AEAD profiles, RFC 7714) on OpenSSL 3: one direction of a session,
/// every SSRC, packets transformed in place. The ciphers are OpenSSL's provider implementations
/// called through their dispatch tables (`sluice_cipher`), not through EVP, whose per-packet IV
/// set-up looked parameters up by name.
///
/// The session keys are derived once (§4.3), each cipher keyed once and HMAC-SHA1's padded-key
/// states computed once; a packet then costs an IV, the cipher and the hash over its bytes, and
/// allocates nothing (a new SSRC adds a stream). It writes the same bytes and takes the same replay
/// and rollover decisions as libsrtp2, which `SRTPSession` keeps as the reference: see
/// `RTPReplayWindow`. Without an MKI only (WebRTC's DTLS-SRTP never sends one).
final class OpenSSLSRTP {
    private let rtp: SessionKeys
    private let rtcp: SessionKeys
    private let protects: Bool
    private let replayWindow: Int
    /// Every SSRC's stream, in the order they came, found by `streamIndex(for:creating:)`. Values
    /// changed in place: a packet costs no reference counting and (one user at a time, as
    /// `SRTPSession` requires) no exclusivity check.
    @exclusivity(unchecked) private var streams: [Stream] = []
    private var streamIndices: [UInt32: Int] = [:]
    /// The last stream used, found without hashing when the next packet has the same SSRC.
    @exclusivity(unchecked) private var recent: (ssrc: UInt32, index: Int)?
    /// IV and tag scratch.
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)

    /// What one SSRC has sent or received so far.
    struct Stream {
        var rtp: RTPReplayWindow
        var rtcp = RTCPReplayWindow()
        init(window: Int) { rtp = RTPReplayWindow(size: window) }
    }

    init(profile: SRTPProfile, key: SRTPKeyMaterial, protects: Bool, replayWindow: Int) throws(SRTPError) {
        let masterKey = Array(key.keyAndSalt.prefix(profile.masterKeyLength))
        let masterSalt = Array(key.keyAndSalt.dropFirst(profile.masterKeyLength))
        rtp = try SessionKeys(profile: profile, labels: (0, 1, 2), tagLength: profile.rtpAuthTagLength,
                              masterKey: masterKey, masterSalt: masterSalt, protects: protects)
        rtcp = try SessionKeys(profile: profile, labels: (3, 4, 5), tagLength: profile.rtcpAuthTagLength,
                               masterKey: masterKey, masterSalt: masterSalt, protects: protects)
        self.protects = protects
        self.replayWindow = replayWindow
    }

    deinit { scratch.deallocate() }

    // MARK: SRTP (RFC 3711 §3.3, RFC 7714 §8)

    /// Encrypts and tags the RTP packet `source[0..<length]`, followed by `tail`, into `packet` (the same
    /// memory, or `length` plus the tail's and the tag's bytes apart from it); returns the SRTP length.
    /// Out of place, the cipher reads the plain payload and writes the encrypted one (RFC 3711 §3.3
    /// steps 4-5): no copy first. `tail` (a frame's bytes that end the payload, left where they are by
    /// the packetizer) is read where it is and written encrypted after `length`; the header must lie
    /// before it.
    func protectRTP(_ source: UnsafePointer<UInt8>, into packet: UnsafeMutablePointer<UInt8>, length: Int,
                    followedBy tail: UnsafeRawBufferPointer) throws(SRTPError) -> Int {
        let headerLength = try Self.rtpHeaderLength(source, length, trailer: 0)
        let ssrc = Self.read32(source + 8)
        let stream = streamIndex(for: ssrc, creating: true)!
        let (index, delta) = streams[stream].rtp.estimate(Self.read16(source + 2))
        switch streams[stream].rtp.check(delta) {
        case .tooOld: throw .replayed(tooOld: true)
        case .seen: break  // the same packet again (a retransmission): the same bytes again
        case .fresh: streams[stream].rtp.add(delta)
        }
        if UnsafePointer(packet) != source { packet.update(from: source, count: headerLength) }
        let plain = source + headerLength, payload = packet + headerLength, total = length + tail.count
        var payloadLength = length - headerLength, tail = tail
        if UnsafePointer(packet) == source, let first = tail.baseAddress, payloadLength % 16 != 0 {
            // The tail's first bytes are copied to where they are encrypted, so that the cipher takes
            // the tail from a block boundary: started mid-block, OpenSSL encrypts and hashes the bytes
            // up to it one at a time (113 instructions a packet more on AES-GCM, counted).
            let moved = min(tail.count, 16 - payloadLength % 16)
            UnsafeMutableRawPointer(packet + length).copyMemory(from: first, byteCount: moved)
            payloadLength += moved
            tail = UnsafeRawBufferPointer(rebasing: tail[moved...])
        }
        rtp.iv(scratch, ssrc: ssrc, index: index)
        if rtp.isAEAD {
            try rtp.seal(iv: scratch, aad: (packet, headerLength), nil, plain, into: payload, payloadLength, then: tail,
                         tag: packet + total)
        } else {
            try rtp.applyKeystream(iv: scratch, plain, into: payload, payloadLength, then: tail)
            Self.write32(UInt32(truncatingIfNeeded: index >> 16), scratch + 16)
            rtp.authenticate(packet, total, extra: (scratch + 16, 4), into: packet + total)
        }
        return total + rtp.tagLength
    }

    /// Checks the SRTP packet `source[0..<length]` and decrypts it into `packet` (the same memory, or
    /// `length` bytes apart from it); returns the RTP length. Out of place, the hash and the cipher read
    /// the protected payload and the cipher writes the plain one (RFC 3711 §3.3 steps 5-6, RFC 7714
    /// §8.2): no copy first. `source` is never written.
    func unprotectRTP(_ source: UnsafePointer<UInt8>, into packet: UnsafeMutablePointer<UInt8>, length: Int) throws(SRTPError) -> Int {
        // In libsrtp's order: the header must fit the packet, then the index must be new, then the
        // header must leave room for the tag.
        let headerLength = try Self.rtpHeaderLength(source, length, trailer: 0)
        let ssrc = Self.read32(source + 8), sequence = Self.read16(source + 2)
        let known = streamIndex(for: ssrc, creating: false)
        // A stranger's first packet is checked against a fresh window: index = sequence number.
        let (index, delta) = known.map { streams[$0].rtp.estimate(sequence) } ?? (UInt64(sequence), Int(sequence))
        if let known {
            switch streams[known].rtp.check(delta) {
            case .tooOld: throw .replayed(tooOld: true)
            case .seen: throw .replayed(tooOld: false)
            case .fresh: break
            }
        }
        guard headerLength <= length - rtp.tagLength else {
            throw .malformed("SRTP packet of \(length) bytes: no room for the tag after a \(headerLength)-byte header")
        }
        let protectedLength = length - rtp.tagLength
        let encrypted = source + headerLength, payload = packet + headerLength, payloadLength = protectedLength - headerLength
        rtp.iv(scratch, ssrc: ssrc, index: index)
        if rtp.isAEAD {
            if UnsafePointer(packet) != source { packet.update(from: source, count: headerLength) }
            try rtp.open(iv: scratch, aad: (source, headerLength), nil, encrypted, into: payload, payloadLength,
                         tag: source + protectedLength)
        } else {
            Self.write32(UInt32(truncatingIfNeeded: index >> 16), scratch + 16)
            rtp.authenticate(source, protectedLength, extra: (scratch + 16, 4), into: scratch + 20)
            guard CRYPTO_memcmp(scratch + 20, source + protectedLength, rtp.tagLength) == 0 else { throw .authenticationFailed }
            if UnsafePointer(packet) != source { packet.update(from: source, count: headerLength) }
            try rtp.applyKeystream(iv: scratch, encrypted, into: payload, payloadLength)
        }
        streams[known ?? streamIndex(for: ssrc, creating: true)!].rtp.add(delta)
        return protectedLength
    }

    // MARK: SRTCP (RFC 3711 §3.4, RFC 7714 §9)

    /// Encrypts and tags the (compound) RTCP packet in `packet[0..<length]`, with the next SRTCP
    /// index of its first SSRC; returns the SRTCP length.
    func protectRTCP(_ packet: UnsafeMutablePointer<UInt8>, length: Int) throws(SRTPError) -> Int {
        guard length >= 8 else { throw .malformed("RTCP packet of \(length) bytes, shorter than its header") }
        let ssrc = Self.read32(packet + 4)
        guard let index = streams[streamIndex(for: ssrc, creating: true)!].rtcp.next() else {
            throw .library(code: 0, operation: "SRTCP index exhausted (the key must change)")
        }
        let trailer = 0x8000_0000 | index  // E: encrypted
        rtcp.iv(scratch, ssrc: ssrc, index: UInt64(index))
        if rtcp.isAEAD {
            Self.write32(trailer, scratch + 16)
            try rtcp.seal(iv: scratch, aad: (packet, 8), (scratch + 16, 4), packet + 8, into: packet + 8, length - 8, tag: packet + length)
            Self.write32(trailer, packet + length + rtcp.tagLength)
        } else {
            try rtcp.applyKeystream(iv: scratch, packet + 8, into: packet + 8, length - 8)
            Self.write32(trailer, packet + length)
            rtcp.authenticate(packet, length + 4, extra: nil, into: packet + length + 4)
        }
        return length + 4 + rtcp.tagLength
    }

    /// Checks and decrypts the SRTCP packet in `packet[0..<length]`; returns the RTCP length.
    func unprotectRTCP(_ packet: UnsafeMutablePointer<UInt8>, length: Int) throws(SRTPError) -> Int {
        guard length >= 8 + 4 + rtcp.tagLength else {
            throw .malformed("SRTCP packet of \(length) bytes, shorter than header, index and tag")
        }
        let ssrc = Self.read32(packet + 4)
        // The index trails the tag with AEAD (RFC 7714 §9.1), precedes it otherwise (RFC 3711 §3.4).
        let trailerAt = rtcp.isAEAD ? length - 4 : length - rtcp.tagLength - 4
        let trailer = Self.read32(packet + trailerAt)
        let index = trailer & 0x7FFF_FFFF, encrypted = trailer & 0x8000_0000 != 0
        // AES-CM sessions encrypt SRTCP, so its E flag must be set (libsrtp refuses it too).
        guard encrypted || rtcp.isAEAD else { throw .malformed("SRTCP packet without the E flag in an encrypting session") }
        let known = streamIndex(for: ssrc, creating: false)
        if let known {
            switch streams[known].rtcp.check(index) {
            case .tooOld: throw .replayed(tooOld: true)
            case .seen: throw .replayed(tooOld: false)
            case .fresh: break
            }
        }
        let rtcpLength: Int
        rtcp.iv(scratch, ssrc: ssrc, index: UInt64(index))
        if rtcp.isAEAD {
            rtcpLength = trailerAt - rtcp.tagLength
            let header = UnsafePointer(packet), trailer = UnsafePointer(packet + trailerAt)
            if encrypted {
                try rtcp.open(iv: scratch, aad: (header, 8), (trailer, 4), packet + 8, into: packet + 8, rtcpLength - 8,
                              tag: packet + rtcpLength)
            } else {
                try rtcp.open(iv: scratch, aad: (header, rtcpLength), (trailer, 4), packet, into: packet, 0, tag: packet + rtcpLength)
            }
        } else {
            rtcpLength = trailerAt
            rtcp.authenticate(packet, trailerAt + 4, extra: nil, into: scratch + 20)
            guard CRYPTO_memcmp(scratch + 20, packet + trailerAt + 4, rtcp.tagLength) == 0 else { throw .authenticationFailed }
            try rtcp.applyKeystream(iv: scratch, packet + 8, into: packet + 8, rtcpLength - 8)
        }
        streams[known ?? streamIndex(for: ssrc, creating: true)!].rtcp.add(index)
        return rtcpLength
    }

    // MARK: Streams and packets

    /// Where the stream of `ssrc` is in `streams`; made first when `creating`.
    private func streamIndex(for ssrc: UInt32, creating: Bool) -> Int? {
        if let recent, recent.ssrc == ssrc { return recent.index }
        if let found = streamIndices[ssrc] {
            recent = (ssrc, found)
            return found
        }
        guard creating else { return nil }
        streams.append(Stream(window: replayWindow))
        streamIndices[ssrc] = streams.count - 1
        recent = (ssrc, streams.count - 1)
        return streams.count - 1
    }

    /// The length of the RTP header with its CSRCs and extension (RFC 3550 §5.1, §5.3.1), which must
    /// leave `trailer` bytes after it.
    static func rtpHeaderLength(_ packet: UnsafePointer<UInt8>, _ length: Int, trailer: Int) throws(SRTPError) -> Int {
        guard length >= 12 + trailer else { throw .malformed("RTP packet of \(length) bytes, shorter than its header") }
        var headerLength = 12 + 4 * Int(packet[0] & 0x0F)
        if packet[0] & 0x10 != 0 {
            guard headerLength + 4 <= length - trailer else { throw .malformed("RTP header extension past the end") }
            headerLength += 4 + 4 * Int(read16(packet + headerLength + 2))
        }
        guard headerLength <= length - trailer else { throw .malformed("RTP header of \(headerLength) bytes in \(length)") }
        return headerLength
    }

    static func read16(_ at: UnsafePointer<UInt8>) -> UInt16 { UInt16(at[0]) << 8 | UInt16(at[1]) }
    static func read32(_ at: UnsafePointer<UInt8>) -> UInt32 {
        UInt32(at[0]) << 24 | UInt32(at[1]) << 16 | UInt32(at[2]) << 8 | UInt32(at[3])
    }
    static func write32(_ value: UInt32, _ at: UnsafeMutablePointer<UInt8>) {
        at[0] = UInt8(truncatingIfNeeded: value >> 24)
        at[1] = UInt8(truncatingIfNeeded: value >> 16)
        at[2] = UInt8(truncatingIfNeeded: value >> 8)
        at[3] = UInt8(truncatingIfNeeded: value)
    }
}

/// The keys of SRTP or of SRTCP (RFC 3711 §4.3): the cipher keyed with the session encryption key,
/// the session salt, and for AES-CM HMAC-SHA1's states for the session authentication key.
final class SessionKeys {
    let isAEAD: Bool
    let tagLength: Int
    /// The cipher keyed with the session encryption key, driven through its provider (`sluice_cipher`).
    private let cipher = UnsafeMutablePointer<sluice_cipher>.allocate(capacity: 1)
    /// 14 bytes (AES-CM, then two zero bytes) or 12 (AEAD).
    private let salt = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
    private let hmac: UnsafeMutablePointer<sluice_hmac_sha1_key>?

    /// `labels`: of the encryption key, the authentication key and the salt (0, 1, 2 for SRTP; 3, 4, 5 for SRTCP).
    init(profile: SRTPProfile, labels: (encryption: UInt8, authentication: UInt8, salt: UInt8), tagLength: Int,
         masterKey: [UInt8], masterSalt: [UInt8], protects: Bool) throws(SRTPError) {
        isAEAD = profile == .aeadAes128Gcm || profile == .aeadAes256Gcm
        self.tagLength = tagLength
        cipher.initialize(to: sluice_cipher())
        salt.initialize(repeating: 0, count: 16)
        hmac = isAEAD ? nil : .allocate(capacity: 1)
        var encryptionKey = try Self.derive(labels.encryption, count: masterKey.count, masterKey: masterKey, masterSalt: masterSalt)
        defer { OPENSSL_cleanse(&encryptionKey, encryptionKey.count) }
        let sessionSalt = try Self.derive(labels.salt, count: isAEAD ? 12 : 14, masterKey: masterKey, masterSalt: masterSalt)
        salt.update(from: sessionSalt, count: sessionSalt.count)
        if let hmac {
            var authenticationKey = try Self.derive(labels.authentication, count: 20, masterKey: masterKey, masterSalt: masterSalt)
            sluice_hmac_sha1_key_init(hmac, authenticationKey, authenticationKey.count)
            OPENSSL_cleanse(&authenticationKey, authenticationKey.count)
        }
        let name = "AES-\(masterKey.count * 8)-\(isAEAD ? "GCM" : "CTR")"
        // Counter mode decrypts by encrypting; GCM's direction decides what its end does with the tag.
        guard sluice_cipher_make(cipher, name, encryptionKey, encryptionKey.count, isAEAD && !protects ? 0 : 1) == 1 else {
            throw Self.failure("\(name) from OpenSSL's provider")
        }
    }

    deinit {
        sluice_cipher_free(cipher)
        cipher.deallocate()
        salt.deallocate()
        if let hmac {
            OPENSSL_cleanse(hmac, MemoryLayout<sluice_hmac_sha1_key>.size)
            hmac.deallocate()
        }
    }

    /// The IV of a packet of `ssrc` with the 48-bit `index` (SRTP's rollover counter and sequence
    /// number, or SRTCP's 31-bit index) in `iv`: the session salt XOR the SSRC and the index.
    /// AES-CM (RFC 3711 §4.1.1): salt · 2^16 XOR SSRC · 2^64 XOR index · 2^16, 16 bytes. AEAD
    /// (RFC 7714 §8.1, §9.1): salt XOR 0x0000 || SSRC || index, 12 bytes (for SRTCP the index's top
    /// 16 bits are the 0x0000 the RFC puts there).
    func iv(_ iv: UnsafeMutablePointer<UInt8>, ssrc: UInt32, index: UInt64) {
        let (length, ssrcAt, indexAt) = isAEAD ? (12, 2, 6) : (16, 4, 8)
        iv.update(from: salt, count: length)
        for byte in 0..<4 { iv[ssrcAt + byte] ^= UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * UInt32(byte))) }
        for byte in 0..<6 { iv[indexAt + byte] ^= UInt8(truncatingIfNeeded: index >> (40 - 8 * UInt64(byte))) }
    }

    /// `bytes` XORed with AES-CM keystream from `iv`, written to `output` (encryption and decryption
    /// alike; the same memory or apart), then `tail`, from wherever it is, written after them.
    func applyKeystream(iv: UnsafePointer<UInt8>, _ bytes: UnsafePointer<UInt8>, into output: UnsafeMutablePointer<UInt8>,
                        _ count: Int, then tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) throws(SRTPError) {
        guard sluice_cipher_start(cipher, iv, 16) == 1, sluice_cipher_update(cipher, output, bytes, count) == 1,
              update(output + count, tail) else {
            throw Self.failure("AES-CM")
        }
    }

    /// The cipher's next bytes are `tail`, written to `output`; true when there are none.
    private func update(_ output: UnsafeMutablePointer<UInt8>, _ tail: UnsafeRawBufferPointer) -> Bool {
        guard let bytes = tail.baseAddress, tail.count > 0 else { return true }
        return sluice_cipher_update(cipher, output, bytes.assumingMemoryBound(to: UInt8.self), tail.count) == 1
    }

    /// The first `tagLength` bytes of HMAC-SHA1 over `bytes[0..<count]` and `extra` (RFC 3711 §4.2.1).
    func authenticate(_ bytes: UnsafePointer<UInt8>, _ count: Int, extra: (UnsafeMutablePointer<UInt8>, Int)?,
                      into tag: UnsafeMutablePointer<UInt8>) {
        var mac: (UInt64, UInt64, UInt32) = (0, 0, 0)
        withUnsafeMutableBytes(of: &mac) { full in
            let out = full.baseAddress!.assumingMemoryBound(to: UInt8.self)
            sluice_hmac_sha1(hmac, bytes, count, extra?.0, extra?.1 ?? 0, out)
            tag.update(from: out, count: tagLength)
        }
    }

    /// AES-GCM encryption of `bytes` after `aad` and `moreAAD`, written to `output` (the same memory
    /// or apart), then of `tail`, from wherever it is, written after them; the tag written to `tag`.
    func seal(iv: UnsafePointer<UInt8>, aad: (UnsafeMutablePointer<UInt8>, Int), _ moreAAD: (UnsafeMutablePointer<UInt8>, Int)?,
              _ bytes: UnsafePointer<UInt8>, into output: UnsafeMutablePointer<UInt8>, _ count: Int,
              then tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
              tag: UnsafeMutablePointer<UInt8>) throws(SRTPError) {
        guard sluice_cipher_start(cipher, iv, 12) == 1,
              sluice_cipher_update(cipher, nil, aad.0, aad.1) == 1,
              moreAAD.map({ sluice_cipher_update(cipher, nil, $0.0, $0.1) == 1 }) ?? true,
              sluice_cipher_update(cipher, output, bytes, count) == 1,
              update(output + count, tail),
              sluice_cipher_finish(cipher) == 1,
              sluice_cipher_tag(cipher, tag, tagLength) == 1 else {
            throw Self.failure("AES-GCM encryption")
        }
    }

    /// AES-GCM decryption of `bytes` after `aad` and `moreAAD`, written to `output` (the same memory or
    /// apart), checked against `tag`. `output` holds unauthenticated bytes when the check fails.
    func open(iv: UnsafePointer<UInt8>, aad: (UnsafePointer<UInt8>, Int), _ moreAAD: (UnsafePointer<UInt8>, Int)?,
              _ bytes: UnsafePointer<UInt8>, into output: UnsafeMutablePointer<UInt8>, _ count: Int,
              tag: UnsafePointer<UInt8>) throws(SRTPError) {
        guard sluice_cipher_start(cipher, iv, 12) == 1,
              sluice_cipher_expect_tag(cipher, tag, tagLength) == 1,
              sluice_cipher_update(cipher, nil, aad.0, aad.1) == 1,
              moreAAD.map({ sluice_cipher_update(cipher, nil, $0.0, $0.1) == 1 }) ?? true,
              sluice_cipher_update(cipher, output, bytes, count) == 1 else {
            throw Self.failure("AES-GCM decryption")
        }
        guard sluice_cipher_finish(cipher) == 1 else {
            ERR_clear_error()
            throw .authenticationFailed
        }
    }

    /// `count` bytes of the session key of `label` (RFC 3711 §4.3.1, §4.3.3): AES-CM keystream under
    /// the master key, from the master salt (padded to 14 bytes, as libsrtp pads RFC 7714's 12) with
    /// key_id = label || r (r = 0: no key derivation rate) XORed into its low bytes, then a zero
    /// block counter.
    static func derive(_ label: UInt8, count: Int, masterKey: [UInt8], masterSalt: [UInt8]) throws(SRTPError) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: 16)
        iv.replaceSubrange(0..<masterSalt.count, with: masterSalt)
        iv[7] ^= label
        var output = [UInt8](repeating: 0, count: count)
        guard let context = EVP_CIPHER_CTX_new() else { throw failure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        var written: Int32 = 0
        let type = masterKey.count == 32 ? EVP_aes_256_ctr() : EVP_aes_128_ctr()
        guard EVP_EncryptInit_ex(context, type, nil, masterKey, iv) == 1,
              EVP_EncryptUpdate(context, &output, &written, output, Int32(count)) == 1 else {
            throw failure("EVP_EncryptUpdate (key derivation)")
        }
        return output
    }

    static func failure(_ operation: String) -> SRTPError {
        let code = ERR_get_error()
        ERR_clear_error()
        return .library(code: Int32(truncatingIfNeeded: code), operation: operation)
    }
}
