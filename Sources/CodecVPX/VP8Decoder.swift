import CSluiceShims
import CVPX
import MediaCodecs
import MediaCore

/// VP8 decoding through libvpx.
///
/// Each decoded picture is copied into a frame from `outputPool` and takes the pts and duration of
/// the compressed frame it came from (VP8 never reorders). The picture size follows the stream, so
/// a keyframe of another size yields frames of the new size.
public final class VP8Decoder: VideoDecoder {
    public let format: VideoFormat
    /// Storage of the pictures this decoder emits.
    public let outputPool = BufferPool(name: "vp8-decoder")

    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>

    /// Makes a decoder for a `.compressed(.vp8)` stream, using up to `threads` threads.
    public init(format: VideoFormat, threads: Int = 1) throws {
        guard format.encoding == .compressed(.vp8) else {
            throw CodecError.invalidSetting("VP8 decoder: input must be VP8, not \(format.encoding)")
        }
        guard (1...64).contains(threads) else {
            throw CodecError.invalidSetting("VP8 decoder: threads \(threads) is outside 1...64")
        }
        var config = vpx_codec_dec_cfg_t(threads: UInt32(threads), w: 0, h: 0)  // size comes from the stream
        let context = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        let status = sluice_vpx_dec_init(context, vpx_codec_vp8_dx(), &config, 0)
        guard status == VPX_CODEC_OK else {
            let error = VPX.error(status, "dec_init", context)
            context.deallocate()
            throw error
        }
        self.format = format
        self.context = context
    }

    deinit {
        vpx_codec_destroy(context)
        context.deallocate()
    }

    /// Decodes one compressed frame. Corrupt data throws `CodecError.library` (operation "decode");
    /// decoding can resume at the next keyframe.
    public func decode(_ frame: EncodedFrame, emit: (consuming VideoFrame) throws -> Void) throws {
        let bytes = frame.bytes
        guard let data = bytes.baseAddress, bytes.count > 0, bytes.count <= Int(UInt32.max) else {
            throw CodecError.library(name: "libvpx", operation: "decode",
                                     code: Int32(truncatingIfNeeded: VPX_CODEC_INVALID_PARAM.rawValue),
                                     message: "compressed frame of \(bytes.count) bytes")
        }
        let status = withExtendedLifetime(frame) {
            vpx_codec_decode(context, data.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count), nil, 0)
        }
        try VPX.check(status, "decode", context)
        var iterator: vpx_codec_iter_t? = nil
        while let image = vpx_codec_get_frame(context, &iterator) {
            try emit(copy(image.pointee, pts: frame.pts, duration: frame.duration))
        }
    }

    /// VP8 holds no pictures back, so there is nothing to drain.
    public func flush(emit: (consuming VideoFrame) throws -> Void) throws {}

    /// A pooled copy of the visible part of a decoded image.
    private func copy(_ image: vpx_image_t, pts: MediaTime, duration: MediaTime?) throws -> VideoFrame {
        guard image.fmt == VPX_IMG_FMT_I420 else {
            throw CodecError.library(name: "libvpx", operation: "decode", code: 0,
                                     message: "unexpected image format \(image.fmt.rawValue)")
        }
        guard let y = image.planes.0, let u = image.planes.1, let v = image.planes.2 else {
            throw CodecError.library(name: "libvpx", operation: "decode", code: 0, message: "I420 image without its three planes")
        }
        let picture = VideoFrame(pixelFormat: .i420, width: Int(image.d_w), height: Int(image.d_h),
                                 pts: pts, duration: duration, pool: outputPool)
        picture.copyPlane(0, from: y, stride: Int(image.stride.0))
        picture.copyPlane(1, from: u, stride: Int(image.stride.1))
        picture.copyPlane(2, from: v, stride: Int(image.stride.2))
        return picture
    }
}
