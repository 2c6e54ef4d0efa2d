// libx264 called in a bare loop with the parameters X264Encoder sets: the reference the graph's H.264
// encoding through x264 is measured against.
import CX264
import Sluice

/// H.264 encoding through libx264 alone, no Sluice types in the loop.
public enum BareX264 {
    /// Encodes `pictures` of `format` with the parameters X264Encoder.init applies for `settings`
    /// (preset "veryfast", tune "zerolatency", ABR with a one-second VBV, Constrained Baseline, SPS/PPS
    /// before every IDR, Annex-B); returns the compressed bytes, delayed frames included.
    public static func encode(_ pictures: ArraySlice<VideoFrame>, format: VideoFormat,
                              settings: VideoEncoderSettings) -> Int {
        var param = x264_param_t()
        precondition(x264_param_default_preset(&param, "veryfast", "zerolatency") == 0)
        param.i_log_level = X264_LOG_ERROR
        param.i_threads = Int32(settings.threads)
        param.i_width = Int32(format.width)
        param.i_height = Int32(format.height)
        param.i_csp = X264_CSP_I420
        param.i_fps_num = UInt32(format.frameRate.numerator)
        param.i_fps_den = UInt32(format.frameRate.denominator)
        param.i_timebase_num = UInt32(format.frameRate.denominator)
        param.i_timebase_den = UInt32(format.frameRate.numerator)
        param.b_vfr_input = 0
        param.i_keyint_max = Int32(settings.keyframeInterval!)
        param.b_repeat_headers = 1
        param.b_annexb = 1
        param.rc.i_rc_method = X264_RC_ABR
        let kilobits = Int32(settings.bitrate / 1000)
        param.rc.i_bitrate = kilobits
        param.rc.i_vbv_max_bitrate = kilobits
        param.rc.i_vbv_buffer_size = kilobits
        precondition(x264_param_apply_profile(&param, "baseline") == 0)
        let encoder = sluice_x264_encoder_open(&param)!
        defer { x264_encoder_close(encoder) }

        var bytes = 0
        var nals: UnsafeMutablePointer<x264_nal_t>? = nil
        var nalCount: Int32 = 0
        var output = x264_picture_t()
        var picture = x264_picture_t()
        for (index, frame) in pictures.enumerated() {
            x264_picture_init(&picture)
            picture.i_type = X264_TYPE_AUTO
            picture.i_pts = Int64(index)
            let base = frame.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let layout = frame.layout
            picture.img.i_csp = X264_CSP_I420
            picture.img.i_plane = 3
            picture.img.i_stride = (Int32(layout[0].stride), Int32(layout[1].stride), Int32(layout[2].stride), 0)
            picture.img.plane = (base + layout[0].offset, base + layout[1].offset, base + layout[2].offset, nil)
            let size = x264_encoder_encode(encoder, &nals, &nalCount, &picture, &output)
            precondition(size >= 0)
            bytes += Int(size)
        }
        while x264_encoder_delayed_frames(encoder) > 0 {
            let size = x264_encoder_encode(encoder, &nals, &nalCount, nil, &output)
            precondition(size >= 0)
            bytes += Int(size)
        }
        return bytes
    }
}
