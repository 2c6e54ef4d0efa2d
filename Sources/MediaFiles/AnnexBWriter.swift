import MediaCore

/// Writes a raw H.264 byte stream (ITU-T H.264 Annex B, a `.h264` file): the access units one after
/// the other, exactly as they are in the `EncodedFrame`s, which must already be in Annex-B format
/// (the H.264 convention of Sluice, see `AnnexBReader`).
public final class AnnexBWriter {
    public let path: String
    public private(set) var framesWritten = 0

    private let file: FileWriter

    /// Creates `path`, or empties it if it exists.
    public init(path: String) throws {
        self.path = path
        file = try FileWriter(path: path)
    }

    deinit { try? close() }

    /// Appends one access unit.
    public func write(_ frame: EncodedFrame) throws {
        guard frame.codec == .h264 else {
            throw MediaFileError.writeFailed(path: path, reason: "frame is \(frame.codec), an Annex-B file holds H264")
        }
        guard AnnexB.startsWithStartCode(frame.bytes) else {
            throw MediaFileError.writeFailed(
                path: path, reason: "frame \(framesWritten) does not start with an Annex-B start code (00 00 01)")
        }
        try file.append(frame.bytes)
        framesWritten += 1
    }

    /// Closes the file; later calls do nothing.
    public func close() throws { try file.close() }
}
