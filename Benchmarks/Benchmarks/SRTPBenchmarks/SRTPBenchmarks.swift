// SRTP per packet: 10,000 RTP packets of 1200 bytes protected, and unprotected, per profile, through
// `SRTPSession` (its default implementation, OpenSSL) and by libsrtp2 in a bare loop (srtp_protect / srtp_unprotect), in the same run. Each run
// makes its sessions (libsrtp's setup is in the count); a 5,000-packet row of the Sluice sessions shows
// that mallocs do not grow with packets on Sluice's side.
import Benchmark
import BenchLoops
import CSRTP
import MediaSRTP

let fullCount = 10_000
/// One key per profile for the whole run, so that the bare and the Sluice rows do the same work.
let keys = SRTPPackets.keys

// The packets, the loops and the bare libsrtp2 sessions are BenchLoops' (SRTPPackets, BareSRTP), shared
// with pipebench.
let protectedByProfile = Dictionary(uniqueKeysWithValues: SRTPProfile.allCases.map {
    ($0, SRTPPackets.protectedPackets($0, count: fullCount))
})

/// Protects `count` packets with `protect`; returns the bytes made.
func protectLoop(count: Int, _ protect: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
    SRTPPackets.protectLoop(count: count, protect)
}

/// Unprotects the first `count` packets of `profile` with `unprotect`.
func unprotectLoop(_ profile: SRTPProfile, count: Int, _ unprotect: (UnsafeMutableRawBufferPointer, Int) -> Int) -> Int {
    SRTPPackets.unprotectLoop(protectedByProfile[profile]!, profile: profile, count: count, unprotect)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
        warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(3), maxIterations: 20,
        // The budget (Thresholds/): SRTPSession (OpenSSL) allocates only when made (57 for AES-CM,
        // 43 for GCM, the same for 5,000 and 10,000 packets); the bare libsrtp2 rows are NSS's own
        // mallocs (14 per AES-CM packet, 5 per GCM packet). The slack absorbs a few of those varying,
        // while one malloc per packet of Sluice's (10,000 a run) still fails the check.
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
            let session = BareSRTP.session(profile, key: keys[profile]!, sender: true)
            defer { srtp_dealloc(session) }
            blackHole(protectLoop(count: fullCount) { BareSRTP.protect(session, $0, $1) })
        }
        Benchmark("Unprotect.\(name).Bare10k") { _ in
            let session = BareSRTP.session(profile, key: keys[profile]!, sender: false)
            defer { srtp_dealloc(session) }
            blackHole(unprotectLoop(profile, count: fullCount) { BareSRTP.unprotect(session, $0, $1) })
        }
    }
}
