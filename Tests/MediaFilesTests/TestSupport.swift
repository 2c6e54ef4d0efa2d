// Helpers only the MediaFiles tests use; the shared ones (temporary folders, ffmpeg, ffprobe, `packed`)
// are in the TestSupport target.

import Foundation
import MediaCore

// MARK: - Files

/// The bytes of the file at `path`.
func contents(of path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Replaces the file at `path` with `bytes`.
func write(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Keeps the first `length` bytes of the file.
func cut(_ path: String, to length: Int) throws {
    try write(Array(try contents(of: path).prefix(length)), to: path)
}

/// Overwrites the file's bytes from `offset` on with `bytes`.
func patch(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
    var data = try contents(of: path)
    data.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
    try write(data, to: path)
}

/// `value` as four little-endian bytes.
func littleEndian32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

// MARK: - Media

/// A picture whose every sample depends on its plane, position and `seed`; the row padding holds junk.
func testPicture(width: Int, height: Int, seed: Int, pool: BufferPool) -> VideoFrame {
    let frame = VideoFrame(width: width, height: height, pts: .zero(Rational(1, 25)), pool: pool)
    frame.buffer.storage.initializeMemory(as: UInt8.self, repeating: 0xEE)
    for plane in 0..<frame.layout.planeCount {
        for row in 0..<frame.layout[plane].rows {
            let bytes = frame.row(row, ofPlane: plane)
            for column in 0..<bytes.count {
                bytes[column] = UInt8(truncatingIfNeeded: seed &* 31 &+ plane &* 101 &+ row &* 7 &+ column &* 3)
            }
        }
    }
    return frame
}

/// Audio whose bytes follow a pattern that depends on `seed`.
func testAudio(_ format: SampleFormat, sampleRate: Int, channels: Int, sampleCount: Int, seed: Int, pool: BufferPool)
    -> AudioFrame
{
    let frame = AudioFrame(
        sampleFormat: format, sampleRate: sampleRate, channels: channels, sampleCount: sampleCount,
        pts: .zero(Rational(1, sampleRate)), pool: pool)
    for i in 0..<frame.byteCount { frame.bytes[i] = UInt8(truncatingIfNeeded: seed &* 13 &+ i &* 5 &+ i / 7) }
    return frame
}
