import Foundation
import Sluice
import Testing
import TestSupport

/// The transcode paths other than Y4M <-> IVF.
@Suite struct ContainerPairTests {
    @Test func wavToWAVKeepsEverySample() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = dir.appendingPathComponent("tone.wav").path
            let output = dir.appendingPathComponent("copy.wav").path
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.5",
                                    "-ac", "2", "-c:a", "pcm_s16le", input])
            let transcoder = try Transcoder(input: input, output: output)
            let summary = try transcoder.run()
            #expect(transcoder.outputFormat == .audio(AudioFormat(encoding: .samples(.s16), sampleRate: 48000, channels: 2)))
            #expect(abs(summary.mediaDuration - 0.5) < 1e-9)

            func samples(_ path: String) throws -> [UInt8] {
                let reader = try WAVReader(path: path, pool: BufferPool(name: "wav"))
                var bytes: [UInt8] = []
                while let frame = try reader.next() { bytes += frame.bytes }
                return bytes
            }
            let original = try samples(input), copied = try samples(output)
            #expect(original.count == 24_000 * 4)
            #expect(copied == original)
        }
    }

    @Test func ivfToIVFReencodesAtTheRequestedBitrate() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.appendingPathComponent("smaller.ivf").path
            var options = TranscodeOptions()
            options.bitrate = 250_000
            options.maxFrames = 50
            let summary = try Transcoder(input: TestSupport.sampleIVF, output: output, options: options).run()
            #expect(summary.frames == 50)
            #expect(summary.bitrate < 400_000, "asked for 250 kbit/s, got \(summary.bitrate)")
            let probe = try TestSupport.probeVideo(output)
            #expect(probe.codec == "vp8" && probe.frames == 50 && probe.width == 640 && probe.height == 360)
        }
    }

    @Test func y4mToY4MCopiesPicturesExactly() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try TranscodeTests.makeReference(in: dir, frames: 10)
            let output = dir.appendingPathComponent("copy.y4m").path
            #expect(try Transcoder(input: reference, output: output).run().frames == 10)
            let a = try TranscodeTests.readAll(reference), b = try TranscodeTests.readAll(output)
            #expect(a.count == 10 && b.count == 10)
            for (x, y) in zip(a, b) { #expect(PictureQuality.psnr(x, y) == .infinity) }
        }
    }

    @Test func audioAndVideoDoNotMix() throws {
        #expect(throws: TranscodeError.self) { try Transcoder(input: TestSupport.sampleIVF, output: "/tmp/x.wav") }
    }
}

/// Size and frame-rate conversion inserted by the transcoder.
@Suite struct ConversionPipelineTests {
    @Test func sizeAndFrameRateAreConverted() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.appendingPathComponent("small.ivf").path
            var options = TranscodeOptions()
            options.size = (320, 180)
            options.frameRate = Rational(15, 1)
            let transcoder = try Transcoder(input: TestSupport.sampleIVF, output: output, options: options)
            let summary = try transcoder.run()
            // 132 frames at 25 fps last 5.28 s: 80 slots of 1/15 s.
            #expect(summary.frames == 80)
            #expect(transcoder.outputFormat == .video(VideoFormat(encoding: .compressed(.vp8), width: 320, height: 180,
                                                                   frameRate: Rational(15, 1))))
            let probe = try TestSupport.probeVideo(output)
            #expect(probe.width == 320 && probe.height == 180 && probe.frames == 80)
        }
    }
}
