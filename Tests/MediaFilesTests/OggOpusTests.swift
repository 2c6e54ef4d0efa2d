import Foundation
import MediaCore
import Testing
import TestSupport

@testable import MediaFiles

@Suite("Ogg Opus files")
struct OggOpusTests {
    /// A 1.5 s stereo .opus made by ffmpeg with libopus, 20 ms packets.
    static func ffmpegOpus(_ path: String, channels: Int = 2, seconds: Double = 1.5) throws {
        try TestSupport.ffmpeg([
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
            "-f", "lavfi", "-i", "anoisesrc=c=pink:a=0.05:r=48000:d=\(seconds):seed=5",
            "-filter_complex", "amix=inputs=2", "-ac", "\(channels)", "-c:a", "libopus", "-b:a", "48k", "-f", "ogg", path,
        ])
    }

    /// File offsets of the pages of an Ogg file, found by their capture pattern.
    static func pageOffsets(_ bytes: [UInt8]) -> [Int] {
        let capture = Array("OggS".utf8)
        return (0..<(bytes.count - 3)).filter { Array(bytes[$0..<($0 + 4)]) == capture }
    }

    static func readAll(_ reader: OggOpusReader) throws -> [EncodedFrame] {
        var packets: [EncodedFrame] = []
        while let packet = try reader.next(pool: nil) { packets.append(packet) }
        return packets
    }

    @Test("an ffmpeg-made .opus reads with its header and every packet", arguments: [1, 2])
    func readsFFmpegFile(channels: Int) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("ffmpeg.opus")
            try Self.ffmpegOpus(path, channels: channels)
            let reader = try OggOpusReader(path: path)
            #expect(reader.header.channels == channels)
            #expect(reader.header.mappingFamily == 0)
            #expect(reader.header.inputSampleRate == 48_000)
            #expect(reader.header.outputGain == 0)
            #expect(reader.header.preSkip == 312)  // libopus's lookahead at 48 kHz
            #expect(reader.vendor.hasPrefix("Lavf"))
            let packets = try Self.readAll(reader)
            let probe = try TestSupport.ffprobe(path, entries: "stream=nb_read_packets,duration_ts", extra: ["-count_packets"])
            #expect("\(packets.count)" == probe["nb_read_packets"])
            #expect(reader.packetsRead == packets.count)
            // 20 ms packets, back to back from 0, the last one trimmed to the end of the input.
            #expect(packets.dropLast().allSatisfy { $0.duration == MediaTime(960, timebase: Rational(1, 48_000)) })
            #expect(zip(packets, packets.dropFirst()).allSatisfy { $0.pts + $0.duration! == $1.pts })
            #expect(packets.first?.pts == .zero(Rational(1, 48_000)))
            let end = packets.last.map { $0.pts + $0.duration! }
            #expect(end == MediaTime(72_000 + 312, timebase: Rational(1, 48_000)))
            #expect(probe["duration_ts"] == "\(72_000 + 312)")
            #expect(packets.allSatisfy { $0.codec == .opus && $0.isKeyframe && $0.byteCount > 0 })
        }
    }

    @Test("a file cut short gives its earlier packets, then truncated at the cut page")
    func truncated() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("cut.opus")
            try Self.ffmpegOpus(path)
            let whole = try Self.readAll(try OggOpusReader(path: path))
            let bytes = try contents(of: path)
            let pages = Self.pageOffsets(bytes)
            #expect(pages.count >= 4)
            let cutPage = pages[pages.count - 1]
            for cut in [cutPage + 10, cutPage + 40] {  // inside the header, inside the body
                try write(Array(bytes.prefix(cut)), to: path)
                let reader = try OggOpusReader(path: path)
                var read = 0
                do {
                    while try reader.next(pool: nil) != nil { read += 1 }
                    Issue.record("no error at the cut")
                } catch MediaFileError.truncated(let file, let offset, let detail) {
                    #expect(file == path)
                    #expect(offset == cutPage, "\(detail)")
                }
                #expect(read > 0 && read < whole.count)
            }
            // Cut exactly between pages: a clean end after the whole pages (a recording stopped there).
            try write(Array(bytes.prefix(cutPage)), to: path)
            let packets = try Self.readAll(try OggOpusReader(path: path))
            #expect(packets.count > 0 && packets.count < whole.count)
            #expect(packets.map(\.pts) == whole.prefix(packets.count).map(\.pts))
        }
    }

    @Test("what is not Ogg Opus is corrupt, at the right offset")
    func notOggOpus() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("x")
            func expectCorrupt(at expected: Int, _ what: String, saying words: String = "",
                               sourceLocation: SourceLocation = #_sourceLocation) {
                do {
                    let reader = try OggOpusReader(path: path)
                    _ = try Self.readAll(reader)
                    Issue.record("\(what) was read", sourceLocation: sourceLocation)
                } catch MediaFileError.corrupt(let file, let offset, let detail) {
                    #expect(file == path && offset == expected, "\(what): \(offset) \(detail)", sourceLocation: sourceLocation)
                    #expect(detail.contains(words), "\(what): \(detail)", sourceLocation: sourceLocation)
                } catch {
                    Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
                }
            }
            try write(Array("RIFF....WAVEfmt ".utf8) + [UInt8](repeating: 0, count: 100), to: path)
            expectCorrupt(at: 0, "a WAV file", saying: "\"RIFF\" where \"OggS\" should be")
            try write([], to: path)
            #expect(throws: MediaFileError.self) { try OggOpusReader(path: path) }

            // Ogg, but FLAC: no OpusHead.
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=d=0.2", "-c:a", "flac", "-f", "ogg", path])
            expectCorrupt(at: Self.pageOffsets(try contents(of: path))[1], "Ogg FLAC", saying: "no OpusHead")

        }
    }

    @Test("a damaged or missing audio page is skipped and counted; the packets after it keep their times")
    func damagedAudioPages() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("x.opus")
            try Self.ffmpegOpus(path, seconds: 3)
            let original = try Self.readAll(try OggOpusReader(path: path))
            var bytes = try contents(of: path)
            let pages = Self.pageOffsets(bytes)
            try #require(pages.count >= 5)

            func readDamaged(_ what: String, saying words: String) throws {
                let reader = try OggOpusReader(path: path)
                let packets = try Self.readAll(reader)
                #expect(reader.damagedPages == 1, "\(what)")
                guard case .corrupt(let file, let offset, let detail)? = reader.firstDamage else {
                    Issue.record("\(what): \(String(describing: reader.firstDamage))")
                    return
                }
                #expect(file == path && offset == pages[3] && detail.contains(words), "\(what): \(offset) \(detail)")
                // The packets of page 3 are gone; every packet read is one of the original's, at its own time.
                #expect(packets.count < original.count && packets.count > original.count / 2, "\(what)")
                let originalTimes = Set(original.map(\.pts.value))
                #expect(packets.allSatisfy { originalTimes.contains($0.pts.value) }, "\(what)")
                #expect(packets.last?.pts == original.last?.pts, "\(what)")
            }

            // A damaged byte in an audio page fails its CRC.
            bytes[pages[3] + 60] ^= 0x20
            try write(bytes, to: path)
            try readDamaged("a flipped bit", saying: "CRC")

            // A missing page is a sequence gap, noticed on the page after it.
            bytes[pages[3] + 60] ^= 0x20
            bytes.removeSubrange(pages[3]..<pages[4])
            try write(bytes, to: path)
            try readDamaged("a dropped page", saying: "missing")

        }
    }

    @Test("OpusHead and OpusTags round-trip, and malformed ones are refused")
    func headers() throws {
        let header = OggOpusHeader(channels: 2, preSkip: 3840, inputSampleRate: 44_100, outputGain: -256)
        let bytes = header.encoded()
        #expect(bytes.count == 19)
        #expect(try OggOpusHeader(decoding: bytes, path: "x", offset: 0) == header)
        var threeChannels = bytes
        threeChannels[9] = 3
        #expect(throws: MediaFileError.self) { try OggOpusHeader(decoding: threeChannels, path: "x", offset: 0) }
        var version2 = bytes
        version2[8] = 0x10
        #expect(throws: MediaFileError.unsupported(path: "x", detail: "Ogg Opus version 16 (major version 1)")) {
            try OggOpusHeader(decoding: version2, path: "x", offset: 0)
        }
        #expect(throws: MediaFileError.self) { try OggOpusHeader(decoding: Array(bytes.prefix(18)), path: "x", offset: 0) }
        // Family 1 (5.1 surround): the mapping table is parsed and checked.
        var surround = Array(bytes.prefix(18)) + [1, 4, 2, 0, 4, 1, 2, 3, 5]
        surround[9] = 6
        let parsed = try OggOpusHeader(decoding: surround, path: "x", offset: 0)
        #expect(parsed.channels == 6 && parsed.streamCount == 4 && parsed.coupledStreamCount == 2)
        #expect(parsed.channelMapping == [0, 4, 1, 2, 3, 5])
        surround[22] = 9  // channel 9 of 6 decoded channels
        #expect(throws: MediaFileError.self) { try OggOpusHeader(decoding: surround, path: "x", offset: 0) }

        let tags = OggOpusTags(vendor: "Sluice", comments: ["TITLE=test", "ARTIST=é"])
        #expect(try OggOpusTags(decoding: tags.encoded(), path: "x", offset: 0) == tags)
        var lying = tags.encoded()
        lying[8] = 200  // vendor length past the end
        #expect(throws: MediaFileError.self) { try OggOpusTags(decoding: lying, path: "x", offset: 0) }
    }

    @Test("OpusPacket.duration follows the TOC byte (RFC 6716 §3.1)")
    func tocDurations() {
        // Code 0, one frame: SILK 10/20/40/60 ms, hybrid 10/20 ms, CELT 2.5/5/10/20 ms.
        let perConfig = (0..<32).map { OpusPacket.duration([UInt8($0 << 3), 0xAA]) }
        #expect(perConfig == [480, 960, 1920, 2880, 480, 960, 1920, 2880, 480, 960, 1920, 2880,
                              480, 960, 480, 960, 120, 240, 480, 960, 120, 240, 480, 960,
                              120, 240, 480, 960, 120, 240, 480, 960])
        #expect(OpusPacket.duration([0xF8]) == 960)  // a frame of 0 bytes (DTX)
        #expect(OpusPacket.duration([0xF9, 1, 2]) == 1920)  // code 1: two frames of equal size
        #expect(OpusPacket.duration([0xF9, 1]) == nil)  // odd payload
        #expect(OpusPacket.duration([0xFA, 1, 9, 9, 9]) == 1920)  // code 2: first frame 1 byte, second 2
        #expect(OpusPacket.duration([0xFA, 5, 9]) == nil)  // first frame runs past the end
        #expect(OpusPacket.duration([0xFA, 252]) == nil)  // two-byte length cut off
        #expect(OpusPacket.duration([0x0B, 0x03, 1, 2, 3]) == 2880)  // code 3 CBR: 3 × 20 ms SILK of 1 byte
        #expect(OpusPacket.duration([0x0B, 0x03, 1, 2]) == nil)  // 2 bytes for 3 equal frames
        #expect(OpusPacket.duration([0x1B, 0x03, 1, 2, 3]) == nil)  // 3 × 60 ms is over 120 ms
        #expect(OpusPacket.duration([0xE3, 0x30] + [UInt8](repeating: 0, count: 48)) == 5760)  // 48 × 2.5 ms
        #expect(OpusPacket.duration([0xFB, 0x00]) == nil)  // zero frames
        #expect(OpusPacket.duration([0xFB, 0x42, 2, 7, 7, 0, 0]) == 1920)  // 2 bytes of padding, two 1-byte frames
        #expect(OpusPacket.duration([0xFB, 0x42, 255, 0] + [UInt8](repeating: 0, count: 254)) == 1920)  // 254 + 0
        #expect(OpusPacket.duration([0xFB, 0x82, 1, 7, 8, 8]) == 1920)  // VBR: 1 byte, then the rest
        #expect(OpusPacket.duration([0xFB, 0x82, 4, 7]) == nil)  // VBR length past the end
        #expect(OpusPacket.duration([0xFB, 0x41, 255]) == nil)  // padding runs off the end
        #expect(OpusPacket.duration([]) == nil)
        #expect(OpusPacket.duration([0xF8] + [UInt8](repeating: 0, count: 1276)) == nil)  // frame over 1275 bytes
    }
}
