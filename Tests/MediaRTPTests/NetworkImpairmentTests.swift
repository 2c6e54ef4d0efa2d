import MediaCore
import Testing

@testable import MediaRTP

private func ms(_ value: Double) -> ClockTime { ClockTime(nanoseconds: Int64((value * 1_000_000).rounded())) }

/// A packet handed out by `deliver`, with the time the caller's clock read.
private struct Arrival: Hashable, Comparable {
    var packet: Int
    var at: ClockTime
    static func < (a: Arrival, b: Arrival) -> Bool { (a.packet, a.at) < (b.packet, b.at) }
}

private struct Run {
    var fates: [ImpairmentFate] = []
    /// In delivery order.
    var arrivals: [Arrival] = []
    var statistics = ImpairmentStatistics()

    var lost: [Bool] { fates.map { $0.original == .lost } }
    /// Delivery time minus submit time, per arrival.
    func latencies(spacing: ClockTime) -> [ClockTime] {
        arrivals.map { $0.at - ClockTime(nanoseconds: spacing.nanoseconds * Int64($0.packet)) }
    }
}

/// Submits `count` packets numbered from 0, `spacing` apart from time zero, and hands out each
/// packet at the moment it falls due, as a caller waiting on `nextDelivery` would; then drains.
private func run(_ profile: ImpairmentProfile, count: Int, spacing: ClockTime, bytes: Int = 1200) -> Run {
    var network = NetworkImpairment<Int>(profile: profile)
    var result = Run()
    result.fates.reserveCapacity(count)
    func deliverDue(until limit: ClockTime) {
        while let due = network.nextDelivery, due <= limit {
            network.deliver(until: due) { result.arrivals.append(Arrival(packet: $0, at: due)) }
        }
    }
    for index in 0..<count {
        let now = ClockTime(nanoseconds: spacing.nanoseconds * Int64(index))
        deliverDue(until: now)
        result.fates.append(network.submit(index, bytes: bytes, at: now))
    }
    deliverDue(until: ClockTime(nanoseconds: .max))
    result.statistics = network.statistics
    let s = network.statistics
    #expect(network.inFlightCount == 0 && network.nextDelivery == nil)
    #expect(s.submitted == count && s.delivered == result.arrivals.count)
    #expect(s.submitted + s.duplicated == s.delivered + s.droppedByLoss + s.droppedByQueue)
    return result
}

/// Expects `observed` within `sigmas` standard deviations of `expected`.
private func expectNear(_ observed: Double, _ expected: Double, sd: Double, sigmas: Double = 4.5,
                        _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(abs(observed - expected) <= sigmas * sd,
            "\(what): \(observed), expected \(expected) ± \(sigmas * sd) (\(sigmas) sd)", sourceLocation: sourceLocation)
}

/// Lengths of the runs of consecutive `true`.
private func runLengths(_ flags: [Bool]) -> [Int] {
    var lengths: [Int] = []
    var current = 0
    for flag in flags {
        if flag { current += 1 } else if current > 0 { lengths.append(current); current = 0 }
    }
    if current > 0 { lengths.append(current) }
    return lengths
}

private func requireSendable<T: Sendable>(_: T) {}

private func mean(_ values: [Int]) -> Double { Double(values.reduce(0, +)) / Double(values.count) }

/// Statistical tests use 100k packets and a tolerance of 4.5 standard deviations of the estimate
/// under the model being tested: wide enough that a correct model fails about once in 150,000
/// seeds, narrow enough (a few tenths of a percentage point) to catch a wrong formula. The seeds
/// are fixed, so each test gives the same numbers on every run.
@Suite struct NetworkImpairmentTests {
    static let packets = 100_000

    // MARK: - Perfect pipe and delay

    @Test func allZeroProfileIsAPerfectPipe() {
        var network = NetworkImpairment<Int>(profile: .none)
        var delivered: [Int] = []
        var packet = 0
        for step in 0..<500 {
            let now = ms(Double(step))
            // Two packets at each instant, in one call, then one at a time.
            network.submit(packet, bytes: 1200, at: now)
            network.submit(packet + 1, bytes: 60, at: now)
            #expect(network.nextDelivery == now)
            network.deliver(until: now - ClockTime(nanoseconds: 1)) { delivered.append($0) }
            #expect(delivered.count == packet)
            network.deliver(until: now) { delivered.append($0) }
            network.submit(packet + 2, bytes: 0, at: now)
            #expect(network.deliverNext(until: now) == packet + 2)
            delivered.append(packet + 2)
            packet += 3
        }
        #expect(delivered == Array(0..<1500))
        #expect(network.nextDelivery == nil)
        #expect(network.statistics.submitted == 1500 && network.statistics.delivered == 1500)
        #expect(network.statistics.deliveredBytes == 500 * 1260)
        #expect(network.statistics.droppedByLoss + network.statistics.droppedByQueue + network.statistics.duplicated
            + network.statistics.reordered == 0)
    }

    @Test func delayWithoutJitterIsExact() {
        var network = NetworkImpairment<Int>(profile: ImpairmentProfile(delay: ms(40)))
        var arrivals: [Arrival] = []
        var now = ClockTime.zero
        for index in 0..<1000 {
            now = now + ClockTime(nanoseconds: Int64(index % 7) * 1_234_567)  // irregular, sometimes 0
            #expect(network.submit(index, bytes: 100 + index, at: now)
                == ImpairmentFate(original: .scheduled(at: now + ms(40), reordered: false), duplicate: nil))
            network.deliver(until: now) { arrivals.append(Arrival(packet: $0, at: now)) }
        }
        // Nothing left the pipe before its 40 ms; what did left in order.
        #expect(arrivals.allSatisfy { $0.at >= ms(40) })
        while let due = network.nextDelivery {
            network.deliver(until: due) { arrivals.append(Arrival(packet: $0, at: due)) }
        }
        #expect(arrivals.map(\.packet) == Array(0..<1000))
    }

    @Test func deliversAtTheFirstTickOfAManualClockAtOrAfterTheDueTime() {
        let profile = try! ImpairmentProfile(parsing: "loss=2%,reorder=5%,duplicate=5%,delay=30ms,jitter=20ms,seed=9")
        let clock = ManualClock()
        var network = NetworkImpairment<Int>(profile: profile)
        var due: [Int: [ClockTime]] = [:]
        var deliveredCount = 0
        let tick = ms(1)
        for index in 0..<5_000 {
            clock.advance(by: tick)
            network.deliver(until: clock.now) { packet in
                let times = due[packet]!
                // Due within the last tick, and the earliest copy of this packet still owed.
                #expect(times[0] <= clock.now && times[0] > clock.now - tick)
                due[packet]!.removeFirst()
                deliveredCount += 1
            }
            if let next = network.nextDelivery { #expect(next > clock.now) }
            let fate = network.submit(index, bytes: 200, at: clock.now)
            for copy in [fate.original, fate.duplicate] {
                if case .scheduled(let at, _) = copy { due[index, default: []].append(at) }
            }
            due[index]?.sort()
        }
        #expect(deliveredCount > 4_000)
        #expect(network.statistics.delivered == deliveredCount)
        #expect(network.inFlightCount == due.values.reduce(0) { $0 + $1.count })
    }

    // MARK: - Loss

    @Test func independentLossRate() {
        let q = 0.05
        let result = run(ImpairmentProfile(lossPercent: 5, seed: 1), count: Self.packets, spacing: ms(1))
        let lost = result.lost
        let n = Double(lost.count)
        expectNear(Double(result.statistics.droppedByLoss) / n, q, sd: (q * (1 - q) / n).squareRoot(), "loss rate")
        // Independence: a loss is no likelier after a loss.
        let afterLoss = zip(lost, lost.dropFirst()).filter(\.0).map(\.1)
        let pairs = Double(afterLoss.count)
        expectNear(Double(afterLoss.filter { $0 }.count) / pairs, q, sd: (q * (1 - q) / pairs).squareRoot(),
                   "loss after a loss")
        // So runs of losses are geometric with mean 1 / (1 - q) and variance q / (1 - q)^2.
        let runs = runLengths(lost)
        expectNear(mean(runs), 1 / (1 - q), sd: (q / ((1 - q) * (1 - q)) / Double(runs.count)).squareRoot(),
                   "mean run of losses")
        #expect(result.arrivals.count == Self.packets - result.statistics.droppedByLoss)
    }

    /// The long-run loss rate and the mean burst length match the parameters. For the estimate of
    /// the loss rate, a Markov chain's samples are correlated: its variance is the independent one
    /// times (1 + λ) / (1 − λ), with λ = 1 − p − r the chain's second eigenvalue. Burst lengths are
    /// geometric with mean 1/r and variance (1 − r) / r².
    @Test(arguments: [(5.0, 3.0), (10.0, 8.0), (2.0, 1.5), (60.0, 2.0)])
    func burstLossRateAndMeanBurstLength(lossPercent: Double, burst: Double) {
        let profile = ImpairmentProfile(lossPercent: lossPercent, meanBurstLength: burst, seed: 7)
        let result = run(profile, count: Self.packets, spacing: ms(1))
        let q = lossPercent / 100, r = 1 / burst, p = q * r / (1 - q)
        let lambda = 1 - p - r
        let n = Double(Self.packets)
        let rateSD = (q * (1 - q) / n * (1 + lambda) / (1 - lambda)).squareRoot()
        expectNear(Double(result.statistics.droppedByLoss) / n, q, sd: rateSD, "loss rate at \(profile)")
        let bursts = runLengths(result.lost)
        expectNear(mean(bursts), burst, sd: ((1 - r) / (r * r) / Double(bursts.count)).squareRoot(),
                   "mean burst at \(profile)")
    }

    @Test func totalLossDropsEverything() {
        let result = run(ImpairmentProfile(lossPercent: 100, duplicatePercent: 50), count: 1000, spacing: ms(1))
        #expect(result.fates.allSatisfy { $0 == ImpairmentFate(original: .lost, duplicate: nil) })
        #expect(result.arrivals.isEmpty && result.statistics.droppedByLoss == 1000 && result.statistics.duplicated == 0)
    }

    // MARK: - Duplication and reordering

    @Test func duplicationRate() {
        let q = 0.01
        let result = run(ImpairmentProfile(duplicatePercent: 1, seed: 3), count: Self.packets, spacing: ms(1))
        let n = Double(Self.packets)
        let duplicated = result.statistics.duplicated
        expectNear(Double(duplicated) / n, q, sd: (q * (1 - q) / n).squareRoot(), "duplication rate")
        // Every packet arrives once or twice, the copy right after the original, at the same time.
        #expect(result.arrivals.count == Self.packets + duplicated)
        var copies = [Int](repeating: 0, count: Self.packets)
        for arrival in result.arrivals { copies[arrival.packet] += 1 }
        #expect(copies.allSatisfy { $0 == 1 || $0 == 2 })
        #expect(copies.filter { $0 == 2 }.count == duplicated)
        #expect(result.arrivals.map(\.packet) == result.arrivals.map(\.packet).sorted())
        #expect(result.fates.filter { $0.duplicate != nil }.count == duplicated)
    }

    /// A held-back packet arrives exactly `reorder-delay` late; the 19 sent in the 20 ms after it
    /// overtake it, so the packets that arrive after a later one are exactly the held ones.
    @Test func reorderingRateAndHoldBack() {
        let q = 0.03
        let profile = try! ImpairmentProfile(parsing: "reorder=3%,reorder-delay=20ms,seed=5")
        let result = run(profile, count: Self.packets, spacing: ms(1))
        let n = Double(Self.packets)
        let reordered = result.statistics.reordered
        expectNear(Double(reordered) / n, q, sd: (q * (1 - q) / n).squareRoot(), "reordering rate")
        var held = Set<Int>()
        for (index, fate) in result.fates.enumerated() {
            if case .scheduled(_, reordered: true) = fate.original { held.insert(index) }
        }
        #expect(held.count == reordered)
        for (arrival, latency) in zip(result.arrivals, result.latencies(spacing: ms(1))) {
            #expect(latency == (held.contains(arrival.packet) ? ms(20) : .zero))
        }
        var highest = -1
        var overtaken = Set<Int>()
        for arrival in result.arrivals {
            if arrival.packet < highest { overtaken.insert(arrival.packet) }
            highest = max(highest, arrival.packet)
        }
        #expect(overtaken == held)
    }

    // MARK: - Jitter

    /// Delays are uniform on [30, 50] ms: all within the bounds, both ends reached (no draw in the
    /// outer 0.05 ms of either end among 20k has probability e^-50), mean and first quarter as for a
    /// uniform distribution, and packets 1 ms apart overtake one another.
    @Test func jitterStaysWithinItsBoundsAndIsUniform() {
        let count = 20_000
        let result = run(try! ImpairmentProfile(parsing: "delay=40ms,jitter=10ms,seed=11"), count: count, spacing: ms(1))
        let latencies = result.latencies(spacing: ms(1)).map { $0.seconds * 1000 }
        #expect(latencies.count == count)
        #expect(latencies.allSatisfy { (30...50).contains($0) })
        #expect(latencies.min()! < 30.05 && latencies.max()! > 49.95)
        let n = Double(count)
        expectNear(latencies.reduce(0, +) / n, 40, sd: 20 / 12.0.squareRoot() / n.squareRoot(), "mean delay (ms)")
        expectNear(Double(latencies.filter { $0 < 35 }.count) / n, 0.25, sd: (0.25 * 0.75 / n).squareRoot(),
                   "share below 35 ms")
        #expect(result.arrivals.map(\.packet) != Array(0..<count), "jitter reorders")
    }

    // MARK: - Rate limit

    /// 1200-byte packets offered at 3 Mbit/s (one every 3.2 ms) into 2 Mbit/s (4.8 ms each) with a
    /// 100 ms queue: once the queue is full the link never idles, packets leave exactly 4.8 ms apart
    /// (2 Mbit/s), and the excess is tail-dropped: 10 s carry 2083 packets, plus what the queue holds
    /// (at most 100 / 4.8 + 1) at the end.
    @Test func rateLimitThroughputAndTailDrops() {
        let profile = try! ImpairmentProfile(parsing: "rate=2M,queue=100ms")
        let count = 3125  // 10 s
        let result = run(profile, count: count, spacing: ms(3.2))
        let s = result.statistics
        #expect(s.droppedByLoss == 0 && s.delivered + s.droppedByQueue == count)
        #expect((2083...2105).contains(s.delivered), "\(s)")
        let times = result.arrivals.map(\.at)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == ms(4.8) })
        let bitsPerSecond = Double((times.count - 1) * 1200 * 8) / (times.last! - times.first!).seconds
        #expect(abs(bitsPerSecond - 2_000_000) < 1)
        #expect(s.deliveredBytes == s.delivered * 1200)
        // Each packet waits at most the queue limit, then takes 4.8 ms on the wire; the queue fills.
        let latencies = result.latencies(spacing: ms(3.2))
        #expect(latencies.max()! <= ms(104.8) && latencies.max()! > ms(100))
        // The drops are the queue's: each dropped packet arrived to a wait over 100 ms.
        #expect(result.fates.filter { $0.original == .droppedByQueue }.count == s.droppedByQueue)
        #expect(result.fates.prefix(60).allSatisfy { $0.original != .droppedByQueue })
    }

    @Test func rateLimitBelowCapacityOnlyAddsTheTransmissionTime() {
        // 1 Mbit/s offered into 2 Mbit/s: no queue builds, each packet takes 4.8 ms, none is dropped.
        let result = run(try! ImpairmentProfile(parsing: "rate=2M,queue=0ms,delay=10ms"), count: 2000, spacing: ms(9.6))
        #expect(result.statistics.droppedByQueue == 0)
        #expect(result.latencies(spacing: ms(9.6)).allSatisfy { $0 == ms(14.8) })
    }

    @Test func rateLimitKeepsFractionalNanosecondsSoTheRateDoesNotDrift() {
        // 7 bit/s cannot be hit with whole nanoseconds per packet: 1 byte takes 8/7 s.
        var network = NetworkImpairment<Int>(profile: ImpairmentProfile(rateBitsPerSecond: 7, queueLimit: ms(3_600_000)))
        var last = ClockTime.zero
        for index in 0..<700 {
            if case .scheduled(let at, _) = network.submit(index, bytes: 1, at: .zero).original { last = at }
        }
        #expect(last == ClockTime(nanoseconds: 800_000_000_000))  // 700 × 8 bits at 7 bit/s, exactly
    }

    // MARK: - Determinism and storage

    static let everything = "loss=5%,burst=3,reorder=3%,reorder-delay=20ms,duplicate=1%,delay=40ms,jitter=10ms,rate=2M,queue=100ms"

    @Test func sameSeedSameFatesAndDifferentSeedDifferent() throws {
        let seeded = { (seed: UInt64) in
            run(try! ImpairmentProfile(parsing: Self.everything + ",seed=\(seed)"), count: 5_000, spacing: ms(2))
        }
        let first = seeded(42), again = seeded(42), other = seeded(43)
        #expect(first.fates == again.fates && first.arrivals == again.arrivals && first.statistics == again.statistics)
        let differing = zip(first.fates, other.fates).filter { $0 != $1 }.count
        #expect(differing > 2_500, "\(differing) of 5000 fates differ")
        #expect(first.lost != other.lost)
        // Every arrival is a copy the fates scheduled, at the time they said.
        var scheduled: [Arrival] = []
        for (index, fate) in first.fates.enumerated() {
            for case .scheduled(let at, _) in [fate.original, fate.duplicate] { scheduled.append(Arrival(packet: index, at: at)) }
        }
        #expect(scheduled.sorted() == first.arrivals.sorted())
        #expect(first.arrivals.map(\.at) == first.arrivals.map(\.at).sorted())
    }

    @Test func eachDecisionHasItsOwnStream() throws {
        // Changing the jitter, rate or duplication leaves the loss pattern alone.
        let plain = run(try ImpairmentProfile(parsing: "loss=5%,burst=2,seed=8"), count: 5_000, spacing: ms(1))
        let busier = run(try ImpairmentProfile(parsing: "loss=5%,burst=2,duplicate=10%,delay=20ms,jitter=5ms,rate=10M,seed=8"),
                         count: 5_000, spacing: ms(1))
        #expect(plain.lost == busier.lost)
        #expect(plain.statistics.droppedByLoss > 100)
    }

    @Test func storageStopsGrowingOnceWarm() {
        let profile = try! ImpairmentProfile(parsing: Self.everything + ",seed=1")
        var network = NetworkImpairment<Int>(profile: profile, capacity: 4)
        var warmCapacity = 0
        for index in 0..<60_000 {
            let now = ms(Double(index))
            network.deliver(until: now) { _ in }
            network.submit(index, bytes: 200, at: now)
            if index == 1_000 { warmCapacity = network.storageCapacity }
        }
        #expect(warmCapacity > 4)
        #expect(network.storageCapacity == warmCapacity)
        // Reserved up front, it never grows at all.
        var reserved = NetworkImpairment<Int>(profile: profile, capacity: 256)
        let initial = reserved.storageCapacity
        for index in 0..<10_000 {
            let now = ms(Double(index))
            reserved.deliver(until: now) { _ in }
            reserved.submit(index, bytes: 200, at: now)
        }
        #expect(initial >= 256 && reserved.storageCapacity == initial)
    }

    @Test func carriesTheCallersOwnPacketType() {
        struct Slot: Equatable, Sendable { var pool: UInt8; var index: UInt16 }
        var network = NetworkImpairment<Slot>(profile: ImpairmentProfile(delay: ms(5)))
        network.submit(Slot(pool: 1, index: 9), bytes: 1200, at: .zero)
        network.submit(Slot(pool: 2, index: 3), bytes: 1200, at: ms(1))
        var out: [Slot] = []
        network.deliver(until: ms(6)) { out.append($0) }
        #expect(out == [Slot(pool: 1, index: 9), Slot(pool: 2, index: 3)])
        requireSendable(network)  // compiles only while NetworkImpairment<Slot> is Sendable
    }
}
