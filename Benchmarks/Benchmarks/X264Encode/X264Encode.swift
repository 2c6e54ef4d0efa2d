// H.264 encoding of the bundled sample (640x360, 132 frames, 800 kbit/s, realtime, one thread)
// with libx264, once through a Sluice graph (source -> VideoEncoderNode with the x264 provider ->
// sink, one thread per node) and once as libx264 called in a bare loop with the parameters
// X264Encoder sets: preset "veryfast", tune "zerolatency", ABR with a one-second VBV at the same
// rate, Constrained Baseline, SPS/PPS before every IDR, Annex-B. Compare the two rows: their ratio is
// the graph's overhead. x264 is deterministic with one thread, so both make the same stream,
// which is checked once before measuring. Malloc counts are per run; the graph over the first half
// of the clip allocates as much as over all of it: nothing per frame.
import Benchmark
import BenchmarkSupport
import CX264
import Sluice

let settings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)
let pictures = Sample.pictures

/// libx264 alone: the parameters X264Encoder.init applies for `settings`, no Sluice types in the loop.
func encodeBare() -> Int {
    let format = Sample.format
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

let benchmarks: @Sendable () -> Void = {
    // Same settings, same stream: the graph's X264Encoder and the bare loop agree to the byte.
    let graphBytes = try! encodeThroughGraph(pictures[...], format: .video(Sample.format),
                                             with: VideoEncoderNode(X264EncoderProvider(), settings: settings))
    let bareBytes = encodeBare()
    precondition(graphBytes == bareBytes, "graph made \(graphBytes) bytes, bare libx264 \(bareBytes): settings differ")

    // The allocation budget (Thresholds/). The slack absorbs buffers that scheduling leaves in
    // flight (a few per pool); one allocation per frame would exceed it many times over.
    Benchmark.defaultConfiguration = .codec(mallocSlack: 32)

    graphBenchmarks(pictures, format: .video(Sample.format)) {
        VideoEncoderNode(X264EncoderProvider(), settings: settings)
    }
    Benchmark("BareLibx264") { benchmark in
        blackHole(encodeBare())
    }
}
