import CX264
import MediaCodecs
import MediaCore

/// H.264 encoding through libx264.
///
/// Output convention for H.264 across Sluice: an `EncodedFrame` of codec `.h264` carries ONE access
/// unit in the Annex-B byte-stream format (ITU-T H.264 Annex B: a start code `00 00 00 01` or
/// `00 00 01` before each NAL unit). `isKeyframe` is true when it contains an IDR slice (NAL unit
/// type 5), and every IDR access unit carries its SPS and PPS (types 7 and 8) in front of the slice,
/// within the same `EncodedFrame`, so that any keyframe can start decoding.
///
/// Realtime settings use x264's "veryfast" preset with the "zerolatency" tune (no B-frames, no
/// lookahead: one picture in, one access unit out). Otherwise the "medium" preset with B-frames: output
/// lags the input and comes in decoding order, so `dts` differs from `pts`; `flush` drains the rest.
///
/// Rate control: `settings.bitrate` as x264's average bitrate with a VBV cap at the same rate, or, when
/// `settings.quality` is set, constant quality (CRF 1...51, lower is better; 0, lossless, needs a
/// profile beyond High). Profiles: `settings.profile` "constrained-baseline" (the realtime default),
/// "main" or "high" (the default otherwise); "baseline" is taken as "constrained-baseline".
///
/// Pictures go in without a copy (the `x264_picture_t` points into the frame's planes; x264 copies
/// what it keeps); access units come out in buffers from `outputPool`, so a warm encoder allocates no
/// new storage.
public final class X264Encoder: VideoEncoder {
    /// H.264 profile names this encoder accepts, and the x264 profile each maps to (x264's "baseline"
    /// uses no Baseline-only tools, so its streams are Constrained Baseline, §A.2.1.1).
    public static let profiles: [String: String] = [
        "constrained-baseline": "baseline", "baseline": "baseline", "main": "main", "high": "high",
    ]

    public let format: VideoFormat
    public private(set) var settings: VideoEncoderSettings
    /// x264's timebase: the reciprocal of the frame rate, so one tick per nominal frame.
    public let timebase: Rational
    /// The H.264 profile asked of x264, by its name in `profiles`.
    public let profile: String
    /// Storage of the access units this encoder emits.
    public let outputPool = BufferPool(name: "x264-encoder")

    private var handle: OpaquePointer
    private let log: X264Log
    /// The parameters the encoder was opened with (bitrate changes included), to open it again after a flush.
    private var param: x264_param_t
    /// Pictures given to the current x264 encoder since it was opened.
    private var picturesSinceOpen = 0
    /// Set by `flush`: x264 ends its stream there, so the next picture goes to a fresh encoder.
    private var needsReopen = false

    /// Makes an encoder for pictures of `format`, which must be `.pixels(.i420)` of even width and height.
    public init(format: VideoFormat, settings: VideoEncoderSettings) throws {
        let profile = try Self.validate(format: format, settings: settings)
        let timebase = format.frameRate.reciprocal
        let log = X264Log()

        var param = x264_param_t()
        let preset = settings.realtime ? "veryfast" : "medium"
        let status = x264_param_default_preset(&param, preset, settings.realtime ? "zerolatency" : nil)
        guard status == 0 else {
            throw CodecError.library(name: "x264", operation: "param_default_preset", code: status,
                                     message: "preset \(preset) refused")
        }
        log.attach(to: &param)
        param.i_threads = Int32(settings.threads)
        param.i_width = Int32(format.width)
        param.i_height = Int32(format.height)
        param.i_csp = X264_CSP_I420
        param.i_fps_num = UInt32(format.frameRate.numerator)
        param.i_fps_den = UInt32(format.frameRate.denominator)
        param.i_timebase_num = UInt32(timebase.numerator)
        param.i_timebase_den = UInt32(timebase.denominator)
        param.b_vfr_input = 0  // rate control counts frames at the nominal rate, whatever the timestamps
        if let interval = settings.keyframeInterval { param.i_keyint_max = Int32(interval) }
        param.b_repeat_headers = 1  // SPS and PPS in front of every IDR
        param.b_annexb = 1  // start codes, not length prefixes
        if let quality = settings.quality {
            param.rc.i_rc_method = X264_RC_CRF
            param.rc.f_rf_constant = Float(quality)
        } else {
            param.rc.i_rc_method = X264_RC_ABR
            Self.setRateControl(&param, bitrate: settings.bitrate, realtime: settings.realtime)
        }
        let x264Profile = Self.profiles[profile]!
        let applied = x264_param_apply_profile(&param, x264Profile)
        guard applied == 0 else {
            throw CodecError.invalidSetting("x264 encoder: profile \(profile) does not allow these settings")
        }

        self.format = format
        self.settings = settings
        self.timebase = timebase
        self.profile = profile
        self.param = param
        self.handle = try Self.open(&param, log: log)
        self.log = log
    }

    deinit {
        x264_encoder_close(handle)
    }

    /// Opens an x264 encoder; a refusal becomes `CodecError.library` with x264's logged reason.
    static func open(_ param: inout x264_param_t, log: X264Log) throws -> OpaquePointer {
        guard let handle = sluice_x264_encoder_open(&param) else {
            throw log.error("encoder_open", code: -1, fallback: "x264 refused the parameters")
        }
        return handle
    }

    /// Encodes one picture; its pts is rescaled to `timebase`. `forceKeyframe` makes it an IDR picture.
    public func encode(_ frame: VideoFrame, forceKeyframe: Bool, emit: (consuming EncodedFrame) throws -> Void) throws {
        guard frame.pixelFormat == .i420, frame.width == format.width, frame.height == format.height else {
            throw CodecError.invalidSetting(
                "x264 encoder set up for \(format.width)x\(format.height) I420 got a "
                    + "\(frame.width)x\(frame.height) \(frame.pixelFormat.rawValue) picture")
        }
        if needsReopen { try reopen() }
        var picture = x264_picture_t()
        x264_picture_init(&picture)
        picture.i_type = forceKeyframe ? X264_TYPE_IDR : X264_TYPE_AUTO
        picture.i_pts = frame.pts.rescaled(to: timebase).value
        let base = frame.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let layout = frame.layout
        picture.img.i_csp = X264_CSP_I420
        picture.img.i_plane = 3
        picture.img.i_stride = (Int32(layout[0].stride), Int32(layout[1].stride), Int32(layout[2].stride), 0)
        picture.img.plane = (base + layout[0].offset, base + layout[1].offset, base + layout[2].offset, nil)
        picturesSinceOpen += 1
        // x264 copies the picture during the call, so the frame need only live until it returns.
        try withExtendedLifetime(frame) { _ = try encode(&picture, emit) }
    }

    /// Encodes "no picture" while x264 holds delayed pictures (B-frames, lookahead, frame threads).
    ///
    /// This ends x264's stream (its lookahead thread stops), so pictures encoded after a flush go to a
    /// fresh x264 encoder with the same settings: a new stream that starts with an IDR picture.
    public func flush(emit: (consuming EncodedFrame) throws -> Void) throws {
        guard picturesSinceOpen > 0 else { return }
        needsReopen = true
        while x264_encoder_delayed_frames(handle) > 0 {
            _ = try encode(nil, emit)
        }
    }

    private func reopen() throws {
        let fresh = try Self.open(&param, log: log)
        x264_encoder_close(handle)
        handle = fresh
        picturesSinceOpen = 0
        needsReopen = false
    }

    /// Changes the target bitrate (and the VBV limits with it) from the next encoded picture on.
    /// Not available in constant-quality mode (`settings.quality`), which has no bitrate.
    public func setBitrate(_ bitsPerSecond: Int) throws {
        guard Self.bitrates.contains(bitsPerSecond) else {
            throw CodecError.invalidSetting("x264 encoder: bitrate \(bitsPerSecond) bit/s is outside \(Self.bitrates)")
        }
        guard settings.quality == nil else {
            throw CodecError.invalidSetting("x264 encoder: constant-quality mode (CRF) has no bitrate to change")
        }
        var param = x264_param_t()
        x264_encoder_parameters(handle, &param)
        Self.setRateControl(&param, bitrate: bitsPerSecond, realtime: settings.realtime)
        let status = x264_encoder_reconfig(handle, &param)
        guard status >= 0 else { throw log.error("encoder_reconfig", code: status, fallback: "bitrate change refused") }
        Self.setRateControl(&self.param, bitrate: bitsPerSecond, realtime: settings.realtime)
        settings.bitrate = bitsPerSecond
    }

    // MARK: - Helpers

    /// Runs one `x264_encoder_encode` and emits the access unit it returns, if any; returns the count.
    private func encode(_ picture: UnsafeMutablePointer<x264_picture_t>?, _ emit: (consuming EncodedFrame) throws -> Void)
        throws -> Int
    {
        var nals: UnsafeMutablePointer<x264_nal_t>? = nil
        var nalCount: Int32 = 0
        var output = x264_picture_t()
        let size = x264_encoder_encode(handle, &nals, &nalCount, picture, &output)
        guard size >= 0 else { throw log.error("encoder_encode", code: size, fallback: "encoding failed") }
        guard size > 0, let nals, nalCount > 0 else { return 0 }
        var isKeyframe = false
        for index in 0..<Int(nalCount) where nals[index].i_type == Int32(NAL_SLICE_IDR.rawValue) {
            isKeyframe = true
        }
        // x264 lays the NAL units of one picture out back to back, start codes included.
        let encoded = EncodedFrame(
            codec: .h264, isKeyframe: isKeyframe,
            pts: MediaTime(output.i_pts, timebase: timebase), dts: MediaTime(output.i_dts, timebase: timebase),
            duration: MediaTime(1, timebase: timebase),
            copying: UnsafeRawBufferPointer(start: nals[0].p_payload, count: Int(size)), pool: outputPool)
        try emit(encoded)
        return 1
    }

    /// Average bitrate with a VBV cap at the same rate: one second of buffer for realtime (steady frame
    /// sizes for networks), two otherwise.
    private static func setRateControl(_ param: inout x264_param_t, bitrate: Int, realtime: Bool) {
        let kilobits = Int32(Swift.max(1, (bitrate + 500) / 1000))
        param.rc.i_bitrate = kilobits
        param.rc.i_vbv_max_bitrate = kilobits
        param.rc.i_vbv_buffer_size = realtime ? kilobits : 2 * kilobits
    }

    private static let sizes = 2...16384
    private static let threadCounts = 1...64
    private static let bitrates = 1...1_000_000_000
    /// x264's CRF scale for 8-bit video. 0 would be lossless, which needs High 4:4:4 Predictive.
    private static let qualities = 1...51

    /// Checks everything x264 would refuse or misread; returns the profile name to use.
    private static func validate(format: VideoFormat, settings: VideoEncoderSettings) throws -> String {
        func fail(_ text: String) -> CodecError { .invalidSetting("x264 encoder: " + text) }
        guard format.encoding == .pixels(.i420) else { throw fail("input must be I420 pictures, not \(format.encoding)") }
        guard sizes.contains(format.width), sizes.contains(format.height) else {
            throw fail("picture size \(format.width)x\(format.height) is outside \(sizes) in each dimension")
        }
        guard format.width % 2 == 0, format.height % 2 == 0 else {
            throw fail("picture size \(format.width)x\(format.height) must be even for 4:2:0")
        }
        let rate = format.frameRate
        guard rate.numerator > 0, rate.denominator > 0, rate.numerator <= UInt32.max, rate.denominator <= UInt32.max
        else { throw fail("frame rate \(rate) must be positive and fit in 32-bit numbers") }
        guard bitrates.contains(settings.bitrate) else { throw fail("bitrate \(settings.bitrate) bit/s is outside \(bitrates)") }
        guard threadCounts.contains(settings.threads) else { throw fail("threads \(settings.threads) is outside \(threadCounts)") }
        if let interval = settings.keyframeInterval, !(1...Int(X264_KEYINT_MAX_INFINITE)).contains(interval) {
            throw fail("keyframe interval \(interval) must be at least 1")
        }
        if let quality = settings.quality, !qualities.contains(quality) {
            throw fail("quality (CRF) \(quality) is outside \(qualities)")
        }
        let profile = settings.profile ?? (settings.realtime ? "constrained-baseline" : "high")
        guard profiles[profile] != nil else {
            throw fail("unknown H.264 profile \"\(profile)\"; known: \(profiles.keys.sorted().joined(separator: ", "))")
        }
        return profile
    }
}
