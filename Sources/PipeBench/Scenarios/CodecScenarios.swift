// Encoding and decoding per codec through the graph (source -> codec node -> sink, one thread per
// node) against the same library in a bare C loop, same settings, same frames.
import BenchLoops
import Sluice

/// The codec scenarios: "encode.<codec>" and "decode.<codec>".
enum CodecScenarios {
    /// Settings shared by the video encoders: 800 kbit/s, realtime, one thread, no periodic keyframes.
    static let videoSettings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)
    /// Graph encoding and decoding should reach 97% of the bare library.
    static let target = 0.97

    static let all: [any Scenario] = [vp8Encode, vp8Decode]

    /// The first `size` pictures of the sample (at most its 132).
    static func pictures(_ size: RunSize) -> ArraySlice<VideoFrame> {
        Sample.pictures.prefix(size.count(default: Sample.pictures.count))
    }

    static let vp8Encode = HeadToHeadScenario(
        "encode.vp8", "VP8 encoding (libvpx, 640x360, 800 kbit/s realtime) through the graph vs bare libvpx",
        unit: "frames/s", target: target
    ) { size in
        let input = pictures(size)
        return Workload(
            sluice: {
                _ = try encodeThroughGraph(input, format: .video(Sample.format),
                                           with: VideoEncoderNode(VP8EncoderProvider(), settings: videoSettings))
                return input.count
            },
            bare: {
                _ = BareVP8.encode(input, settings: videoSettings)
                return input.count
            })
    }

    static let vp8Decode = HeadToHeadScenario(
        "decode.vp8", "VP8 decoding (libvpx, the 640x360 sample) through the graph vs bare libvpx",
        unit: "frames/s", target: target
    ) { size in
        let input = Sample.vp8Frames.prefix(size.count(default: Sample.vp8Frames.count))
        return Workload(
            sluice: {
                try runThroughGraph(input, format: .video(Sample.vp8Format), through: VideoDecoderNode(VP8DecoderProvider()),
                                    into: PictureCounter()).pictures
            },
            bare: { BareVP8.decode(input) })
    }
}
