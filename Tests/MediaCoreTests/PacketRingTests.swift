@testable import MediaCore
import Testing

/// `PacketRing`, an edge's queue: first in, first out across its wrap-around and its growth, and
/// every element it holds released exactly once.
@Suite struct PacketRingTests {
    /// Counts its instances alive.
    final class Tracked {
        nonisolated(unsafe) static var alive = 0
        let number: Int
        init(_ number: Int) {
            self.number = number
            Self.alive += 1
        }
        deinit { Self.alive -= 1 }
    }

    @Test func elementsComeOutInOrderThroughWrapAroundAndGrowth() {
        var ring = PacketRing<Int>(minimumCapacity: 3)  // 4 slots
        var expected: [Int] = [], next = 0, taken: [Int] = []
        // Fill and drain by turns so the head walks round the slots, then outgrow them mid-wrap.
        for round in 0..<40 {
            for _ in 0..<(round % 7 + 1) {
                ring.append(next)
                expected.append(next)
                next += 1
            }
            for _ in 0..<(round % 5 + 1) {
                if let value = ring.popFirst() { taken.append(value) }
            }
            #expect(ring.count == expected.count - taken.count)
        }
        while let value = ring.popFirst() { taken.append(value) }
        #expect(taken == expected)
        #expect(ring.isEmpty && ring.popFirst() == nil)
    }

    @Test func removeAllHandsOverEveryElementInOrderAndTheRingGoesOn() {
        var ring = PacketRing<Int>(minimumCapacity: 4)
        for value in 0..<6 { ring.append(value) }
        _ = ring.popFirst()
        for value in 6..<9 { ring.append(value) }
        #expect(ring.removeAll() == Array(1..<9))
        #expect(ring.count == 0)
        ring.append(42)
        #expect(ring.popFirst() == 42)
    }

    @Test func everyElementIsReleasedOnceWhetherTakenDroppedOrLeftInTheRing() {
        Tracked.alive = 0
        do {
            var ring = PacketRing<Tracked>(minimumCapacity: 2)
            for number in 0..<5 { ring.append(Tracked(number)) }  // grows twice
            #expect(Tracked.alive == 5)
            #expect(ring.popFirst()?.number == 0)
            #expect(Tracked.alive == 4)
            for number in 5..<9 { ring.append(Tracked(number)) }
            let dropped = ring.removeAll()
            #expect(dropped.map(\.number) == Array(1..<9) && ring.isEmpty)
            _ = consume dropped
            #expect(Tracked.alive == 0)
            for number in 9..<12 { ring.append(Tracked(number)) }
            #expect(Tracked.alive == 3)
        }  // the ring ends holding three
        #expect(Tracked.alive == 0)
    }
}
