import MediaCore

/// The sample layouts WAV files are read and written in, and the `fmt ` chunk that describes them
/// (Microsoft RIFF WAVE: WAVEFORMATEX, and WAVEFORMATEXTENSIBLE with a KSDATAFORMAT_SUBTYPE GUID).
struct WAVFormatChunk: Equatable {
    var sampleFormat: SampleFormat
    var sampleRate: Int
    var channels: Int

    static let pcmTag: UInt16 = 1
    static let floatTag: UInt16 = 3
    static let extensibleTag: UInt16 = 0xFFFE
    /// Bytes 2...15 of the KSDATAFORMAT_SUBTYPE_PCM and _IEEE_FLOAT GUIDs; bytes 0...1 hold the format tag.
    static let subformatGUIDTail: [UInt8] = [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]

    var audioFormat: AudioFormat {
        AudioFormat(encoding: .samples(sampleFormat), sampleRate: sampleRate, channels: channels)
    }
    /// Bytes per sample frame (one sample of every channel).
    var blockAlign: Int { channels * sampleFormat.bytesPerSample }

    init(sampleFormat: SampleFormat, sampleRate: Int, channels: Int) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Parses the body of a `fmt ` chunk that starts at file offset `offset`.
    init(decoding body: [UInt8], at offset: Int, path: String) throws {
        guard body.count >= 16 else {
            throw MediaFileError.corrupt(path: path, offset: offset, detail: "fmt chunk has \(body.count) bytes, needs 16")
        }
        var tag = body.littleEndian(UInt16.self, at: 0)
        let channels = Int(body.littleEndian(UInt16.self, at: 2))
        let sampleRate = Int(body.littleEndian(UInt32.self, at: 4))
        let blockAlign = Int(body.littleEndian(UInt16.self, at: 12))
        let bits = Int(body.littleEndian(UInt16.self, at: 14))
        if tag == Self.extensibleTag {
            guard body.count >= 40 else {
                throw MediaFileError.corrupt(
                    path: path, offset: offset, detail: "extensible fmt chunk has \(body.count) bytes, needs 40")
            }
            guard Array(body[26..<40]) == Self.subformatGUIDTail else {
                throw MediaFileError.unsupported(
                    path: path, detail: "extensible WAV subformat GUID \(quoted(body[24..<40]))")
            }
            tag = body.littleEndian(UInt16.self, at: 24)
        }
        switch (tag, bits) {
        case (Self.pcmTag, 16): sampleFormat = .s16
        case (Self.floatTag, 32): sampleFormat = .f32
        case (Self.pcmTag, _): throw MediaFileError.unsupported(path: path, detail: "\(bits)-bit PCM (16-bit PCM and 32-bit float are supported)")
        case (Self.floatTag, _): throw MediaFileError.unsupported(path: path, detail: "\(bits)-bit float (16-bit PCM and 32-bit float are supported)")
        default:
            throw MediaFileError.unsupported(
                path: path, detail: "WAV format tag 0x\(String(tag, radix: 16, uppercase: true)) (16-bit PCM and 32-bit float are supported)")
        }
        guard channels > 0, sampleRate > 0 else {
            throw MediaFileError.corrupt(
                path: path, offset: offset, detail: "fmt chunk gives \(channels) channels at \(sampleRate) Hz")
        }
        self.channels = channels
        self.sampleRate = sampleRate
        guard blockAlign == self.blockAlign else {
            throw MediaFileError.corrupt(
                path: path, offset: offset, detail: "block align \(blockAlign), expected \(self.blockAlign)")
        }
    }

    /// A complete header for `dataByteCount` bytes of samples: RIFF, `fmt ` (plus `fact` for float, which the
    /// spec requires for non-PCM formats), and the `data` chunk header.
    func fileHeader(dataByteCount: Int) -> [UInt8] {
        let isFloat = sampleFormat == .f32
        var fmt: [UInt8] = []
        fmt.appendLittleEndian(isFloat ? Self.floatTag : Self.pcmTag)
        fmt.appendLittleEndian(UInt16(channels))
        fmt.appendLittleEndian(UInt32(sampleRate))
        fmt.appendLittleEndian(UInt32(sampleRate * blockAlign))
        fmt.appendLittleEndian(UInt16(blockAlign))
        fmt.appendLittleEndian(UInt16(sampleFormat.bytesPerSample * 8))
        if isFloat { fmt.appendLittleEndian(UInt16(0)) }  // cbSize

        var chunks = Self.chunk("fmt ", fmt)
        if isFloat {
            var fact: [UInt8] = []
            fact.appendLittleEndian(UInt32(dataByteCount / blockAlign))
            chunks += Self.chunk("fact", fact)
        }
        chunks += Array("data".utf8)
        chunks.appendLittleEndian(UInt32(dataByteCount))

        var header = Array("RIFF".utf8)
        header.appendLittleEndian(UInt32(4 + chunks.count + dataByteCount))
        header += Array("WAVE".utf8)
        return header + chunks
    }

    private static func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        var bytes = Array(id.utf8)
        bytes.appendLittleEndian(UInt32(body.count))
        return bytes + body
    }
}
