import Foundation
import Sluice
import Testing
import TestSupport

/// Every input -> output pair of `sluice transcode`: the video formats (.y4m, .ivf, .h264) among
/// themselves and the audio formats (.wav, .opus) among themselves. Inputs are made by ffmpeg; each
/// output is read back by ffmpeg (an independent decoder) and compared with the reference the
/// input was made from: counts exactly, quality by PSNR/SNR.
@Suite struct TranscodeMatrixTests {
    static let width = 320, height = 240, frames = 30

    /// The reference pictures (the sample scaled by ffmpeg) and an input file of `container` made
    /// from them by ffmpeg: lossless for Y4M, 1.5 Mbit/s for the codecs (H.264 without B-frames, so
    /// that OpenH264 decodes it exactly).
    static func videoInput(_ container: Container, in dir: URL) throws -> (reference: String, input: String) {
        let reference = dir.file("reference.y4m")
        try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-vf", "scale=\(width):\(height)", "-pix_fmt", "yuv420p",
                                "-frames:v", "\(frames)", reference])
        let input = dir.file("input.\(container.rawValue)")
        switch container {
        case .y4m: return (reference, reference)
        case .ivf: try TestSupport.ffmpeg(["-i", reference, "-c:v", "libvpx", "-b:v", "1500k", input])
        case .h264, .mp4, .mkv: try TestSupport.ffmpeg(["-i", reference, "-c:v", "libx264", "-bf", "0", "-b:v", "1500k", input])
        case .webm: try TestSupport.ffmpeg(["-i", reference, "-c:v", "libvpx", "-b:v", "1500k", input])
        case .wav, .opus: preconditionFailure("not video")
        }
        return (reference, input)
    }

    /// Mean PSNR of `path` decoded by ffmpeg against the pictures of `reference`.
    static func psnr(of path: String, against reference: String, in dir: URL) throws -> (frames: Int, psnr: Double) {
        let decoded = dir.file("decoded-by-ffmpeg.y4m")
        try TestSupport.ffmpeg(["-i", path, "-pix_fmt", "yuv420p", decoded])
        let a = try TranscodeTests.readAll(reference), b = try TranscodeTests.readAll(decoded)
        var sum: UInt64 = 0, samples = 0
        for (x, y) in zip(a, b) {
            let (s, n) = PictureQuality.squaredError(x, y)
            sum += s
            samples += n
        }
        return (b.count, sum == 0 ? .infinity : PictureQuality.psnr(meanSquaredError: Double(sum) / Double(samples)))
    }

    static let videoPairs: [(Container, Container)] = [.y4m, .ivf, .h264].flatMap { a in [.y4m, .ivf, .h264].map { (a, $0) } }
        // Containers (libavformat) from and to the raw pictures, and into each other.
        + [.mp4, .webm, .mkv].flatMap { [(Container.y4m, $0), ($0, .y4m)] } + [(.mp4, .webm), (.webm, .mp4), (.mkv, .ivf)]

    @Test(arguments: videoPairs)
    func videoPairKeepsEveryFrameAndQuality(from: Container, to: Container) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let (reference, input) = try Self.videoInput(from, in: dir)
            let output = dir.file("output.\(to.rawValue)")
            var options = TranscodeOptions()
            options.bitrate = 1_500_000
            let summary = try Transcoder(input: input, output: output, options: options).run()
            #expect(summary.frames == Self.frames)
            #expect(summary.corruptFrames == 0 && summary.skippedFrames == 0)

            let probe = try TestSupport.probeVideo(output)
            #expect(probe.codec == ["y4m": "rawvideo", "ivf": "vp8", "h264": "h264", "mp4": "h264", "webm": "vp8", "mkv": "vp8"][to.rawValue])
            #expect(probe.width == Self.width && probe.height == Self.height && probe.frames == Self.frames)
            let quality = try Self.psnr(of: output, against: reference, in: dir)
            print("\(from) -> \(to): PSNR \(quality.psnr) dB")
            #expect(quality.frames == Self.frames)
            // Measured 36.5-40.5 dB for the lossy pairs at 1.5 Mbit/s (one or two generations of loss);
            // a raw copy must be exact.
            #expect(quality.psnr >= (from == .y4m && to == .y4m ? .infinity : 33), "\(from) -> \(to): \(quality.psnr) dB")
        }
    }

    /// The command of the issue's "done when": the sample to H.264 at 640x360, 15 fps.
    @Test func sampleToH264AtFifteenFramesPerSecondThroughTheCLI() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let output = dir.file("out.h264")
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let result = try TestSupport.run(sluice, ["transcode", TestSupport.sampleIVF, output, "--size", "640x360",
                                                      "--fps", "15", "--quiet"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stdoutText.contains("output   video/H264 640x360@15"), "\(result.stdoutText)")
            // 132 frames at 25 fps last 5.28 s: 80 slots of 1/15 s. The SPS carries the new rate.
            let stream = try TestSupport.ffprobe(output, entries: "stream=codec_name,width,height,r_frame_rate,nb_read_frames",
                                                 extra: ["-count_frames"])
            #expect(stream["codec_name"] == "h264" && stream["width"] == "640" && stream["height"] == "360")
            #expect(stream["r_frame_rate"] == "15/1")
            #expect(stream["nb_read_frames"] == "80")
        }
    }

    @Test func encoderIsChosenByName() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let (_, input) = try Self.videoInput(.y4m, in: dir)
            for name in ["openh264", "x264"] {
                var options = TranscodeOptions()
                options.encoderName = name
                let output = dir.file("\(name).h264")
                #expect(try Transcoder(input: input, output: output, options: options).run().frames == Self.frames)
                #expect(try TestSupport.probeVideo(output).frames == Self.frames)
                // x264 signs its streams with an SEI message naming itself; OpenH264 does not.
                let signed = try Data(contentsOf: URL(fileURLWithPath: output)).range(of: Data("x264 - core".utf8)) != nil
                #expect(signed == (name == "x264"), "\(name)")
            }
        }
    }

    @Test func codecsAContainerCannotHoldAreRefused() throws {
        var options = TranscodeOptions()
        options.codec = .vp8
        #expect(throws: TranscodeError.incompatible("/tmp/out.h264: a .h264 file holds H264, not VP8")) {
            try Transcoder(input: TestSupport.sampleIVF, output: "/tmp/out.h264", options: options)
        }
        options.codec = .h264
        #expect(throws: TranscodeError.incompatible("/tmp/out.y4m: a .y4m file holds raw media only, not H264")) {
            try Transcoder(input: TestSupport.sampleIVF, output: "/tmp/out.y4m", options: options)
        }
    }

    /// A damaged P picture in a raw H.264 stream: counted, the pictures depending on it skipped, and
    /// decoding resumes at the next IDR; the run succeeds.
    @Test func corruptH264IsCountedAndDecodingResumesAtTheNextIDR() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let clean = dir.file("clean.h264")
            try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-frames:v", "60", "-c:v", "libx264", "-bf", "0",
                                    "-g", "20", "-b:v", "800k", clean])
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clean)))
            // Start codes of the slices (NAL types 1 and 5): one slice a picture, IDRs at 0, 20 and 40.
            let slices = (0..<(bytes.count - 3)).filter {
                bytes[$0] == 0 && bytes[$0 + 1] == 0 && bytes[$0 + 2] == 1 && [1, 5].contains(bytes[$0 + 3] & 0x1F)
            }
            #expect(slices.count == 60)
            let start = slices[25] + 3 + (slices[26] - slices[25]) / 3
            for i in start..<(start + 40) { bytes[i] = i % 2 == 0 ? 0 : 0xFF }
            let damaged = dir.file("damaged.h264")
            try Data(bytes).write(to: URL(fileURLWithPath: damaged))

            let summary = try Transcoder(input: damaged, output: dir.file("out.y4m")).run()
            #expect(summary.corruptFrames == 1)
            #expect(summary.skippedFrames == 14, "pictures 26 to 39 refer to the damaged one")
            #expect(summary.frames == 25 + 20)
            #expect(summary.firstDecodeError?.contains(try CodecRegistry.builtIn.videoDecoder(for: .h264).name) == true)
        }
    }
}

/// The audio pairs, and resampling inserted where rates differ.
@Suite struct AudioTranscodeMatrixTests {
    /// One second of a music-like stereo mix at 48 kHz (two tones each side, one of them tremolo).
    static let mix = "aevalsrc=0.3*sin(2*PI*440*t)+0.2*sin(2*PI*1250*t)*sin(2*PI*3*t)|0.3*sin(2*PI*660*t)+0.1*sin(2*PI*2000*t):s=48000:d=1"

    static func reference(in dir: URL, sampleRate: Int = 48_000) throws -> String {
        let path = dir.file("reference-\(sampleRate).wav")
        try TestSupport.ffmpeg(["-f", "lavfi", "-i", mix, "-ar", "\(sampleRate)", "-c:a", "pcm_s16le", path])
        return path
    }

    /// 16-bit interleaved samples of any audio file, decoded and converted by ffmpeg.
    static func samples(_ path: String, sampleRate: Int = 48_000, channels: Int = 2) throws -> [Int16] {
        let raw = try TestSupport.ffmpeg(["-i", path, "-f", "s16le", "-ar", "\(sampleRate)", "-ac", "\(channels)", "-"]).stdout
        return raw.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Signal-to-noise ratio of `test` against `reference`, in dB, over their common length.
    static func snr(_ test: [Int16], _ reference: [Int16]) -> Double {
        var signal = 0.0, noise = 0.0
        for (t, r) in zip(test, reference) {
            signal += Double(r) * Double(r)
            noise += (Double(t) - Double(r)) * (Double(t) - Double(r))
        }
        return noise == 0 ? .infinity : 10 * log10(signal / noise)
    }

    @Test(arguments: [(Container.wav, Container.wav), (.wav, .opus), (.opus, .wav), (.opus, .opus)])
    func audioPairKeepsDurationAndQuality(from: Container, to: Container) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try Self.reference(in: dir)
            var input = reference
            if from == .opus {
                input = dir.file("input.opus")
                try TestSupport.ffmpeg(["-i", reference, "-c:a", "libopus", "-b:a", "96k", input])
            }
            let output = dir.file("output.\(to.rawValue)")
            let summary = try Transcoder(input: input, output: output).run()
            #expect(abs(summary.mediaDuration - 1) < 1e-9, "\(summary.mediaDuration) s")
            #expect(summary.corruptFrames == 0)

            let stream = try TestSupport.ffprobe(output, entries: "stream=codec_name,channels")
            #expect(stream["codec_name"] == (to == .opus ? "opus" : "pcm_s16le"))
            #expect(stream["channels"] == "2")
            let decoded = try Self.samples(output), original = try Self.samples(reference)
            // Ogg Opus trims its end exactly (RFC 7845 §4.4), so the count is exact whatever the path.
            #expect(decoded.count == original.count, "\(decoded.count / 2) samples, not \(original.count / 2)")
            let snr = Self.snr(decoded, original)
            print("\(from) -> \(to): SNR \(snr) dB")
            // Measured about 21 dB for one Opus generation at 64 kbit/s, 19 for two; a WAV copy is exact.
            #expect(snr >= (from == .wav && to == .wav ? .infinity : 15), "\(from) -> \(to): \(snr) dB")
        }
    }

    /// 44.1 kHz (no Opus rate) is resampled to 48 kHz for Opus; WAV output takes any rate and channel count.
    @Test func ratesAndChannelsAreConverted() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let cd = try Self.reference(in: dir, sampleRate: 44_100)
            let opus = dir.file("from-44k.opus")
            let transcoder = try Transcoder(input: cd, output: opus)
            _ = try transcoder.run()
            #expect(transcoder.outputFormat == .audio(AudioFormat(encoding: .compressed(.opus), sampleRate: 48_000, channels: 2)))
            let decoded = try Self.samples(opus), original = try Self.samples(try Self.reference(in: dir))
            #expect(abs(decoded.count - original.count) <= 2 * 48, "\(decoded.count / 2) samples")
            print("44.1 kHz WAV -> Opus: SNR \(Self.snr(decoded, original)) dB")
            #expect(Self.snr(decoded, original) >= 12)

            var options = TranscodeOptions()
            options.sampleRate = 16_000
            options.channels = 1
            let small = dir.file("mono-16k.wav")
            let converter = try Transcoder(input: cd, output: small, options: options)
            let summary = try converter.run()
            #expect(converter.outputFormat == .audio(AudioFormat(encoding: .samples(.s16), sampleRate: 16_000, channels: 1)))
            #expect(abs(summary.mediaDuration - 1) < 0.005)
            let stream = try TestSupport.ffprobe(small, entries: "stream=sample_rate,channels")
            #expect(stream["sample_rate"] == "16000" && stream["channels"] == "1")
        }
    }

    @Test func anOpusRateTheUserAsksForIsKeptAndOthersAreRefused() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let reference = try Self.reference(in: dir)
            var options = TranscodeOptions()
            options.sampleRate = 16_000
            options.bitrate = 24_000
            let transcoder = try Transcoder(input: reference, output: dir.file("16k.opus"), options: options)
            #expect(transcoder.outputFormat == .audio(AudioFormat(encoding: .compressed(.opus), sampleRate: 16_000, channels: 2)))
            options.sampleRate = 44_100
            let refusal = #expect(throws: EncodingStageError.self) {
                try Transcoder(input: reference, output: dir.file("x.opus"), options: options)
            }
            #expect(refusal?.description.contains("cannot take 44100 Hz") == true)
        }
    }

    /// A damaged Ogg page in an Opus file (a flipped bit fails its CRC): the reader skips and counts
    /// it, the decoder conceals the missing packets by their timestamps, and the run goes on.
    @Test func damagedOpusPageIsCountedAndConcealed() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let clean = dir.file("clean.opus")
            try TestSupport.ffmpeg(["-i", try Self.reference(in: dir), "-c:a", "libopus", "-b:a", "64k",
                                    "-page_duration", "200000", clean])
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clean)))
            let capture = Array("OggS".utf8)
            let pages = (0..<(bytes.count - 3)).filter { Array(bytes[$0..<($0 + 4)]) == capture }
            try #require(pages.count >= 6, "OpusHead, OpusTags and 200 ms audio pages")
            bytes[pages[4] + 100] ^= 0x10  // the third audio page
            let damaged = dir.file("damaged.opus")
            try Data(bytes).write(to: URL(fileURLWithPath: damaged))

            let output = dir.file("out.wav")
            let summary = try Transcoder(input: damaged, output: output).run()
            #expect(summary.corruptFrames == 1)
            #expect(summary.firstDecodeError?.contains("CRC") == true, "\(summary.firstDecodeError ?? "")")
            #expect(try Self.samples(output).count == 96_000, "the lost packets are concealed, not dropped")
        }
    }
}
