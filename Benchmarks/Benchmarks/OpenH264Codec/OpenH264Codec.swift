// H.264 through OpenH264 on the bundled sample (640x360, 132 frames, one thread): encoding at
// 800 kbit/s (camera real-time usage, low complexity) and decoding the stream that encoding makes.
// Frames per second = 132 / wall-clock time of one run. Malloc counts are per run of 132 frames.
import Benchmark
import CodecOpenH264
import Sluice

/// The repository's sample: this file is Benchmarks/Benchmarks/OpenH264Codec/OpenH264Codec.swift.
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

let rawFormat = VideoFormat(encoding: .pixels(.i420), width: pictures[0].width, height: pictures[0].height,
                            frameRate: Rational(25, 1))
let h264Format = VideoFormat(encoding: .compressed(.h264), width: rawFormat.width, height: rawFormat.height,
                             frameRate: rawFormat.frameRate)
let settings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)

func encode() throws -> [EncodedFrame] {
    let encoder = try OpenH264Encoder(format: rawFormat, settings: settings)
    var output: [EncodedFrame] = []
    output.reserveCapacity(pictures.count)
    for picture in pictures { try encoder.encode(picture, forceKeyframe: false) { output.append($0) } }
    return output
}

/// The compressed sample, made once.
let stream: [EncodedFrame] = try! encode()

let benchmarks: @Sendable () -> Void = {
    _ = stream.count
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal],
        warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(15), maxIterations: 15,
        // The allocation budget (Thresholds/): creating the codec, plus a few pooled buffers; one
        // allocation per frame would exceed it.
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 32])])

    // Only a second pass over the sample is measured: creating the codec and its first pictures
    // allocate inside OpenH264, once per stream. The second pass allocates nothing (the table shows
    // the harness's own 16 mallocs, as a benchmark that measures nothing does; the thresholds are 0).
    Benchmark("Encode640x360") { benchmark in
        let encoder = try OpenH264Encoder(format: rawFormat, settings: settings)
        var bytes = 0
        for picture in pictures { try encoder.encode(picture, forceKeyframe: false) { bytes += $0.byteCount } }
        benchmark.startMeasurement()
        for picture in pictures { try encoder.encode(picture, forceKeyframe: false) { bytes += $0.byteCount } }
        benchmark.stopMeasurement()
        blackHole(bytes)
    }
    Benchmark("Decode640x360") { benchmark in
        let decoder = try OpenH264Decoder(format: h264Format)
        var checksum = 0
        for frame in stream { try decoder.decode(frame) { checksum &+= Int($0.row(0, ofPlane: 0)[0]) } }
        try decoder.flush { checksum &+= Int($0.row(0, ofPlane: 0)[0]) }
        benchmark.startMeasurement()
        for frame in stream { try decoder.decode(frame) { checksum &+= Int($0.row(0, ofPlane: 0)[0]) } }
        try decoder.flush { checksum &+= Int($0.row(0, ofPlane: 0)[0]) }
        benchmark.stopMeasurement()
        blackHole(checksum)
    }
}
