import COpus
import CodecOpus
import Foundation
import MediaCodecs
import MediaCore
import MediaFiles
import TestSupport
import Testing

/// Ogg Opus files written from the encoder's packets, checked with ffprobe, ffmpeg and our reader.
@Suite("Ogg Opus files from the encoder")
struct OggOpusFileTests {
    let inputPool = BufferPool(name: "test-input")

    /// Encodes `seconds` of the test mix at 64 kbit/s.
    func encode(channels: Int, frameMilliseconds: Double, seconds: Double = 2) throws
        -> (packets: [EncodedFrame], preSkip: Int, raw: Data)
    {
        let raw = try TestAudio.raw(channels: channels, seconds: seconds)
        let input = pcmFormat(channels: channels)
        let encoder = try OpusEncoder(format: input, settings: AudioEncoderSettings(
            frameDuration: milliseconds(frameMilliseconds)))
        return (try encodeAll(TestAudio.frames(raw, format: input, pool: inputPool), with: encoder), encoder.preSkip, raw)
    }

    @Test("ffprobe and ffmpeg read our .opus with the right channels, duration and samples", arguments: [
        (2, 20.0), (1, 20), (2, 60), (1, 10), (2, 2.5),
    ])
    func readableByFFmpeg(channels: Int, frameMilliseconds: Double) throws {
        let (packets, preSkip, _) = try encode(channels: channels, frameMilliseconds: frameMilliseconds)
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("out.opus")
            let writer = try OggOpusWriter(path: path, channels: channels, inputSampleRate: 48_000, preSkip: preSkip)
            for packet in packets { try writer.write(packet) }
            try writer.close()

            let stream = try TestSupport.ffprobe(path, entries: "stream=codec_name,channels,nb_read_packets",
                                                 extra: ["-count_packets"])
            #expect(stream["codec_name"] == "opus")
            #expect(stream["channels"] == "\(channels)")
            #expect(stream["nb_read_packets"] == "\(packets.count)")
            // ffprobe's duration is the last granule position over 48 kHz: the input's 2 s plus pre-skip.
            let duration = Double(try TestSupport.ffprobe(path, entries: "format=duration")["duration"] ?? "") ?? 0
            #expect(abs(duration - 2) <= frameMilliseconds / 1000 + Double(preSkip) / 48_000, "ffprobe: \(duration) s")
            #expect(abs(duration - (2 + Double(preSkip) / 48_000)) < 0.001, "ffprobe: \(duration) s")
            // ffmpeg drops the pre-skip and trims the end: exactly the input's samples.
            let pcm = try TestSupport.ffmpeg(["-i", path, "-f", "s16le", "-ac", "\(channels)", "-"]).stdout
            #expect(pcm.count / (2 * channels) == 96_000)

            // Our reader gives the packets back as they went in, times and trimmed end included.
            let reader = try OggOpusReader(path: path)
            #expect(reader.header == OggOpusHeader(channels: channels, preSkip: preSkip, inputSampleRate: 48_000))
            #expect(reader.vendor == "Sluice")
            var read: [EncodedFrame] = []
            while let packet = try reader.next(pool: nil) { read.append(packet) }
            #expect(read.count == packets.count)
            #expect(read.map { Data($0.bytes) } == packets.map { Data($0.bytes) })
            #expect(read.map(\.pts) == packets.map(\.pts))
            #expect(read.map(\.duration) == packets.map(\.duration))
        }
    }

    @Test("read back and decoded, the file gives the input's samples")
    func decodeFromFile() throws {
        let (packets, preSkip, raw) = try encode(channels: 2, frameMilliseconds: 20)
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("out.opus")
            let writer = try OggOpusWriter(path: path, channels: 2, inputSampleRate: 48_000, preSkip: preSkip)
            for packet in packets { try writer.write(packet) }
            try writer.close()
            let reader = try OggOpusReader(path: path)
            let decoder = try OpusDecoder(input: opusFormat(), output: pcmFormat(), preSkip: reader.header.preSkip)
            var frames: [AudioFrame] = []
            let pool = BufferPool(name: "read")
            while let packet = try reader.next(pool: pool) { try decoder.decode(packet) { frames.append($0) } }
            #expect(frames.map(\.sampleCount).reduce(0, +) == 96_000)
            #expect(snr(floats(raw, format: .s16), floats(frames)) >= 16)
            // Each packet was dropped after decoding, so the reader reused one or two buffers.
            #expect(pool.allocations <= 2)
        }
    }

    @Test("a run stopped part-way leaves a valid file of the pages written")
    func interruptedRun() throws {
        let (packets, preSkip, _) = try encode(channels: 1, frameMilliseconds: 20, seconds: 3)
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("live.opus"), snapshot = dir.file("snapshot.opus")
            // Pages of at most 0.5 s, so an interruption loses little.
            let writer = try OggOpusWriter(path: path, channels: 1, inputSampleRate: 48_000, preSkip: preSkip,
                                           maxPageDuration: 24_000)
            for packet in packets[0..<100] { try writer.write(packet) }
            // A copy of the file as a crash would leave it: no close, no end-of-stream page.
            try FileManager.default.copyItem(atPath: path, toPath: snapshot)

            let reader = try OggOpusReader(path: snapshot)
            var read: [EncodedFrame] = []
            while let packet = try reader.next(pool: nil) { read.append(packet) }
            // All but the packets of the last, unfinished page (at most 0.5 s) and the held-back one.
            #expect(read.count >= 100 - 26 && read.count < 100)
            #expect(read.map(\.pts) == packets[0..<read.count].map(\.pts))
            #expect(read.map { Data($0.bytes) } == packets[0..<read.count].map { Data($0.bytes) })
            let stream = try TestSupport.ffprobe(snapshot, entries: "stream=codec_name,nb_read_packets", extra: ["-count_packets"])
            #expect(stream["codec_name"] == "opus" && stream["nb_read_packets"] == "\(read.count)")

            for packet in packets[100...] { try writer.write(packet) }
            try writer.close()
            let complete = try OggOpusReader(path: path)
            var count = 0
            while try complete.next(pool: nil) != nil { count += 1 }
            #expect(count == packets.count)
        }
    }

    @Test("a stream with no audio ends on its OpusTags page")
    func noAudio() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("empty.opus")
            let writer = try OggOpusWriter(path: path, channels: 2, inputSampleRate: 0, preSkip: 312)
            try writer.close()
            let reader = try OggOpusReader(path: path)
            #expect(reader.header.preSkip == 312)
            #expect(try reader.next(pool: nil) == nil)
            // The second page carries the end-of-stream flag and a CRC that libogg accepts (the reader checked it).
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let second = 27 + Int(bytes[26]) + Int(bytes[27])  // the OpusHead page is one 19-byte segment
            #expect(Array(bytes[second..<(second + 4)]) == Array("OggS".utf8))
            #expect(bytes[second + 5] & 0x04 != 0)
        }
    }

    @Test("the writer refuses what is not an Opus packet")
    func writerRefusesBadPackets() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let writer = try OggOpusWriter(path: dir.file("x.opus"), channels: 1, inputSampleRate: 48_000, preSkip: 312)
            let bad = [UInt8]([0x03, 0x00]).withUnsafeBytes {
                EncodedFrame(codec: .opus, isKeyframe: true, pts: .zero(Opus.timebase), copying: $0, pool: nil)
            }
            #expect(throws: MediaFileError.self) { try writer.write(bad) }
            let vp8 = [UInt8]([0xF8]).withUnsafeBytes {
                EncodedFrame(codec: .vp8, isKeyframe: true, pts: .zero(Opus.timebase), copying: $0, pool: nil)
            }
            #expect(throws: MediaFileError.self) { try writer.write(vp8) }
            try writer.close()
            #expect(throws: MediaFileError.self) {
                try OggOpusWriter(path: dir.file("y.opus"), channels: 3, inputSampleRate: 48_000, preSkip: 312)
            }
        }
    }

    /// `OpusPacket.duration` (pure Swift in MediaCore, for MediaFiles and MediaRTP) against libopus's own parser on random and
    /// mutated packets: the same verdict and the same duration.
    @Test("OpusPacket.duration agrees with libopus's opus_packet_parse")
    func tocParserMatchesLibopus() throws {
        let (packets, _, _) = try encode(channels: 2, frameMilliseconds: 60, seconds: 0.5)
        var rng = SplitMix64(seed: 0x7C)
        var valid = 0
        for iteration in 0..<20_000 {
            var bytes: [UInt8]
            if iteration % 2 == 0 {
                bytes = [UInt8](packets[iteration % packets.count].bytes)
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let at = Int.random(in: 0..<Swift.min(bytes.count, 6), using: &rng)
                    bytes[at] = UInt8.random(in: 0...255, using: &rng)
                }
                if Bool.random(using: &rng) { bytes.removeSubrange(Int.random(in: 0...bytes.count, using: &rng)...) }
            } else {
                bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if !bytes.isEmpty, Bool.random(using: &rng) { bytes[0] |= 3 }  // code 3 is the intricate one
            }
            let ours = OpusPacket.duration(bytes)
            let theirs: Int? = bytes.withUnsafeBufferPointer { buffer in
                var toc: UInt8 = 0
                var sizes = [Int16](repeating: 0, count: 48)
                var offset: Int32 = 0
                guard let base = buffer.baseAddress else { return nil }
                let count = opus_packet_parse(base, Int32(buffer.count), &toc, nil, &sizes, &offset)
                guard count > 0 else { return nil }
                return Int(count) * Int(opus_packet_get_samples_per_frame(base, 48_000))
            }
            #expect(ours == theirs, "packet \(bytes)")
            if ours != nil { valid += 1 }
        }
        #expect(valid > 1000)
    }
}
