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

    /// What makes the JPEG fixtures; the two write chroma sampling factors differently (ffmpeg's 4:2:2
    /// is 2x2, 1x2, 1x2; GStreamer's, through libjpeg, 2x1, 1x1, 1x1 as cameras do).
    public enum JPEGEncoder: Sendable {
        /// ffmpeg's MJPEG encoder; pixel formats `yuvj420p`, `yuvj422p`, `yuvj444p`.
        case ffmpeg
        /// GStreamer's `jpegenc`; pixel formats `I420`, `Y42B` (4:2:2), `Y444`, `GRAY8`.
        case gstreamer
    }

    /// The first `count` pictures of the sample video at `width`x`height` as JPEG files in `pixelFormat`
    /// (in `encoder`'s names), and ffmpeg's own decoding of those files to `decodedAs` (e.g. `yuv420p`),
    /// tightly packed.
    public static func jpegs(count: Int, width: Int, height: Int, pixelFormat: String, encoder: JPEGEncoder = .ffmpeg,
                             decodedAs: String) throws -> (pictures: [Data], decoded: Data) {
        try TestSupport.withTemporaryDirectory { folder in
            switch encoder {
            case .ffmpeg:
                try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=\(width):\(height)",
                                        "-frames:v", "\(count)", "-c:v", "mjpeg", "-pix_fmt", pixelFormat, "-q:v", "3",
                                        "-start_number", "0", folder.file("%03d.jpg")])
            case .gstreamer:
                // identity ends the stream at its count-th buffer, which it does not pass on.
                try TestSupport.runChecked("gst-launch-1.0", [
                    "-q", "filesrc", "location=\(TestSupport.sampleIVF)", "!", "ivfparse", "!", "vp8dec", "!",
                    "identity", "eos-after=\(count + 1)", "!", "videoscale", "!", "videoconvert", "!",
                    "video/x-raw,format=\(pixelFormat),width=\(width),height=\(height)", "!", "jpegenc", "!",
                    "multifilesink", "location=\(folder.file("%03d.jpg"))"])
            }
            let pictures = try (0..<count).map { try Data(contentsOf: folder.appendingPathComponent(String(format: "%03d.jpg", $0))) }
            let decoded = try TestSupport.ffmpeg(["-start_number", "0", "-i", folder.file("%03d.jpg"), "-pix_fmt", decodedAs,
                                                  "-f", "rawvideo", "-"]).stdout
            return (pictures, decoded)
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
