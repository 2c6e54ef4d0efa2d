/// The impairment model's random source: xoshiro256** (Blackman and Vigna, 2018), seeded by
/// expanding a 64-bit seed with the SplitMix64 sequence, as its authors recommend.
///
/// The draws are written out here rather than taken from the standard library's
/// `random(in:using:)`, so that a seed gives the same fates with every Swift version.
struct ImpairmentRandom: Sendable, Hashable {
    private var s0, s1, s2, s3: UInt64

    /// A generator for one stream of decisions: each stream (loss, duplication, reordering,
    /// jitter) gets its own, so that changing one parameter leaves the others' draws alone.
    init(seed: UInt64, stream: UInt64) {
        var x = seed ^ (stream &* 0xD1B5_4A32_D192_ED03)
        func splitMix() -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = splitMix(); s1 = splitMix(); s2 = splitMix(); s3 = splitMix()
    }

    mutating func next() -> UInt64 {
        let result = (s1 &* 5).rotatedLeft(by: 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3.rotatedLeft(by: 45)
        return result
    }

    /// Uniform in [0, 1), on the 2^-53 grid.
    mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// True with probability `probability` (0 never, 1 always).
    mutating func chance(_ probability: Double) -> Bool { unit() < probability }

    /// Uniform in `-bound...bound` (`bound` ≥ 0), by the multiply-high method: the bias is at most
    /// (2·bound + 1) / 2^64, below 10^-6 for the largest jitter a profile allows.
    mutating func offset(within bound: Int64) -> Int64 {
        let width = UInt64(2 * bound + 1)
        return Int64(next().multipliedFullWidth(by: width).high) - bound
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(by count: UInt64) -> UInt64 { (self << count) | (self >> (64 - count)) }
}

/// Burst loss after the simple Gilbert model: the Gilbert-Elliott two-state Markov chain with no
/// loss in the good state and certain loss in the bad one (netem's `loss gemodel p r 100% 0%`).
///
/// Before each packet the chain moves good → bad with probability `p` or bad → good with
/// probability `r`; the packet is lost when the chain is then bad. Losses come in runs whose length
/// is geometric with mean 1/r, and the long-run loss rate is p / (p + r). From a loss rate `q` and
/// a mean burst `b` the model takes r = 1/b and p = q·r / (1 − q).
///
/// A mean burst of 1 asks for independent loss: that is the chain with p = q and r = 1 − q, where
/// each packet is lost with probability q whatever came before (its runs of losses then have mean
/// 1 / (1 − q), slightly above 1). A mean burst between 1 and that value gives losses that avoid
/// each other; any larger one gives bursts.
struct GilbertLoss: Sendable, Hashable {
    /// p, good → bad.
    let enterBurst: Double
    /// r, bad → good.
    let leaveBurst: Double
    private(set) var inBurst = false

    /// `rate` in 0...1; `meanBurst` ≥ 1 and, when `rate` > 1/2, at least rate / (1 − rate) (see
    /// `ImpairmentProfile.validate()`).
    init(rate: Double, meanBurst: Double) {
        if meanBurst == 1 || rate == 0 {
            enterBurst = rate
            leaveBurst = 1 - rate
        } else {
            leaveBurst = 1 / meanBurst
            enterBurst = min(1, rate * leaveBurst / (1 - rate))
        }
    }

    /// Steps the chain for one packet; true when that packet is lost.
    mutating func nextIsLost(_ random: inout ImpairmentRandom) -> Bool {
        let u = random.unit()
        inBurst = inBurst ? !(u < leaveBurst) : u < enterBurst
        return inBurst
    }
}
