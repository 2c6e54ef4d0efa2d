import MediaSRTP
import TestSupport
import Testing

/// Sluice's SRTP on OpenSSL against libsrtp2, the reference: the same bytes out of every protect, and
/// the same decision on every packet received (accepted with the same bytes, replayed, too old, failed
/// authentication, refused as malformed), over long seeded streams with sequence-number wraps,
/// retransmissions, reordering, tampering and strangers.
@Suite struct SRTPImplementationTests {
    /// What happened to one packet, comparable across implementations.
    enum Outcome: Equatable {
        case bytes([UInt8])
        case authenticationFailed, replayed, tooOld, refused

        init(_ run: () throws -> [UInt8]) {
            do { self = .bytes(try run()) } catch let error as SRTPError {
                switch error {
                case .authenticationFailed: self = .authenticationFailed
                case .replayed(let tooOld): self = tooOld ? .tooOld : .replayed
                default: self = .refused
                }
            } catch { self = .refused }
        }
    }

    /// An RTP packet with up to 3 CSRCs, sometimes a header extension, and 0 to 1200 bytes of payload.
    static func packet(ssrc: UInt32, sequence: UInt16, _ random: inout SplitMix64) -> [UInt8] {
        let csrcs = Int.random(in: 0...3, using: &random)
        let extensionWords = Bool.random(using: &random) ? Int.random(in: 0...4, using: &random) : -1
        var bytes: [UInt8] = [0x80 | UInt8(csrcs) | (extensionWords >= 0 ? 0x10 : 0), 96,
                              UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
        bytes += (0..<4).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        bytes += (0..<(4 * csrcs)).map { _ in UInt8.random(in: 0...255, using: &random) }
        if extensionWords >= 0 {
            bytes += [0xBE, 0xDE, 0, UInt8(extensionWords)]
            bytes += (0..<(4 * extensionWords)).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
        bytes += (0..<Int.random(in: 0...1200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        return bytes
    }

    /// A compound-looking RTCP packet of 8 to 200 bytes from `ssrc`.
    static func rtcp(ssrc: UInt32, _ random: inout SplitMix64) -> [UInt8] {
        let words = Int.random(in: 1...49, using: &random)
        var bytes: [UInt8] = [0x80, 200, 0, UInt8(words)] + withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        bytes += (0..<(4 * (words - 1))).map { _ in UInt8.random(in: 0...255, using: &random) }
        return bytes
    }

    /// Sequence numbers as a sender emits them: mostly the next, some sent again (NACK), some far back
    /// (past the window), some ahead (a gap); each SSRC starts near the wrap.
    static func sendingOrder(count: Int, _ random: inout SplitMix64) -> [(ssrc: UInt32, sequence: UInt16)] {
        var next: [UInt32: UInt16] = [0x1111_1111: 65_400, 0x2222_2222: 10, 0xCAFE_BABE: 40_000]
        let ssrcs = Array(next.keys).sorted()
        return (0..<count).map { _ in
            let ssrc = ssrcs.randomElement(using: &random)!
            let last = next[ssrc]!
            let sequence: UInt16 = switch Int.random(in: 0..<100, using: &random) {
            case 0..<80: last &+ 1
            case 80..<90: last &- UInt16.random(in: 0...300, using: &random)   // a retransmission
            case 90..<94: last &- UInt16.random(in: 1000...5000, using: &random)  // past a 1024 window
            default: last &+ UInt16.random(in: 2...3000, using: &random)       // a gap
            }
            if Int16(bitPattern: sequence &- last) > 0 { next[ssrc] = sequence }
            return (ssrc, sequence)
        }
    }

    /// Senders with `key`: Sluice's on OpenSSL and libsrtp's, the reference.
    static func senders(_ profile: SRTPProfile, key: SRTPKeyMaterial) throws -> (ours: SRTPSession, reference: SRTPSession) {
        (try SRTPSession(profile: profile, key: key, direction: .sender, implementation: .openSSL),
         try SRTPSession(profile: profile, key: key, direction: .sender, implementation: .libsrtp))
    }

    /// `senders` with a random key, and a second libsrtp sender for the calls that protect from
    /// bytes apart from the buffer (libsrtp protects in place only: they are copied in for it first).
    static func sendersProtectingApart(_ profile: SRTPProfile) throws
        -> (ours: SRTPSession, reference: SRTPSession, copying: SRTPSession) {
        let key = SRTPKeyMaterial.random(for: profile)
        let (ours, reference) = try senders(profile, key: key)
        return (ours, reference, try SRTPSession(profile: profile, key: key, direction: .sender, implementation: .libsrtp))
    }

    @Test(arguments: SRTPProfile.allCases)
    func sendersWriteTheSameBytes(profile: SRTPProfile) throws {
        var random = SplitMix64(seed: 0x5EED_0001 &+ UInt64(profile.dtlsProtectionProfile))
        let (ours, reference) = try Self.senders(profile, key: SRTPKeyMaterial.random(for: profile))
        #expect(ours.implementation == .openSSL && reference.implementation == .libsrtp)
        var outcomes: [Outcome: Int] = [:]
        for (number, (ssrc, sequence)) in Self.sendingOrder(count: 3000, &random).enumerated() {
            let packet = Self.packet(ssrc: ssrc, sequence: sequence, &random)
            let mine = Outcome { try ours.protect(packet) }, theirs = Outcome { try reference.protect(packet) }
            #expect(mine == theirs, "packet \(number): SSRC \(ssrc) sequence \(sequence), \(packet.count) bytes")
            outcomes[theirs.isBytes ? .bytes([]) : theirs, default: 0] += 1
            if number % 10 == 0 {
                let report = Self.rtcp(ssrc: ssrc, &random)
                #expect(Outcome { try ours.protectRTCP(report) } == Outcome { try reference.protectRTCP(report) }, "RTCP after \(number)")
            }
        }
        #expect(ours.statistics == reference.statistics)
        // The stream exercised both paths: protected packets and ones refused as older than the window.
        #expect(outcomes[.bytes([]), default: 0] > 2500 && outcomes[.tooOld, default: 0] > 20, "\(outcomes)")
    }

    /// `protect(_:into:)` (the cipher reading the plain packet, writing another buffer) writes what
    /// libsrtp writes in place, for both engines, and leaves the packet plain.
    @Test(arguments: SRTPProfile.allCases)
    func protectingIntoAnotherBufferWritesTheSameBytes(profile: SRTPProfile) throws {
        var random = SplitMix64(seed: 0x5EED_0004 &+ UInt64(profile.dtlsProtectionProfile))
        let (ours, reference, copying) = try Self.sendersProtectingApart(profile)
        for number in 0..<300 {
            let packet = Self.packet(ssrc: 0xC0FFEE, sequence: UInt16(truncatingIfNeeded: 65_400 + number), &random)
            let expected = try reference.protect(packet)
            for session in [ours, copying] {
                var output = [UInt8](repeating: 0xEE, count: packet.count + session.rtpOverhead)
                let plain = packet
                let length = try plain.withUnsafeBytes { source in
                    try output.withUnsafeMutableBytes { try session.protect(source, into: $0) }
                }
                #expect(Array(output[..<length]) == expected, "packet \(number), \(session.implementation)")
                #expect(plain == packet)
            }
        }
        #expect(ours.statistics.protectedPackets == 300 && copying.statistics == reference.statistics)
        // Too little room is refused before anything is written.
        let packet = Self.packet(ssrc: 0xC0FFEE, sequence: 1, &random)
        var short = [UInt8](repeating: 0, count: packet.count + ours.rtpOverhead - 1)
        #expect(throws: SRTPError.self) {
            try packet.withUnsafeBytes { source in try short.withUnsafeMutableBytes { try ours.protect(source, into: $0) } }
        }
    }

    /// `protect(_:length:followedBy:)` (a packet's head in the buffer, the rest of its payload read
    /// from elsewhere, as a sender packetizing a frame gives it) writes what libsrtp writes for the
    /// whole packet, for both engines, wherever the payload is split, and leaves the tail as it was.
    @Test(arguments: SRTPProfile.allCases)
    func protectingAHeadFollowedByATailWritesTheSameBytes(profile: SRTPProfile) throws {
        var random = SplitMix64(seed: 0x5EED_0005 &+ UInt64(profile.dtlsProtectionProfile))
        let (ours, reference, copying) = try Self.sendersProtectingApart(profile)
        var splits = Set<Int>()
        for number in 0..<300 {
            let packet = Self.packet(ssrc: 0xC0FFEE, sequence: UInt16(truncatingIfNeeded: 65_400 + number), &random)
            var headerLength = 12 + 4 * Int(packet[0] & 0x0F)
            if packet[0] & 0x10 != 0 { headerLength += 4 + 4 * Int(packet[headerLength + 3]) }
            // The head alone, the whole packet, a split between, or a head ending inside the payload's
            // first cipher block (a sender's head: the header and a payload descriptor of a few bytes).
            let split = min(packet.count, [headerLength, packet.count, Int.random(in: headerLength...packet.count, using: &random),
                                           headerLength + 1 + number % 15][number % 4])
            splits.insert(split == headerLength ? 0 : split == packet.count ? 2 : split - headerLength < 16 ? 3 : 1)
            let expected = try reference.protect(packet)
            let tail = Array(packet[split...])
            for session in [ours, copying] {
                var output = [UInt8](repeating: 0xEE, count: packet.count + session.rtpOverhead)
                output.replaceSubrange(0..<split, with: packet[..<split])
                let length = try tail.withUnsafeBytes { tail in
                    try output.withUnsafeMutableBytes { try session.protect($0, length: split, followedBy: tail) }
                }
                #expect(Array(output[..<length]) == expected, "packet \(number) split at \(split), \(session.implementation)")
                #expect(tail == Array(packet[split...]))
            }
        }
        #expect(splits == [0, 1, 2, 3], "the head alone, the whole packet, splits between and inside the first block")
        #expect(ours.statistics.protectedPackets == 300 && copying.statistics == reference.statistics)
        // Too little room for the tail and the tag is refused before anything is written.
        let packet = Self.packet(ssrc: 0xC0FFEE, sequence: 1, &random)
        let tail = [UInt8](repeating: 7, count: 100)
        var short = [UInt8](repeating: 0, count: packet.count + tail.count + ours.rtpOverhead - 1)
        short.replaceSubrange(0..<packet.count, with: packet)
        let before = short
        #expect(throws: SRTPError.self) {
            try tail.withUnsafeBytes { tail in
                try short.withUnsafeMutableBytes { _ = try ours.protect($0, length: packet.count, followedBy: tail) }
            }
        }
        #expect(short == before)
    }

    @Test(arguments: SRTPProfile.allCases)
    func receiversTakeTheSameDecisions(profile: SRTPProfile) throws {
        var random = SplitMix64(seed: 0x5EED_0002 &+ UInt64(profile.dtlsProtectionProfile))
        let key = SRTPKeyMaterial.random(for: profile)
        let sender = try SRTPSession(profile: profile, key: key, direction: .sender, implementation: .libsrtp)
        let ours = try SRTPSession(profile: profile, key: key, direction: .receiver, replayWindow: 128, implementation: .openSSL)
        let reference = try SRTPSession(profile: profile, key: key, direction: .receiver, replayWindow: 128, implementation: .libsrtp)
        // `unprotect(_:into:)` (out of place, into a jitter buffer's slot) by both engines: the same decisions and bytes.
        let outOfPlace = try SRTPImplementation.allCases.map {
            try SRTPSession(profile: profile, key: key, direction: .receiver, replayWindow: 128, implementation: $0)
        }
        // What the sender sent, then the network's version of it: reordered, repeated, tampered, truncated, mixed with strangers.
        var sent: [(rtcp: Bool, bytes: [UInt8])] = []
        for (number, (ssrc, sequence)) in Self.sendingOrder(count: 2500, &random).enumerated() {
            if let srtp = try? sender.protect(Self.packet(ssrc: ssrc, sequence: sequence, &random)) { sent.append((false, srtp)) }
            if number % 8 == 0 { sent.append((true, try sender.protectRTCP(Self.rtcp(ssrc: ssrc, &random)))) }
        }
        var arriving: [(rtcp: Bool, bytes: [UInt8])] = []
        var index = 0
        while index < sent.count {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<5 where index + 1 < sent.count:
                arriving += [sent[index + 1], sent[index]]  // swapped
                index += 2
                continue
            case 5..<10: arriving.append(sent[Int.random(in: 0...index, using: &random)])  // a copy of one already sent
            case 10..<13:
                var tampered = sent[index].bytes
                tampered[Int.random(in: 0..<tampered.count, using: &random)] ^= 0x40
                arriving.append((sent[index].rtcp, tampered))
            case 13..<15: arriving.append((sent[index].rtcp, Array(sent[index].bytes.prefix(Int.random(in: 0...30, using: &random)))))
            case 15..<17: arriving.append((Bool.random(using: &random), (0..<Int.random(in: 0...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
            default: break
            }
            arriving.append(sent[index])
            index += 1
        }
        var counts: [Outcome: Int] = [:]
        for (number, packet) in arriving.enumerated() {
            let mine = Outcome { packet.rtcp ? try ours.unprotectRTCP(packet.bytes) : try ours.unprotect(packet.bytes) }
            let theirs = Outcome { packet.rtcp ? try reference.unprotectRTCP(packet.bytes) : try reference.unprotect(packet.bytes) }
            #expect(mine == theirs, "arrival \(number): \(packet.rtcp ? "SRTCP" : "SRTP") of \(packet.bytes.count) bytes \(hexString(Array(packet.bytes.prefix(24))))")
            for session in outOfPlace {
                let apart = Outcome { packet.rtcp ? try session.unprotectRTCP(packet.bytes) : try session.unprotectOutOfPlace(packet.bytes) }
                #expect(apart == theirs, "arrival \(number) out of place, \(session.implementation)")
            }
            counts[theirs.isBytes ? .bytes([]) : theirs, default: 0] += 1
        }
        #expect(ours.statistics == reference.statistics)
        #expect(outOfPlace.allSatisfy { $0.statistics == reference.statistics })
        // Every kind of decision was taken, many times.
        for kind in [Outcome.bytes([]), .authenticationFailed, .replayed, .tooOld, .refused] {
            #expect(counts[kind, default: 0] >= 10, "\(kind): \(counts)")
        }
    }
}

extension SRTPImplementationTests.Outcome: Hashable {
    var isBytes: Bool { if case .bytes = self { true } else { false } }
}
