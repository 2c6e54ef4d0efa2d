import MediaCore
import TestSupport
import Testing

@testable import MediaFiles

@Suite struct WAVTests {
    let pool = BufferPool(name: "wav-tests")

    /// Reads the whole file in frames of at most `maxSamples`, checking that the timestamps follow on.
    func readAll(_ reader: WAVReader, maxSamples: Int) throws -> (bytes: [UInt8], samples: Int) {
        var bytes: [UInt8] = [], samples = 0
        while let frame = try reader.next(maxSamples: maxSamples) {
            #expect(frame.sampleCount <= maxSamples)
            #expect(frame.pts == MediaTime(Int64(samples), timebase: Rational(1, reader.format.sampleRate)))
            #expect(frame.sampleRate == reader.format.sampleRate && frame.channels == reader.format.channels)
            #expect(.samples(frame.sampleFormat) == reader.format.encoding)
            bytes += frame.bytes
            samples += frame.sampleCount
        }
        return (bytes, samples)
    }

    /// Writes 1000 + 1024 + 500 samples; returns their bytes.
    func writeTestFile(_ path: String, _ format: SampleFormat, channels: Int = 2, close: Bool = true) throws -> [UInt8] {
        let writer = try WAVWriter(
            path: path, format: AudioFormat(encoding: .samples(format), sampleRate: 48000, channels: channels))
        var written: [UInt8] = []
        for (seed, count) in [1000, 1024, 500].enumerated() {
            let frame = testAudio(format, sampleRate: 48000, channels: channels, sampleCount: count, seed: seed, pool: pool)
            try writer.write(frame)
            written += frame.bytes
        }
        #expect(writer.samplesWritten == 2524)
        if close {
            try writer.close()
            try writer.close()
        }
        return written
    }

    @Test(arguments: [SampleFormat.s16, .f32])
    func roundTrip(format: SampleFormat) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("audio.wav")
            let written = try writeTestFile(path, format)
            let reader = try WAVReader(path: path, pool: pool)
            #expect(reader.format == AudioFormat(encoding: .samples(format), sampleRate: 48000, channels: 2))
            #expect(reader.dataByteCount == written.count)
            let (bytes, samples) = try readAll(reader, maxSamples: 700)
            #expect(samples == 2524)
            #expect(bytes == written)
            #expect(reader.samplesRead == 2524)
            #expect(pool.outstanding == 0)
        }
    }

    @Test(arguments: [("pcm_s16le", "s16le", SampleFormat.s16), ("pcm_f32le", "f32le", .f32)])
    func readsWhatFFmpegWrites(codec: String, rawFormat: String, format: SampleFormat) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let source = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.1", "-ac", "2"]
            try TestSupport.ffmpeg(source + ["-c:a", codec, dir.file("sine.wav")])
            try TestSupport.ffmpeg(source + ["-f", rawFormat, dir.file("sine.raw")])
            let reader = try WAVReader(path: dir.file("sine.wav"), pool: pool)
            #expect(reader.format == AudioFormat(encoding: .samples(format), sampleRate: 48000, channels: 2))
            let (bytes, samples) = try readAll(reader, maxSamples: 1024)
            #expect(samples == 4800)
            #expect(bytes == (try contents(of: dir.file("sine.raw"))))
        }
    }

    @Test func readsExtensibleMultichannelPCM() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let source = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.05", "-ac", "6"]
            try TestSupport.ffmpeg(source + ["-c:a", "pcm_s16le", dir.file("six.wav")])
            try TestSupport.ffmpeg(source + ["-f", "s16le", dir.file("six.raw")])
            let file = try contents(of: dir.file("six.wav"))
            try #require(file[20] == 0xFE && file[21] == 0xFF, "ffmpeg should write WAVE_FORMAT_EXTENSIBLE for 5.1")
            let reader = try WAVReader(path: dir.file("six.wav"), pool: pool)
            #expect(reader.format == AudioFormat(encoding: .samples(.s16), sampleRate: 48000, channels: 6))
            let (bytes, samples) = try readAll(reader, maxSamples: 1000)
            #expect(samples == 2400)
            #expect(bytes == (try contents(of: dir.file("six.raw"))))
        }
    }

    @Test(arguments: [("pcm_s24le", "24-bit PCM"), ("pcm_u8", "8-bit PCM"), ("pcm_f64le", "64-bit float"), ("pcm_alaw", "tag 0x6 ")])
    func rejectsOtherSampleFormats(codec: String, named: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("other.wav")
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=sample_rate=8000:duration=0.01", "-c:a", codec, path])
            let error = #expect(throws: MediaFileError.self) { try WAVReader(path: path, pool: pool) }
            guard case .unsupported(path, let detail) = error else {
                Issue.record("expected unsupported, got \(String(describing: error))")
                return
            }
            #expect(detail.contains(named))
        }
    }

    @Test func truncatedDataDeliversCompleteSamplesThenThrows() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("cut.wav")
            let written = try writeTestFile(path, .s16)
            try cut(path, to: 44 + 2501)  // 625 samples of 4 bytes, and one byte of the next
            let reader = try WAVReader(path: path, pool: pool)
            var bytes: [UInt8] = []
            for expected in [256, 256, 113] {
                let frame = try #require(try reader.next(maxSamples: 256))
                #expect(frame.sampleCount == expected)
                bytes += frame.bytes
            }
            #expect(bytes == Array(written.prefix(2500)))
            let truncated = MediaFileError.truncated(
                path: path, offset: 44 + 2500,
                detail: "data chunk declares \(written.count) bytes, 2501 present, in samples of 4 bytes")
            #expect(throws: truncated) { try reader.next(maxSamples: 256) }
            #expect(throws: truncated) { try reader.next(maxSamples: 256) }
            #expect(reader.samplesRead == 625)
        }
    }

    @Test func streamedDataSizeReadsToEndOfFile() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("streamed.wav")
            let written = try writeTestFile(path, .s16)
            try patch(path, at: 40, with: littleEndian32(0xFFFF_FFFF))
            let reader = try WAVReader(path: path, pool: pool)
            #expect(reader.dataByteCount == nil)
            #expect(try readAll(reader, maxSamples: 1024).bytes == written)

            try cut(path, to: 44 + 4002)  // ends inside a sample
            let cutReader = try WAVReader(path: path, pool: pool)
            #expect(try cutReader.next(maxSamples: 5000)?.sampleCount == 1000)
            #expect(throws: MediaFileError.truncated(
                path: path, offset: 44 + 4000, detail: "data runs to the end of the file, 4002 present, in samples of 4 bytes")
            ) { try cutReader.next() }
        }
    }

    @Test func skipsUnknownChunksWithPadBytes() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("chunks.wav")
            let samples: [UInt8] = [1, 0, 2, 0, 3, 0]
            var fmt = WAVFormatChunk(sampleFormat: .s16, sampleRate: 8000, channels: 1).fileHeader(dataByteCount: 6)
            let dataHeader = Array(fmt[36..<44])
            fmt.removeSubrange(36..<44)
            let odd = Array("junk".utf8) + littleEndian32(3) + [9, 9, 9, 0]  // odd size, then the pad byte
            let list = Array("LIST".utf8) + littleEndian32(4) + Array("INFO".utf8)
            try write(fmt + odd + list + dataHeader + samples, to: path)

            let reader = try WAVReader(path: path, pool: pool)
            #expect(reader.format == AudioFormat(encoding: .samples(.s16), sampleRate: 8000, channels: 1))
            #expect(reader.dataOffset == 44 + odd.count + list.count)
            #expect(try readAll(reader, maxSamples: 2) == (samples, 3))
        }
    }

    @Test func rejectsMalformedFiles() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bad.wav")
            _ = try writeTestFile(path, .s16)
            let good = try contents(of: path)

            try write(Array("RIFX".utf8) + good.dropFirst(4), to: path)
            #expect(throws: MediaFileError.self) { try WAVReader(path: path, pool: pool) }
            let notRIFF = #expect(throws: MediaFileError.self) { try WAVReader(path: path, pool: pool) }
            guard case .corrupt(path, 0, _) = notRIFF else {
                Issue.record("expected corrupt at 0, got \(String(describing: notRIFF))")
                return
            }

            try write(Array(good.prefix(12)) + Array(good[36..<44]) + Array(good[12..<36]), to: path)
            #expect(throws: MediaFileError.corrupt(path: path, offset: 12, detail: "data chunk before fmt chunk")) {
                try WAVReader(path: path, pool: pool)
            }

            try write(Array(good.prefix(30)), to: path)
            #expect(throws: MediaFileError.truncated(path: path, offset: 12, detail: "\"fmt \" chunk declares 16 bytes, 10 present")) {
                try WAVReader(path: path, pool: pool)
            }

            try write(Array(good.prefix(36)), to: path)
            #expect(throws: MediaFileError.truncated(path: path, offset: 36, detail: "no data chunk")) {
                try WAVReader(path: path, pool: pool)
            }
        }
    }

    /// ffprobe reads the duration, rate and channels from our header, both after close and when the writer
    /// has not been closed (as a run that stopped part-way leaves the file).
    @Test(arguments: [SampleFormat.s16, .f32], [true, false])
    func ffprobeReadsWhatWeWrite(format: SampleFormat, closed: Bool) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("ours.wav")
            let writer = try WAVWriter(path: path, format: AudioFormat(encoding: .samples(format), sampleRate: 44100, channels: 1))
            for seed in 0..<5 {
                try writer.write(testAudio(format, sampleRate: 44100, channels: 1, sampleCount: 4410, seed: seed, pool: pool))
            }
            if closed { try writer.close() }
            let probed = try TestSupport.ffprobe(path, entries: "stream=codec_name,sample_rate,channels,duration")
            #expect(probed == [
                "codec_name": format == .s16 ? "pcm_s16le" : "pcm_f32le", "sample_rate": "44100", "channels": "1",
                "duration": "0.500000",
            ])
            #expect(try WAVReader(path: path, pool: pool).dataByteCount == 5 * 4410 * format.bytesPerSample)
            withExtendedLifetime(writer) {}
        }
    }

    @Test func writerRejectsOtherEncodingsAndMismatchedFrames() throws {
        try TestSupport.withTemporaryDirectory { dir in
            #expect(throws: MediaFileError.self) {
                try WAVWriter(path: dir.file("a.wav"), format: AudioFormat(encoding: .compressed(.opus), sampleRate: 48000, channels: 2))
            }
            let writer = try WAVWriter(path: dir.file("b.wav"), format: AudioFormat(encoding: .samples(.s16), sampleRate: 48000, channels: 2))
            #expect(throws: MediaFileError.self) {
                try writer.write(testAudio(.f32, sampleRate: 48000, channels: 2, sampleCount: 10, seed: 0, pool: pool))
            }
            #expect(throws: MediaFileError.self) {
                try writer.write(testAudio(.s16, sampleRate: 44100, channels: 2, sampleCount: 10, seed: 0, pool: pool))
            }
            #expect(writer.samplesWritten == 0)
        }
    }
}
