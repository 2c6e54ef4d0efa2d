import CodecVPX
import Foundation
import MediaCodecs
import MediaCore
import TestSupport

/// Test pictures of this target's own: synthetic moving shapes.
extension Samples {
    /// Synthetic pictures: a diagonal gradient scrolling sideways and a bright box moving across it.
    static func synthetic(count: Int, width: Int, height: Int, firstIndex: Int = 0, pool: BufferPool) -> [VideoFrame] {
        (firstIndex..<(firstIndex + count)).map { index in
            let frame = makeFrame(width: width, height: height, index: index, pool: pool)
            let boxWidth = Swift.max(1, width / 4), boxHeight = Swift.max(1, height / 4)
            let boxX = (index * 7) % Swift.max(1, width - boxWidth), boxY = (index * 5) % Swift.max(1, height - boxHeight)
            for y in 0..<height {
                let line = frame.row(y, ofPlane: 0)
                let inBoxRows = y >= boxY && y < boxY + boxHeight
                for x in 0..<width {
                    let inBox = inBoxRows && x >= boxX && x < boxX + boxWidth
                    line[x] = inBox ? 235 : UInt8(16 + (x + y + 3 * index) % 200)
                }
            }
            for plane in 1...2 {
                for y in 0..<frame.layout[plane].rows {
                    let line = frame.row(y, ofPlane: plane)
                    for x in 0..<line.count { line[x] = UInt8(96 + plane * 20 + (x + y / 2 + index) % 32) }
                }
            }
            return frame
        }
    }

    static func makeFrame(width: Int, height: Int, index: Int, pool: BufferPool) -> VideoFrame {
        VideoFrame(width: width, height: height, pts: MediaTime(Int64(index), timebase: timebase),
                   duration: MediaTime(1, timebase: timebase), pool: pool)
    }
}

/// Encodes `frames` (forcing keyframes at the given indices) and flushes; returns every output frame.
func encodeAll(_ frames: [VideoFrame], with encoder: VP8Encoder, forceKeyframesAt forced: Set<Int> = []) throws
    -> [EncodedFrame]
{
    var encoded: [EncodedFrame] = []
    for (index, frame) in frames.enumerated() {
        try encoder.encode(frame, forceKeyframe: forced.contains(index)) { encoded.append($0) }
    }
    try encoder.flush { encoded.append($0) }
    return encoded
}

func decodeAll(_ frames: [EncodedFrame], with decoder: VP8Decoder) throws -> [VideoFrame] {
    var pictures: [VideoFrame] = []
    for frame in frames { try decoder.decode(frame) { pictures.append($0) } }
    try decoder.flush { pictures.append($0) }
    return pictures
}

/// Mean PSNR of `decoded` against `originals`, picture by picture.
func meanPSNR(_ originals: [VideoFrame], _ decoded: [VideoFrame]) -> Double {
    zip(originals, decoded).map { PictureQuality.psnr($0, $1) }.reduce(0, +) / Double(decoded.count)
}

func rawFormat(width: Int = 320, height: Int = 240) -> VideoFormat {
    VideoFormat(encoding: .pixels(.i420), width: width, height: height, frameRate: Samples.frameRate)
}

func vp8Format(width: Int = 320, height: Int = 240) -> VideoFormat {
    VideoFormat(encoding: .compressed(.vp8), width: width, height: height, frameRate: Samples.frameRate)
}

/// An IVF file: a 32-byte "DKIF" header, then a 12-byte header (size, pts) before each frame.
func ivf(_ frames: [EncodedFrame], width: Int, height: Int, frameRate: Rational) -> Data {
    var data = Data()
    func le<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
    data.append(contentsOf: Array("DKIF".utf8))
    le(UInt16(0))  // version
    le(UInt16(32))  // header size
    data.append(contentsOf: Array("VP80".utf8))
    le(UInt16(width))
    le(UInt16(height))
    le(UInt32(frameRate.numerator))  // timebase denominator: ticks per second
    le(UInt32(frameRate.denominator))  // timebase numerator
    le(UInt32(frames.count))
    le(UInt32(0))  // unused
    for frame in frames {
        le(UInt32(frame.byteCount))
        le(UInt64(frame.pts.rescaled(to: frameRate.reciprocal).value))
        data.append(contentsOf: frame.bytes)
    }
    return data
}
