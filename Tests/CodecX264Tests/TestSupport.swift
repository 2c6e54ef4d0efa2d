import CodecX264
import Foundation
import MediaCodecs
import MediaCore
import MediaFiles
import TestSupport

/// A failure of the test fixtures themselves (ffmpeg gave too little output).
struct FixtureError: Error, CustomStringConvertible {
    var description: String
}

/// Raw pictures for the tests: the bundled Big Buck Bunny clip decoded by ffmpeg.
enum Samples {
    static let frameRate = Rational(25, 1)
    static let timebase = frameRate.reciprocal

    /// The first 60 pictures of the sample video, packed I420, decoded once per run.
    static let bunny320: Result<Data, any Error> = decode(width: 320, height: 240, count: 60)
    static let bunny640: Result<Data, any Error> = decode(width: 640, height: 360, count: 60)

    static func decode(width: Int, height: Int, count: Int) -> Result<Data, any Error> {
        Result {
            try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF,
                                    "-vf", "scale=\(width):\(height)", "-frames:v", "\(count)",
                                    "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]).stdout
        }
    }

    /// `count` pictures (at most 60) of the sample video at 320x240 or 640x360.
    static func bunny(count: Int = 30, width: Int = 320, height: Int = 240, pool: BufferPool) throws -> [VideoFrame] {
        try unpackAll(try (width == 640 ? bunny640 : bunny320).get(), count: count, width: width, height: height,
                      pool: pool)
    }

    /// The first `count` pictures of packed I420 `raw`.
    static func unpackAll(_ raw: Data, count: Int, width: Int, height: Int, pool: BufferPool) throws -> [VideoFrame] {
        let size = packedSize(width: width, height: height)
        guard raw.count >= size * count else {
            throw FixtureError(description: "\(raw.count) bytes of raw video, \(size * count) needed")
        }
        return (0..<count).map { index in
            raw.withUnsafeBytes { bytes in
                unpack(UnsafeRawBufferPointer(rebasing: bytes[(index * size)..<((index + 1) * size)]),
                       width: width, height: height, index: index, pool: pool)
            }
        }
    }

    static func packedSize(width: Int, height: Int) -> Int {
        width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
    }

    /// A frame holding a copy of packed I420 bytes, with pts `index` frames.
    static func unpack(_ bytes: UnsafeRawBufferPointer, width: Int, height: Int, index: Int,
                       pool: BufferPool) -> VideoFrame {
        let frame = VideoFrame(width: width, height: height, pts: MediaTime(Int64(index), timebase: timebase),
                               duration: MediaTime(1, timebase: timebase), pool: pool)
        var offset = 0
        for plane in 0..<3 {
            for row in 0..<frame.layout[plane].rows {
                let line = frame.row(row, ofPlane: plane)
                line.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + line.count)]))
                offset += line.count
            }
        }
        return frame
    }
}

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
