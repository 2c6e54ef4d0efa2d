import Foundation
import Sluice
import Testing
import TestSupport

/// A damaged frame in the middle of a stream: counted, dropped, and decoding resumes cleanly at the
/// next keyframe; nothing damaged reaches the output and the run does not fail.
@Suite struct CorruptStreamTests {
    /// Byte offset of frame `index`'s 12-byte IVF frame header.
    static func frameOffset(_ index: Int, in bytes: [UInt8]) -> Int {
        var offset = 32
        for _ in 0..<index {
            let size = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            offset += 12 + size
        }
        return offset
    }

    @Test func aCorruptFrameIsCountedAndDecodingResumesAtTheNextKeyframe() throws {
        try TestSupport.withTemporaryDirectory { dir in
            // The sample's keyframes are frames 0, 50 and 100.
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: TestSupport.sampleIVF)))
            let payload = Self.frameOffset(60, in: bytes) + 12
            // An inter-frame tag whose first partition claims far more bytes than the frame holds
            // (RFC 6386 §9.1), which libvpx rejects.
            for i in 0..<16 { bytes[payload + i] = 0xFF }
            let damaged = dir.appendingPathComponent("damaged.ivf").path
            try Data(bytes).write(to: URL(fileURLWithPath: damaged))

            let output = dir.appendingPathComponent("out.y4m").path
            let summary = try Transcoder(input: damaged, output: output).run()
            #expect(summary.corruptFrames == 1)
            #expect(summary.skippedFrames == 39, "frames 61 to 99 depend on the lost one")
            #expect(summary.frames == 60 + 32)
            #expect(summary.firstDecodeError?.contains("libvpx") == true)
            #expect(try TestSupport.probeVideo(output).frames == 92)
        }
    }
}
