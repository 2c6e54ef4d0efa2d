/// One SSRC's packet index on the SRTP side: the newest 48-bit index (rollover counter and sequence
/// number, RFC 3711 §3.3.1) and which indices behind it were seen (the replay list, §3.3.2).
///
/// It decides as libsrtp's `srtp_rdbx_t` does, so that both implementations accept and refuse the
/// same packets: the window holds the newest index and `size - 1` before it, `size` rounded up to
/// 32; the rollover counter is taken as 0 until the newest index passes 32768. A sender uses it
/// too: sending an index again (a retransmission) is allowed, one older than the window is not.
/// The seen bits are kept in a ring indexed by the packet index, so moving on costs the bits moved.
struct RTPReplayWindow {
    /// The newest index accepted.
    private(set) var newest: UInt64 = 0
    let size: Int
    private var seen: [UInt64]

    /// What `check` found.
    enum Verdict: Equatable { case fresh, seen, tooOld }

    init(size: Int) {
        self.size = (size + 31) & ~31
        seen = Array(repeating: 0, count: (self.size + 63) / 64)
    }

    /// The index of a packet with sequence number `sequence` (Appendix A of RFC 3711, with libsrtp's
    /// start: the rollover counter is 0 while the newest index is at most 32768), and how far it is
    /// ahead of the newest (negative: behind).
    func estimate(_ sequence: UInt16) -> (index: UInt64, delta: Int) {
        let s = Int(sequence)
        guard newest > 32768 else { return (UInt64(s), s - Int(newest)) }
        let rollover = newest >> 16, last = Int(newest & 0xFFFF)
        let (guess, delta): (UInt64, Int)
        if last < 32768 {
            (guess, delta) = s - last > 32768 ? (rollover &- 1, s - last - 65536) : (rollover, s - last)
        } else {
            (guess, delta) = last - 32768 > s ? (rollover &+ 1, s - last + 65536) : (rollover, s - last)
        }
        return ((guess & 0xFFFF_FFFF) << 16 | UInt64(s), delta)
    }

    func check(_ delta: Int) -> Verdict {
        if delta > 0 { return .fresh }
        if -delta >= size { return .tooOld }
        if UInt64(-delta) > newest { return .fresh }
        return isSeen(newest &- UInt64(-delta)) ? .seen : .fresh
    }

    /// Records the packet `delta` from the newest (after it was authenticated, or sent).
    mutating func add(_ delta: Int) {
        guard delta > 0 else {
            if UInt64(-delta) <= newest { mark(newest - UInt64(-delta)) }
            return
        }
        if delta >= size {
            for word in seen.indices { seen[word] = 0 }
        } else {
            for step in 1...delta { clear(newest &+ UInt64(step)) }
        }
        newest &+= UInt64(delta)
        mark(newest)
    }

    private func position(_ index: UInt64) -> Int { Int(index % UInt64(size)) }
    private func isSeen(_ index: UInt64) -> Bool {
        let bit = position(index)
        return seen[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }
    private mutating func mark(_ index: UInt64) {
        let bit = position(index)
        seen[bit >> 6] |= 1 << UInt64(bit & 63)
    }
    private mutating func clear(_ index: UInt64) {
        let bit = position(index)
        seen[bit >> 6] &= ~(1 << UInt64(bit & 63))
    }
}

/// One SSRC's SRTCP index (RFC 3711 §3.4): the sender's counter, and the receiver's replay list of
/// 128 indices from `start`, as libsrtp's `srtp_rdb_t` keeps them (its first index sent is 1).
struct RTCPReplayWindow {
    private(set) var start: UInt32 = 0
    /// Bit k: index `start + k` was seen.
    private var seen: (low: UInt64, high: UInt64) = (0, 0)

    /// The index of the next packet sent, or nil once the 31-bit space is spent (the key must change).
    mutating func next() -> UInt32? {
        guard start < 0x7FFF_FFFF else { return nil }
        start += 1
        return start
    }

    func check(_ index: UInt32) -> RTPReplayWindow.Verdict {
        if index >= start &+ 128 && start &+ 128 > start { return .fresh }
        if index < start { return .tooOld }
        return bit(Int(index - start)) ? .seen : .fresh
    }

    mutating func add(_ index: UInt32) {
        guard index >= start else { return }
        var offset = Int(index - start)
        if offset >= 128 {
            let shift = offset - 127
            shiftDown(by: shift)
            start += UInt32(shift)
            offset = 127
        }
        if offset < 64 { seen.low |= 1 << UInt64(offset) } else { seen.high |= 1 << UInt64(offset - 64) }
    }

    private func bit(_ offset: Int) -> Bool {
        offset < 64 ? seen.low & (1 << UInt64(offset)) != 0 : seen.high & (1 << UInt64(offset - 64)) != 0
    }

    private mutating func shiftDown(by shift: Int) {
        switch shift {
        case 128...: seen = (0, 0)
        case 64...: seen = (seen.high >> UInt64(shift - 64), 0)
        case 1...: seen = (seen.low >> UInt64(shift) | seen.high << UInt64(64 - shift), seen.high >> UInt64(shift))
        default: break
        }
    }
}
