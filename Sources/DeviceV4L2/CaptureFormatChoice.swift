import MediaCore
import MediaNegotiation

/// The capture format that best meets `constraints` among a camera's `formats`, as a browser's
/// camera capturer picks one for getUserMedia (W3C Media Capture §4.3.8 "fitness distance"):
///
/// 1. Sizes and rates outside a constraint's `min`...`max` are out, and so are pixel formats Sluice
///    cannot convert (H.264, GREY, ...).
/// 2. Size: with an ideal width and/or height, the nearest size wins (relative area distance plus
///    relative aspect-ratio distance when both are ideal, else the relative distance of the side
///    given); a stepwise range offers the ideal itself, snapped to its grid. Without ideals, the
///    largest picture wins.
/// 3. Rate: the nearest to the ideal rate (relative distance), else the highest.
/// 4. Ties go to the format cheapest to turn into I420: YU12, NV12, YUYV, UYVY, then MJPEG.
///
/// Throws `V4L2Error.noFormatFits` (path nil) listing what the camera offers when nothing is left.
public func chooseCaptureFormat(from formats: [V4L2FormatDescription], constraints: VideoConstraints) throws
    -> V4L2CaptureFormat
{
    var best: (format: V4L2CaptureFormat, score: CaptureFitness)?
    for description in formats {
        guard let pixelFormat = V4L2PixelFormat(fourcc: description.fourcc) else { continue }
        for size in candidateSizes(of: description, constraints: constraints) {
            for rate in size.frameRates where constraints.frameRate.admits(rate.doubleValue) {
                let score = CaptureFitness(width: size.width, height: size.height, rate: rate,
                                           cost: pixelFormat.conversionCost, constraints: constraints)
                if best.map({ score < $0.score }) ?? true {
                    best = (V4L2CaptureFormat(fourcc: description.fourcc, width: size.width, height: size.height,
                                              frameRate: rate), score)
                }
            }
        }
    }
    guard let best else { throw V4L2Error.noFormatFits(path: nil, offers: formats.map(\.offerSummary)) }
    return best.format
}

/// The sizes of `description` within the constraints' bounds, with the ideal size of a stepwise range.
private func candidateSizes(of description: V4L2FormatDescription, constraints: VideoConstraints) -> [V4L2FrameSize] {
    var sizes = description.sizes
    if let range = description.sizeRange {
        let wanted = range.nearest(width: constraints.width.ideal ?? range.maxWidth,
                                   height: constraints.height.ideal ?? range.maxHeight)
        sizes.append(V4L2FrameSize(width: wanted.width, height: wanted.height, frameRates: range.frameRates))
    }
    return sizes.filter { constraints.width.admits($0.width) && constraints.height.admits($0.height) }
}

/// How well one candidate fits; smaller is better, compared field by field.
private struct CaptureFitness: Comparable {
    var sizeDistance: Double
    var rateDistance: Double
    var cost: Int

    init(width: Int, height: Int, rate: Rational, cost: Int, constraints: VideoConstraints) {
        let (idealWidth, idealHeight) = (constraints.width.ideal, constraints.height.ideal)
        switch (idealWidth, idealHeight) {
        case let (w?, h?):
            sizeDistance = relativeDistance(Double(width * height), Double(w * h))
                + relativeDistance(Double(width) / Double(height), Double(w) / Double(h))
        case let (w?, nil): sizeDistance = relativeDistance(Double(width), Double(w))
        case let (nil, h?): sizeDistance = relativeDistance(Double(height), Double(h))
        case (nil, nil): sizeDistance = -Double(width * height)
        }
        rateDistance = constraints.frameRate.ideal.map { relativeDistance(rate.doubleValue, $0) } ?? -rate.doubleValue
        self.cost = cost
    }

    static func < (a: CaptureFitness, b: CaptureFitness) -> Bool {
        (a.sizeDistance, a.rateDistance, a.cost) < (b.sizeDistance, b.rateDistance, b.cost)
    }
}

/// |a - b| / max(|a|, |b|), the W3C fitness distance of a value from its ideal.
private func relativeDistance(_ value: Double, _ ideal: Double) -> Double {
    let scale = Swift.max(abs(value), abs(ideal))
    return scale == 0 ? 0 : abs(value - ideal) / scale
}

extension ConstraintRange {
    /// Whether `value` lies within `min`...`max` (the ideal does not restrict).
    func admits(_ value: Value) -> Bool {
        (min.map { value >= $0 } ?? true) && (max.map { value <= $0 } ?? true)
    }
}

extension V4L2FormatDescription {
    /// "YUYV 640x480@30/15, 320x240@30", or "H264 (not convertible)", for error messages.
    var offerSummary: String {
        guard V4L2PixelFormat(fourcc: fourcc) != nil else { return "\(fourcc) (not convertible to I420)" }
        var parts = sizes.map { size in
            "\(size.width)x\(size.height)@" + size.frameRates.map(\.description).joined(separator: "/")
        }
        if let range = sizeRange {
            parts = ["\(range.minWidth)x\(range.minHeight) to \(range.maxWidth)x\(range.maxHeight) in steps of "
                + "\(range.stepWidth)x\(range.stepHeight)@" + range.frameRates.map(\.description).joined(separator: "/")]
        }
        return "\(fourcc) " + (parts.isEmpty ? "(no sizes)" : parts.joined(separator: ", "))
    }
}
