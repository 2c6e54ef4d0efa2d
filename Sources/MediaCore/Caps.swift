/// The set of values a field of a format may take: anything, a list (in order of preference), or a range.
public enum Choice<Value: Comparable & Hashable & Sendable>: Hashable, Sendable, CustomStringConvertible {
    case any
    case oneOf([Value])
    case range(ClosedRange<Value>)

    public static func exactly(_ value: Value) -> Choice { .oneOf([value]) }

    public func contains(_ value: Value) -> Bool {
        switch self {
        case .any: return true
        case .oneOf(let values): return values.contains(value)
        case .range(let range): return range.contains(value)
        }
    }

    /// The values in both; `nil` when there are none. Lists keep the left side's order of preference.
    public func intersection(_ other: Choice) -> Choice? {
        switch (self, other) {
        case (.any, _): return other
        case (_, .any): return self
        case (.oneOf(let values), _):
            let kept = values.filter(other.contains)
            return kept.isEmpty ? nil : .oneOf(kept)
        case (.range, .oneOf(let values)):
            let kept = values.filter(contains)
            return kept.isEmpty ? nil : .oneOf(kept)
        case (.range(let a), .range(let b)):
            let low = Swift.max(a.lowerBound, b.lowerBound)
            let high = Swift.min(a.upperBound, b.upperBound)
            return low <= high ? .range(low...high) : nil
        }
    }

    /// One value: the first of a list, the lower end of a range; `nil` for `.any`.
    public var fixated: Value? {
        switch self {
        case .any: return nil
        case .oneOf(let values): return values.first
        case .range(let range): return range.lowerBound
        }
    }

    public var description: String {
        switch self {
        case .any: return "*"
        case .oneOf(let values) where values.count == 1: return "\(values[0])"
        case .oneOf(let values): return "{" + values.map { "\($0)" }.joined(separator: ",") + "}"
        case .range(let r): return "[\(r.lowerBound)-\(r.upperBound)]"
        }
    }
}

public enum MediaType: String, Hashable, Sendable {
    case video, audio
}

/// One alternative of a `Caps`: a media type and a choice for each of its fields.
public struct FormatPattern: Hashable, Sendable, CustomStringConvertible {
    public var mediaType: MediaType
    public var encoding: Choice<Encoding>
    public var width: Choice<Int> = .any
    public var height: Choice<Int> = .any
    public var frameRate: Choice<Rational> = .any
    public var sampleRate: Choice<Int> = .any
    public var channels: Choice<Int> = .any

    public static func video(
        _ encoding: Choice<Encoding>, width: Choice<Int> = .any, height: Choice<Int> = .any,
        frameRate: Choice<Rational> = .any
    ) -> FormatPattern {
        FormatPattern(mediaType: .video, encoding: encoding, width: width, height: height, frameRate: frameRate)
    }

    public static func audio(
        _ encoding: Choice<Encoding>, sampleRate: Choice<Int> = .any, channels: Choice<Int> = .any
    ) -> FormatPattern {
        FormatPattern(mediaType: .audio, encoding: encoding, sampleRate: sampleRate, channels: channels)
    }

    /// The pattern that matches exactly one format.
    public init(_ format: MediaFormat) {
        switch format {
        case .video(let v):
            self = .video(.exactly(v.encoding), width: .exactly(v.width), height: .exactly(v.height),
                          frameRate: .exactly(v.frameRate))
        case .audio(let a):
            self = .audio(.exactly(a.encoding), sampleRate: .exactly(a.sampleRate), channels: .exactly(a.channels))
        }
    }

    init(mediaType: MediaType, encoding: Choice<Encoding>, width: Choice<Int> = .any, height: Choice<Int> = .any,
         frameRate: Choice<Rational> = .any, sampleRate: Choice<Int> = .any, channels: Choice<Int> = .any) {
        self.mediaType = mediaType
        self.encoding = encoding
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public func intersection(_ other: FormatPattern) -> FormatPattern? {
        guard mediaType == other.mediaType,
              let encoding = encoding.intersection(other.encoding),
              let width = width.intersection(other.width),
              let height = height.intersection(other.height),
              let frameRate = frameRate.intersection(other.frameRate),
              let sampleRate = sampleRate.intersection(other.sampleRate),
              let channels = channels.intersection(other.channels)
        else { return nil }
        return FormatPattern(mediaType: mediaType, encoding: encoding, width: width, height: height,
                             frameRate: frameRate, sampleRate: sampleRate, channels: channels)
    }

    /// A fixed format, or `nil` when some field is still open (`*`).
    public var fixated: MediaFormat? {
        guard let encoding = encoding.fixated else { return nil }
        switch mediaType {
        case .video:
            guard let w = width.fixated, let h = height.fixated, let r = frameRate.fixated else { return nil }
            return .video(VideoFormat(encoding: encoding, width: w, height: h, frameRate: r))
        case .audio:
            guard let rate = sampleRate.fixated, let ch = channels.fixated else { return nil }
            return .audio(AudioFormat(encoding: encoding, sampleRate: rate, channels: ch))
        }
    }

    public func matches(_ format: MediaFormat) -> Bool { intersection(FormatPattern(format)) != nil }

    public var description: String {
        switch mediaType {
        case .video: return "video/\(encoding) \(width)x\(height)@\(frameRate)"
        case .audio: return "audio/\(encoding) \(sampleRate)Hz \(channels)ch"
        }
    }
}

/// The formats a node can produce or accept, as alternatives in order of preference.
///
/// Negotiation (see `Graph`) intersects what upstream offers with what downstream accepts and
/// fixates the result; an empty intersection is a build error that names both sides.
public struct Caps: Hashable, Sendable, CustomStringConvertible, ExpressibleByArrayLiteral {
    public var patterns: [FormatPattern]

    public init(_ patterns: [FormatPattern]) { self.patterns = patterns }
    public init(arrayLiteral elements: FormatPattern...) { self.patterns = elements }
    public init(_ format: MediaFormat) { self.patterns = [FormatPattern(format)] }

    public static let anyVideo: Caps = [.video(.any)]
    public static let anyAudio: Caps = [.audio(.any)]

    public var isEmpty: Bool { patterns.isEmpty }

    /// Every non-empty pairwise intersection, in the left side's order of preference.
    public func intersection(_ other: Caps) -> Caps {
        Caps(patterns.flatMap { mine in other.patterns.compactMap { mine.intersection($0) } })
    }

    /// The first alternative that fixes every field.
    public var fixated: MediaFormat? { patterns.lazy.compactMap(\.fixated).first }

    public func matches(_ format: MediaFormat) -> Bool { patterns.contains { $0.matches(format) } }

    public var description: String {
        patterns.isEmpty ? "(none)" : patterns.map(\.description).joined(separator: "; ")
    }
}
