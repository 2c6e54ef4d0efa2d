// SRTP and SRTCP with keys and packets from the input: a byte picks the profile, then the master key
// and salt, then the packet. The packet is unprotected as received (RTP and RTCP); when it is a valid
// RTP packet or RTCP compound it is also protected, unprotected with the same key (it must come back
// unchanged) and replayed (which must be refused).
import FuzzSupport
import MediaRTP
import MediaSRTP

@_cdecl("FuzzSRTP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        var reader = FuzzReader(bytes)
        let profiles = SRTPProfile.allCases
        let profile = profiles[Int(reader.byte()) % profiles.count]
        let keyAndSalt = Array(reader.bytes(profile.masterKeyLength + profile.masterSaltLength))
        guard let key = try? SRTPKeyMaterial(keyAndSalt: keyAndSalt, profile: profile) else { return }
        let packet = reader.rest
        let isRTP = (try? RTPPacket(parsing: packet)) != nil
        let isRTCP = (try? RTCPCompoundPacket.validate(packet)) != nil
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: packet.count + 64, alignment: 16)
        defer { buffer.deallocate() }
        for rtcp in [false, true] {
            do {
                let receiver = try SRTPSession(profile: profile, key: key, direction: .receiver)
                buffer.copyMemory(from: packet)
                if let length = try? unprotect(receiver, buffer, packet.count, rtcp: rtcp) {
                    precondition(length <= packet.count, "unprotecting only shortens a packet")
                }
                guard rtcp ? isRTCP : isRTP else { continue }
                let sender = try SRTPSession(profile: profile, key: key, direction: .sender)
                let fresh = try SRTPSession(profile: profile, key: key, direction: .receiver)
                buffer.copyMemory(from: packet)
                let protected = try rtcp ? sender.protectRTCP(buffer, length: packet.count)
                                         : sender.protect(buffer, length: packet.count)
                let sent = Array(buffer[..<protected])
                let length = try unprotect(fresh, buffer, protected, rtcp: rtcp)
                precondition(buffer[..<length].elementsEqual(packet), "unprotect(protect(p)) == p")
                buffer.copyBytes(from: sent)
                precondition((try? unprotect(fresh, buffer, protected, rtcp: rtcp)) == nil, "a replay is refused")
            } catch {
                preconditionFailure("SRTP refused a valid packet or key: \(error)")
            }
        }
    }
}

private func unprotect(_ session: SRTPSession, _ buffer: UnsafeMutableRawBufferPointer, _ length: Int,
                       rtcp: Bool) throws(SRTPError) -> Int {
    rtcp ? try session.unprotectRTCP(buffer, length: length) : try session.unprotect(buffer, length: length)
}
