import MediaCore

/// Writes a RIFF/WAVE file of 16-bit PCM or 32-bit float samples.
///
/// The header's sizes are patched after every frame, so a run that stops part-way leaves a valid file that
/// describes exactly the samples written.
public final class WAVWriter {
    public let path: String
    public let format: AudioFormat
    /// Samples per channel written so far.
    public private(set) var samplesWritten = 0

    private let file: FileWriter
    private let chunk: WAVFormatChunk
    private var dataByteCount = 0

    /// Creates the file and writes its header. `format` must be S16 or F32.
    public init(path: String, format: AudioFormat) throws {
        guard case .samples(let sampleFormat) = format.encoding else {
            throw MediaFileError.unsupported(path: path, detail: "WAV writer takes S16 or F32 samples, not \(format.encoding)")
        }
        chunk = WAVFormatChunk(sampleFormat: sampleFormat, sampleRate: format.sampleRate, channels: format.channels)
        guard (1...0xFFFF).contains(format.channels), format.sampleRate > 0,
              format.sampleRate * chunk.blockAlign <= UInt32.max
        else {
            throw MediaFileError.unsupported(path: path, detail: "format \(format)")
        }
        self.path = path
        self.format = format
        file = try FileWriter(path: path)
        try file.append(chunk.fileHeader(dataByteCount: 0))
    }

    deinit { try? close() }

    public func write(_ frame: AudioFrame) throws {
        guard frame.sampleFormat == chunk.sampleFormat, frame.sampleRate == chunk.sampleRate,
              frame.channels == chunk.channels
        else {
            throw MediaFileError.writeFailed(
                path: path,
                reason: "frame is \(frame.sampleFormat) \(frame.sampleRate)Hz \(frame.channels)ch, file is \(format)")
        }
        guard file.length + frame.byteCount <= UInt32.max else {
            throw MediaFileError.writeFailed(path: path, reason: "WAV files cannot exceed 4 GiB")
        }
        try file.append(UnsafeRawBufferPointer(frame.bytes))
        dataByteCount += frame.byteCount
        samplesWritten += frame.sampleCount
        try file.patch(chunk.fileHeader(dataByteCount: dataByteCount), at: 0)
    }

    /// Makes sure the header is up to date and closes the file; later calls do nothing.
    public func close() throws {
        guard file.isOpen else { return }
        let patched = Result { try file.patch(chunk.fileHeader(dataByteCount: dataByteCount), at: 0) }
        try file.close()
        try patched.get()
    }
}
