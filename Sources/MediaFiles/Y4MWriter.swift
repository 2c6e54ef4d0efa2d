import MediaCore

/// Writes a YUV4MPEG2 file (https://wiki.multimedia.cx/index.php/YUV4MPEG2): header
/// `YUV4MPEG2 W.. H.. Fn:d Ip A1:1 C420jpeg`, then `FRAME` and the unpadded planes of each picture.
public final class Y4MWriter {
    public let path: String
    public let format: VideoFormat
    public private(set) var framesWritten = 0

    private let file: FileWriter
    /// One frame's bytes, reused so that each frame is one write.
    private var scratch: [UInt8] = []

    /// Creates the file and writes its header. `format` must be I420.
    public init(path: String, format: VideoFormat) throws {
        guard format.encoding == .pixels(.i420) else {
            throw MediaFileError.unsupported(path: path, detail: "Y4M writer takes I420 pictures, not \(format.encoding)")
        }
        guard format.width > 0, format.height > 0, format.frameRate.numerator > 0 else {
            throw MediaFileError.unsupported(path: path, detail: "format \(format)")
        }
        self.path = path
        self.format = format
        file = try FileWriter(path: path)
        let rate = format.frameRate
        try file.append(Array(
            "YUV4MPEG2 W\(format.width) H\(format.height) F\(rate.numerator):\(rate.denominator) Ip A1:1 C420jpeg\n".utf8))
    }

    public func write(_ frame: VideoFrame) throws {
        guard frame.pixelFormat == .i420, frame.width == format.width, frame.height == format.height else {
            throw MediaFileError.writeFailed(
                path: path,
                reason: "picture is \(frame.pixelFormat) \(frame.width)x\(frame.height), file is \(format.width)x\(format.height)")
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: "FRAME\n".utf8)
        for plane in 0..<frame.layout.planeCount {
            for row in 0..<frame.layout[plane].rows {
                scratch.append(contentsOf: UnsafeRawBufferPointer(frame.row(row, ofPlane: plane)))
            }
        }
        try file.append(scratch)
        framesWritten += 1
    }

    /// Closes the file; later calls do nothing.
    public func close() throws {
        try file.close()
    }
}
