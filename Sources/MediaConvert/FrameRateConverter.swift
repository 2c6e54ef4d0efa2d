import MediaCore

/// Changes the frame rate of a stream by dropping or repeating pictures, by their timestamps.
///
/// Output slot k is due at `start + k / rate`, where `start` is the first picture's pts; it shows the
/// latest picture whose pts is at or before that time (sample and hold). Pictures are passed on,
/// not copied: a repeated picture shares its buffer. A stream of duration D at the new rate holds
/// ceil(D * rate) pictures.
public struct FrameRateConverter: Sendable {
    public private(set) var rate: Rational
    private var timebase: Rational
    private var start: MediaTime?
    private var held: VideoFrame?
    private var nextSlot: Int64 = 0

    public init(rate: Rational) throws {
        guard rate > Rational(0, 1), rate <= Rational(1000, 1) else { throw ConversionError.invalidRate(rate) }
        self.rate = rate
        timebase = rate.reciprocal
    }

    /// Changes the rate from the next output slot on: slots then count from that slot's time at
    /// the new rate.
    public mutating func changeRate(to newRate: Rational) throws {
        guard newRate > Rational(0, 1), newRate <= Rational(1000, 1) else { throw ConversionError.invalidRate(newRate) }
        if let start { self.start = start + MediaTime(nextSlot, timebase: timebase) }
        nextSlot = 0
        rate = newRate
        timebase = newRate.reciprocal
    }

    /// Takes the next picture (in presentation order) and emits the pictures due before it.
    public mutating func push(_ picture: VideoFrame, emit: (consuming VideoFrame) throws -> Void) rethrows {
        if start == nil { start = picture.pts }
        try emitSlots(before: picture.pts, emit: emit)
        held = picture
    }

    /// End of stream: emits the last picture for the slots its duration covers (at least one).
    public mutating func finish(emit: (consuming VideoFrame) throws -> Void) rethrows {
        guard let last = held else { return }
        let end = last.pts + (last.duration ?? MediaTime(1, timebase: timebase))
        try emitSlots(before: end, emit: emit)
        held = nil
    }

    private mutating func emitSlots(before limit: MediaTime, emit: (consuming VideoFrame) throws -> Void) rethrows {
        guard let held, let start else { return }
        while start + MediaTime(nextSlot, timebase: timebase) < limit {
            var out = held
            out.pts = start.rescaled(to: timebase) + MediaTime(nextSlot, timebase: timebase)
            out.duration = MediaTime(1, timebase: timebase)
            try emit(out)
            nextSlot += 1
        }
    }
}
