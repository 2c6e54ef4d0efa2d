import CodecOpenH264
import Foundation
import MediaCodecs
import MediaCore
import TestSupport

/// A failure of the test fixtures themselves (ffmpeg gave too little output).
struct FixtureError: Error, CustomStringConvertible {
    var description: String
}

let frameRate = Rational(25, 1)
let timebase = frameRate.reciprocal

func rawFormat(width: Int = 320, height: Int = 240) -> VideoFormat {
    VideoFormat(encoding: .pixels(.i420), width: width, height: height, frameRate: frameRate)
}

func h264Format(width: Int = 320, height: Int = 240) -> VideoFormat {
    VideoFormat(encoding: .compressed(.h264), width: width, height: height, frameRate: frameRate)
}

func packedSize(width: Int, height: Int) -> Int { width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2) }

/// Raw pictures: the bundled Big Buck Bunny clip decoded and scaled by ffmpeg.
enum Samples {
    static let bunny320: Result<Data, any Error> = decode(width: 320, height: 240, count: 60)

    static func decode(width: Int, height: Int, count: Int) -> Result<Data, any Error> {
        Result {
            try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=\(width):\(height)",
                                    "-frames:v", "\(count)", "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]).stdout
        }
    }

    /// `count` pictures (at most 60) of the sample at 320x240, pts 0, 1, 2... at 25 fps.
    static func bunny(count: Int = 30, pool: BufferPool) throws -> [VideoFrame] {
        let raw = try bunny320.get()
        return try frames(from: raw, width: 320, height: 240, count: count, pool: pool)
    }

    /// Pictures from packed I420 bytes.
    static func frames(from raw: Data, width: Int, height: Int, count: Int? = nil, pool: BufferPool) throws -> [VideoFrame] {
        let size = packedSize(width: width, height: height)
        let count = count ?? raw.count / size
        guard raw.count >= size * count, count > 0 else {
            throw FixtureError(description: "\(raw.count) bytes hold fewer than \(count) pictures of \(width)x\(height)")
        }
        return (0..<count).map { index in
            let frame = VideoFrame(width: width, height: height, pts: MediaTime(Int64(index), timebase: timebase),
                                   duration: MediaTime(1, timebase: timebase), pool: pool)
            raw.withUnsafeBytes { bytes in
                var offset = index * size
                for plane in 0..<3 {
                    for row in 0..<frame.layout[plane].rows {
                        let line = frame.row(row, ofPlane: plane)
                        line.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + line.count)]))
                        offset += line.count
                    }
                }
            }
            return frame
        }
    }
}

/// NAL units and access units of an H.264 Annex-B byte stream (ITU-T H.264 Annex B, 7.4.1.2.3).
enum AnnexB {
    /// The NAL units of `stream`, without their start codes.
    static func nalUnits(_ stream: [UInt8]) -> [ArraySlice<UInt8>] {
        var starts: [(code: Int, payload: Int)] = []
        var index = 0
        while index + 2 < stream.count {
            if stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1 {
                let code = index > 0 && stream[index - 1] == 0 ? index - 1 : index
                starts.append((code, index + 3))
                index += 3
            } else {
                index += 1
            }
        }
        return starts.indices.map { i in
            var end = i + 1 < starts.count ? starts[i + 1].code : stream.count
            while end > starts[i].payload, stream[end - 1] == 0 { end -= 1 }  // trailing_zero_8bits
            return stream[starts[i].payload..<end]
        }
    }

    static func type(_ nal: ArraySlice<UInt8>) -> Int { Int(nal[nal.startIndex] & 0x1F) }

    /// Whether `nal` is a slice (types 1 and 5) whose first_mb_in_slice is 0: its ue(v) code is "1",
    /// so the first bit after the NAL header byte is set.
    static func startsPicture(_ nal: ArraySlice<UInt8>) -> Bool {
        let type = type(nal)
        return (type == 1 || type == 5) && nal.count > 1 && nal[nal.startIndex + 1] & 0x80 != 0
    }

    /// Splits `stream` into access units (7.4.1.2.3): a new one starts at an access unit delimiter,
    /// SEI, SPS or PPS that follows a slice, or at a slice that starts a picture. Each access unit is
    /// returned as Annex-B bytes with four-byte start codes.
    static func accessUnits(_ stream: [UInt8]) -> [[UInt8]] { accessUnitsWithOffsets(stream).map(\.bytes) }

    /// `accessUnits`, each with the offset in `stream` of its first start code.
    static func accessUnitsWithOffsets(_ stream: [UInt8]) -> [(offset: Int, bytes: [UInt8])] {
        var units: [(offset: Int, bytes: [UInt8])] = []
        var current: [UInt8] = []
        var currentOffset = 0
        var currentHasSlice = false
        for nal in nalUnits(stream) {
            let type = type(nal)
            if currentHasSlice, [6, 7, 8, 9].contains(type) || startsPicture(nal) {
                units.append((currentOffset, current))
                current = []
                currentHasSlice = false
            }
            if current.isEmpty {
                currentOffset = nal.startIndex - 3
                if currentOffset > 0, stream[currentOffset - 1] == 0 { currentOffset -= 1 }
            }
            current += [0, 0, 0, 1]
            current += nal
            if type == 1 || type == 5 { currentHasSlice = true }
        }
        if !current.isEmpty { units.append((currentOffset, current)) }
        return units
    }

    /// The NAL unit types of an access unit, in order.
    static func types(_ unit: some Collection<UInt8>) -> [Int] { nalUnits(Array(unit)).map(type) }
}

/// An encoded H.264 frame holding a copy of `bytes`.
func h264Frame(_ bytes: [UInt8], pts: Int64 = 0, isKeyframe: Bool = false) -> EncodedFrame {
    bytes.withUnsafeBytes {
        EncodedFrame(codec: .h264, isKeyframe: isKeyframe, pts: MediaTime(pts, timebase: timebase),
                     duration: MediaTime(1, timebase: timebase), copying: $0, pool: nil)
    }
}

func encodeAll(_ frames: [VideoFrame], with encoder: some VideoEncoder, forceKeyframesAt forced: Set<Int> = []) throws
    -> [EncodedFrame]
{
    var encoded: [EncodedFrame] = []
    for (index, frame) in frames.enumerated() {
        try encoder.encode(frame, forceKeyframe: forced.contains(index)) { encoded.append($0) }
    }
    try encoder.flush { encoded.append($0) }
    return encoded
}

func decodeAll(_ frames: [EncodedFrame], with decoder: some VideoDecoder) throws -> [VideoFrame] {
    var pictures: [VideoFrame] = []
    for frame in frames { try decoder.decode(frame) { pictures.append($0) } }
    try decoder.flush { pictures.append($0) }
    return pictures
}

/// Mean PSNR of `decoded` against `originals`, picture by picture.
func meanPSNR(_ originals: [VideoFrame], _ decoded: [VideoFrame]) -> Double {
    zip(originals, decoded).map { PictureQuality.psnr($0, $1) }.reduce(0, +) / Double(decoded.count)
}

/// An H.264 stream made by ffmpeg's libx264 from the sample, and ffmpeg's own decode of it.
struct X264Fixture {
    var stream: [UInt8]
    var units: [[UInt8]]
    /// For each access unit (decode order), the index of its picture in display order, from ffprobe's
    /// `pkt_pos` of each decoded frame.
    var displayIndex: [Int]
    /// ffmpeg's decode of `stream`, packed I420, in display order.
    var reference: Data
    let width: Int, height: Int

    /// `arguments` are the libx264 options (profile, B-frames, GOP).
    init(_ arguments: [String], frames: Int = 30, width: Int = 320, height: Int = 240) throws {
        self.width = width
        self.height = height
        let encoded = try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=\(width):\(height)",
                                              "-frames:v", "\(frames)", "-c:v", "libx264"] + arguments + ["-f", "h264", "-"]).stdout
        stream = Array(encoded)
        let split = AnnexB.accessUnitsWithOffsets(stream)
        units = split.map(\.bytes)
        (reference, displayIndex) = try TestSupport.withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("x264.h264")
            try encoded.write(to: file)
            let reference = try TestSupport.ffmpeg(["-i", file.path, "-fps_mode", "passthrough",
                                                    "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
            let positions = try TestSupport.runChecked(
                "ffprobe", ["-v", "error", "-show_entries", "frame=pkt_pos", "-of", "csv=p=0", file.path]
            ).stdoutText.split(whereSeparator: \.isNewline).compactMap { Int($0.trimmingCharacters(in: .punctuationCharacters)) }
            var displayIndex = Array(repeating: -1, count: split.count)
            for (display, position) in positions.enumerated() {
                guard let unit = split.firstIndex(where: { $0.offset == position }) else {
                    throw FixtureError(description: "ffprobe frame at byte \(position) starts no access unit")
                }
                displayIndex[unit] = display
            }
            return (reference, displayIndex)
        }
        guard units.count == frames, reference.count == frames * packedSize(width: width, height: height),
              Set(displayIndex) == Set(0..<frames)
        else {
            throw FixtureError(description: "\(units.count) access units, \(reference.count) bytes decoded by ffmpeg, "
                                   + "display order \(displayIndex)")
        }
    }

    /// ffmpeg's pictures, in display order.
    func referencePictures(pool: BufferPool) throws -> [VideoFrame] {
        try Samples.frames(from: reference, width: width, height: height, pool: pool)
    }

    /// The access units as encoded frames: pts is the display index, dts the decode index.
    func encodedFrames() -> [EncodedFrame] {
        units.enumerated().map { index, unit in
            unit.withUnsafeBytes {
                EncodedFrame(codec: .h264, isKeyframe: AnnexB.types(unit).contains(5),
                             pts: MediaTime(Int64(displayIndex[index]), timebase: timebase),
                             dts: MediaTime(Int64(index), timebase: timebase),
                             duration: MediaTime(1, timebase: timebase), copying: $0, pool: nil)
            }
        }
    }
}
