// libvpx's VP8 called in a bare loop, as an application using libvpx directly would: the reference
// the graph's VP8 encoding and decoding are measured against.
import CSluiceShims
import CVPX
import Sluice

/// VP8 through libvpx alone, no Sluice types in the loops.
public enum BareVP8 {
    /// Encodes `pictures` with the configuration VP8Encoder applies for `settings` (realtime, CBR, no
    /// frame dropping); returns the compressed bytes.
    public static func encode(_ pictures: ArraySlice<VideoFrame>, settings: VideoEncoderSettings) -> Int {
        let first = pictures.first!
        var config = vpx_codec_enc_cfg_t()
        vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &config, 0)
        config.g_w = UInt32(first.width)
        config.g_h = UInt32(first.height)
        config.g_timebase = vpx_rational(num: 1, den: 25)
        config.rc_target_bitrate = UInt32(settings.bitrate / 1000)
        config.g_threads = UInt32(settings.threads)
        config.kf_max_dist = UInt32(settings.keyframeInterval ?? 3000)
        config.rc_dropframe_thresh = 0
        config.g_lag_in_frames = 0
        config.rc_end_usage = VPX_CBR
        var codec = vpx_codec_ctx_t()
        precondition(sluice_vpx_enc_init(&codec, vpx_codec_vp8_cx(), &config, 0) == VPX_CODEC_OK)
        defer { vpx_codec_destroy(&codec) }
        _ = sluice_vpx_control_int(&codec, Int32(VP8E_SET_CPUUSED.rawValue), Int32(VP8Encoder.realtimeCPUUsed))
        _ = sluice_vpx_control_int(&codec, Int32(VP8E_SET_NOISE_SENSITIVITY.rawValue), 0)
        _ = sluice_vpx_control_int(&codec, Int32(VP8E_SET_STATIC_THRESHOLD.rawValue), 1)

        var bytes = 0
        var image = vpx_image_t()
        for (index, picture) in pictures.enumerated() {
            let base = picture.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let layout = picture.layout
            vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(picture.width), UInt32(picture.height), 1, base)
            image.planes = (base + layout[0].offset, base + layout[1].offset, base + layout[2].offset, nil)
            image.stride = (Int32(layout[0].stride), Int32(layout[1].stride), Int32(layout[2].stride), 0)
            precondition(vpx_codec_encode(&codec, &image, Int64(index), 1, 0, UInt(VPX_DL_REALTIME)) == VPX_CODEC_OK)
            var iterator: vpx_codec_iter_t?
            while let packet = vpx_codec_get_cx_data(&codec, &iterator) {
                if packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT { bytes += packet.pointee.data.frame.sz }
            }
        }
        return bytes
    }

    /// Decodes `frames` with one thread; returns the pictures libvpx handed out.
    public static func decode(_ frames: ArraySlice<EncodedFrame>) -> Int {
        var codec = vpx_codec_ctx_t()
        var config = vpx_codec_dec_cfg_t(threads: 1, w: 0, h: 0)
        precondition(sluice_vpx_dec_init(&codec, vpx_codec_vp8_dx(), &config, 0) == VPX_CODEC_OK)
        defer { vpx_codec_destroy(&codec) }
        var pictures = 0
        for frame in frames {
            let bytes = frame.bytes
            precondition(vpx_codec_decode(&codec, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                          UInt32(bytes.count), nil, 0) == VPX_CODEC_OK)
            var iterator: vpx_codec_iter_t?
            while vpx_codec_get_frame(&codec, &iterator) != nil { pictures += 1 }
        }
        return pictures
    }
}
