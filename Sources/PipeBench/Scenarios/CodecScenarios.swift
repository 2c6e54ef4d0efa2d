// Encoding and decoding per codec through the graph (source -> codec node -> sink, on the shared
// scheduler) against the same library in a bare C loop, same settings, same frames.
import BenchLoops
import Sluice

/// The codec scenarios: "encode.<codec>" and "decode.<codec>".
enum CodecScenarios {
    /// Settings shared by the video encoders: 800 kbit/s, realtime, one thread, no periodic keyframes.
    static let videoSettings = VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true)
    /// Graph encoding and decoding should reach 99% of the bare library (issue 13).
    static let target = 0.99

    static let all: [any Scenario] = [vp8Encode, vp8Decode, ffmpegVP8Decode, x264Encode, openh264Encode, openh264Decode,
                                      ffmpegH264Decode, opusEncode, opusDecode]

    /// The first `size` pictures of the sample (at most its 132).
    static func pictures(_ size: RunSize) -> ArraySlice<VideoFrame> {
        Sample.pictures.prefix(size.count(default: Sample.pictures.count))
    }

    /// Encoding the first `size` pictures of the sample through source -> VideoEncoderNode(`provider`) ->
    /// sink, against `bare` encoding them with the same settings.
    static func videoEncode(_ codec: String, _ summary: String, provider: any VideoEncoderProvider,
                            bare: @escaping @Sendable (ArraySlice<VideoFrame>) -> Int) -> HeadToHeadScenario {
        HeadToHeadScenario("encode.\(codec)", summary, unit: "frames/s", target: target) { size in
            let input = pictures(size)
            return Workload(
                sluice: {
                    _ = try encodeThroughGraph(input, format: .video(Sample.format),
                                               with: VideoEncoderNode(provider, settings: videoSettings))
                    return input.count
                },
                bare: {
                    _ = bare(input)
                    return input.count
                },
                alone: {
                    let encoder = try provider.makeEncoder(format: Sample.format, settings: videoSettings)
                    var packets = 0
                    for picture in input { try encoder.encode(picture, forceKeyframe: false) { _ in packets += 1 } }
                    try encoder.flush { _ in packets += 1 }
                    return input.count
                })
        }
    }

    static let vp8Encode = videoEncode(
        "vp8", "VP8 encoding (libvpx, 640x360, 800 kbit/s realtime) through the graph vs bare libvpx",
        provider: VP8EncoderProvider()) { BareVP8.encode($0, settings: videoSettings) }

    static let x264Encode = videoEncode(
        "x264", "H.264 encoding (libx264 veryfast/zerolatency, 640x360, 800 kbit/s) through the graph vs bare libx264",
        provider: X264EncoderProvider()) { BareX264.encode($0, format: Sample.format, settings: videoSettings) }

    static let openh264Encode = videoEncode(
        "openh264", "H.264 encoding (OpenH264, 640x360, 800 kbit/s realtime) through the graph vs bare OpenH264",
        provider: OpenH264EncoderProvider()) { BareOpenH264.encode($0, format: Sample.format, settings: videoSettings) }

    /// Decoding the first `size` frames of `frames` (made when the scenario first runs) through source -> VideoDecoderNode(`provider`) ->
    /// picture counter, against `bare` decoding them.
    static func videoDecode(_ codec: String, _ summary: String, frames: @escaping @Sendable () -> [EncodedFrame],
                            format: @escaping @Sendable () -> VideoFormat,
                            provider: any VideoDecoderProvider,
                            bare: @escaping @Sendable (ArraySlice<EncodedFrame>) -> Int) -> HeadToHeadScenario {
        HeadToHeadScenario("decode.\(codec)", summary, unit: "frames/s", target: target) { size in
            let all = frames()
            let input = all.prefix(size.count(default: all.count))
            return Workload(
                sluice: {
                    try runThroughGraph(input, format: .video(format()), through: VideoDecoderNode(provider),
                                        into: PictureCounter()).pictures
                },
                bare: { bare(input) },
                alone: {
                    let decoder = try provider.makeDecoder(format: format(), threads: 1)
                    var pictures = 0
                    for frame in input { try decoder.decode(frame) { _ in pictures += 1 } }
                    try decoder.flush { _ in pictures += 1 }
                    return pictures
                })
        }
    }

    static let vp8Decode = videoDecode(
        "vp8", "VP8 decoding (libvpx, the 640x360 sample) through the graph vs bare libvpx",
        frames: { Sample.vp8Frames }, format: { Sample.vp8Format }, provider: VP8DecoderProvider()) { BareVP8.decode($0) }

    static let openh264Decode = videoDecode(
        "openh264", "H.264 decoding (OpenH264, the sample encoded by OpenH264) through the graph vs bare OpenH264",
        frames: { Sample.h264Frames }, format: { Sample.compressedFormat(.h264) }, provider: OpenH264DecoderProvider()
    ) { BareOpenH264.decode($0) }

    static let ffmpegVP8Decode = videoDecode(
        "ffmpeg-vp8", "VP8 decoding (libavcodec's vp8, one thread, the 640x360 sample) through the graph vs bare libavcodec",
        frames: { Sample.vp8Frames }, format: { Sample.vp8Format }, provider: FFmpegDecoderProvider(codec: .vp8)!
    ) { BareFFmpeg.decode($0, decoder: "vp8") }

    static let ffmpegH264Decode = videoDecode(
        "ffmpeg-h264", "H.264 decoding (libavcodec's h264, one thread, the sample encoded by OpenH264) through the graph vs bare libavcodec",
        frames: { Sample.h264Frames }, format: { Sample.compressedFormat(.h264) }, provider: FFmpegDecoderProvider(codec: .h264)!
    ) { BareFFmpeg.decode($0, decoder: "h264") }

    /// The first `size` 20 ms packets' worth of the looped Opus clip (by default all its 4000, 80 s:
    /// a repetition of the 10 s clip alone decodes in 17 ms, where the graph's set-up would weigh).
    static func opusPackets(_ size: RunSize) -> Int {
        min(size.count(default: OpusClip.loopedPackets.count), OpusClip.loopedFrames.count / 2)
    }

    static let opusEncode = HeadToHeadScenario(
        "encode.opus", "Opus encoding (libopus, 48 kHz stereo, 64 kbit/s, 20 ms) through the graph vs bare libopus",
        unit: "packets/s", target: target
    ) { size in
        let packets = opusPackets(size)
        let frames = OpusClip.loopedFrames.prefix(packets * 2)
        let samples = OpusClip.loopedSamples.prefix(packets * OpusClip.packetSamples * OpusClip.channels)
        return Workload(
            sluice: {
                _ = try encodeThroughGraph(frames, format: .audio(OpusClip.format),
                                           with: AudioEncoderNode(OpusEncoderProvider(), settings: OpusClip.settings))
                return packets
            },
            bare: {
                _ = BareOpus.encode(samples)
                return packets
            },
            alone: {
                let encoder = try OpusEncoderProvider().makeEncoder(format: OpusClip.format, settings: OpusClip.settings)
                for frame in frames { try encoder.encode(frame) { _ in } }
                try encoder.flush { _ in }
                return packets
            })
    }

    static let opusDecode = HeadToHeadScenario(
        "decode.opus", "Opus decoding (libopus, 48 kHz stereo, 20 ms packets) through the graph vs bare libopus",
        unit: "packets/s", target: target
    ) { size in
        let input = OpusClip.loopedPackets.prefix(opusPackets(size))
        return Workload(
            sluice: {
                _ = try runThroughGraph(input, format: .audio(OpusClip.opusFormat),
                                        through: AudioDecoderNode(OpusDecoderProvider(), preferredOutput: Caps(.audio(OpusClip.format))),
                                        into: SampleCounter())
                return input.count
            },
            bare: {
                _ = BareOpus.decode(input)
                return input.count
            },
            alone: {
                let decoder = try OpusDecoderProvider().makeDecoder(input: OpusClip.opusFormat, output: OpusClip.format)
                for packet in input { try decoder.decode(packet) { _ in } }
                try decoder.flush { _ in }
                return input.count
            })
    }
}
