/// The name of a compressed format, e.g. "VP8". Open-ended so that codec plug-ins can add their own.
public struct CodecName: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
    public static func < (a: CodecName, b: CodecName) -> Bool { a.rawValue < b.rawValue }

    public static let vp8: CodecName = "VP8"
    /// H.264. An `EncodedFrame` of this codec holds ONE access unit in the Annex-B byte-stream format
    /// (ITU-T H.264 Annex B: a start code `00 00 00 01` or `00 00 01` before each NAL unit); it is a
    /// keyframe when it has an IDR slice (NAL unit type 5), and an IDR access unit carries its SPS and
    /// PPS (types 7 and 8) in front of its slices, in the same `EncodedFrame`.
    public static let h264: CodecName = "H264"
    public static let opus: CodecName = "OPUS"
    /// Motion JPEG. An `EncodedFrame` of this codec holds ONE whole JPEG picture (SOI to EOI, ITU-T
    /// T.81), as UVC cameras deliver; every frame is a keyframe.
    public static let mjpeg: CodecName = "MJPEG"
}

/// Layouts of raw pictures.
public enum PixelFormat: String, Hashable, Comparable, Sendable, CaseIterable {
    /// 8-bit planar Y, U, V with both chroma planes subsampled 2x2 (4:2:0).
    case i420 = "I420"
    /// 8-bit planar Y, then one plane of interleaved U and V samples (U first), subsampled 2x2 (4:2:0).
    case nv12 = "NV12"
    /// 8-bit packed 4:2:2 in one plane, each pair of pixels as Y0 U Y1 V (also called YUYV).
    case yuy2 = "YUY2"
    /// 8-bit packed 4:2:2 in one plane, each pair of pixels as U Y0 V Y1.
    case uyvy = "UYVY"

    public static func < (a: PixelFormat, b: PixelFormat) -> Bool { a.rawValue < b.rawValue }

    /// Planes in a picture of this format (see `PlaneLayout`).
    public var planeCount: Int {
        switch self {
        case .i420: return 3
        case .nv12: return 2
        case .yuy2, .uyvy: return 1
        }
    }
}

/// Layouts of raw audio samples; channels are always interleaved.
public enum SampleFormat: String, Hashable, Comparable, Sendable, CaseIterable {
    /// Signed 16-bit little-endian integers.
    case s16 = "S16"
    /// 32-bit IEEE float, nominal range -1...1.
    case f32 = "F32"

    public var bytesPerSample: Int { self == .s16 ? 2 : 4 }
    public static func < (a: SampleFormat, b: SampleFormat) -> Bool { a.rawValue < b.rawValue }
}

/// How the data on an edge is represented: raw pixels, raw samples, or a compressed format.
public enum Encoding: Hashable, Comparable, Sendable, CustomStringConvertible {
    case pixels(PixelFormat)
    case samples(SampleFormat)
    case compressed(CodecName)

    public var description: String {
        switch self {
        case .pixels(let p): return p.rawValue
        case .samples(let s): return s.rawValue
        case .compressed(let c): return c.rawValue
        }
    }
}

/// A fixed video format: what one edge of a graph carries after negotiation.
public struct VideoFormat: Hashable, Sendable, CustomStringConvertible {
    public var encoding: Encoding
    public var width: Int
    public var height: Int
    /// Frames per second (nominal).
    public var frameRate: Rational

    public init(encoding: Encoding, width: Int, height: Int, frameRate: Rational) {
        self.encoding = encoding
        self.width = width
        self.height = height
        self.frameRate = frameRate
    }

    public var description: String { "video/\(encoding) \(width)x\(height)@\(frameRate)" }
}

/// A fixed audio format.
public struct AudioFormat: Hashable, Sendable, CustomStringConvertible {
    public var encoding: Encoding
    public var sampleRate: Int
    public var channels: Int

    public init(encoding: Encoding, sampleRate: Int, channels: Int) {
        self.encoding = encoding
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public var description: String { "audio/\(encoding) \(sampleRate)Hz \(channels)ch" }
}

/// A fixed format of either kind.
public enum MediaFormat: Hashable, Sendable, CustomStringConvertible {
    case video(VideoFormat)
    case audio(AudioFormat)

    public var description: String {
        switch self {
        case .video(let v): return v.description
        case .audio(let a): return a.description
        }
    }

    public var video: VideoFormat? { if case .video(let v) = self { v } else { nil } }
    public var audio: AudioFormat? { if case .audio(let a) = self { a } else { nil } }
}
