// VP8 encoding of the bundled sample (640x360, 132 frames, 800 kbit/s, realtime, one thread),
// once through a Sluice graph (source -> VideoEncoderNode -> sink, one thread per node) and once
// as libvpx called in a bare loop with the same configuration. Compare the two rows: their ratio
// is the graph's overhead. Malloc counts are per run of 132 frames.
import Benchmark
import CSluiceShims
import CVPX
import Sluice

/// The repository's sample: this file is Benchmarks/Benchmarks/VP8Encode/VP8Encode.swift.
let samplePath = "/" + #filePath.split(separator: "/").dropLast(4).joined(separator: "/")
    + "/samples/big-buck-bunny-640x360.ivf"

/// The sample's pictures, decoded once.
let pictures: [VideoFrame] = {
    let reader = try! IVFReader(path: samplePath)
    let format = VideoFormat(encoding: .compressed(.vp8), width: reader.header.width, height: reader.header.height,
                             frameRate: Rational(25, 1))
    let decoder = try! VP8Decoder(format: format, threads: 1)
    var frames: [VideoFrame] = []
    while let encoded = try! reader.next(pool: nil) { try! decoder.decode(encoded) { frames.append($0) } }
    return frames
}()

let settings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)

/// Hands out the preloaded pictures, as a capture source would hand out fresh ones.
final class PreloadedSource: MediaSource {
    let name = "preloaded"
    private var next = 0
    func outputCaps() throws -> Caps {
        let first = pictures[0]
        return Caps(.video(VideoFormat(encoding: .pixels(.i420), width: first.width, height: first.height,
                                       frameRate: Rational(25, 1))))
    }
    func start(output: MediaFormat, context: NodeContext) throws {}
    func produce() throws -> Production<VideoFrame> {
        guard next < pictures.count else { return .end }
        defer { next += 1 }
        return .item(pictures[next])
    }
}

/// Counts compressed bytes, so the work cannot be optimised away.
final class ByteCounter: MediaSink {
    let name = "counter"
    var bytes = 0
    var inputCaps: Caps { .anyVideo }
    func start(input: MediaFormat, context: NodeContext) throws {}
    func consume(_ frame: EncodedFrame) throws { bytes += frame.byteCount }
    func finish() throws {}
}

func encodeThroughGraph() throws -> Int {
    let graph = Graph()
    let counter = ByteCounter()
    graph.add(counter, input: graph.add(VideoEncoderNode(VP8EncoderProvider(), settings: settings),
                                        input: graph.add(PreloadedSource())))
    try graph.run()
    return counter.bytes
}

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
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal],
        warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(15), maxIterations: 15,
        // The allocation budget (Thresholds/). The slack absorbs buffers that scheduling leaves in
        // flight (a few per pool); one allocation per frame would exceed it many times over.
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 32])])

    Benchmark("SluiceGraph") { benchmark in
        blackHole(try encodeThroughGraph())
    }
    Benchmark("BareLibvpx") { benchmark in
        blackHole(encodeBare())
    }
}
