import MediaCore

/// Reads a RIFF/WAVE file of 16-bit PCM or 32-bit float samples (plain or WAVE_FORMAT_EXTENSIBLE).
///
/// Chunks other than `fmt ` and `data` are skipped (with their pad byte when the size is odd). A data size of
/// 0xFFFFFFFF, written by streaming tools that cannot seek back, means "to the end of the file".
public final class WAVReader {
    public let path: String
    /// `.samples(.s16)` or `.samples(.f32)`, with the file's rate and channel count.
    public let format: AudioFormat
    /// File offset of the first sample.
    public let dataOffset: Int
    /// Bytes of samples the data chunk declares; `nil` when it runs to the end of the file.
    public let dataByteCount: Int?
    /// Samples per channel delivered so far.
    public private(set) var samplesRead = 0
    /// File offset of the next byte to read.
    public var byteOffset: Int { input.offset }

    private let input: BufferedFileReader
    private let pool: BufferPool
    private let chunk: WAVFormatChunk

    static let streamedSize = 0xFFFF_FFFF
    /// fmt chunks are small; the rest of a larger one (e.g. extra codec data) is skipped.
    static let maxFormatChunkSize = 256

    public init(path: String, pool: BufferPool) throws {
        self.path = path
        self.pool = pool
        input = try BufferedFileReader(path: path)
        let riff = try input.read(count: 12)
        func has(_ id: String, at offset: Int) -> Bool { Array(id.utf8).starts(with: riff.dropFirst(offset).prefix(4)) }
        guard has("RIFF", at: 0), has("WAVE", at: 8) else {
            if riff.starts(with: "RF64".utf8) {
                throw MediaFileError.unsupported(path: path, detail: "RF64 (WAV over 4 GiB)")
            }
            throw MediaFileError.corrupt(path: path, offset: 0, detail: "not a RIFF/WAVE file: starts with \(quoted(riff))")
        }
        guard riff.count == 12 else {
            throw MediaFileError.truncated(path: path, offset: 0, detail: "RIFF header needs 12 bytes, \(riff.count) present")
        }

        var chunk: WAVFormatChunk?
        while true {
            let chunkStart = input.offset
            let chunkHeader = try input.read(count: 8)
            guard chunkHeader.count == 8 else {
                throw MediaFileError.truncated(
                    path: path, offset: chunkStart,
                    detail: chunkHeader.isEmpty ? "no data chunk" : "chunk header needs 8 bytes, \(chunkHeader.count) present")
            }
            let id = Array(chunkHeader[0..<4])
            let size = Int(chunkHeader.littleEndian(UInt32.self, at: 4))
            if id == Array("data".utf8) {
                guard let chunk else {
                    throw MediaFileError.corrupt(path: path, offset: chunkStart, detail: "data chunk before fmt chunk")
                }
                self.chunk = chunk
                format = chunk.audioFormat
                dataOffset = input.offset
                dataByteCount = size == Self.streamedSize ? nil : size
                break
            }
            var skipped = 0
            if id == Array("fmt ".utf8) {
                let body = try input.read(count: min(size, Self.maxFormatChunkSize))
                skipped = body.count
                if body.count == min(size, Self.maxFormatChunkSize) {
                    chunk = try WAVFormatChunk(decoding: body, at: chunkStart, path: path)
                }
            }
            skipped += try input.skip(size - skipped)
            guard skipped == size else {
                throw MediaFileError.truncated(
                    path: path, offset: chunkStart,
                    detail: "\(quoted(id)) chunk declares \(size) bytes, \(skipped) present")
            }
            _ = try input.skip(size & 1)
        }
    }

    /// Up to `maxSamples` samples per channel, or `nil` after the last. When the file ends before the
    /// declared data does, the complete samples come first and the call after them throws `truncated`.
    public func next(maxSamples: Int = 1024) throws -> AudioFrame? {
        precondition(maxSamples > 0, "maxSamples must be positive")
        let blockAlign = chunk.blockAlign
        var count = maxSamples
        if let dataByteCount {
            count = min(count, (dataByteCount - (input.offset - dataOffset)) / blockAlign)
            if count == 0 { return nil }
        }
        let frame = makeFrame(sampleCount: count)
        let present = try input.read(into: frame.bytes)
        let complete = present / blockAlign
        if complete == count { return deliver(frame) }
        if complete > 0 {
            // The end of the file came early: hand over the whole samples now, report it on the next call.
            let shorter = makeFrame(sampleCount: complete)
            shorter.bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: frame.bytes[0..<(complete * blockAlign)]))
            return deliver(shorter)
        }
        let dataPresent = input.offset - dataOffset
        if dataByteCount == nil && dataPresent % blockAlign == 0 { return nil }
        let declared = dataByteCount.map { "data chunk declares \($0) bytes" } ?? "data runs to the end of the file"
        throw MediaFileError.truncated(
            path: path, offset: dataOffset + dataPresent / blockAlign * blockAlign,
            detail: "\(declared), \(dataPresent) present, in samples of \(blockAlign) bytes")
    }

    private func makeFrame(sampleCount: Int) -> AudioFrame {
        AudioFrame(
            sampleFormat: chunk.sampleFormat, sampleRate: chunk.sampleRate, channels: chunk.channels,
            sampleCount: sampleCount, pts: MediaTime(Int64(samplesRead), timebase: Rational(1, chunk.sampleRate)),
            pool: pool)
    }

    private func deliver(_ frame: AudioFrame) -> AudioFrame {
        samplesRead += frame.sampleCount
        return frame
    }
}
