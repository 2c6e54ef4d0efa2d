@testable import MediaCore
import Testing

/// `Edge`, the bounded queue between two nodes: what a push reports about the room behind it, which
/// lets a producer skip asking `hasRoom` at its next step.
@Suite struct EdgeTests {
    @Test func aPushReportsRoomUntilTheQueueHoldsItsCapacity() {
        let producer = NodeRunner(name: "producer"), consumer = NodeRunner(name: "consumer")
        let edge = Edge<Int>(capacity: 3, from: producer, to: consumer)
        #expect(edge.push(.item(1)) == .roomLeft)
        #expect(edge.push(.item(2)) == .roomLeft)
        #expect(edge.push(.item(3)) == .full)
        #expect(!edge.hasRoom)
        // Past the capacity (a step's further outputs) it stays full.
        #expect(edge.push(.item(4)) == .full)
        _ = edge.pop(); _ = edge.pop()
        #expect(edge.hasRoom)
        #expect(edge.push(.item(5)) == .full)
        _ = edge.pop()
        #expect(edge.push(.item(6)) == .full)
        _ = edge.pop(); _ = edge.pop()
        #expect(edge.push(.item(7)) == .roomLeft)
        edge.close()
        #expect(edge.push(.item(8)) == .closed)
    }
}
