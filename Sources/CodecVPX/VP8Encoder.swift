import CSluiceShims
import CVPX
import MediaCodecs
import MediaCore

/// VP8 encoding through libvpx.
///
/// Pictures go in without a copy (the `vpx_image_t` points into the frame's buffer); compressed
/// frames come out in buffers from `outputPool`, so a warm encoder allocates no new storage.
public final class VP8Encoder: VideoEncoder {
    /// The realtime speed setting (`VP8E_SET_CPUUSED`).
    ///
    /// Negative values fix libvpx's speed level at `-cpuUsed`, so the output depends only on the
    /// input; positive ones let libvpx change the level frame by frame from its own encoding time,
    /// which makes the output depend on machine load. -6 is also WebRTC's desktop default; on Big
    /// Buck Bunny at 640x360 it keeps PSNR within 0.2 dB of -4 at about 1.6x the speed, while -8 is
    /// about 1.3x faster again for 0.3-0.6 dB less and -12 loses over 2 dB.
    public static let realtimeCPUUsed: Int32 = -6

    public let format: VideoFormat
    public private(set) var settings: VideoEncoderSettings
    /// libvpx's timebase: the reciprocal of the frame rate, so one tick per nominal frame.
    public let timebase: Rational
    /// Storage of the compressed frames this encoder emits.
    public let outputPool = BufferPool(name: "vp8-encoder")

    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private var config: vpx_codec_enc_cfg_t
    private let deadline: UInt

    /// Makes an encoder for pictures of `format`, which must be `.pixels(.i420)`.
    public init(format: VideoFormat, settings: VideoEncoderSettings) throws {
        try Self.validate(format: format, settings: settings)
        let timebase = format.frameRate.reciprocal

        var config = vpx_codec_enc_cfg_t()
        try VPX.check(vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &config, 0), "enc_config_default")
        config.g_w = UInt32(format.width)
        config.g_h = UInt32(format.height)
        config.g_timebase = vpx_rational(num: Int32(timebase.numerator), den: Int32(timebase.denominator))
        config.rc_target_bitrate = Self.kilobits(settings.bitrate)
        config.g_threads = UInt32(settings.threads)
        if let interval = settings.keyframeInterval { config.kf_max_dist = UInt32(interval) }
        config.rc_dropframe_thresh = 0  // never drop: one compressed frame per picture
        if settings.realtime {
            config.g_lag_in_frames = 0
            config.rc_end_usage = VPX_CBR
        } else {
            config.rc_end_usage = VPX_VBR  // with libvpx's default cpu-used 0: slow, best quality
        }

        let context = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        do {
            try VPX.check(sluice_vpx_enc_init(context, vpx_codec_vp8_cx(), &config, 0), "enc_init", context)
            if settings.realtime {
                try Self.control(context, VP8E_SET_CPUUSED, Self.realtimeCPUUsed)
                try Self.control(context, VP8E_SET_NOISE_SENSITIVITY, 0)
                try Self.control(context, VP8E_SET_STATIC_THRESHOLD, 1)
            }
        } catch {
            vpx_codec_destroy(context)  // harmless after a failed init
            context.deallocate()
            throw error
        }

        self.format = format
        self.settings = settings
        self.timebase = timebase
        self.context = context
        self.config = config
        self.deadline = UInt(settings.realtime ? VPX_DL_REALTIME : VPX_DL_GOOD_QUALITY)
    }

    deinit {
        vpx_codec_destroy(context)
        context.deallocate()
    }

    /// Encodes one picture; its pts is rescaled to `timebase`.
    public func encode(_ frame: VideoFrame, forceKeyframe: Bool, emit: (consuming EncodedFrame) throws -> Void) throws {
        guard frame.pixelFormat == .i420, frame.width == format.width, frame.height == format.height else {
            throw CodecError.invalidSetting(
                "VP8 encoder set up for \(format.width)x\(format.height) I420 got a "
                    + "\(frame.width)x\(frame.height) \(frame.pixelFormat.rawValue) picture")
        }
        var image = Self.image(wrapping: frame)
        let pts = frame.pts.rescaled(to: timebase).value
        let duration = Swift.max(1, frame.duration?.rescaled(to: timebase).value ?? 1)
        let flags = forceKeyframe ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        let status = withExtendedLifetime(frame) {
            vpx_codec_encode(context, &image, pts, UInt(duration), flags, deadline)
        }
        try VPX.check(status, "encode", context)
        _ = try drain(emit)
    }

    /// Encodes "no picture" until libvpx has nothing left to emit.
    public func flush(emit: (consuming EncodedFrame) throws -> Void) throws {
        repeat {
            try VPX.check(vpx_codec_encode(context, nil, -1, 1, 0, deadline), "flush", context)
        } while try drain(emit) > 0
    }

    /// Changes the target bitrate from the next picture on.
    public func setBitrate(_ bitsPerSecond: Int) throws {
        guard Self.bitrates.contains(bitsPerSecond) else {
            throw CodecError.invalidSetting("VP8 encoder: bitrate \(bitsPerSecond) bit/s is outside \(Self.bitrates)")
        }
        config.rc_target_bitrate = Self.kilobits(bitsPerSecond)
        try VPX.check(vpx_codec_enc_config_set(context, &config), "enc_config_set", context)
        settings.bitrate = bitsPerSecond
    }

    // MARK: - Helpers

    /// Emits every compressed frame libvpx has ready; returns how many.
    private func drain(_ emit: (consuming EncodedFrame) throws -> Void) throws -> Int {
        var iterator: vpx_codec_iter_t? = nil
        var count = 0
        while let packet = vpx_codec_get_cx_data(context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let data = packet.pointee.data.frame
            let encoded = EncodedFrame(
                codec: .vp8,
                isKeyframe: data.flags & vpx_codec_frame_flags_t(VPX_FRAME_IS_KEY) != 0,
                pts: MediaTime(data.pts, timebase: timebase),
                duration: MediaTime(Int64(data.duration), timebase: timebase),
                copying: UnsafeRawBufferPointer(start: data.buf, count: data.sz),
                pool: outputPool)
            try emit(encoded)
            count += 1
        }
        return count
    }

    /// A libvpx image that points into `frame`'s planes; valid while `frame` is alive.
    private static func image(wrapping frame: VideoFrame) -> vpx_image_t {
        let base = frame.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let layout = frame.layout
        var image = vpx_image_t()
        image.fmt = VPX_IMG_FMT_I420
        image.w = UInt32(frame.width)
        image.h = UInt32(frame.height)
        image.d_w = UInt32(frame.width)
        image.d_h = UInt32(frame.height)
        image.bit_depth = 8
        image.bps = 12
        image.x_chroma_shift = 1
        image.y_chroma_shift = 1
        image.planes = (base + layout[0].offset, base + layout[1].offset, base + layout[2].offset, nil)
        image.stride = (Int32(layout[0].stride), Int32(layout[1].stride), Int32(layout[2].stride), 0)
        return image
    }

    private static func control(_ context: UnsafeMutablePointer<vpx_codec_ctx_t>, _ id: vp8e_enc_control_id,
                                _ value: Int32) throws {
        try VPX.check(sluice_vpx_control_int(context, Int32(id.rawValue), value), "control \(id.rawValue)", context)
    }

    private static let sizes = 1...16383
    private static let threadCounts = 1...64
    private static let bitrates = 1...1_000_000_000

    private static func kilobits(_ bitsPerSecond: Int) -> UInt32 { UInt32(Swift.max(1, (bitsPerSecond + 500) / 1000)) }

    private static func validate(format: VideoFormat, settings: VideoEncoderSettings) throws {
        func fail(_ text: String) -> CodecError { .invalidSetting("VP8 encoder: " + text) }
        guard format.encoding == .pixels(.i420) else { throw fail("input must be I420 pictures, not \(format.encoding)") }
        guard sizes.contains(format.width), sizes.contains(format.height) else {
            throw fail("picture size \(format.width)x\(format.height) is outside \(sizes) in each dimension")
        }
        let rate = format.frameRate
        guard rate.numerator > 0, rate.numerator <= Int32.max, rate.denominator <= Int32.max else {
            throw fail("frame rate \(rate) must be positive and fit in 32-bit numbers")
        }
        guard bitrates.contains(settings.bitrate) else {
            throw fail("bitrate \(settings.bitrate) bit/s is outside \(bitrates)")
        }
        guard threadCounts.contains(settings.threads) else {
            throw fail("threads \(settings.threads) is outside \(threadCounts)")
        }
        if let interval = settings.keyframeInterval, !(1...Int(Int32.max)).contains(interval) {
            throw fail("keyframe interval \(interval) must be at least 1")
        }
    }
}
