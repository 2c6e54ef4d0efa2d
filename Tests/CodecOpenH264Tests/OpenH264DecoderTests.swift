import CodecOpenH264
import Foundation
import MediaCodecs
import MediaCore
import TestSupport
import Testing

/// Decodes `frames` one by one, noting how many pictures each call emitted.
func decodeCounting(_ frames: [EncodedFrame], with decoder: OpenH264Decoder) throws
    -> (pictures: [VideoFrame], perUnit: [Int], atFlush: Int)
{
    var pictures: [VideoFrame] = []
    var perUnit: [Int] = []
    for frame in frames {
        let before = pictures.count
        try decoder.decode(frame) { pictures.append($0) }
        perUnit.append(pictures.count - before)
    }
    let before = pictures.count
    try decoder.flush { pictures.append($0) }
    return (pictures, perUnit, pictures.count - before)
}

func packedBytes(_ pictures: [VideoFrame]) -> Data { pictures.reduce(into: Data()) { $0 += TestSupport.packed($1) } }

/// Whether `pictures`, packed, are exactly `reference` (a Bool, so that a failure does not print megabytes).
func identical(_ pictures: [VideoFrame], _ reference: Data) -> Bool { packedBytes(pictures) == reference }

/// Expects `body` to throw `CodecError.library` from OpenH264's "decode"; returns the error's message.
@discardableResult
func expectDecodeError(_ label: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> String? {
    do {
        try body()
        Issue.record("\(label): decoded without error", sourceLocation: sourceLocation)
    } catch let CodecError.library(name, operation, code, message) {
        print("\(label): openh264 \(operation) failed (\(code)): \(message)")
        #expect(name == "openh264" && operation == "decode" && !message.isEmpty, sourceLocation: sourceLocation)
        return message
    } catch {
        Issue.record("\(label): unexpected \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@Suite("H.264 decoding through OpenH264")
struct OpenH264DecoderTests {
    let pool = BufferPool(name: "test-reference")

    @Test("OpenH264 reports its version")
    func version() {
        print("OpenH264 \(OpenH264.version)")
        #expect(OpenH264.version.hasPrefix("2."))
    }

    @Test("libx264 baseline decodes byte for byte like ffmpeg, each picture as soon as its access unit is in")
    func x264Baseline() throws {
        let fixture = try X264Fixture(["-profile:v", "baseline", "-bf", "0", "-g", "10"])
        let (pictures, perUnit, atFlush) = try decodeCounting(fixture.encodedFrames(),
                                                              with: OpenH264Decoder(format: h264Format()))
        #expect(perUnit == Array(repeating: 1, count: 30))
        #expect(atFlush == 0)
        #expect(pictures.map(\.pts.value) == Array(0..<30))
        #expect(pictures.allSatisfy { $0.width == 320 && $0.height == 240 && $0.duration == MediaTime(1, timebase: timebase) })
        #expect(identical(pictures, fixture.reference))
    }

    @Test("libx264 high profile without B-frames decodes byte for byte like ffmpeg, up to one access unit late")
    func x264High() throws {
        let fixture = try X264Fixture(["-profile:v", "high", "-bf", "0", "-g", "10"])
        let (pictures, perUnit, atFlush) = try decodeCounting(fixture.encodedFrames(),
                                                              with: OpenH264Decoder(format: h264Format()))
        // OpenH264 holds pictures of profiles other than baseline for reordering: the first comes out
        // with the second access unit, never more than one is held.
        print("high: pictures per access unit \(perUnit), \(atFlush) at flush")
        #expect(perUnit.first == 0)
        #expect(perUnit.reduce(0, +) + atFlush == 30)
        #expect(perUnit.indices.allSatisfy { perUnit[..<($0 + 1)].reduce(0, +) >= $0 })
        #expect(pictures.map(\.pts.value) == Array(0..<30))
        #expect(identical(pictures, fixture.reference))
    }

    @Test("libx264 main profile with 2 B-frames: right order and timing, but B pictures differ from ffmpeg")
    func x264MainWithBFrames() throws {
        let fixture = try X264Fixture(["-profile:v", "main", "-bf", "2", "-g", "10"])
        #expect(fixture.displayIndex != Array(0..<30), "the fixture should reorder pictures")
        let (pictures, perUnit, atFlush) = try decodeCounting(fixture.encodedFrames(),
                                                              with: OpenH264Decoder(format: h264Format()))
        print("main + B: pictures per access unit \(perUnit), \(atFlush) at flush")
        // Every access unit decodes without error and the pictures come out in display order, each with
        // the pts of the access unit that carried it.
        #expect(pictures.count == 30)
        #expect(pictures.map(\.pts.value) == Array(0..<30))

        let reference = try fixture.referencePictures(pool: pool)
        let psnr = zip(pictures, reference).map { PictureQuality.psnr($1, $0) }
        let types = (0..<30).map { display in
            let unit = fixture.units[fixture.displayIndex.firstIndex(of: display)!]
            return AnnexB.types(unit).contains(5) ? "I" : "-"
        }
        print("main + B: PSNR against ffmpeg per picture: "
              + zip(types, psnr).map { "\($0)\($1.isInfinite ? "=" : String(format: "%.0f", $1))" }.joined(separator: " "))
        // IDR pictures are exact; the others are close.
        #expect(zip(types, psnr).allSatisfy { $0 != "I" || $1.isInfinite })
        #expect(psnr.allSatisfy { $0 >= 40 })
        // OpenH264 2.3.1 is not exact on libx264's B macroblocks with 8x8 sub-partitions (x264's b8x8
        // partitions, on by default): those pictures, and the ones predicted from them, are 45-60 dB
        // off. With `partitions=none` the same stream decodes exactly (next test).
        withKnownIssue("OpenH264 2.3.1 B-slice decoding is not bit-exact") {
            #expect(identical(pictures, fixture.reference))
        }
    }

    @Test("B-frames without sub-partitions decode byte for byte like ffmpeg, in display order, across IDRs",
          arguments: [
              ["-profile:v", "main", "-bf", "2", "-g", "10", "-x264-params", "partitions=none"],
              ["-profile:v", "high", "-bf", "3", "-g", "30", "-x264-params", "partitions=none"],
          ])
    func bFramesExact(arguments: [String]) throws {
        let fixture = try X264Fixture(arguments, frames: 60)
        let (pictures, _, atFlush) = try decodeCounting(fixture.encodedFrames(), with: OpenH264Decoder(format: h264Format()))
        print("\(arguments.joined(separator: " ")): \(atFlush) pictures at flush")
        #expect(pictures.map(\.pts.value) == Array(0..<60))
        #expect(identical(pictures, fixture.reference))
    }

    @Test("a damaged P picture throws CodecError.library; decoding resumes exactly at the next IDR",
          arguments: ["baseline", "high"], ["truncated", "overwritten"])
    func damagedFrame(profile: String, damage: String) throws {
        let fixture = try X264Fixture(["-profile:v", profile, "-bf", "0", "-g", "10"])
        let reference = try fixture.referencePictures(pool: pool)
        var frames = fixture.encodedFrames()
        // Access unit 5 is a P picture with a single slice; damage the middle of its slice data.
        var unit = fixture.units[5]
        #expect(AnnexB.types(unit) == [1])
        switch damage {
        case "truncated":
            unit = Array(unit.prefix(unit.count / 2))
        default:
            var generator = SplitMix64(seed: 7)
            for index in (unit.count / 3)..<(unit.count * 2 / 3) { unit[index] = UInt8.random(in: 1...255, using: &generator) }
        }
        frames[5] = h264Frame(unit, pts: 5)

        let decoder = try OpenH264Decoder(format: h264Format())
        var pictures: [VideoFrame] = []
        for frame in frames[0..<5] { try decoder.decode(frame) { pictures.append($0) } }
        expectDecodeError("\(profile): damaged (\(damage)) P picture") { try decoder.decode(frames[5]) { pictures.append($0) } }
        // The P pictures that follow refer to the damaged one: each is reported.
        var failures = 0
        for (index, frame) in frames[6..<10].enumerated() {
            do {
                try decoder.decode(frame) { pictures.append($0) }
            } catch let CodecError.library(_, operation, code, message) {
                failures += 1
                if index == 0 { print("\(profile): P picture after the damaged one: \(operation) failed (\(code)): \(message)") }
            }
        }
        #expect(failures == 4)
        // Only the pictures before the damage came out (a held one may come out late), all of them exact.
        var resumed: [VideoFrame] = []
        for frame in frames[10...] {
            try decoder.decode(frame) { picture in
                if picture.pts.value < 10 { pictures.append(picture) } else { resumed.append(picture) }
            }
        }
        try decoder.flush { resumed.append($0) }
        #expect(pictures.map(\.pts.value) == Array(0..<5))
        #expect(identical(pictures, packedBytes(Array(reference[0..<5]))))
        #expect(resumed.map(\.pts.value) == Array(10..<30))
        #expect(identical(resumed, packedBytes(Array(reference[10...]))))
    }

    @Test("a picture missing its first slice throws, though OpenH264 itself reports no error; the next IDR decodes")
    func missingSlice() throws {
        let frames = try Samples.bunny(count: 14, pool: pool)
        let encoder = try OpenH264Encoder(format: rawFormat(), settings: VideoEncoderSettings(bitrate: 500_000, keyframeInterval: 10, threads: 2))
        let encoded = try encodeAll(frames, with: encoder)
        let decoder = try OpenH264Decoder(format: h264Format())
        var pictures: [VideoFrame] = []
        for frame in encoded[0..<5] { try decoder.decode(frame) { pictures.append($0) } }
        #expect(pictures.count == 5)

        let slices = AnnexB.nalUnits(Array(encoded[5].bytes))
        #expect(slices.map(AnnexB.type) == [1, 1])
        let message = expectDecodeError("P picture without its first slice") {
            try decoder.decode(h264Frame([0, 0, 0, 1] + slices[1], pts: 5)) { _ in Issue.record("a picture came out") }
        }
        #expect(message?.hasPrefix("no picture") == true)
        for (index, frame) in encoded[6..<10].enumerated() {
            #expect(throws: CodecError.self, "P picture \(index + 6) refers to the broken one") {
                try decoder.decode(frame) { _ in Issue.record("a picture came out") }
            }
        }
        pictures = []
        for frame in encoded[10...] { try decoder.decode(frame) { pictures.append($0) } }
        #expect(pictures.map(\.pts.value) == Array(10..<14))
        #expect(meanPSNR(Array(frames[10...]), pictures) >= 30)
    }

    @Test("garbage throws CodecError.library, before and after a good stream, and the next IDR decodes")
    func garbage() throws {
        let fixture = try X264Fixture(["-profile:v", "baseline", "-bf", "0", "-g", "10"])
        let reference = try fixture.referencePictures(pool: pool)
        let frames = fixture.encodedFrames()
        let decoder = try OpenH264Decoder(format: h264Format())

        var generator = SplitMix64(seed: 42)
        let noise = (0..<2000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let codes = [
            expectDecodeError("noise without start code") { try decoder.decode(h264Frame(noise)) { _ in } },
            expectDecodeError("noise after a start code") { try decoder.decode(h264Frame([0, 0, 0, 1] + noise)) { _ in } },
            expectDecodeError("a P slice before any IDR") { try decoder.decode(frames[1]) { _ in } },
        ]
        #expect(codes.allSatisfy { $0 != nil })
        #expect(throws: CodecError.self) { try decoder.decode(h264Frame([])) { _ in } }

        var pictures: [VideoFrame] = []
        for frame in frames[0..<10] { try decoder.decode(frame) { pictures.append($0) } }
        #expect(identical(pictures, packedBytes(Array(reference[0..<10]))))

        expectDecodeError("an IDR slice of noise") { try decoder.decode(h264Frame([0, 0, 0, 1, 0x65] + noise)) { _ in } }
        expectDecodeError("a truncated IDR") { try decoder.decode(h264Frame(Array(fixture.units[10].prefix(80)))) { _ in } }

        pictures = []
        for frame in frames[10...] { try decoder.decode(frame) { pictures.append($0) } }
        try decoder.flush { pictures.append($0) }
        #expect(identical(pictures, packedBytes(Array(reference[10...]))))
    }

    // Resolution changes and flushing mid-stream: H264DecoderTests, over every H.264 decoder.

    @Test("decoder settings are checked; any thread count decodes the same")
    func settings() throws {
        #expect(throws: CodecError.self) { try OpenH264Decoder(format: rawFormat()) }
        #expect(throws: CodecError.self) { try OpenH264Decoder(format: VideoFormat(encoding: .compressed(.vp8), width: 320, height: 240, frameRate: frameRate)) }
        #expect(throws: CodecError.self) { try OpenH264Decoder(format: h264Format(), threads: 0) }
        #expect(throws: CodecError.self) { try OpenH264Decoder(format: h264Format(), threads: 65) }
        let fixture = try X264Fixture(["-profile:v", "baseline", "-bf", "0", "-g", "10"])
        let pictures = try decodeAll(fixture.encodedFrames(), with: OpenH264Decoder(format: h264Format(), threads: 2))
        #expect(identical(pictures, fixture.reference))
    }

    @Test("a warm decoder's pool stops allocating")
    func poolStaysFlat() throws {
        let fixture = try X264Fixture(["-profile:v", "main", "-bf", "2", "-g", "10"], frames: 60)
        let decoder = try OpenH264Decoder(format: h264Format())
        var allocations: [Int] = []
        for frame in fixture.encodedFrames() {
            try decoder.decode(frame) { _ in }
            allocations.append(decoder.outputPool.allocations)
        }
        try decoder.flush { _ in }
        print("OpenH264 decoder pool allocations after 60 frames: \(allocations.last!)")
        #expect(Set(allocations.suffix(40)).count == 1)
        #expect(decoder.outputPool.outstanding == 0)
    }

    @Test("the decoder provider describes and makes OpenH264 decoders")
    func provider() throws {
        let decoders = OpenH264DecoderProvider()
        #expect(decoders.name == "openh264" && decoders.codec == .h264)
        #expect(decoders.outputCaps(for: h264Format()) == Caps(.video(rawFormat())))
        #expect(try decoders.makeDecoder(format: h264Format(), threads: 1) is OpenH264Decoder)
        var registry = CodecRegistry()
        registry.register(decoders)
        #expect(try registry.videoDecoder(for: .h264).name == "openh264")
    }

    @Test("DECODING_STATE bits are named")
    func stateNames() {
        #expect(OpenH264.describe(decodingState: 0) == "dsErrorFree")
        #expect(OpenH264.describe(decodingState: 0x06) == "dsRefLost|dsBitstreamError")
        #expect(OpenH264.describe(decodingState: 0x10_0010) == "dsNoParamSets|0x100000")
    }
}

