import COpenH264
import MediaCodecs
import MediaCore

/// H.264 encoding through OpenH264, which makes Constrained Baseline streams (ITU-T H.264 A.2.1.1:
/// CAVLC, progressive, no B slices), so compressed frames come out in input order, one per picture.
///
/// Pictures go in without a copy (the `SSourcePicture` points into the frame's planes). Each output
/// frame is one access unit in Annex-B format, in a buffer from `outputPool`: every IDR access unit
/// starts with its SPS and PPS (constant ids, so a decoder can join at any IDR), and `isKeyframe` is
/// set exactly on IDR access units. Frame skipping is off, so there is one compressed frame for
/// every picture.
public final class OpenH264Encoder: VideoEncoder {
    public let format: VideoFormat
    public private(set) var settings: VideoEncoderSettings
    /// Storage of the compressed frames this encoder emits.
    public let outputPool = BufferPool(name: "openh264-encoder")

    /// The encoder object (`ISVCEncoder*`, a pointer to its vtable pointer).
    private let handle: UnsafeMutablePointer<ISVCEncoder?>
    /// OpenH264's description of the last encoded picture; large (128 layers), so made once.
    private let info: UnsafeMutablePointer<SFrameBSInfo>
    private let log = OpenH264.Log()
    private var initialized = false

    /// The QP range OpenH264 allows while its rate control runs: it raises lower minimums to 12.
    public static let quantizerRange = 12...51

    /// Makes an encoder for pictures of `format`, which must be `.pixels(.i420)`.
    ///
    /// `settings.quality` (0...51) switches to OpenH264's quality mode with the QP held at that value
    /// (at least 12, see `quantizerRange`); otherwise rate control aims at `settings.bitrate`, which
    /// is also the maximum bitrate. `threads` > 1 encodes that many slices per picture in parallel.
    /// The usage is OpenH264's camera real-time one; `realtime` picks its low complexity (fastest), `false`
    /// its high complexity. The only profile is "constrained-baseline" (or `nil`).
    public init(format: VideoFormat, settings: VideoEncoderSettings) throws {
        try Self.validate(format: format, settings: settings)
        var created: UnsafeMutablePointer<ISVCEncoder?>?
        let status = WelsCreateSVCEncoder(&created)
        guard status == 0, let handle = created else {
            throw CodecError.library(name: "openh264", operation: "WelsCreateSVCEncoder", code: Int32(status),
                                     message: OpenH264.describe(returnCode: Int(status)))
        }
        self.format = format
        self.settings = settings
        self.handle = handle
        self.info = UnsafeMutablePointer<SFrameBSInfo>.allocate(capacity: 1)
        info.initialize(to: SFrameBSInfo())
        // From here on deinit cleans up.

        var context: UnsafeMutableRawPointer? = Unmanaged.passUnretained(log).toOpaque()
        var callback: WelsTraceCallback? = OpenH264.Log.callback
        var level = Int32(WELS_LOG_ERROR)
        _ = sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_TRACE_CALLBACK_CONTEXT, &context)
        _ = sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_TRACE_CALLBACK, &callback)
        _ = sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_TRACE_LEVEL, &level)

        var parameters = SEncParamExt()
        try OpenH264.check(Int(sluice_openh264_encoder_get_default_params(handle, &parameters)), "GetDefaultParams",
                           log: log)
        Self.configure(&parameters, format: format, settings: settings)
        log.clear()
        try OpenH264.check(Int(sluice_openh264_encoder_initialize_ext(handle, &parameters)), "InitializeExt", log: log)
        initialized = true
        var videoFormat = Int32(videoFormatI420.rawValue)
        try OpenH264.check(Int(sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_DATAFORMAT, &videoFormat)),
                           "set data format", log: log)
    }

    deinit {
        if initialized { _ = sluice_openh264_encoder_uninitialize(handle) }
        WelsDestroySVCEncoder(handle)
        info.deinitialize(count: 1)
        info.deallocate()
    }

    /// Encodes one picture into one access unit, which keeps the picture's pts and duration.
    public func encode(_ frame: VideoFrame, forceKeyframe: Bool, emit: (consuming EncodedFrame) throws -> Void) throws {
        guard frame.pixelFormat == .i420, frame.width == format.width, frame.height == format.height else {
            throw CodecError.invalidSetting(
                "OpenH264 encoder set up for \(format.width)x\(format.height) I420 got a "
                    + "\(frame.width)x\(frame.height) \(frame.pixelFormat.rawValue) picture")
        }
        log.clear()
        if forceKeyframe {
            try OpenH264.check(Int(sluice_openh264_force_intra_frame(handle, true)), "ForceIntraFrame", log: log)
        }
        var picture = Self.picture(wrapping: frame)
        UnsafeMutableRawPointer(info).initializeMemory(as: UInt8.self, repeating: 0,
                                                       count: MemoryLayout<SFrameBSInfo>.size)
        let status = withExtendedLifetime(frame) { sluice_openh264_encode(handle, &picture, info) }
        try OpenH264.check(Int(status), "encode", log: log)

        let frameType = info.pointee.eFrameType
        guard frameType != videoFrameTypeSkip, frameType != videoFrameTypeInvalid else {
            // Frame skipping is off, so this should not happen; a lost picture must not pass silently.
            let name = frameType == videoFrameTypeSkip ? "videoFrameTypeSkip" : "videoFrameTypeInvalid"
            throw CodecError.library(name: "openh264", operation: "encode", code: Int32(bitPattern: frameType.rawValue),
                                     message: "\(name): no access unit for the picture at \(frame.pts)"
                                        + (log.take().map { ": " + $0 } ?? ""))
        }
        try emit(collect(pts: frame.pts, duration: frame.duration, isKeyframe: frameType == videoFrameTypeIDR))
    }

    /// OpenH264 holds no pictures back, so there is nothing to drain.
    public func flush(emit: (consuming EncodedFrame) throws -> Void) throws {}

    /// Changes the target (and maximum) bitrate from the next picture on.
    public func setBitrate(_ bitsPerSecond: Int) throws {
        guard Self.bitrates.contains(bitsPerSecond) else {
            throw CodecError.invalidSetting("OpenH264 encoder: bitrate \(bitsPerSecond) bit/s is outside \(Self.bitrates)")
        }
        log.clear()
        var target = SBitrateInfo(iLayer: SPATIAL_LAYER_ALL, iBitrate: Int32(bitsPerSecond))
        if settings.quality == nil {
            // The maximum must never fall below the target: raise it first, lower it last.
            var maximum = target
            if bitsPerSecond > settings.bitrate {
                try OpenH264.check(Int(sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_MAX_BITRATE, &maximum)),
                                   "set max bitrate", log: log)
            }
            try OpenH264.check(Int(sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_BITRATE, &target)),
                               "set bitrate", log: log)
            if bitsPerSecond < settings.bitrate {
                try OpenH264.check(Int(sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_MAX_BITRATE, &maximum)),
                                   "set max bitrate", log: log)
            }
        } else {
            try OpenH264.check(Int(sluice_openh264_encoder_set_option(handle, ENCODER_OPTION_BITRATE, &target)),
                               "set bitrate", log: log)
        }
        settings.bitrate = bitsPerSecond
    }

    // MARK: - Helpers

    /// The NAL units of all layers of the last picture, already in Annex-B form, in one pooled frame.
    private func collect(pts: MediaTime, duration: MediaTime?, isKeyframe: Bool) throws -> EncodedFrame {
        let total = Int(info.pointee.iFrameSizeInBytes)
        let layerCount = Int(info.pointee.iLayerNum)
        let buffer = outputPool.acquire(capacity: total)
        var offset = 0
        try withUnsafeBytes(of: &info.pointee.sLayerInfo) { raw in
            let layers = raw.bindMemory(to: SLayerBSInfo.self)
            for layer in layers.prefix(layerCount) {
                var size = 0
                for nal in 0..<Int(layer.iNalCount) { size += Int(layer.pNalLengthInByte[nal]) }
                guard offset + size <= total, let source = layer.pBsBuf else {
                    throw CodecError.library(name: "openh264", operation: "encode", code: 0,
                                             message: "layers hold more than the \(total) bytes reported")
                }
                (buffer.storage.baseAddress! + offset).copyMemory(from: source, byteCount: size)
                offset += size
            }
        }
        guard offset == total, total > 0 else {
            throw CodecError.library(name: "openh264", operation: "encode", code: 0,
                                     message: "layers hold \(offset) bytes, the picture \(total)")
        }
        return EncodedFrame(codec: .h264, isKeyframe: isKeyframe, pts: pts, duration: duration, buffer: buffer)
    }

    /// An OpenH264 source picture that points into `frame`'s planes; valid while `frame` is alive.
    private static func picture(wrapping frame: VideoFrame) -> SSourcePicture {
        let base = frame.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let layout = frame.layout
        var picture = SSourcePicture()
        picture.iColorFormat = Int32(videoFormatI420.rawValue)
        picture.iPicWidth = Int32(frame.width)
        picture.iPicHeight = Int32(frame.height)
        picture.iStride = (Int32(layout[0].stride), Int32(layout[1].stride), Int32(layout[2].stride), 0)
        picture.pData = (base + layout[0].offset, base + layout[1].offset, base + layout[2].offset, nil)
        // OpenH264's rate control reads the time between pictures from this, in milliseconds.
        picture.uiTimeStamp = frame.pts.rescaled(to: Rational(1, 1000)).value
        return picture
    }

    /// Fills the parameters `GetDefaultParams` gave with Sluice's settings (public for benchmarks that call
    /// OpenH264 directly with the same parameters).
    public static func configure(_ p: inout SEncParamExt, format: VideoFormat, settings: VideoEncoderSettings) {
        // OpenH264 2.3.1 rejects CAMERA_VIDEO_NON_REAL_TIME ("Invalid usage type"): not real-time means
        // more effort at the same usage.
        p.iUsageType = CAMERA_VIDEO_REAL_TIME
        p.iComplexityMode = settings.realtime ? LOW_COMPLEXITY : HIGH_COMPLEXITY
        p.iPicWidth = Int32(format.width)
        p.iPicHeight = Int32(format.height)
        p.fMaxFrameRate = Float(format.frameRate.doubleValue)
        p.iTargetBitrate = Int32(settings.bitrate)
        if let quality = settings.quality {
            p.iRCMode = RC_QUALITY_MODE
            let qp = Int32(Swift.max(quality, quantizerRange.lowerBound))
            p.iMinQp = qp
            p.iMaxQp = qp
            p.iMaxBitrate = Int32(UNSPECIFIED_BIT_RATE)
        } else {
            p.iRCMode = RC_BITRATE_MODE
            p.iMaxBitrate = Int32(settings.bitrate)
        }
        p.bEnableFrameSkip = false  // one access unit for every picture
        if let interval = settings.keyframeInterval { p.uiIntraPeriod = UInt32(interval) }
        p.eSpsPpsIdStrategy = CONSTANT_ID  // the same SPS/PPS ids before every IDR
        p.iEntropyCodingModeFlag = 0  // CAVLC: Constrained Baseline
        p.iTemporalLayerNum = 1
        p.iSpatialLayerNum = 1
        p.iMultipleThreadIdc = UInt16(settings.threads)
        p.bUseLoadBalancing = false  // same slices on every run, so the output depends only on the input

        p.sSpatialLayers.0.iVideoWidth = Int32(format.width)
        p.sSpatialLayers.0.iVideoHeight = Int32(format.height)
        p.sSpatialLayers.0.fFrameRate = p.fMaxFrameRate
        p.sSpatialLayers.0.iSpatialBitrate = p.iTargetBitrate
        p.sSpatialLayers.0.iMaxSpatialBitrate = p.iMaxBitrate
        p.sSpatialLayers.0.uiProfileIdc = PRO_BASELINE
        if settings.threads > 1 {
            p.sSpatialLayers.0.sSliceArgument.uiSliceMode = SM_FIXEDSLCNUM_SLICE
            p.sSpatialLayers.0.sSliceArgument.uiSliceNum = UInt32(settings.threads)
        } else {
            p.sSpatialLayers.0.sSliceArgument.uiSliceMode = SM_SINGLE_SLICE
        }
    }

    /// Picture widths and heights this wrapper accepts; both must also be even (4:2:0 chroma).
    public static let sizes = 16...4096
    /// Frame rates OpenH264 handles: it clips its own to MIN_FRAME_RATE...MAX_FRAME_RATE, 1...60.
    public static let frameRates = Rational(1, 1)...Rational(60, 1)
    /// Profiles by name: OpenH264 encodes Constrained Baseline only.
    public static let profiles: Set<String> = ["constrained-baseline"]
    /// OpenH264 runs at most 4 encoding threads (MAX_THREADS_NUM).
    private static let threadCounts = 1...4
    private static let bitrates = 1_000...Int(Int32.max)

    private static func validate(format: VideoFormat, settings: VideoEncoderSettings) throws {
        func fail(_ text: String) -> CodecError { .invalidSetting("OpenH264 encoder: " + text) }
        guard format.encoding == .pixels(.i420) else { throw fail("input must be I420 pictures, not \(format.encoding)") }
        guard sizes.contains(format.width), sizes.contains(format.height) else {
            throw fail("picture size \(format.width)x\(format.height) is outside \(sizes) in each dimension")
        }
        guard format.width % 2 == 0, format.height % 2 == 0 else {
            // OpenH264 would silently encode one column or row less.
            throw fail("picture size \(format.width)x\(format.height) must be even in each dimension")
        }
        guard format.frameRate.numerator > 0, frameRates.contains(format.frameRate) else {
            throw fail("frame rate \(format.frameRate) is outside 1...60")
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
        if let quality = settings.quality, !(0...51).contains(quality) {
            throw fail("quality \(quality) is outside 0...51 (a QP)")
        }
        if let profile = settings.profile, !profiles.contains(profile.lowercased()) {
            throw fail("profile \"\(profile)\" is not supported: OpenH264 encodes constrained-baseline only")
        }
    }
}
