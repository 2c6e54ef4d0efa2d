// The repository's bundled clip, decoded once: the deterministic input of the video benchmarks.
import Sluice

/// The repository's bundled clip (`samples/`), decoded once per process.
public enum Sample {
    /// This file is Sources/BenchLoops/Sample.swift, three levels below the repository.
    public static let path = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        + "/samples/big-buck-bunny-640x360.ivf"

    public static let frameRate = Rational(25, 1)

    /// The clip's 132 pictures (640x360 I420), decoded by libvpx.
    public static let pictures: [VideoFrame] = {
        let reader = try! IVFReader(path: path)
        let decoder = try! VP8Decoder(format: vp8Format, threads: 1)
        var frames: [VideoFrame] = []
        while let encoded = try! reader.next(pool: nil) { try! decoder.decode(encoded) { frames.append($0) } }
        return frames
    }()

    /// The clip's VP8 frames as stored in the file.
    public static let vp8Frames: [EncodedFrame] = {
        let reader = try! IVFReader(path: path)
        var frames: [EncodedFrame] = []
        while let encoded = try! reader.next(pool: nil) { frames.append(encoded) }
        return frames
    }()

    /// The pictures encoded once by OpenH264 (800 kbit/s realtime, Constrained Baseline): an H.264 stream
    /// to decode.
    public static let h264Frames: [EncodedFrame] = {
        let encoder = try! OpenH264Encoder(
            format: format, settings: VideoEncoderSettings(bitrate: 800_000, keyframeInterval: 3000, threads: 1, realtime: true))
        var frames: [EncodedFrame] = []
        for picture in pictures { try! encoder.encode(picture, forceKeyframe: false) { frames.append($0) } }
        return frames
    }()

    /// The compressed clip's format.
    public static var vp8Format: VideoFormat {
        let header = try! IVFReader(path: path).header
        return VideoFormat(encoding: .compressed(.vp8), width: header.width, height: header.height, frameRate: frameRate)
    }

    /// The pictures' format.
    public static var format: VideoFormat {
        VideoFormat(encoding: .pixels(.i420), width: pictures[0].width, height: pictures[0].height, frameRate: frameRate)
    }

    /// The pictures' format with the encoding `codec` instead of pixels.
    public static func compressedFormat(_ codec: CodecName) -> VideoFormat {
        VideoFormat(encoding: .compressed(codec), width: format.width, height: format.height, frameRate: frameRate)
    }
}
