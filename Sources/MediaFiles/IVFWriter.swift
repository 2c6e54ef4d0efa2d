import MediaCore

/// Writes an IVF file (layout in `IVFHeader` and `IVFReader`).
///
/// The header's frame count is patched after every frame, so a run that stops part-way leaves a valid file
/// that describes exactly the frames written.
public final class IVFWriter {
    public let path: String
    /// The header as it is in the file.
    public private(set) var header: IVFHeader
    public var framesWritten: Int { header.frameCount }

    private let file: FileWriter
    private let fourcc: [UInt8]
    /// One frame's header and bytes, reused so that each frame is one write.
    private var scratch: [UInt8] = []

    /// Creates the file and writes its header. `timebase` (seconds per tick) is what frame timestamps are
    /// rescaled to.
    public init(path: String, codec: CodecName, width: Int, height: Int, timebase: Rational) throws {
        guard let fourcc = IVFHeader.fourcc(for: codec) else {
            throw MediaFileError.unsupported(path: path, detail: "codec \(codec) has no IVF fourcc")
        }
        guard (1...0xFFFF).contains(width), (1...0xFFFF).contains(height) else {
            throw MediaFileError.unsupported(path: path, detail: "size \(width)x\(height) (IVF allows 1 to 65535)")
        }
        guard timebase.numerator > 0, timebase.numerator <= UInt32.max, timebase.denominator <= UInt32.max else {
            throw MediaFileError.unsupported(path: path, detail: "timebase \(timebase)")
        }
        self.path = path
        self.fourcc = fourcc
        header = IVFHeader(codec: codec, width: width, height: height, timebase: timebase, frameCount: 0)
        file = try FileWriter(path: path)
        try file.append(header.encoded(fourcc: fourcc))
    }

    deinit { try? close() }

    public func write(_ frame: EncodedFrame) throws {
        guard frame.codec == header.codec else {
            throw MediaFileError.writeFailed(path: path, reason: "frame is \(frame.codec), file is \(header.codec)")
        }
        guard (1...IVFReader.maxFrameSize).contains(frame.byteCount) else {
            throw MediaFileError.writeFailed(
                path: path, reason: "frame \(framesWritten) has \(frame.byteCount) bytes (IVF readers take 1 to 64 MiB)")
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.appendLittleEndian(UInt32(frame.byteCount))
        scratch.appendLittleEndian(frame.pts.rescaled(to: header.timebase).value)
        scratch.append(contentsOf: frame.bytes)
        try file.append(scratch)
        header.frameCount += 1
        try file.patch(header.encoded(fourcc: fourcc), at: 0)
    }

    /// Makes sure the header is up to date and closes the file; later calls do nothing.
    public func close() throws {
        guard file.isOpen else { return }
        let patched = Result { try file.patch(header.encoded(fourcc: fourcc), at: 0) }
        try file.close()
        try patched.get()
    }
}
