import Foundation
import MediaCore

/// A failure of the test fixtures themselves (ffmpeg gave too little output).
public struct FixtureError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// Raw pictures for the tests: the bundled Big Buck Bunny clip decoded by ffmpeg.
public enum Samples {
    public static let frameRate = Rational(25, 1)
    public static let timebase = frameRate.reciprocal

    /// The first 60 pictures of the sample video, packed I420, decoded once per run.
    public static let bunny320: Result<Data, any Error> = decode(width: 320, height: 240, count: 60)
    public static let bunny640: Result<Data, any Error> = decode(width: 640, height: 360, count: 60)

    public static func decode(width: Int, height: Int, count: Int) -> Result<Data, any Error> {
        Result {
            try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF,
                                    "-vf", "scale=\(width):\(height)", "-frames:v", "\(count)",
                                    "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]).stdout
        }
    }

    /// `count` pictures (at most 60) of the sample video at 320x240 or 640x360.
    public static func bunny(count: Int = 30, width: Int = 320, height: Int = 240, pool: BufferPool) throws -> [VideoFrame] {
        try unpackAll(try (width == 640 ? bunny640 : bunny320).get(), count: count, width: width, height: height,
                      pool: pool)
    }

    /// The first `count` tightly packed pictures of `raw`.
    public static func unpackAll(_ raw: Data, pixelFormat: PixelFormat = .i420, count: Int, width: Int, height: Int,
                                 pool: BufferPool) throws -> [VideoFrame] {
        let size = packedSize(pixelFormat, width: width, height: height)
        guard raw.count >= size * count else {
            throw FixtureError(description: "\(raw.count) bytes of raw video, \(size * count) needed")
        }
        return (0..<count).map { index in
            raw.withUnsafeBytes { bytes in
                unpack(UnsafeRawBufferPointer(rebasing: bytes[(index * size)..<((index + 1) * size)]),
                       pixelFormat: pixelFormat, width: width, height: height, index: index, pool: pool)
            }
        }
    }

    /// Bytes of one tightly packed picture (ffmpeg's `rawvideo` layout).
    public static func packedSize(_ pixelFormat: PixelFormat = .i420, width: Int, height: Int) -> Int {
        PlaneLayout(pixelFormat, width: width, height: height, rowAlignment: 1).byteCount
    }

    /// A frame holding a copy of one tightly packed picture (planes one after the other, rows without
    /// padding, as in ffmpeg's `rawvideo`), with pts `index` frames.
    public static func unpack(_ bytes: UnsafeRawBufferPointer, pixelFormat: PixelFormat = .i420, width: Int,
                              height: Int, index: Int, pool: BufferPool) -> VideoFrame {
        let frame = VideoFrame(pixelFormat: pixelFormat, width: width, height: height,
                               pts: MediaTime(Int64(index), timebase: timebase), duration: MediaTime(1, timebase: timebase),
                               pool: pool)
        var offset = 0
        for plane in 0..<frame.layout.planeCount {
            for row in 0..<frame.layout[plane].rows {
                let line = frame.row(row, ofPlane: plane)
                line.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + line.count)]))
                offset += line.count
            }
        }
        return frame
    }
}
