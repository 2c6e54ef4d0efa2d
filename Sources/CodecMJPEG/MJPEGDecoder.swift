import CTurboJPEG
import CYUV
import MediaCodecs
import MediaCore

/// Motion-JPEG decoding: each compressed frame is one whole JPEG picture (as UVC cameras send),
/// decoded by libjpeg-turbo (TurboJPEG API) into I420 from `outputPool`.
///
/// 4:2:0, 4:2:2 (cameras' usual), 4:4:4 and gray JPEGs all give I420: 4:2:0 is decoded straight into
/// the picture; 4:2:2 and 4:4:4 into the decoder's own planes, whose chroma libyuv then halves
/// (averaging sample pairs); gray pictures get neutral chroma. Every picture must have the stream's
/// size.
///
/// Bad data is named, never decoded blindly: `MJPEGError` says what is checked before libjpeg-turbo
/// runs; its own rejections are `CodecError.library` (name "libturbojpeg", its error code and
/// message). Damaged entropy-coded data is only a warning to libjpeg-turbo, which still fills the
/// picture: by default such a picture is emitted and counted in `damagedPictures`; a `strict`
/// decoder throws instead. libjpeg-turbo allocates its working memory per picture; the pictures
/// Sluice hands out are pooled.
public final class MJPEGDecoder: VideoDecoder {
    /// How decoded samples are scaled.
    public enum SampleRange: Sendable, Hashable {
        /// Video range (luma 16-235, chroma 16-240), what I420 means elsewhere in Sluice and what its
        /// encoders signal: JPEG's full-range samples are scaled into it, as ffmpeg does when it turns
        /// `yuvj422p` into `yuv420p`.
        case limited
        /// JPEG's own full-range samples (0-255), untouched.
        case full
    }

    public let format: VideoFormat
    public let range: SampleRange
    /// Whether a picture libjpeg-turbo warns about is an error rather than a damaged picture.
    public let strict: Bool
    /// Storage of the pictures this decoder emits.
    public let outputPool = BufferPool(name: "mjpeg-decoder")
    /// Pictures emitted although libjpeg-turbo found their data damaged (not `strict` only).
    public private(set) var damagedPictures = 0
    /// libjpeg-turbo's message about the last damaged picture.
    public private(set) var lastWarning: String?

    private let handle: tjhandle
    /// TurboJPEG's plane pointer and stride arguments, allocated once.
    private let planes = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 3)
    private let strides = UnsafeMutablePointer<Int32>.allocate(capacity: 3)
    /// Full-resolution chroma of 4:2:2 and 4:4:4 pictures before libyuv halves it; made at the first one.
    private var scratch: FrameBuffer?
    /// Full to limited range: 256 entries for luma, then 256 for chroma.
    private let rangeTable: [UInt8]

    /// Makes a decoder for a `.compressed(.mjpeg)` stream of `format`'s size.
    public init(format: VideoFormat, range: SampleRange = .limited, strict: Bool = false) throws {
        guard format.encoding == .compressed(.mjpeg) else {
            throw CodecError.invalidSetting("MJPEG decoder: input must be MJPEG, not \(format.encoding)")
        }
        guard (1...16384).contains(format.width), (1...16384).contains(format.height) else {
            throw CodecError.invalidSetting("MJPEG decoder: size \(format.width)x\(format.height) is outside 1...16384")
        }
        guard let handle = tjInitDecompress() else {
            throw CodecError.library(name: "libturbojpeg", operation: "tjInitDecompress", code: Int32(TJERR_FATAL.rawValue),
                                     message: String(cString: tjGetErrorStr2(nil)))
        }
        self.handle = handle
        self.format = format
        self.range = range
        self.strict = strict
        rangeTable = (0..<512).map { (entry: Int) -> UInt8 in
            let sample = entry & 255
            if entry < 256 { return UInt8(16 + (sample * 219 + 127) / 255) }
            let chroma: Double = (Double(sample - 128) * 224 / 255).rounded()
            return UInt8(128 + Int(chroma))
        }
    }

    deinit {
        tjDestroy(handle)
        planes.deallocate()
        strides.deallocate()
    }

    /// Decodes one JPEG picture, which keeps the frame's pts and duration.
    public func decode(_ frame: EncodedFrame, emit: (consuming VideoFrame) throws -> Void) throws {
        let picture = try withExtendedLifetime(frame) { try decode(frame.bytes, pts: frame.pts, duration: frame.duration) }
        try emit(picture)
    }

    /// Every picture is complete in itself: nothing to drain.
    public func flush(emit: (consuming VideoFrame) throws -> Void) throws {}

    private func decode(_ bytes: UnsafeRawBufferPointer, pts: MediaTime, duration: MediaTime?) throws -> VideoFrame {
        let header = try JPEGFrameHeader(parsing: bytes)
        guard header.width == format.width, header.height == format.height else {
            throw MJPEGError.sizeMismatch(width: header.width, height: header.height, expectedWidth: format.width,
                                          expectedHeight: format.height)
        }
        guard Self.hasEndOfImage(bytes) else { throw MJPEGError.missingEndOfImage(byteCount: bytes.count) }
        let jpeg = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        try checkTurboJPEGAgrees(with: header, jpeg: jpeg, count: bytes.count)

        let picture = VideoFrame(width: format.width, height: format.height, pts: pts, duration: duration,
                                 pool: outputPool)
        let inPlace = try pointPlanes(at: picture, subsampling: header.subsampling)
        let flags = TJFLAG_LIMITSCANS | (strict ? TJFLAG_STOPONWARNING : 0)
        if tjDecompressToYUVPlanes(handle, jpeg, UInt(bytes.count), planes, Int32(format.width), strides,
                                   Int32(format.height), Int32(flags)) != 0 {
            let code = tjGetErrorCode(handle), message = String(cString: tjGetErrorStr2(handle))
            guard code == Int32(TJERR_WARNING.rawValue), !strict else {
                throw CodecError.library(name: "libturbojpeg", operation: "tjDecompressToYUVPlanes", code: code,
                                         message: message)
            }
            damagedPictures += 1
            lastWarning = message
        }
        if !inPlace || header.subsampling == .gray { try fill(picture, from: header.subsampling, inPlace: inPlace) }
        if range == .limited { scaleToLimitedRange(picture) }
        return picture
    }

    /// Sets `planes` and `strides` to where libjpeg-turbo writes, and says whether that is `picture`
    /// itself. libjpeg-turbo writes whole chroma blocks: each plane is padded to a multiple of the
    /// subsampling (a 33x17 4:2:0 picture gets 34x18 luma). A 4:2:0 or gray picture whose padded
    /// planes fit the picture's is decoded in place; others go to the decoder's own planes.
    private func pointPlanes(at picture: VideoFrame, subsampling: JPEGFrameHeader.Subsampling) throws -> Bool {
        let layout = picture.layout
        let (width, height, code) = (Int32(format.width), Int32(format.height), subsampling.turboJPEG)
        let planeCount = subsampling == .gray ? 1 : 3
        var inPlace = subsampling == .yuv420 || subsampling == .gray
        for plane in 0..<planeCount where inPlace {
            inPlace = Int(tjPlaneWidth(Int32(plane), width, code)) <= layout[plane].stride
                && Int(tjPlaneHeight(Int32(plane), height, code)) <= layout[plane].rows
        }
        if inPlace {
            let base = picture.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for plane in 0..<3 {
                planes[plane] = base + layout[plane].offset
                strides[plane] = Int32(layout[plane].stride)
            }
            return true
        }
        var sizes = (0, 0, 0)
        for plane in 0..<planeCount {
            let size = Int(tjPlaneSizeYUV(Int32(plane), width, 0, height, code))
            guard size > 0 else {
                throw CodecError.library(name: "libturbojpeg", operation: "tjPlaneSizeYUV", code: Int32(size),
                                         message: String(cString: tjGetErrorStr2(nil)))
            }
            if plane == 0 { sizes.0 = size } else if plane == 1 { sizes.1 = size } else { sizes.2 = size }
            strides[plane] = tjPlaneWidth(Int32(plane), width, code)
        }
        let needed = sizes.0 + sizes.1 + sizes.2
        if scratch == nil || scratch!.capacity < needed { scratch = FrameBuffer(capacity: needed) }
        let base = scratch!.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        (planes[0], planes[1], planes[2]) = (base, base + sizes.0, base + sizes.0 + sizes.1)
        return false
    }

    /// Completes `picture` after decoding: neutral chroma for gray, and the decoder's own planes
    /// copied (4:2:0) or halved (4:2:2, 4:4:4) into it when it was not decoded in place.
    private func fill(_ picture: VideoFrame, from subsampling: JPEGFrameHeader.Subsampling, inPlace: Bool) throws {
        let layout = picture.layout
        let base = picture.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let (y, u, v) = (base + layout[0].offset, base + layout[1].offset, base + layout[2].offset)
        let (ys, cs, w, h) = (Int32(layout[0].stride), Int32(layout[1].stride), Int32(format.width), Int32(format.height))
        let convert: Conversion
        switch subsampling {
        case .gray:
            if !inPlace { CopyPlane(planes[0], strides[0], y, ys, w, h) }
            picture.plane(1).initializeMemory(as: UInt8.self, repeating: 128)
            picture.plane(2).initializeMemory(as: UInt8.self, repeating: 128)
            return
        case .yuv420: convert = I420Copy
        case .yuv422: convert = I422ToI420
        case .yuv444: convert = I444ToI420
        }
        let status = convert(planes[0], strides[0], planes[1], strides[1], planes[2], strides[2], y, ys, u, cs, v, cs, w, h)
        guard status == 0 else {
            throw CodecError.library(name: "libyuv", operation: "\(subsampling.rawValue) to I420", code: status,
                                     message: "chroma conversion failed")
        }
    }

    /// libjpeg-turbo reads the headers itself; the planes given to it are sized by `header`, so the
    /// two readings must agree.
    private func checkTurboJPEGAgrees(with header: JPEGFrameHeader, jpeg: UnsafePointer<UInt8>, count: Int) throws {
        var (width, height, subsampling, colorspace) = (Int32(0), Int32(0), Int32(0), Int32(0))
        guard tjDecompressHeader3(handle, jpeg, UInt(count), &width, &height, &subsampling, &colorspace) == 0 else {
            throw CodecError.library(name: "libturbojpeg", operation: "tjDecompressHeader3", code: tjGetErrorCode(handle),
                                     message: String(cString: tjGetErrorStr2(handle)))
        }
        let colorspaceExpected = header.subsampling == .gray ? TJCS_GRAY : TJCS_YCbCr
        guard width == header.width, height == header.height, subsampling == header.subsampling.turboJPEG,
              colorspace == Int32(colorspaceExpected.rawValue)
        else {
            throw MJPEGError.unsupported(
                "libjpeg-turbo reads \(header.subsampling.rawValue) as subsampling \(subsampling), colorspace \(colorspace)")
        }
    }

    /// Whether an EOI marker (`FF D9`) follows the SOI; cameras may pad a picture after it.
    private static func hasEndOfImage(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = bytes.count - 2
        while index >= 2 {
            if bytes[index] == 0xFF && bytes[index + 1] == 0xD9 { return true }
            index -= 1
        }
        return false
    }

    private func scaleToLimitedRange(_ picture: VideoFrame) {
        rangeTable.withUnsafeBufferPointer { table in
            for plane in 0..<3 {
                let lookup = table.baseAddress! + (plane == 0 ? 0 : 256)
                for row in 0..<picture.layout[plane].rows {
                    let line = picture.row(row, ofPlane: plane)
                    for index in line.indices { line[index] = lookup[Int(line[index])] }
                }
            }
        }
    }
}

/// libyuv's planar 4:x:x to I420 functions, which share one signature.
private typealias Conversion = @convention(c) (
    UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32,
    UnsafeMutablePointer<UInt8>?, Int32, UnsafeMutablePointer<UInt8>?, Int32, UnsafeMutablePointer<UInt8>?, Int32,
    Int32, Int32
) -> Int32

extension JPEGFrameHeader.Subsampling {
    /// TurboJPEG's constant for this subsampling (`TJSAMP`).
    var turboJPEG: Int32 {
        switch self {
        case .yuv420: return Int32(TJSAMP_420.rawValue)
        case .yuv422: return Int32(TJSAMP_422.rawValue)
        case .yuv444: return Int32(TJSAMP_444.rawValue)
        case .gray: return Int32(TJSAMP_GRAY.rawValue)
        }
    }
}

/// Makes MJPEG decoders (libjpeg-turbo), which output I420 pictures.
public struct MJPEGDecoderProvider: VideoDecoderProvider {
    public let range: MJPEGDecoder.SampleRange
    public let strict: Bool

    public init(range: MJPEGDecoder.SampleRange = .limited, strict: Bool = false) {
        self.range = range
        self.strict = strict
    }

    public var name: String { "libjpeg-turbo" }
    public var codec: CodecName { .mjpeg }

    /// I420 at the size and frame rate of the MJPEG stream.
    public func outputCaps(for input: VideoFormat) -> Caps {
        Caps(.video(VideoFormat(encoding: .pixels(.i420), width: input.width, height: input.height,
                                frameRate: input.frameRate)))
    }

    /// A decoder; `threads` is ignored (libjpeg-turbo decodes a picture on the calling thread).
    public func makeDecoder(format: VideoFormat, threads: Int) throws -> any VideoDecoder {
        try MJPEGDecoder(format: format, range: range, strict: strict)
    }
}
