import CSRTP
import MediaSDP
import Testing

@testable import MediaSRTP

/// Known-answer vectors: exact bytes out of `protect`, and back out of `unprotect`.
@Suite struct SRTPVectorTests {
    /// libsrtp `srtp_validate()`: the RFC 3711 Appendix B.3 master key and salt (so the B.3 session keys),
    /// SSRC 0xcafebabe, seq 0x1234, ROC 0; the first SRTCP packet has index 1.
    @Test(arguments: SRTPImplementation.allCases)
    func aesCm128HmacSha1_80MatchesLibsrtpAndRFC3711B3(implementation: SRTPImplementation) throws {
        let vector = try SRTPVector("libsrtp_aes_cm_128_hmac_sha1_80")
        let key = try SRTPKeyMaterial(key: vector["master_key"], salt: vector["master_salt"], profile: .aes128CmHmacSha1_80)
        try expectVector(vector, profile: .aes128CmHmacSha1_80, key: key, implementation: implementation)
    }

    /// libsrtp `srtp_validate_gcm()` (RFC 7714): the 12-byte master salt enters the RFC 3711 KDF padded.
    @Test(arguments: SRTPImplementation.allCases)
    func aeadAes128GcmMatchesLibsrtp(implementation: SRTPImplementation) throws {
        let vector = try SRTPVector("libsrtp_aead_aes_128_gcm")
        let key = try SRTPKeyMaterial(key: vector["master_key"], salt: vector["master_salt"], profile: .aeadAes128Gcm)
        try expectVector(vector, profile: .aeadAes128Gcm, key: key, implementation: implementation)
    }

    func expectVector(_ vector: SRTPVector, profile: SRTPProfile, key: SRTPKeyMaterial,
                      implementation: SRTPImplementation) throws {
        let (sender, receiver) = try sessionPair(profile, key: key, implementation: implementation)
        #expect(sender.implementation == implementation && receiver.implementation == implementation)
        let srtp = try sender.protect(vector["rtp_plaintext"])
        #expect(hexString(srtp) == hexString(vector["srtp_protected"]))
        #expect(srtp.count == vector["rtp_plaintext"].count + profile.rtpOverhead)
        #expect(try receiver.unprotect(vector["srtp_protected"]) == vector["rtp_plaintext"])
        // Out of place (into a jitter buffer's slot), by a receiver that has not seen the packet: the same bytes.
        let outOfPlace = try SRTPSession(profile: profile, key: key, direction: .receiver, implementation: implementation)
        #expect(outOfPlace.implementation == implementation)
        #expect(try outOfPlace.unprotectOutOfPlace(vector["srtp_protected"]) == vector["rtp_plaintext"])
        #expect(throws: SRTPError.replayed(tooOld: false)) { try outOfPlace.unprotectOutOfPlace(vector["srtp_protected"]) }
        #expect(outOfPlace.statistics.unprotectedPackets == 1 && outOfPlace.statistics.replayedPackets == 1)

        let srtcp = try sender.protectRTCP(vector["rtcp_plaintext"])
        #expect(hexString(srtcp) == hexString(vector["srtcp_protected"]))
        #expect(srtcp.count == vector["rtcp_plaintext"].count + profile.rtcpOverhead)
        #expect(try receiver.unprotectRTCP(vector["srtcp_protected"]) == vector["rtcp_plaintext"])
        #expect(sender.statistics.protectedPackets == 2)
        #expect(receiver.statistics.unprotectedPackets == 2)
    }
}

@Suite struct SRTPSessionTests {
    @Test(arguments: SRTPProfile.allCases)
    func roundTripsRTPAndRTCP(profile: SRTPProfile) throws {
        let (sender, receiver) = try sessionPair(profile)
        for sequenceNumber: UInt16 in 1...20 {
            let packet = rtpPacket(sequenceNumber: sequenceNumber)
            let srtp = try sender.protect(packet)
            #expect(srtp.count == packet.count + profile.rtpOverhead)
            #expect(srtp[..<12] == packet[..<12])          // the header stays in the clear (RFC 3711 §3.1)
            #expect(srtp[12..<packet.count] != packet[12...])
            #expect(try receiver.unprotect(srtp) == packet)
        }
        let report = rtcpReceiverReport()
        let srtcp = try sender.protectRTCP(report)
        #expect(srtcp.count == report.count + profile.rtcpOverhead)
        #expect(try receiver.unprotectRTCP(srtcp) == report)
        #expect(sender.statistics == SRTPStatistics(protected: 21))
        #expect(receiver.statistics == SRTPStatistics(unprotected: 21))
    }

    @Test(arguments: SRTPProfile.allCases)
    func tamperedPacketFailsAuthenticationAndIsCounted(profile: SRTPProfile) throws {
        let (sender, receiver) = try sessionPair(profile)
        var srtp = try sender.protect(rtpPacket(sequenceNumber: 7))
        srtp[20] ^= 0x01                                   // one payload bit
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotect(srtp) }
        var srtcp = try sender.protectRTCP(rtcpReceiverReport())
        srtcp[srtcp.count - 1] ^= 0x80                     // one tag bit (AES-CM) or index bit (GCM)
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTCP(srtcp) }
        #expect(receiver.statistics.authenticationFailures == 2)
        #expect(receiver.statistics.unprotectedPackets == 0)
        #expect(SRTPError.authenticationFailed.libsrtpCode == 7)   // srtp_err_status_auth_fail
    }

    @Test func replayedPacketIsRejectedAndCounted() throws {
        let (sender, receiver) = try sessionPair(.aes128CmHmacSha1_80)
        let srtp = try sender.protect(rtpPacket(sequenceNumber: 100))
        _ = try receiver.unprotect(srtp)
        #expect(throws: SRTPError.replayed(tooOld: false)) { try receiver.unprotect(srtp) }
        let srtcp = try sender.protectRTCP(rtcpReceiverReport())
        _ = try receiver.unprotectRTCP(srtcp)
        #expect(throws: SRTPError.replayed(tooOld: false)) { try receiver.unprotectRTCP(srtcp) }
        #expect(receiver.statistics == SRTPStatistics(unprotected: 2, replayed: 2))
        #expect(SRTPError.replayed(tooOld: false).libsrtpCode == 9)  // srtp_err_status_replay_fail
    }

    /// A NACK retransmission (RFC 4585 §6.2.1) of a packet 999 behind the newest is still taken with the
    /// default window of 1024; 1100 behind is too old (RFC 3711 §3.3.2). libsrtp's default 128 would drop both.
    @Test func retransmissionWithinTheWindowIsAcceptedOlderIsNot() throws {
        let key = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)
        let (sender, receiver) = try sessionPair(.aes128CmHmacSha1_80, key: key)
        let narrow = try SRTPSession(profile: .aes128CmHmacSha1_80, key: key, direction: .receiver, replayWindow: 128)
        var held: [UInt16: [UInt8]] = [:]
        for sequenceNumber: UInt16 in 0...2000 {
            let srtp = try sender.protect(rtpPacket(sequenceNumber: sequenceNumber))
            if sequenceNumber == 900 || sequenceNumber == 1001 {
                held[sequenceNumber] = srtp                // lost on the way, retransmitted later
            } else {
                _ = try receiver.unprotect(srtp)
                _ = try narrow.unprotect(srtp)
            }
        }
        // The sender retransmits the same packets as they were (allow_repeat_tx).
        let again = try sender.protect(rtpPacket(sequenceNumber: 1001))
        #expect(again == held[1001])
        #expect(try receiver.unprotect(again) == rtpPacket(sequenceNumber: 1001))
        #expect(throws: SRTPError.replayed(tooOld: true)) { try receiver.unprotect(held[900]!) }
        #expect(throws: SRTPError.replayed(tooOld: true)) { try narrow.unprotect(held[1001]!) }
        #expect(receiver.statistics.replayedPackets == 1)
        #expect(SRTPError.replayed(tooOld: true).libsrtpCode == 10)  // srtp_err_status_replay_old
    }

    /// RFC 3711 §3.3.1: the rollover counter counts sequence-number wraps; the receiver follows it.
    @Test func rolloverCounterFollowsSequenceNumberWraps() throws {
        let (sender, receiver) = try sessionPair(.aes128CmHmacSha1_80)
        var buffer = [UInt8](repeating: 0, count: 200)
        var sequenceNumber: UInt16 = 65_000
        for index in 0..<70_000 {
            let packet = rtpPacket(sequenceNumber: sequenceNumber, payloadLength: 40)
            buffer.replaceSubrange(0..<packet.count, with: packet)
            // The index goes into the payload: a wrongly guessed ROC would fail authentication instead.
            buffer[12] = UInt8(truncatingIfNeeded: index >> 16)
            buffer[13] = UInt8(truncatingIfNeeded: index >> 8)
            buffer[14] = UInt8(truncatingIfNeeded: index)
            try buffer.withUnsafeMutableBytes { bytes in
                let srtpLength = try sender.protect(bytes, length: packet.count)
                let rtpLength = try receiver.unprotect(bytes, length: srtpLength)
                #expect(rtpLength == packet.count)
            }
            #expect(Int(buffer[12]) << 16 | Int(buffer[13]) << 8 | Int(buffer[14]) == index)
            sequenceNumber &+= 1
        }
        #expect(sender.statistics.protectedPackets == 70_000)
        #expect(receiver.statistics == SRTPStatistics(unprotected: 70_000))
    }

    /// Packets protected after the wrap do not verify for a receiver that guesses ROC 0 (RFC 3711 §3.3.1).
    @Test func packetAfterTheWrapNeedsTheRolloverCounter() throws {
        let key = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)
        let (sender, _) = try sessionPair(.aes128CmHmacSha1_80, key: key)
        for sequenceNumber: UInt16 in 65_530...65_535 { _ = try sender.protect(rtpPacket(sequenceNumber: sequenceNumber)) }
        let afterWrap = try sender.protect(rtpPacket(sequenceNumber: 3))
        let fresh = try SRTPSession(profile: .aes128CmHmacSha1_80, key: key, direction: .receiver)
        #expect(throws: SRTPError.authenticationFailed) { try fresh.unprotect(afterWrap) }
    }

    @Test(arguments: SRTPProfile.allCases)
    func wrongKeyIsRejected(profile: SRTPProfile) throws {
        let sender = try SRTPSession(profile: profile, key: .random(for: profile), direction: .sender)
        let receiver = try SRTPSession(profile: profile, key: .random(for: profile), direction: .receiver)
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotect(try sender.protect(rtpPacket(sequenceNumber: 1))) }
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTCP(try sender.protectRTCP(rtcpReceiverReport())) }
    }

    /// RFC 3711 §3.1: the MKI goes between the encrypted portion and the tag, and selects the key.
    @Test func masterKeyIdentifierIsCarriedAndChecked() throws {
        let plain = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)
        let key = try SRTPKeyMaterial(keyAndSalt: plain.masterKey + plain.masterSalt, profile: .aes128CmHmacSha1_80,
                                      mki: SDPCrypto.MKI(value: 1, length: 4))
        let (sender, receiver) = try sessionPair(.aes128CmHmacSha1_80, key: key)
        #expect(sender.rtpOverhead == 14)
        let packet = rtpPacket(sequenceNumber: 9)
        let srtp = try sender.protect(packet)
        #expect(srtp.count == packet.count + 14)
        #expect(srtp[packet.count..<packet.count + 4] == [0, 0, 0, 1])
        #expect(try receiver.unprotect(srtp) == packet)
        #expect(try receiver.unprotectRTCP(try sender.protectRTCP(rtcpReceiverReport())) == rtcpReceiverReport())

        let otherMKI = try SRTPKeyMaterial(keyAndSalt: plain.masterKey + plain.masterSalt, profile: .aes128CmHmacSha1_80,
                                           mki: SDPCrypto.MKI(value: 2, length: 4))
        let stranger = try SRTPSession(profile: .aes128CmHmacSha1_80, key: otherMKI, direction: .receiver)
        #expect(throws: SRTPError.library(code: 25, operation: "srtp_unprotect")) {  // srtp_err_status_bad_mki
            try stranger.unprotect(try sender.protect(rtpPacket(sequenceNumber: 10)))
        }
    }

    @Test func misuseIsAnErrorCountedNotACrash() throws {
        let (sender, receiver) = try sessionPair(.aeadAes128Gcm)
        let packet = rtpPacket(sequenceNumber: 1)
        #expect(throws: SRTPError.bufferTooSmall(needed: packet.count + 16, available: packet.count + 15)) {
            try sender.run(SRTPSession.protect, packet, room: 15)
        }
        #expect(throws: SRTPError.wrongDirection) { try receiver.protect(packet) }
        #expect(throws: SRTPError.wrongDirection) { try sender.unprotect(packet) }
        #expect(throws: SRTPError.self) { try receiver.unprotect([0x80, 0x60, 0x00]) }   // 3 bytes: not SRTP
        #expect(sender.statistics.otherErrors == 2)
        #expect(receiver.statistics.otherErrors == 2)
    }

    /// Another user of libsrtp in the process may call `srtp_init` before or after Sluice; libsrtp 2.5
    /// answers a second call with bad_param, which must not stop sessions being made.
    /// Another user of libsrtp in the process calling `srtp_init` again does not disturb Sluice's
    /// libsrtp sessions. (Sluice's own set-up runs first: `srtp_init` racing with another thread's
    /// `srtp_init` can fail in libsrtp itself, as this test once did beside the MKI test.)
    @Test func sessionsWorkWhenLibsrtpWasInitializedBySomeoneElse() throws {
        _ = try sessionPair(.aes128CmHmacSha1_80, implementation: .libsrtp)
        _ = srtp_init()
        let (sender, receiver) = try sessionPair(.aes128CmHmacSha1_80, implementation: .libsrtp)
        #expect(try receiver.unprotect(try sender.protect(rtpPacket(sequenceNumber: 1))) == rtpPacket(sequenceNumber: 1))
    }

    @Test func replayWindowMustBeOneLibsrtpTakes() throws {
        let key = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)
        for window in [0, 63, 32_768] {
            #expect(throws: SRTPError.invalidReplayWindow(window)) {
                try SRTPSession(profile: .aes128CmHmacSha1_80, key: key, direction: .receiver, replayWindow: window)
            }
        }
        _ = try SRTPSession(profile: .aes128CmHmacSha1_80, key: key, direction: .receiver, replayWindow: 32_767)
        #expect(SRTPSession.defaultReplayWindow == 1024)
    }

    @Test func keyOfAnotherProfileIsRefused() throws {
        #expect(throws: SRTPError.badKey(.wrongLength(part: .salt, expected: 12, actual: 14))) {
            try SRTPSession(profile: .aeadAes128Gcm, key: .random(for: .aes128CmHmacSha1_80), direction: .sender)
        }
        #expect(throws: SRTPError.badKey(.wrongLength(part: .key, expected: 32, actual: 16))) {
            try SRTPSession(profile: .aeadAes256Gcm, key: .random(for: .aeadAes128Gcm), direction: .sender)
        }
    }

    @Test func profilesHaveTheirRFCSizesAndNames() {
        // (profile, SDES name, key, salt, SRTP overhead, SRTCP overhead, DTLS-SRTP id)
        let table: [(SRTPProfile, String, Int, Int, Int, Int, UInt16)] = [
            (.aes128CmHmacSha1_80, "AES_CM_128_HMAC_SHA1_80", 16, 14, 10, 14, 0x0001),
            (.aes128CmHmacSha1_32, "AES_CM_128_HMAC_SHA1_32", 16, 14, 4, 14, 0x0002),
            (.aeadAes128Gcm, "AEAD_AES_128_GCM", 16, 12, 16, 20, 0x0007),
            (.aeadAes256Gcm, "AEAD_AES_256_GCM", 32, 12, 16, 20, 0x0008),
        ]
        for (profile, name, key, salt, rtp, rtcp, dtls) in table {
            #expect(profile.sdesName == name)
            #expect(SRTPProfile(sdesName: name) == profile)
            #expect([profile.masterKeyLength, profile.masterSaltLength, profile.rtpOverhead, profile.rtcpOverhead] == [key, salt, rtp, rtcp])
            #expect(profile.dtlsProtectionProfile == dtls)
        }
        #expect(SRTPProfile(sdesName: "F8_128_HMAC_SHA1_80") == nil)
    }
}

extension SRTPStatistics {
    init(protected: Int = 0, unprotected: Int = 0, authenticationFailures: Int = 0, replayed: Int = 0, otherErrors: Int = 0) {
        self.init()
        protectedPackets = protected
        unprotectedPackets = unprotected
        self.authenticationFailures = authenticationFailures
        replayedPackets = replayed
        self.otherErrors = otherErrors
    }
}
