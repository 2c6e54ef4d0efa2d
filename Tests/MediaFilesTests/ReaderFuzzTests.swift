import Foundation
import MediaCore
import Testing
import TestSupport

@testable import MediaFiles

/// Mutation fuzzing of the file readers: random byte flips, cuts, insertions and extreme header
/// values applied to valid files. Every outcome must be frames or a `MediaFileError`: never a crash,
/// a hang or another kind of error. Seeded, so a failure reproduces.
@Suite struct ReaderFuzzTests {
    static func mutate(_ original: [UInt8], using rng: inout SplitMix64) -> [UInt8] {
        var bytes = original
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !bytes.isEmpty else { break }
            let at = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: bytes[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
            case 1: bytes[at] = [0x00, 0xFF, 0x7F, 0x80][Int.random(in: 0..<4, using: &rng)]
            case 2: bytes.removeSubrange(at...)
            case 3: bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            default:
                // An extreme 32-bit little-endian value, where sizes and counts live.
                let value: UInt32 = [0, 1, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x8000_0000][Int.random(in: 0..<5, using: &rng)]
                for k in 0..<4 where at + k < bytes.count { bytes[at + k] = UInt8(truncatingIfNeeded: value >> (8 * k)) }
            }
        }
        return bytes
    }

    /// Reads every item of `path` with `read`; returns whether it ended in a clean end of file.
    static func fuzz(seed: [UInt8], iterations: Int, in dir: URL, read: (String) throws -> Void) throws {
        var rng = SplitMix64(seed: 0x5EED)
        let path = dir.appendingPathComponent("fuzzed").path
        var failures = 0
        for iteration in 0..<iterations {
            let bytes = mutate(seed, using: &rng)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                try read(path)
            } catch let error as MediaFileError {
                #expect(error.path == path)
                failures += 1
            } catch {
                Issue.record("iteration \(iteration): \(type(of: error)) \(error) is not a MediaFileError")
            }
        }
        // Most mutations must be caught; a fuzzer that never reaches an error is not fuzzing.
        #expect(failures > iterations / 10, "only \(failures) of \(iterations) mutations were rejected")
    }

    static func validFile(in dir: URL, write: (String) throws -> Void) throws -> [UInt8] {
        let path = dir.appendingPathComponent("seed").path
        try write(path)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test func y4mReader() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let pool = BufferPool(name: "fuzz")
            let format = VideoFormat(encoding: .pixels(.i420), width: 8, height: 6, frameRate: Rational(25, 1))
            let seed = try Self.validFile(in: dir) { path in
                let writer = try Y4MWriter(path: path, format: format)
                for i in 0..<3 {
                    let frame = VideoFrame(width: 8, height: 6, pts: MediaTime(Int64(i), timebase: Rational(1, 25)), pool: pool)
                    frame.buffer.storage.initializeMemory(as: UInt8.self, repeating: UInt8(i))
                    try writer.write(frame)
                }
                try writer.close()
            }
            try Self.fuzz(seed: seed, iterations: 400, in: dir) { path in
                let reader = try Y4MReader(path: path, pool: pool)
                var frames = 0
                while try reader.next() != nil { frames += 1; #expect(frames < 10_000) }
            }
        }
    }

    @Test func ivfReader() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let seed = try Self.validFile(in: dir) { path in
                let writer = try IVFWriter(path: path, codec: .vp8, width: 64, height: 48, timebase: Rational(1, 30))
                for (i, size) in [40, 12, 7].enumerated() {
                    let payload = [UInt8](repeating: UInt8(i * 2), count: size)
                    try writer.write(payload.withUnsafeBytes {
                        EncodedFrame(codec: .vp8, isKeyframe: i == 0, pts: MediaTime(Int64(i), timebase: Rational(1, 30)),
                                     copying: $0, pool: nil)
                    })
                }
                try writer.close()
            }
            let pool = BufferPool(name: "fuzz")
            try Self.fuzz(seed: seed, iterations: 400, in: dir) { path in
                let reader = try IVFReader(path: path)
                var frames = 0
                while try reader.next(pool: pool) != nil { frames += 1; #expect(frames < 10_000) }
            }
        }
    }

    @Test func wavReader() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let pool = BufferPool(name: "fuzz")
            let seed = try Self.validFile(in: dir) { path in
                let writer = try WAVWriter(path: path, format: AudioFormat(encoding: .samples(.s16), sampleRate: 8000, channels: 2))
                let frame = AudioFrame(sampleFormat: .s16, sampleRate: 8000, channels: 2, sampleCount: 50,
                                       pts: .zero(Rational(1, 8000)), pool: pool)
                frame.bytes.initializeMemory(as: UInt8.self, repeating: 3)
                try writer.write(frame)
                try writer.close()
            }
            try Self.fuzz(seed: seed, iterations: 400, in: dir) { path in
                let reader = try WAVReader(path: path, pool: pool)
                var blocks = 0
                while try reader.next(maxSamples: 16) != nil { blocks += 1; #expect(blocks < 100_000) }
            }
        }
    }

    /// A small raw H.264 stream without x264's long version SEI, so that mutations hit headers and
    /// start codes often.
    static func h264Seed(in dir: URL) throws -> [UInt8] {
        let path = dir.appendingPathComponent("seed.h264").path
        try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=64:48", "-frames:v", "6", "-c:v", "libx264",
                                "-bf", "0", "-g", "3", "-b:v", "20k", "-bsf:v", "filter_units=remove_types=6", path])
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test func annexBReader() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let seed = try Self.h264Seed(in: dir)
            let pool = BufferPool(name: "fuzz")
            try Self.fuzz(seed: seed, iterations: 400, in: dir) { path in
                let reader = try AnnexBReader(path: path)
                #expect(reader.width > 0 && reader.height > 0)
                var units = 0
                while let unit = try reader.next(pool: pool) {
                    #expect(AnnexB.startsWithStartCode(unit.bytes))
                    units += 1
                    #expect(units < 10_000)
                }
            }
        }
    }

    @Test func oggOpusReader() throws {
        try TestSupport.withTemporaryDirectory { dir in
            // Three pages of audio: CELT 20 ms packets (code 0 and code 3), the last one end-trimmed.
            let seed = try Self.validFile(in: dir) { path in
                let writer = try OggOpusWriter(path: path, channels: 2, inputSampleRate: 48_000, preSkip: 312,
                                               maxPageDuration: 2880)
                for i in 0..<9 {
                    let payload: [UInt8] = i % 2 == 0 ? [0xFC] + [UInt8](repeating: UInt8(i), count: 20 + i)
                                                      : [0xFF, 0x82, 3, 1, 2, 3, 4, 5]
                    try writer.write(payload.withUnsafeBytes {
                        EncodedFrame(codec: .opus, isKeyframe: true, pts: MediaTime(Int64(i * 960), timebase: Rational(1, 48_000)),
                                     duration: MediaTime(i == 8 ? 500 : 960, timebase: Rational(1, 48_000)), copying: $0, pool: nil)
                    })
                }
                try writer.close()
            }
            let pool = BufferPool(name: "fuzz")
            // The seed itself reads cleanly.
            let reader = try OggOpusReader(path: dir.appendingPathComponent("seed").path)
            var durations: [Int64] = []
            while let packet = try reader.next(pool: pool) { durations.append(packet.duration!.value) }
            #expect(durations == [960, 1920, 960, 1920, 960, 1920, 960, 1920, 500])
            try Self.fuzz(seed: seed, iterations: 600, in: dir) { path in
                let reader = try OggOpusReader(path: path)
                var packets = 0
                while let packet = try reader.next(pool: pool) {
                    packets += 1
                    #expect(packets < 10_000)
                    #expect(packet.duration!.value >= 0 && packet.pts.value >= 0)
                }
            }
        }
    }

    @Test func h264SequenceParameterSetParser() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let stream = try Self.h264Seed(in: dir)
            let seed = try #require(stream.withUnsafeBytes { bytes in
                AnnexB.nalUnits(in: bytes).first { H264NALType.type(ofHeader: bytes[$0.lowerBound]) == H264NALType.sps }
                    .map { Array(bytes[$0]) }
            })
            let original = try H264SequenceParameterSet(parsing: seed)
            #expect(original.width == 64 && original.height == 48)
            var rng = SplitMix64(seed: 0x5EED)
            var failures = 0
            for iteration in 0..<2000 {
                let bytes = Self.mutate(seed, using: &rng)
                do {
                    let parsed = try H264SequenceParameterSet(parsing: bytes, path: "fuzzed", offset: 9)
                    #expect(parsed.width > 0 && parsed.height > 0 && parsed.width <= 32768 && parsed.height <= 32768)
                } catch let error as MediaFileError {
                    guard case .corrupt("fuzzed", 9, _) = error else {
                        Issue.record("iteration \(iteration): \(error) does not name the source and offset")
                        continue
                    }
                    failures += 1
                } catch {
                    Issue.record("iteration \(iteration): \(type(of: error)) \(error) is not a MediaFileError")
                }
            }
            #expect(failures > 2000 / 10, "only \(failures) of 2000 mutations were rejected")
        }
    }

    /// The TOC parser on random bytes and on mutations of valid packets: an answer in range or nil.
    @Test func opusPacketDuration() {
        var rng = SplitMix64(seed: 0x70C)
        var valid = 0
        for iteration in 0..<50_000 {
            var bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if iteration % 3 == 0, bytes.count > 1 { bytes[1] &= 0x3F }  // code 3 without flags: often valid
            if let duration = OpusPacket.duration(bytes) {
                valid += 1
                #expect(duration >= 120 && duration <= OpusPacket.maxDuration && duration % 120 == 0)
            }
        }
        #expect(valid > 1000)
    }
}
