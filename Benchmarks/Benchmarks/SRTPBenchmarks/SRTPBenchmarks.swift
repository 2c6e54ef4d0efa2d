// SRTP per packet: 10,000 RTP packets of 1200 bytes protected, and unprotected, per profile, through
// `SRTPSession` and by libsrtp2 in a bare loop (srtp_protect / srtp_unprotect), in the same run. Each run
// makes its sessions (libsrtp's setup is in the count); a 5,000-packet row of the Sluice sessions shows
// that mallocs do not grow with packets on Sluice's side.
import Benchmark
import CSRTP
import MediaSRTP

let fullCount = 10_000
let packetLength = 1200

/// One key per profile for the whole run, so that the bare and the Sluice rows do the same work.
let keys = Dictionary(uniqueKeysWithValues: SRTPProfile.allCases.map { ($0, SRTPKeyMaterial.random(for: $0)) })

/// Writes RTP packet `number` (RFC 3550 §5.1: V=2, PT 96, SSRC 1, 1188 bytes of payload) into `buffer`.
func writePacket(_ number: Int, into buffer: UnsafeMutableRawBufferPointer) {
    let sequenceNumber = UInt16(truncatingIfNeeded: number)
    let header: [UInt8] = [0x80, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    header.withUnsafeBytes { buffer.copyMemory(from: $0) }
    buffer.storeBytes(of: sequenceNumber.bigEndian, toByteOffset: 2, as: UInt16.self)
    buffer.storeBytes(of: UInt32(truncatingIfNeeded: number * 3000).bigEndian, toByteOffset: 4, as: UInt32.self)
    for index in 12..<packetLength { buffer[index] = UInt8(truncatingIfNeeded: index &* 131 &+ number) }
}

/// A work buffer with room for the trailer, for one run.
func withWorkBuffer<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: packetLength + 64, alignment: 16)
    defer { buffer.deallocate() }
    return body(buffer)
}

/// Protects `count` packets with `protect` (buffer, RTP length) -> SRTP length; returns the bytes made.
func protectLoop(count: Int, _ protect: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
    withWorkBuffer { buffer in
        var total = 0
        for number in 0..<count {
            writePacket(number, into: buffer)
            total &+= protect(buffer, packetLength)
        }
        return total
    }
}

/// The protected packets of `profile`, back to back, each `packetLength + rtpOverhead` bytes.
func protectedPackets(_ profile: SRTPProfile) -> [UInt8] {
    let sender = try! SRTPSession(profile: profile, key: keys[profile]!, direction: .sender)
    var packets: [UInt8] = []
    _ = protectLoop(count: fullCount) { buffer, length in
        let protected = try! sender.protect(buffer, length: length)
        packets.append(contentsOf: buffer[..<protected])
        return protected
    }
    return packets
}

let protectedByProfile = Dictionary(uniqueKeysWithValues: SRTPProfile.allCases.map { ($0, protectedPackets($0)) })

/// Unprotects the first `count` packets of `profile` with `unprotect` (buffer, SRTP length) -> RTP length.
func unprotectLoop(_ profile: SRTPProfile, count: Int, _ unprotect: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
    let length = packetLength + profile.rtpOverhead
    return withWorkBuffer { buffer in
        protectedByProfile[profile]!.withUnsafeBytes { packets in
            var total = 0
            for number in 0..<count {
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: packets[number * length..<(number + 1) * length]))
                total &+= unprotect(buffer, length)
            }
            return total
        }
    }
}

// MARK: Bare libsrtp2

/// srtp_init once per process. A second call (SRTPSession makes the first) returns bad_param in libsrtp
/// 2.5, which re-registers its debug modules; the library is ready all the same.
let bareInitStatus = srtp_init()

/// A libsrtp session as an application using libsrtp2 directly would make it.
func bareSession(_ profile: SRTPProfile, sender: Bool) -> srtp_t {
    precondition(bareInitStatus == srtp_err_status_ok || bareInitStatus == srtp_err_status_bad_param)
    var policy = srtp_policy_t()
    switch profile {
    case .aes128CmHmacSha1_80:
        srtp_crypto_policy_set_rtp_default(&policy.rtp)
        srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
    case .aes128CmHmacSha1_32:
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp)
        srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
    case .aeadAes128Gcm:
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
    case .aeadAes256Gcm:
        srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp)
        srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp)
    }
    policy.ssrc.type = sender ? ssrc_any_outbound : ssrc_any_inbound
    policy.window_size = 1024
    policy.allow_repeat_tx = sender ? 1 : 0
    var keyAndSalt = keys[profile]!.masterKey + keys[profile]!.masterSalt
    var session: srtp_t?
    let status = keyAndSalt.withUnsafeMutableBufferPointer { key in
        policy.key = key.baseAddress
        return srtp_create(&session, &policy)
    }
    precondition(status == srtp_err_status_ok)
    return session!
}

/// `transform` (srtp_protect or srtp_unprotect) on `buffer[0..<length]`; the new length.
func bare(_ transform: (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t,
          _ session: srtp_t, _ buffer: UnsafeMutableRawBufferPointer, _ length: Int) -> Int {
    var octets = Int32(length)
    precondition(transform(session, buffer.baseAddress, &octets) == srtp_err_status_ok)
    return Int(octets)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
        warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(3), maxIterations: 20,
        // The budget (Thresholds/) is mostly NSS's own mallocs inside libsrtp (14 per AES-CM packet, 5
        // per GCM packet); the slack absorbs a few of those varying, while one malloc per packet of
        // Sluice's (10,000 a run) still fails the check.
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 200])])

    blackHole(protectedByProfile.count)  // build the inputs before any measurement

    for profile in SRTPProfile.allCases {
        let name = profile.sdesName
        for count in [fullCount, fullCount / 2] {
            let suffix = count == fullCount ? "10k" : "5k"
            Benchmark("Protect.\(name).Sluice\(suffix)") { _ in
                let session = try! SRTPSession(profile: profile, key: keys[profile]!, direction: .sender)
                blackHole(protectLoop(count: count) { try! session.protect($0, length: $1) })
            }
            Benchmark("Unprotect.\(name).Sluice\(suffix)") { _ in
                let session = try! SRTPSession(profile: profile, key: keys[profile]!, direction: .receiver)
                blackHole(unprotectLoop(profile, count: count) { try! session.unprotect($0, length: $1) })
            }
        }
        Benchmark("Protect.\(name).Bare10k") { _ in
            let session = bareSession(profile, sender: true)
            defer { srtp_dealloc(session) }
            blackHole(protectLoop(count: fullCount) { bare(srtp_protect, session, $0, $1) })
        }
        Benchmark("Unprotect.\(name).Bare10k") { _ in
            let session = bareSession(profile, sender: false)
            defer { srtp_dealloc(session) }
            blackHole(unprotectLoop(profile, count: fullCount) { bare(srtp_unprotect, session, $0, $1) })
        }
    }
}
