// The SRTP media path per profile: Sluice's send path (packetize + protect) and receive path (unprotect +
// parse + jitter buffer + depacketize) against SRTP alone over the same packets (the same implementation,
// OpenSSL); and SRTPSession (OpenSSL) against libsrtp2 on plain packets, beside the hash bound.
import BenchLoops
import CSRTP
import MediaCore
import MediaSRTP

/// The RTP/SRTP scenarios: "rtp.send.<profile>", "rtp.receive.<profile>", "srtp.protect.<profile>",
/// "srtp.unprotect.<profile>".
enum RTPScenarios {
    /// The RTP paths should reach 95% of SRTP alone.
    static let target = 0.95
    /// SRTPSession on OpenSSL against libsrtp2: 3x for AES-CM, 1.2x for AES-GCM (issue 13).
    static func speedupTarget(_ profile: SRTPProfile) -> Double {
        profile == .aeadAes128Gcm || profile == .aeadAes256Gcm ? 1.2 : 3.0
    }
    /// Packets per repetition unless `--frames` says otherwise.
    static let defaultPackets = 10_000
    /// The profiles in the default set; the others run when named.
    static let defaultProfiles: Set<SRTPProfile> = [.aes128CmHmacSha1_80, .aeadAes128Gcm]

    static let all: [any Scenario] = SRTPProfile.allCases.flatMap { profile in
        [send(profile), receive(profile), sessionProtect(profile), sessionUnprotect(profile)]
    }

    /// "aes128cm80", "aes128gcm", …: the profile in a scenario name.
    static func shortName(_ profile: SRTPProfile) -> String {
        switch profile {
        case .aes128CmHmacSha1_80: "aes128cm80"
        case .aes128CmHmacSha1_32: "aes128cm32"
        case .aeadAes128Gcm: "aes128gcm"
        case .aeadAes256Gcm: "aes256gcm"
        }
    }

    /// The synthetic VP8 stream's first packets for a run of `size`, plain and protected, their arrival
    /// times and the key.
    static func stream(_ size: RunSize, _ profile: SRTPProfile)
        -> (plain: PacketList, arrivals: [ClockTime], protected: PacketList, key: SRTPKeyMaterial) {
        let (plain, arrivals) = SyntheticVideoStream.vp8Packets(size.count(default: defaultPackets))
        let key = SRTPPackets.keys[profile]!
        return (plain, arrivals, SRTPPaths.protect(plain, profile: profile, key: key), key)
    }

    /// Bits per packet of `list`, on average.
    static func bitsPerPacket(_ list: PacketList) -> Double { Double(list.bytes.count * 8) / Double(max(1, list.ranges.count)) }

    static func send(_ profile: SRTPProfile) -> any Scenario { path(profile, sending: true) }
    static func receive(_ profile: SRTPProfile) -> any Scenario { path(profile, sending: false) }

    /// The send path (VP8 frames packetized by RTPSender, then protected) or the receive path
    /// (unprotected, parsed, jitter-buffered, depacketized) against SRTP alone (SRTPSession on OpenSSL)
    /// protecting or unprotecting the same packets.
    static func path(_ profile: SRTPProfile, sending: Bool) -> any Scenario {
        let summary = sending
            ? "VP8 frames packetized (RTPSender) and protected (\(profile.sdesName)) vs SRTP alone protecting the same packets"
            : "SRTP (\(profile.sdesName)) unprotected, parsed, jitter-buffered and depacketized vs SRTP alone unprotecting them"
        return HeadToHeadScenario(
            "rtp.\(sending ? "send" : "receive").\(shortName(profile))", summary,
            inDefaultSet: defaultProfiles.contains(profile), unit: "packets/s", target: target
        ) { size in
            let (plain, arrivals, protected, key) = stream(size, profile)
            let count = plain.ranges.count
            return Workload(
                bitsPerUnit: bitsPerPacket(protected),
                sluice: {
                    if sending {
                        _ = SRTPPaths.send(packets: count, profile: profile, key: key)
                    } else {
                        _ = SRTPPaths.receive(protected, arrivals: arrivals, count: count, profile: profile, key: key)
                    }
                    return count
                },
                bare: {
                    let session = try SRTPSession(profile: profile, key: key, direction: sending ? .sender : .receiver)
                    _ = SRTPPaths.alone(sending ? plain : protected, count: count) { buffer, length in
                        sending ? try! session.protect(buffer, length: length) : try! session.unprotect(buffer, length: length)
                    }
                    return count
                })
        }
    }

    static func sessionProtect(_ profile: SRTPProfile) -> any Scenario { session(profile, protecting: true) }
    static func sessionUnprotect(_ profile: SRTPProfile) -> any Scenario { session(profile, protecting: false) }

    /// SRTPSession (OpenSSL) against bare libsrtp2 on SRTPBenchmarks' 1200-byte packets, protecting or
    /// unprotecting; for AES-CM beside the bound HMAC-SHA1 alone puts on the packet rate.
    static func session(_ profile: SRTPProfile, protecting: Bool) -> any Scenario {
        let verb = protecting ? "protect" : "unprotect"
        return HeadToHeadScenario(
            "srtp.\(verb).\(shortName(profile))",
            "SRTPSession.\(verb) (\(profile.sdesName), OpenSSL) of 1200-byte packets vs bare libsrtp2 srtp_\(verb)",
            inDefaultSet: false, unit: "packets/s", target: speedupTarget(profile)
        ) { size in
            let count = size.count(default: defaultPackets)
            let key = SRTPPackets.keys[profile]!
            let packets = protecting ? [] : SRTPPackets.protectedPackets(profile, count: count)
            /// Runs `transform` over the packets, protecting fresh ones or unprotecting `packets`.
            let loop = { (transform: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int in
                _ = protecting ? SRTPPackets.protectLoop(count: count, transform)
                    : SRTPPackets.unprotectLoop(packets, profile: profile, count: count, transform)
                return count
            }
            let gcm = profile == .aeadAes128Gcm || profile == .aeadAes256Gcm
            var workload = Workload(
                bitsPerUnit: Double(SRTPPackets.packetLength * 8),
                sluice: {
                    let session = try SRTPSession(profile: profile, key: key, direction: protecting ? .sender : .receiver)
                    return loop { protecting ? try! session.protect($0, length: $1) : try! session.unprotect($0, length: $1) }
                },
                bare: {
                    let session = BareSRTP.session(profile, key: key, sender: protecting)
                    defer { srtp_dealloc(session) }
                    return loop { protecting ? BareSRTP.protect(session, $0, $1) : BareSRTP.unprotect(session, $0, $1) }
                })
            if !gcm {
                workload.extraMetrics = [Metric("HMAC-SHA1 bound", SRTPPaths.hashBound(bytes: SRTPPackets.packetLength + 4),
                                                unit: "packets/s")]
            }
            return workload
        }
    }
}
