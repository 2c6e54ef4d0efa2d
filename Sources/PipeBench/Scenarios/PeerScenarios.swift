// The WebRTC peer's media path: RTP over the bundled transport (DTLS-SRTP keys, ICE route, RFC 7983
// demultiplexing, SRTP) against libsrtp2 protecting and unprotecting the same packets alone.
import BenchLoops
import CSRTP
import MediaSRTP

/// "peer.srtp.<profile>": one packet sent by one PeerTransport and received by the other, in memory.
enum PeerScenarios {
    /// The bundled path should keep 90% of bare libsrtp2's rate, as the SDES RTP paths do.
    static let target = 0.90

    static let all: [any Scenario] = SRTPProfile.allCases.map(transport)

    static func transport(_ profile: SRTPProfile) -> any Scenario {
        HeadToHeadScenario(
            "peer.srtp.\(RTPScenarios.shortName(profile))",
            "1200-byte RTP over two connected PeerTransports (protect, ICE route, demultiplex, unprotect; \(profile.sdesName) from DTLS-SRTP) vs bare srtp_protect + srtp_unprotect",
            inDefaultSet: RTPScenarios.defaultProfiles.contains(profile), unit: "packets/s", target: target
        ) { size in
            let count = size.count(default: RTPScenarios.defaultPackets)
            let pair = try PeerTransportPair(profile: profile)
            let key = SRTPPackets.keys[profile]!
            // The pair's receiver keeps its replay window across repetitions: packets go on numbering.
            let sent = PacketCounter()
            return Workload(
                bitsPerUnit: Double((SRTPPackets.packetLength + profile.rtpOverhead) * 8),
                sluice: {
                    SRTPPackets.withWorkBuffer { buffer in
                        for _ in 0..<count {
                            SRTPPackets.writePacket(sent.next(), into: buffer)
                            precondition(pair.carry(buffer, length: SRTPPackets.packetLength) == SRTPPackets.packetLength)
                        }
                    }
                    return count
                },
                bare: {
                    let sender = BareSRTP.session(profile, key: key, sender: true)
                    let receiver = BareSRTP.session(profile, key: key, sender: false)
                    defer {
                        srtp_dealloc(sender)
                        srtp_dealloc(receiver)
                    }
                    SRTPPackets.withWorkBuffer { buffer in
                        for number in 0..<count {
                            SRTPPackets.writePacket(number, into: buffer)
                            let protected = BareSRTP.protect(sender, buffer, SRTPPackets.packetLength)
                            precondition(BareSRTP.unprotect(receiver, buffer, protected) == SRTPPackets.packetLength)
                        }
                    }
                    return count
                })
        }
    }
}

/// Numbers the packets of one scenario's repetitions in order.
private final class PacketCounter: @unchecked Sendable {
    private var count = 0

    func next() -> Int {
        defer { count += 1 }
        return count
    }
}
