import Glibc
import MediaCore
import MediaTransport

/// A bounded queue of datagrams between the peer transport's reactor handler (one writer) and one
/// session (one reader): fixed slots of `slotSize` bytes allocated once, MediaCore's `ConditionLock`
/// (a mutex and a condition variable on the monotonic clock). A reader that must not wait (a node on
/// the shared workers) has `SocketReactor` watch `readinessDescriptor`, readable exactly while a
/// packet is queued or the ring is closed: the writer wakes it when the ring stops being empty, the
/// reader resets it when it has taken the last packet, both under the lock. A full ring drops the
/// new packet and counts it; it never grows. The reader reads a packet in its slot, in place, with
/// the lock released: the slot stays counted until the reader is done with it, so the writer cannot
/// reuse it meanwhile. Readers take turns (`drain` holds a
/// reader lock), so a second thread calling by mistake waits instead of reading a slot twice.
final class BundledPacketRing: @unchecked Sendable {
    /// An Ethernet MTU: what a datagram on the bundle can be (larger ones are dropped, counted).
    static let slotSize = 1500

    /// What the ring did; read under its lock.
    struct Counts: Sendable, Hashable {
        var queued = 0
        var droppedFull = 0
        var droppedOversized = 0
    }

    let slotCount: Int
    private let lock = ConditionLock()
    private let storage: UnsafeMutableRawBufferPointer
    private let lengths: UnsafeMutableBufferPointer<Int>
    private let isRTCP: UnsafeMutableBufferPointer<Bool>
    private var head = 0
    private var count = 0
    private var closed = false
    private var counts = Counts()
    /// Readable while `count > 0 || closed`; nil when no eventfd could be had (readers then wait).
    private let readiness = try? EventWaker()
    /// Held by the draining reader. Not an empty `Locked(())`: TSan (debug) reports the access to
    /// an empty value as a race on the lock object itself.
    private let reader = Locked(0)

    init(slots: Int) {
        slotCount = max(1, slots)
        storage = .allocate(byteCount: slotCount * Self.slotSize, alignment: 16)
        lengths = .allocate(capacity: slotCount)
        lengths.initialize(repeating: 0)
        isRTCP = .allocate(capacity: slotCount)
        isRTCP.initialize(repeating: false)
    }

    deinit {
        storage.deallocate()
        lengths.deallocate()
        isRTCP.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T { lock.withLock(body) }

    /// Copies `bytes` into the next free slot and wakes the reader; false, counted, when the ring is
    /// full, the packet larger than a slot, or the ring closed.
    @discardableResult
    func push(_ bytes: UnsafeRawBufferPointer, rtcp: Bool) -> Bool {
        locked {
            guard !closed else { return false }
            guard bytes.count <= Self.slotSize else {
                counts.droppedOversized += 1
                return false
            }
            guard count < slotCount else {
                counts.droppedFull += 1
                return false
            }
            let slot = (head + count) % slotCount
            if let base = bytes.baseAddress {
                (storage.baseAddress! + slot * Self.slotSize).copyMemory(from: base, byteCount: bytes.count)
            }
            lengths[slot] = bytes.count
            isRTCP[slot] = rtcp
            count += 1
            counts.queued += 1
            if count == 1 { readiness?.wake() }
            lock.broadcast()
            return true
        }
    }

    /// Waits until `deadline` on the monotonic clock (nil: for ever) for a packet, then hands each
    /// queued one (at most a ring's worth, so the caller's timers keep their time) to `body` and
    /// frees its slot. Returns how many it handed over, or nil once the ring is closed.
    func drain(until deadline: ClockTime?, _ body: (UnsafeRawBufferPointer, _ rtcp: Bool) -> Void) -> Int? {
        reader.withLock { _ in drainAsTheOnlyReader(until: deadline, body) }
    }

    private func drainAsTheOnlyReader(until deadline: ClockTime?, _ body: (UnsafeRawBufferPointer, _ rtcp: Bool) -> Void) -> Int? {
        let available: Int? = locked {
            while count == 0, !closed {
                if let deadline {
                    guard Self.monotonicNow() < deadline else { break }
                    lock.wait(until: deadline)
                } else {
                    lock.wait()
                }
            }
            return closed ? nil : count
        }
        guard let available else { return nil }
        for _ in 0..<available {
            // Only this reader moves `head`; the writer appends behind the counted slots.
            let (slot, length, rtcp) = locked { (head, lengths[head], isRTCP[head]) }
            body(UnsafeRawBufferPointer(rebasing: storage[(slot * Self.slotSize)..<(slot * Self.slotSize + length)]), rtcp)
            locked {
                head = (head + 1) % slotCount
                count -= 1
                if count == 0, !closed { readiness?.reset() }
            }
        }
        return available
    }

    /// Ends the ring: a waiting `drain` returns nil, pushes are refused, the readiness descriptor
    /// stays readable.
    func close() {
        locked {
            closed = true
            readiness?.wake()
            lock.broadcast()
        }
    }

    /// Readable while a packet is queued or the ring is closed, for a `SocketReactor` to watch; open
    /// as long as the ring lives.
    var readinessDescriptor: Int32? { readiness?.descriptor }

    var statistics: Counts { locked { counts } }

    /// The monotonic clock the condition variable waits on (`SystemClock`'s), read without an object.
    static func monotonicNow() -> ClockTime {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return ClockTime(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }
}
