// VP8 encoding of the bundled sample (640x360, 132 frames, 800 kbit/s, realtime, one thread),
// once through a Sluice graph (source -> VideoEncoderNode -> sink, one thread per node) and once
// as libvpx called in a bare loop with the same configuration. Compare the two rows: their ratio
// is the graph's overhead. Malloc counts are per run; the graph over the first half of the clip
// allocates as much as over all of it: nothing per frame.
import Benchmark
import BenchmarkSupport
import CSluiceShims
import CVPX
import Sluice

let settings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)
let pictures = Sample.pictures

/// libvpx alone: the same configuration VP8Encoder applies, no Sluice types in the loop.
func encodeBare() -> Int {
    let first = pictures[0]
    var config = vpx_codec_enc_cfg_t()
    vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &config, 0)
    config.g_w = UInt32(first.width)
    config.g_h = UInt32(first.height)
    config.g_timebase = vpx_rational(num: 1, den: 25)
    config.rc_target_bitrate = UInt32(settings.bitrate / 1000)
    config.g_threads = 1
    config.kf_max_dist = 3000
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

let benchmarks: @Sendable () -> Void = {
    _ = pictures.count
    // The allocation budget (Thresholds/). The slack absorbs buffers that scheduling leaves in
    // flight (a few per pool); one allocation per frame would exceed it many times over.
    Benchmark.defaultConfiguration = .codec(mallocSlack: 32)

    graphBenchmarks(pictures, format: .video(Sample.format)) {
        VideoEncoderNode(VP8EncoderProvider(), settings: settings)
    }
    Benchmark("BareLibvpx") { benchmark in
        blackHole(encodeBare())
    }
}
