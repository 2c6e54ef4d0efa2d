// H.264 through OpenH264 on the bundled sample (640x360, 132 frames, one thread): encoding at
// 800 kbit/s (camera real-time usage, low complexity) and decoding the stream that encoding makes.
// Frames per second = 132 / wall-clock time of one run. Malloc counts are per run of 132 frames.
import Benchmark
import BenchmarkSupport
import CodecOpenH264
import Sluice

let pictures = Sample.pictures
let rawFormat = Sample.format
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
    // The allocation budget (Thresholds/): creating the codec, plus a few pooled buffers; one
    // allocation per frame would exceed it.
    Benchmark.defaultConfiguration = .codec(mallocSlack: 32)

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
