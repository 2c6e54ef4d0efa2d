// The WebRTC peer's media path: RTP over the bundled transport (DTLS-SRTP keys, ICE route, RFC 7983
// demultiplexing, SRTP) against SRTP alone (the same implementation, OpenSSL) protecting and unprotecting
// the same packets.
import BenchLoops
import MediaSRTP

/// "peer.srtp.<profile>": one packet sent by one PeerTransport and received by the other, in memory.
enum PeerScenarios {
    /// The bundled path should keep 95% of SRTP alone, as the SDES RTP paths should.
    static let target = RTPScenarios.target

    static let all: [any Scenario] = SRTPProfile.allCases.map(transport)

    static func transport(_ profile: SRTPProfile) -> any Scenario {
        HeadToHeadScenario(
            "peer.srtp.\(RTPScenarios.shortName(profile))",
            "1200-byte RTP over two connected PeerTransports (protect, ICE route, demultiplex, unprotect; \(profile.sdesName) from DTLS-SRTP) vs SRTP alone protecting and unprotecting",
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
                    let sender = try SRTPSession(profile: profile, key: key, direction: .sender)
                    let receiver = try SRTPSession(profile: profile, key: key, direction: .receiver)
                    SRTPPackets.withWorkBuffer { buffer in
                        for number in 0..<count {
                            SRTPPackets.writePacket(number, into: buffer)
                            let protected = try! sender.protect(buffer, length: SRTPPackets.packetLength)
                            precondition(try! receiver.unprotect(buffer, length: protected) == SRTPPackets.packetLength)
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
