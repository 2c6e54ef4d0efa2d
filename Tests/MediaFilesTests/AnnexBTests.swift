import Foundation
import MediaCore
import TestSupport
import Testing

@testable import MediaFiles

/// A raw H.264 stream made by ffmpeg's libx264 from the sample clip.
struct H264Fixture: CustomStringConvertible, Sendable {
    var name: String
    var width: Int
    var height: Int
    var frames = 20
    var arguments: [String] = []

    var description: String { name }

    /// Writes the stream into `dir`; returns its path.
    func make(in dir: URL) throws -> String {
        let path = dir.file("\(name).h264")
        try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=\(width):\(height)", "-frames:v", "\(frames)",
                                "-c:v", "libx264", "-preset", "veryfast"] + arguments + [path])
        return path
    }

    static let plain = H264Fixture(name: "plain", width: 320, height: 240, arguments: ["-bf", "0", "-g", "10"])
    static let all: [H264Fixture] = [
        plain,
        H264Fixture(name: "aud", width: 320, height: 240, arguments: ["-bf", "0", "-g", "10", "-x264-params", "aud=1"]),
        H264Fixture(name: "bframes", width: 320, height: 240, arguments: ["-bf", "2", "-g", "10"]),
        H264Fixture(name: "slices", width: 320, height: 240, arguments: ["-g", "10", "-x264-params", "slices=4"]),
        H264Fixture(name: "baseline-odd", width: 322, height: 182, arguments: ["-profile:v", "baseline"]),
        H264Fixture(name: "main-odd", width: 322, height: 182, arguments: ["-profile:v", "main"]),
        H264Fixture(name: "yuv422", width: 322, height: 182, arguments: ["-pix_fmt", "yuv422p"]),
        H264Fixture(name: "yuv444", width: 162, height: 90, arguments: ["-pix_fmt", "yuv444p"]),
        H264Fixture(name: "interlaced", width: 320, height: 180, arguments: ["-flags", "+ildct+ilme", "-x264-params", "interlaced=1"]),
        // Access units over 128 KiB, more than one read of the file each.
        H264Fixture(name: "large", width: 640, height: 360, arguments: ["-crf", "4", "-g", "5"]),
    ]
}

/// What ffprobe sees in a raw H.264 file: the stream's size and profile, and each packet (access unit).
struct ProbedH264 {
    var width: Int
    var height: Int
    var profile: String
    var packetSizes: [Int]
    var keyframes: [Bool]

    init(_ path: String) throws {
        let stream = try TestSupport.ffprobe(path, entries: "stream=width,height,profile", extra: ["-select_streams", "v:0"])
        width = Int(stream["width"] ?? "") ?? 0
        height = Int(stream["height"] ?? "") ?? 0
        profile = stream["profile"] ?? ""
        let packets = try TestSupport.runChecked(
            "ffprobe", ["-v", "error", "-show_packets", "-show_entries", "packet=size,flags", "-of", "csv=p=0", path])
        var sizes: [Int] = [], keys: [Bool] = []
        for line in packets.stdoutText.split(separator: "\n") {
            let fields = line.split(separator: ",")
            guard fields.count == 2, let size = Int(fields[0]) else { continue }
            sizes.append(size)
            keys.append(fields[1].hasPrefix("K"))
        }
        packetSizes = sizes
        keyframes = keys
    }
}

func readAll(_ path: String, pool: BufferPool? = nil) throws -> (reader: AnnexBReader, units: [EncodedFrame]) {
    let reader = try AnnexBReader(path: path)
    var units: [EncodedFrame] = []
    while let unit = try reader.next(pool: pool) {
        units.append(unit)
        if units.count > 10_000 { break }
    }
    return (reader, units)
}

@Suite struct AnnexBTests {
    let pool = BufferPool(name: "annexb-tests")

    @Test("access units, keyframes, size and profile agree with ffprobe", arguments: H264Fixture.all)
    func agreesWithFFprobe(fixture: H264Fixture) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = try fixture.make(in: dir)
            let probed = try ProbedH264(path)
            #expect(probed.width == fixture.width && probed.height == fixture.height)
            #expect(probed.packetSizes.count == fixture.frames)

            let (reader, units) = try readAll(path, pool: pool)
            #expect(units.count == fixture.frames)
            #expect(reader.width == fixture.width && reader.height == fixture.height)
            #expect(reader.sequenceParameterSet.profileName == probed.profile)
            #expect(units.map(\.byteCount) == probed.packetSizes)
            #expect(units.map(\.isKeyframe) == probed.keyframes)
            #expect(units.first?.isKeyframe == true)
            #expect(units.map(\.pts) == (0..<fixture.frames).map { MediaTime(Int64($0), timebase: Rational(1, 25)) })
            #expect(units.allSatisfy { $0.codec == .h264 && $0.dts == $0.pts && AnnexB.startsWithStartCode($0.bytes) })
            // The access units put back together are the file.
            #expect(units.reduce(into: Data()) { $0.append(contentsOf: $1.bytes) } == Data(try contents(of: path)))
            #expect(try reader.next(pool: pool) == nil)
            #expect(reader.accessUnitsRead == fixture.frames)
            print("\(fixture.name): \(fixture.width)x\(fixture.height) \(probed.profile), keyframes at "
                  + "\(units.indices.filter { units[$0].isKeyframe })")
        }
        #expect(pool.outstanding == 0)
    }

    @Test("access unit delimiters split the stream the same as without them")
    func accessUnitDelimiters() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let plain = try readAll(try H264Fixture.plain.make(in: dir)).units
            var delimited = H264Fixture.plain
            delimited.name = "delimited"
            delimited.arguments += ["-x264-params", "aud=1"]
            let withAUD = try readAll(try delimited.make(in: dir)).units
            #expect(withAUD.count == plain.count)
            #expect(withAUD.map(\.isKeyframe) == plain.map(\.isKeyframe))
            #expect(withAUD.allSatisfy { AnnexB.nalUnitTypes(in: $0.bytes).first == H264NALType.accessUnitDelimiter })
            // The same pictures: each access unit gained exactly its delimiter. (Not the first: x264 writes its
            // options, now with "aud=1", into an SEI there.)
            func nalUnits(_ unit: EncodedFrame) -> [[UInt8]] { AnnexB.nalUnits(in: unit.bytes).map { Array(unit.bytes[$0]) } }
            for (index, (unit, plainUnit)) in zip(withAUD, plain).enumerated().dropFirst() {
                let same = Array(nalUnits(unit).dropFirst()) == nalUnits(plainUnit)
                #expect(same, "access unit \(index)")
            }
        }
    }

    @Test("3-byte start codes split the same as 4-byte ones")
    func shortStartCodes() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = try H264Fixture.plain.make(in: dir)
            let long = try readAll(path).units
            // Every 00 00 00 01 becomes 00 00 01.
            var bytes = try contents(of: path), short: [UInt8] = []
            var i = 0
            while i < bytes.count {
                if i + 3 < bytes.count && bytes[i..<(i + 4)].elementsEqual([0, 0, 0, 1]) { i += 1 }
                short.append(bytes[i])
                i += 1
            }
            bytes = short
            let shortPath = dir.file("short.h264")
            try write(bytes, to: shortPath)
            let units = try readAll(shortPath).units
            #expect(units.count == long.count)
            #expect(units.map(\.isKeyframe) == long.map(\.isKeyframe))
            // Each access unit is shorter by the zero bytes its 4-byte start codes lost.
            func longStartCodes(_ unit: EncodedFrame) -> Int {
                (0..<(unit.byteCount - 3)).filter { unit.bytes[$0..<($0 + 4)].elementsEqual([0, 0, 0, 1]) }.count
            }
            #expect(zip(units, long).allSatisfy { $0.byteCount == $1.byteCount - longStartCodes($1) })
            #expect(try ProbedH264(shortPath).packetSizes.count == long.count)
        }
    }

    @Test("start codes across reads: any read size gives the same access units", arguments: [1, 2, 3, 4, 5, 7, 100, 4096])
    func readSizes(readSize: Int) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = try H264Fixture.plain.make(in: dir)
            let expected = try readAll(path).units
            let reader = try AnnexBReader(path: path, frameRate: Rational(25, 1), readSize: readSize)
            var units: [EncodedFrame] = []
            while let unit = try reader.next(pool: pool) { units.append(unit) }
            #expect(reader.width == 320 && reader.height == 240)
            let same = units.map { Array($0.bytes) } == expected.map { Array($0.bytes) }
            #expect(same)
            #expect(units.map(\.isKeyframe) == expected.map(\.isKeyframe))
        }
    }

    @Test("AnnexBWriter output reads back byte for byte")
    func writerRoundTrip() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let source = try H264Fixture.plain.make(in: dir)
            let units = try readAll(source).units
            let path = dir.file("copy.h264")
            let writer = try AnnexBWriter(path: path)
            for unit in units { try writer.write(unit) }
            #expect(writer.framesWritten == units.count)
            try writer.close()
            try writer.close()
            #expect(try contents(of: path) == contents(of: source))
            let again = try readAll(path).units
            #expect(again.map { Array($0.bytes) } == units.map { Array($0.bytes) })
            #expect(again.map(\.isKeyframe) == units.map(\.isKeyframe))
        }
    }

    @Test("AnnexBWriter refuses other codecs and frames without a start code, naming the file")
    func writerRefuses() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let path = dir.file("bad.h264")
            let writer = try AnnexBWriter(path: path)
            func frame(_ bytes: [UInt8], codec: CodecName = .h264) -> EncodedFrame {
                bytes.withUnsafeBytes { EncodedFrame(codec: codec, isKeyframe: false, pts: .zero(Rational(1, 25)), copying: $0, pool: nil) }
            }
            for bad in [frame([0, 0, 0, 1, 0x65, 0x88], codec: .vp8), frame([0x65, 0x88]), frame([0, 1, 0x65]), frame([])] {
                #expect {
                    try writer.write(bad)
                } throws: { error in
                    guard case MediaFileError.writeFailed(let errorPath, _) = error else { return false }
                    return errorPath == path
                }
            }
            try writer.write(frame([0, 0, 1, 0x09, 0xF0]))
            try writer.close()
            #expect(try contents(of: path) == [0, 0, 1, 0x09, 0xF0])
            #expect(throws: MediaFileError.self) { try writer.write(frame([0, 0, 1, 0x09, 0xF0])) }
        }
    }

    /// Expects reading `bytes` as a file to fail with `expected` (given the file's path) after `units` access units.
    func expectFailure(_ bytes: [UInt8], in dir: URL, afterUnits units: Int = 0,
                       _ expected: (String) -> MediaFileError, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = dir.file("broken-\(UUID().uuidString).h264")
        try write(bytes, to: path)
        var read = 0
        do {
            let reader = try AnnexBReader(path: path)
            while try reader.next(pool: pool) != nil { read += 1 }
            Issue.record("no error after \(read) access units", sourceLocation: sourceLocation)
        } catch let error as MediaFileError {
            #expect(error == expected(path), sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(path + ": "), sourceLocation: sourceLocation)
            #expect(read == units, sourceLocation: sourceLocation)
            print("expected error: \(error)")
        }
    }

    /// Where NAL units of `type` start (their start code, 4 bytes before the header, as x264 writes them).
    func startCodes(of type: Int, in bytes: [UInt8]) -> [Int] {
        bytes.withUnsafeBytes { raw in
            AnnexB.nalUnits(in: raw).filter { H264NALType.type(ofHeader: raw[$0.lowerBound]) == type }.map { $0.lowerBound - 4 }
        }
    }

    @Test("broken files give errors naming the file and the byte offset")
    func brokenFiles() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let good = try contents(of: try H264Fixture.plain.make(in: dir))
            let units = try readAll(dir.file("plain.h264")).units
            let sizes = units.map(\.byteCount)
            let secondUnit = sizes[0], thirdUnit = sizes[0] + sizes[1]
            let sps = try #require(startCodes(of: H264NALType.sps, in: good).first)
            let idr = try #require(startCodes(of: H264NALType.idrSlice, in: good).first)
            #expect(sps == 0)

            try expectFailure([], in: dir) { .corrupt(path: $0, offset: 0, detail: "empty file: no H.264 start code") }
            try expectFailure([0, 0, 0, 0], in: dir) { .corrupt(path: $0, offset: 0, detail: "4 zero bytes and no H.264 start code") }
            var noise = SplitMix64(seed: 7)
            let garbage = [0x47] + (0..<500).map { _ in UInt8.random(in: 0...255, using: &noise) }
            try expectFailure(garbage, in: dir) { path in
                .corrupt(path: path, offset: 0, detail: "does not start with an H.264 start code (00 00 01): "
                         + quoted(garbage.prefix(6)) + " at byte 0")
            }
            // Cut inside the first SPS (after its profile, constraint flags and level).
            let cutSPS = dir.file("cut-sps.h264")
            try write(Array(good.prefix(sps + 9)), to: cutSPS)
            #expect {
                try AnnexBReader(path: cutSPS)
            } throws: { error in
                print("expected error: \(error)")
                guard case MediaFileError.truncated(cutSPS, sps + 4, let detail) = error else { return false }
                return detail.hasPrefix("sequence parameter set: ends ")
            }
            // Cut just before the first slice: the access unit has parameter sets but no picture.
            try expectFailure(Array(good.prefix(idr)), in: dir) { path in
                .truncated(path: path, offset: 0,
                           detail: "access unit 0 has no slice: the file ends after its other NAL units")
            }
            // Cut after the start code of the third access unit.
            try expectFailure(Array(good.prefix(thirdUnit + 4)), in: dir, afterUnits: 2) { path in
                .truncated(path: path, offset: thirdUnit, detail: "the file ends after a start code, with no NAL unit")
            }
            // forbidden_zero_bit set in the second access unit's slice header.
            var forbidden = good
            forbidden[secondUnit + 4] |= 0x80
            try expectFailure(forbidden, in: dir, afterUnits: 1) { path in
                .corrupt(path: path, offset: secondUnit + 4, detail: "NAL unit header has forbidden_zero_bit set")
            }
            // A slice before any SPS: the stream starts at its second access unit.
            try expectFailure(Array(good[secondUnit...]), in: dir) { path in
                .corrupt(path: path, offset: 0, detail: "slice (NAL unit type 1) before any sequence parameter set")
            }
            // No SPS at all: an access unit delimiter alone.
            try expectFailure([0, 0, 0, 1, 0x09, 0xF0], in: dir) { path in
                .corrupt(path: path, offset: 6, detail: "no sequence parameter set in the file")
            }
            // Two start codes in a row.
            try expectFailure(Array(good.prefix(thirdUnit)) + [0, 0, 1, 0, 0, 1] + Array(good[(thirdUnit + 3)...]), in: dir,
                              afterUnits: 2) { path in
                .corrupt(path: path, offset: thirdUnit, detail: "empty NAL unit: a start code follows the start code")
            }
            #expect(throws: MediaFileError.cannotOpen(path: dir.file("missing.h264"), reason: "No such file or directory")) {
                try AnnexBReader(path: dir.file("missing.h264"))
            }
        }
    }

    @Test("emulation prevention bytes are removed from the RBSP (H.264 §7.4.1)")
    func emulationPrevention() {
        let rbsp = [UInt8]([0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x03, 0x00, 0x03]).withUnsafeBytes {
            AnnexB.rbsp($0)
        }
        #expect(rbsp == [0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x03])
    }
}
