import CYUV
import MediaCore

/// Converts raw pictures to one pixel format with libyuv, into buffers from its own pool.
///
/// It produces I420 (from NV12, YUY2 or UYVY) or NV12 (from I420, YUY2 or UYVY); a picture already in
/// the target format passes through. NV12 and I420 hold the same samples, so converting between them
/// is exact. The packed 4:2:2 formats have chroma on every row; 4:2:0 keeps one chroma row in two,
/// each sample the rounded average of the two rows it replaces (libyuv's rule).
///
/// Any size from 1x1 to 16384x16384 converts, odd ones included: chroma planes round up (see
/// `PlaneLayout`), and the padding pixel of an odd-width YUY2 or UYVY row is ignored.
public struct PixelFormatConverter: Sendable {
    /// The format of every picture the converter returns.
    public let target: PixelFormat
    public let pool: BufferPool

    /// The formats a converter to `target` reads, `target` itself first.
    public static func sources(for target: PixelFormat) -> [PixelFormat] {
        guard canConvert(from: target, to: target) else { return [] }
        return [target] + PixelFormat.allCases.filter { $0 != target && canConvert(from: $0, to: target) }
    }

    /// Whether a converter to `target` reads `source` (allocates nothing, unlike `sources(for:)`).
    public static func canConvert(from source: PixelFormat, to target: PixelFormat) -> Bool {
        switch target {
        case .i420, .nv12: return true
        case .yuy2, .uyvy: return false
        }
    }

    /// A converter to `target`, which must be `.i420` or `.nv12`.
    public init(to target: PixelFormat = .i420) throws {
        guard Self.canConvert(from: target, to: target) else {
            throw ConversionError.unsupportedConversion(from: nil, to: target)
        }
        self.target = target
        pool = BufferPool(name: "pixel-format \(target.rawValue)")
    }

    /// `picture` in the target format, keeping its timestamps; the same picture when it already is.
    public func convert(_ picture: VideoFrame) throws -> VideoFrame {
        if picture.pixelFormat == target { return picture }
        return try withExtendedLifetime(picture) {
            try convert(UnsafeRawBufferPointer(picture.buffer.storage), pixelFormat: picture.pixelFormat,
                        width: picture.width, height: picture.height, layout: picture.layout, pts: picture.pts,
                        duration: picture.duration)
        }
    }

    /// A picture in the target format converted from bytes the converter does not own, such as a
    /// capture device's buffer or a raw video file's: a `width`x`height` picture of `pixelFormat`
    /// whose planes lie in `bytes` as `layout` says (`PlaneLayout(format, width:, height:, rowAlignment: 1)`
    /// for tightly packed rows). Always copies, even when no conversion is needed.
    ///
    /// Throws `ConversionError.invalidSize` for a size outside 1...16384, `.layoutMismatch` when `layout`
    /// does not describe such a picture, `.bufferTooSmall` when `bytes` end before the last plane does,
    /// and `.unsupportedConversion` for a format this converter does not read.
    public func convert(_ bytes: UnsafeRawBufferPointer, pixelFormat: PixelFormat, width: Int, height: Int,
                        layout: PlaneLayout, pts: MediaTime, duration: MediaTime? = nil) throws -> VideoFrame {
        guard (1...16384).contains(width), (1...16384).contains(height) else {
            throw ConversionError.invalidSize(width: width, height: height)
        }
        guard Self.canConvert(from: pixelFormat, to: target) else {
            throw ConversionError.unsupportedConversion(from: pixelFormat, to: target)
        }
        let expected = PlaneLayout(pixelFormat, width: width, height: height, rowAlignment: 1)
        guard layout.planeCount == expected.planeCount,
              (0..<layout.planeCount).allSatisfy({ layout[$0].width == expected[$0].width
                  && layout[$0].rows == expected[$0].rows && layout[$0].stride >= expected[$0].width })
        else { throw ConversionError.layoutMismatch(pixelFormat, width: width, height: height) }
        guard bytes.count >= layout.byteCount, let base = bytes.baseAddress else {
            throw ConversionError.bufferTooSmall(needed: layout.byteCount, available: bytes.count)
        }

        let output = VideoFrame(pixelFormat: target, width: width, height: height, pts: pts, duration: duration,
                                pool: pool)
        let source = PlanePointers(base: UnsafeMutableRawPointer(mutating: base), layout: layout)
        let target = PlanePointers(base: output.buffer.storage.baseAddress!, layout: output.layout)
        let (w, h) = (Int32(width), Int32(height))
        let status: Int32
        switch (pixelFormat, self.target) {
        case (.nv12, .i420):
            status = NV12ToI420(source[0], source.stride(0), source[1], source.stride(1), target[0],
                                target.stride(0), target[1], target.stride(1), target[2], target.stride(2), w, h)
        case (.yuy2, .i420), (.uyvy, .i420):
            status = (pixelFormat == .yuy2 ? YUY2ToI420 : UYVYToI420)(
                source[0], source.stride(0), target[0], target.stride(0), target[1], target.stride(1), target[2],
                target.stride(2), w, h)
        case (.i420, .nv12):
            status = I420ToNV12(source[0], source.stride(0), source[1], source.stride(1), source[2],
                                source.stride(2), target[0], target.stride(0), target[1], target.stride(1), w, h)
        case (.yuy2, .nv12), (.uyvy, .nv12):
            status = (pixelFormat == .yuy2 ? YUY2ToNV12 : UYVYToNV12)(
                source[0], source.stride(0), target[0], target.stride(0), target[1], target.stride(1), w, h)
        default:  // the same format: a copy, plane by plane
            status = 0
            for plane in 0..<layout.planeCount {
                CopyPlane(source[plane], source.stride(plane), target[plane], target.stride(plane),
                          Int32(layout[plane].width), Int32(layout[plane].rows))
            }
        }
        guard status == 0 else {  // libyuv's function names, e.g. YUY2ToI420
            throw ConversionError.library(operation: "\(pixelFormat.rawValue)To\(self.target.rawValue)", code: status)
        }
        return output
    }
}

/// Where each plane of a picture starts, for libyuv's pointer-and-stride arguments.
private struct PlanePointers {
    let base: UnsafeMutableRawPointer
    let layout: PlaneLayout

    subscript(plane: Int) -> UnsafeMutablePointer<UInt8> {
        (base + layout[plane].offset).assumingMemoryBound(to: UInt8.self)
    }

    func stride(_ plane: Int) -> Int32 { Int32(layout[plane].stride) }
}
