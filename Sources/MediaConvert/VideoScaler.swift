import CYUV
import MediaCore

/// Resizes I420 pictures with libyuv (`I420Scale`), into buffers from its own pool.
public struct VideoScaler: Sendable {
    /// How output samples are computed from input samples (libyuv's FilterMode).
    public enum Filter: Sendable, Hashable {
        /// Nearest sample: fastest, blocky.
        case point
        /// Bilinear interpolation.
        case bilinear
        /// Box filter averaging every input sample under an output sample: best for downscaling.
        case box
    }

    public let width: Int
    public let height: Int
    public let filter: Filter
    public let pool: BufferPool

    /// A scaler to `width`x`height` (each 1...16384).
    public init(width: Int, height: Int, filter: Filter = .box) throws {
        guard (1...16384).contains(width), (1...16384).contains(height) else {
            throw ConversionError.invalidSize(width: width, height: height)
        }
        self.width = width
        self.height = height
        self.filter = filter
        pool = BufferPool(name: "scaler \(width)x\(height)")
    }

    /// `picture` at the scaler's size, keeping its timestamps; the same picture when no scaling is needed.
    /// Only I420 scales: other formats throw `ConversionError.unexpectedPicture` (convert them first with
    /// `PixelFormatConverter`).
    public func scale(_ picture: VideoFrame) throws -> VideoFrame {
        guard picture.pixelFormat == .i420 else {
            throw ConversionError.unexpectedPicture(
                expected: "I420", actual: "\(picture.pixelFormat.rawValue) \(picture.width)x\(picture.height)")
        }
        if picture.width == width && picture.height == height { return picture }
        let output = VideoFrame(width: width, height: height, pts: picture.pts, duration: picture.duration, pool: pool)
        let source = picture.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let target = output.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let (i, o) = (picture.layout, output.layout)
        let status = withExtendedLifetime(picture) {
            I420Scale(source + i[0].offset, Int32(i[0].stride), source + i[1].offset, Int32(i[1].stride),
                      source + i[2].offset, Int32(i[2].stride), Int32(picture.width), Int32(picture.height),
                      target + o[0].offset, Int32(o[0].stride), target + o[1].offset, Int32(o[1].stride),
                      target + o[2].offset, Int32(o[2].stride), Int32(width), Int32(height), filter.libyuvMode)
        }
        guard status == 0 else { throw ConversionError.library(operation: "I420Scale", code: status) }
        return output
    }
}

extension VideoScaler.Filter {
    var libyuvMode: FilterMode {
        switch self {
        case .point: return kFilterNone
        case .bilinear: return kFilterBilinear
        case .box: return kFilterBox
        }
    }
}

/// Failures of conversions.
public enum ConversionError: Error, Equatable, CustomStringConvertible {
    case invalidSize(width: Int, height: Int)
    case invalidRate(Rational)
    case library(operation: String, code: Int32)
    /// No conversion from the first format (`nil`: from any) to the second.
    case unsupportedConversion(from: PixelFormat?, to: PixelFormat)
    /// A plane layout that does not describe a picture of this format and size.
    case layoutMismatch(PixelFormat, width: Int, height: Int)
    /// Picture bytes shorter than their layout.
    case bufferTooSmall(needed: Int, available: Int)
    /// A picture other than the format negotiated for the node that received it.
    case unexpectedPicture(expected: String, actual: String)

    public var description: String {
        switch self {
        case .invalidSize(let w, let h): return "invalid picture size \(w)x\(h) (1 to 16384 each)"
        case .unsupportedConversion(let from, let to):
            return "no conversion \(from.map { "from \($0.rawValue) " } ?? "")to \(to.rawValue)"
        case .layoutMismatch(let format, let w, let h): return "plane layout is not that of a \(w)x\(h) \(format.rawValue) picture"
        case .bufferTooSmall(let needed, let available): return "picture needs \(needed) bytes, buffer has \(available)"
        case .unexpectedPicture(let expected, let actual): return "expected a \(expected) picture, got \(actual)"
        case .invalidRate(let rate): return "invalid frame rate \(rate)"
        case .library(let operation, let code): return "libyuv: \(operation) failed (\(code))"
        }
    }
}
