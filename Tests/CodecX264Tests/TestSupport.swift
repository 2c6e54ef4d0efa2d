import CodecX264
import Foundation
import MediaCodecs
import MediaCore
import MediaFiles
import TestSupport

/// Encodes `frames` (forcing keyframes at the given indices) and flushes; returns every output frame.
func encodeAll(_ frames: [VideoFrame], with encoder: X264Encoder, forceKeyframesAt forced: Set<Int> = []) throws
    -> [EncodedFrame]
{
    var encoded: [EncodedFrame] = []
    for (index, frame) in frames.enumerated() {
        try encoder.encode(frame, forceKeyframe: forced.contains(index)) { encoded.append($0) }
    }
    try encoder.flush { encoded.append($0) }
    return encoded
}

/// Writes `frames` to an Annex-B file at `path`.
func writeAnnexB(_ frames: [EncodedFrame], to path: String) throws {
    let writer = try AnnexBWriter(path: path)
    for frame in frames { try writer.write(frame) }
    try writer.close()
}

/// Decodes the `.h264` file at `path` with ffmpeg into pictures.
func ffmpegDecode(_ path: String, width: Int, height: Int, pool: BufferPool) throws -> [VideoFrame] {
    let raw = try TestSupport.ffmpeg(["-i", path, "-fps_mode", "passthrough", "-f", "rawvideo",
                                      "-pix_fmt", "yuv420p", "-"]).stdout
    let size = Samples.packedSize(width: width, height: height)
    guard raw.count % size == 0 else { throw FixtureError(description: "ffmpeg gave \(raw.count) bytes, not whole pictures") }
    return try Samples.unpackAll(raw, count: raw.count / size, width: width, height: height, pool: pool)
}

/// PSNR over all the pictures together (from the summed squared error), as video quality tools report it.
func overallPSNR(_ originals: [VideoFrame], _ decoded: [VideoFrame]) -> Double {
    var sum: UInt64 = 0, samples = 0
    for (a, b) in zip(originals, decoded) {
        let error = PictureQuality.squaredError(a, b)
        sum += error.sum
        samples += error.samples
    }
    return PictureQuality.psnr(meanSquaredError: Double(sum) / Double(samples))
}

func rawFormat(width: Int = 320, height: Int = 240) -> VideoFormat {
    VideoFormat(encoding: .pixels(.i420), width: width, height: height, frameRate: Samples.frameRate)
}

/// The NAL unit types of an access unit.
func nalTypes(_ frame: EncodedFrame) -> [Int] { AnnexB.nalUnitTypes(in: frame.bytes) }

/// Mean size in bytes of `sizes[range]`.
func mean(_ sizes: [Int], _ range: Range<Int>) -> Double { Double(sizes[range].reduce(0, +)) / Double(range.count) }
