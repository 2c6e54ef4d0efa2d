import MediaSDP

/// A getUserMedia-style constraint: bounds and the value wanted (W3C Media Capture §4.3.8).
public struct ConstraintRange<Value: Comparable & Sendable & Hashable>: Sendable, Hashable {
    public var min: Value?
    public var ideal: Value?
    public var max: Value?

    public init(min: Value? = nil, ideal: Value? = nil, max: Value? = nil) {
        self.min = min
        self.ideal = ideal
        self.max = max
    }
}

/// What this side wants to send: usually the camera's size and rate as `ideal`, with the smallest
/// size and rate worth sending as `min`.
public struct VideoConstraints: Sendable, Hashable {
    public var width: ConstraintRange<Int>
    public var height: ConstraintRange<Int>
    public var frameRate: ConstraintRange<Double>

    public init(width: ConstraintRange<Int>, height: ConstraintRange<Int>, frameRate: ConstraintRange<Double> = .init(ideal: 30)) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
    }
}

/// What the remote receiver accepts, from its SDP: `max-fs` (macroblocks) and `max-fr` of VP8
/// (RFC 7741 §6.1), H.264's level (Table A-1) or `max-fs`/`max-mbps` (RFC 6184 §8.1), `a=imageattr`
/// recv sets (RFC 6236 §3.1) and `a=framerate` (RFC 8866 §6.10). nil is no limit.
public struct RemoteVideoLimits: Sendable, Hashable {
    /// The largest picture in 16x16 macroblocks.
    public var maxFrameSize: Int?
    public var maxMacroblocksPerSecond: Int?
    public var maxFrameRate: Double?
    /// The sizes the remote receives; nil for any.
    public var receiveSizes: [SDPImageAttribute.ImageSet]?

    public init(maxFrameSize: Int? = nil, maxMacroblocksPerSecond: Int? = nil, maxFrameRate: Double? = nil,
                receiveSizes: [SDPImageAttribute.ImageSet]? = nil) {
        self.maxFrameSize = maxFrameSize
        self.maxMacroblocksPerSecond = maxMacroblocksPerSecond
        self.maxFrameRate = maxFrameRate
        self.receiveSizes = receiveSizes
    }

    /// The limits of an H.264 level (H.264 Table A-1).
    public init(h264Level level: H264ProfileLevelID.Level) {
        self.init(maxFrameSize: level.maxFrameSize, maxMacroblocksPerSecond: level.maxMacroblocksPerSecond)
    }

    /// The limits the remote's section `media` sets on `payloadType`.
    public init(media: MediaDescription, payloadType: UInt8) throws(SDPError) {
        self.init()
        let parameters = try media.formatParameters(for: payloadType)
        if try media.rtpMap(for: payloadType)?.encodingName.uppercased() == "H264" {
            let text = parameters["profile-level-id"] ?? H264Matching.defaultProfileLevelID
            if let level = (try? H264ProfileLevelID(parsing: text))?.level { self.init(h264Level: level) }
            // RFC 6184 §8.1: max-fs and max-mbps only raise the level's limits.
            if let frameSize = parameters["max-fs"].flatMap(Int.init) { maxFrameSize = Swift.max(maxFrameSize ?? 0, frameSize) }
            if let rate = parameters["max-mbps"].flatMap(Int.init) { maxMacroblocksPerSecond = Swift.max(maxMacroblocksPerSecond ?? 0, rate) }
        } else {
            maxFrameSize = parameters["max-fs"].flatMap(Int.init)
            maxFrameRate = parameters["max-fr"].flatMap(Double.init)
        }
        if let rate = try media.frameRate() { maxFrameRate = Swift.min(maxFrameRate ?? rate, rate) }
        let imageAttributes = try media.values(SDPImageAttribute.self)
        let imageAttribute = imageAttributes.first { $0.payloadType == payloadType } ?? imageAttributes.first { $0.payloadType == nil }
        if case .sets(let sets)? = imageAttribute?.receive { receiveSizes = sets }
    }
}

/// A picture size and rate to send.
public struct NegotiatedVideoFormat: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var frameRate: Double

    public init(width: Int, height: Int, frameRate: Double) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
    }

    public var description: String { "\(width)x\(height) at \(formatRate(frameRate)) fps" }
}

/// Why no format meets both the constraints and the remote's limits.
public struct VideoFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// The largest format within the constraints and the remote's limits, nearest the ideal: the ideal
/// size (clamped to the maxima) scaled down, keeping its aspect ratio, until it fits `remote`, at the
/// ideal frame rate capped by both sides' maxima. When the picture rate of an H.264 level allows no
/// size down to the minimum at that rate, the rate drops to the minimum. Throws naming the limit
/// that a minimum cannot meet.
public func chooseVideoFormat(constraints: VideoConstraints, remote: RemoteVideoLimits) throws(VideoFormatError) -> NegotiatedVideoFormat {
    let width = constraints.width, height = constraints.height, rate = constraints.frameRate
    guard let idealWidth = width.ideal ?? width.max ?? width.min, let idealHeight = height.ideal ?? height.max ?? height.min,
          idealWidth > 0, idealHeight > 0
    else { throw VideoFormatError(reason: "the constraints give no width and height") }
    let aspect = Double(idealWidth) / Double(idealHeight)
    let maxRate = [rate.max, remote.maxFrameRate].compactMap { $0 }.min() ?? .infinity
    let wantedRate = Swift.min(rate.ideal ?? rate.max ?? 30, maxRate)
    let minWidth = width.min ?? 2, minHeight = height.min ?? 2
    if let minimum = rate.min, wantedRate < minimum {
        throw VideoFormatError(reason: "frame rate at least \(formatRate(minimum)) fps asked, the remote takes at most \(formatRate(maxRate))")
    }
    let startWidth = Swift.min(idealWidth, width.max ?? .max, height.max.map { Int(Double($0) * aspect) } ?? .max)
    var lastReason = "no size from \(startWidth) wide down to \(minWidth)x\(minHeight) keeps \(idealWidth):\(idealHeight)"
    for frameRate in [wantedRate, rate.min].compactMap({ $0 }) {
        for candidate in stride(from: startWidth & ~1, through: Swift.max(minWidth, 2), by: -2) {
            let candidateHeight = Int((Double(candidate) / aspect / 2).rounded()) * 2
            guard candidateHeight <= (height.max ?? .max) else { continue }
            guard candidateHeight >= minHeight else { break }
            guard let reason = remote.violation(width: candidate, height: candidateHeight, frameRate: frameRate) else {
                return NegotiatedVideoFormat(width: candidate, height: candidateHeight, frameRate: frameRate)
            }
            lastReason = reason
        }
    }
    throw VideoFormatError(reason: "cannot meet the minimum \(minWidth)x\(minHeight): \(lastReason)")
}

extension RemoteVideoLimits {
    /// The first limit a `width`x`height` picture at `frameRate` breaks, nil when it breaks none.
    func violation(width: Int, height: Int, frameRate: Double) -> String? {
        let macroblocks = ((width + 15) / 16) * ((height + 15) / 16)
        if let maxFrameSize, macroblocks > maxFrameSize {
            return "\(width)x\(height) is \(macroblocks) macroblocks, more than the remote's max-fs \(maxFrameSize)"
        }
        // Neither side may exceed sqrt(8 * max-fs) macroblocks (RFC 7741 §6.1; H.264 §A.3.1 item f).
        let longestSide = ((Swift.max(width, height)) + 15) / 16
        if let maxFrameSize, longestSide > Int(Double(8 * maxFrameSize).squareRoot()) {
            return "\(width)x\(height) is wider or higher than the remote's sqrt(8 * max-fs \(maxFrameSize)) macroblocks"
        }
        if let maxMacroblocksPerSecond, Double(macroblocks) * frameRate > Double(maxMacroblocksPerSecond) {
            return "\(width)x\(height) at \(formatRate(frameRate)) fps is more than the remote's \(maxMacroblocksPerSecond) macroblocks/s"
        }
        if let receiveSizes, !receiveSizes.contains(where: { $0.x.contains(width) && $0.y.contains(height) }) {
            return "\(width)x\(height) is in none of the remote's imageattr recv sets"
        }
        return nil
    }
}

/// `30`, or `29.97`.
func formatRate(_ rate: Double) -> String {
    rate == rate.rounded() && rate.isFinite ? String(Int(rate)) : String(rate)
}
