import MediaCore

/// Reads a YUV4MPEG2 file: a header line `YUV4MPEG2 W.. H.. F.. ...`, then per frame a line starting `FRAME`
/// and the Y, U and V planes unpadded (format description: https://wiki.multimedia.cx/index.php/YUV4MPEG2).
///
/// Only 8-bit 4:2:0 (chroma tag absent, `420`, `420jpeg`, `420paldv` or `420mpeg2`) is read; I, A and X
/// tags are ignored.
public final class Y4MReader {
    public let path: String
    /// `.pixels(.i420)` at the size and frame rate of the header.
    public let format: VideoFormat
    public private(set) var framesRead = 0
    /// File offset of the next byte to read.
    public var byteOffset: Int { input.offset }

    private let input: BufferedFileReader
    private let pool: BufferPool
    /// Bytes of picture data per frame.
    private let frameByteCount: Int

    static let signature = Array("YUV4MPEG2".utf8)
    static let frameSignature = Array("FRAME".utf8)
    static let acceptedChroma: Set<String> = ["420", "420jpeg", "420paldv", "420mpeg2"]
    static let maxLineLength = 4096
    static let maxDimension = 1 << 15

    public init(path: String, pool: BufferPool) throws {
        self.path = path
        self.pool = pool
        input = try BufferedFileReader(path: path)
        format = try Self.parseHeader(try input.readLine(maxLength: Self.maxLineLength), path: path)
        let layout = PlaneLayout(.i420, width: format.width, height: format.height)
        frameByteCount = (0..<layout.planeCount).reduce(0) { $0 + layout[$1].width * layout[$1].rows }
    }

    /// The next picture, or `nil` at the end of the file.
    public func next() throws -> VideoFrame? {
        let frameStart = input.offset
        let index = framesRead
        let line = try input.readLine(maxLength: Self.maxLineLength)
        if line.isEmpty { return nil }
        guard Self.line(line, startsWithWord: Self.frameSignature) else {
            throw MediaFileError.corrupt(
                path: path, offset: frameStart,
                detail: "frame \(index) starts with \(quoted(line.prefix(16))) instead of FRAME")
        }
        guard line.last == UInt8(ascii: "\n") else {
            if line.count == Self.maxLineLength {
                throw MediaFileError.corrupt(
                    path: path, offset: frameStart,
                    detail: "frame \(index) header has no newline in \(Self.maxLineLength) bytes")
            }
            throw MediaFileError.truncated(
                path: path, offset: frameStart, detail: "frame \(index) header is cut short")
        }

        let timebase = format.frameRate.reciprocal
        let frame = VideoFrame(
            pixelFormat: .i420, width: format.width, height: format.height,
            pts: MediaTime(Int64(index), timebase: timebase), duration: MediaTime(1, timebase: timebase), pool: pool)
        var present = 0
        for plane in 0..<frame.layout.planeCount {
            for row in 0..<frame.layout[plane].rows {
                let destination = frame.row(row, ofPlane: plane)
                let count = try input.read(into: destination)
                present += count
                if count < destination.count {
                    throw MediaFileError.truncated(
                        path: path, offset: frameStart,
                        detail: "frame \(index) needs \(frameByteCount) bytes, \(present) present")
                }
            }
        }
        framesRead += 1
        return frame
    }

    /// Whether `line` starts with `word` followed by a space or newline, allowing for a line cut short
    /// within or right after `word` (reported as truncation instead).
    static func line(_ line: [UInt8], startsWithWord word: [UInt8]) -> Bool {
        let next = line.dropFirst(word.count).first
        return word.starts(with: line.prefix(word.count))
            && (next == nil || next == UInt8(ascii: " ") || next == UInt8(ascii: "\n"))
    }

    /// The format described by the stream header `line` (which includes its newline if it has one).
    static func parseHeader(_ line: [UInt8], path: String) throws -> VideoFormat {
        guard !line.isEmpty else { throw MediaFileError.truncated(path: path, offset: 0, detail: "empty file") }
        guard self.line(line, startsWithWord: signature) else {
            throw MediaFileError.corrupt(
                path: path, offset: 0, detail: "not a YUV4MPEG2 file: starts with \(quoted(line.prefix(16)))")
        }
        guard line.last == UInt8(ascii: "\n") else {
            if line.count == maxLineLength {
                throw MediaFileError.corrupt(
                    path: path, offset: 0, detail: "stream header has no newline in \(maxLineLength) bytes")
            }
            throw MediaFileError.truncated(path: path, offset: 0, detail: "stream header is cut short")
        }

        var width: Int?, height: Int?, frameRate: Rational?
        // Slices keep their indices, which are file offsets here since the header starts the file.
        for token in line.dropFirst(signature.count).dropLast().split(separator: UInt8(ascii: " ")) {
            let value = String(decoding: token.dropFirst(), as: UTF8.self)
            func bad(_ what: String) -> MediaFileError {
                .corrupt(path: path, offset: token.startIndex, detail: "bad \(what) \(quoted(token))")
            }
            switch token.first {
            case UInt8(ascii: "W"):
                guard let w = Int(value), (1...maxDimension).contains(w) else { throw bad("width") }
                width = w
            case UInt8(ascii: "H"):
                guard let h = Int(value), (1...maxDimension).contains(h) else { throw bad("height") }
                height = h
            case UInt8(ascii: "F"):
                let parts = value.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n > 0, d > 0 else {
                    throw bad("frame rate")
                }
                frameRate = Rational(n, d)
            case UInt8(ascii: "C"):
                guard acceptedChroma.contains(value) else {
                    throw MediaFileError.unsupported(
                        path: path, detail: "chroma \(value) (only 8-bit 4:2:0 is supported)")
                }
            default:
                break  // I (interlacing), A (aspect), X (extensions) and unknown tags do not affect the pixels.
            }
        }
        guard let width else { throw MediaFileError.corrupt(path: path, offset: 0, detail: "stream header has no W tag") }
        guard let height else { throw MediaFileError.corrupt(path: path, offset: 0, detail: "stream header has no H tag") }
        guard let frameRate else {
            throw MediaFileError.corrupt(path: path, offset: 0, detail: "stream header has no F tag")
        }
        return VideoFormat(encoding: .pixels(.i420), width: width, height: height, frameRate: frameRate)
    }
}
