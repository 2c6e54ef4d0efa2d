import CodecOpus
import DeviceALSA
import Foundation
import MediaCodecs
import MediaCore
import MediaFiles
import MediaNodes
import TestSupport
import Testing

/// ALSA capture and playback through alsa-lib, on the file-backed PCMs of `ALSATestConfiguration`
/// (no sound card needed).
@Suite("ALSA devices")
struct ALSADeviceTests {
    let configuration = ALSATestConfiguration.shared
    static let stereo48k = AudioFormat(encoding: .samples(.s16), sampleRate: 48_000, channels: 2)

    /// Every frame `source` produces until it ends, driven by hand.
    func captureAll(_ source: ALSACaptureNode) throws -> [AudioFrame] {
        try source.start(output: .audio(source.format), context: .standalone(name: source.name))
        defer { source.close() }
        var frames: [AudioFrame] = []
        while case .item(let frame) = try source.produce() { frames.append(frame) }
        return frames
    }

    @Test("the PCM list includes null and the test configuration's PCMs, without a sound card")
    func listsPCMs() {
        let pcms = ALSADevices.pcms()
        let names = Set(pcms.map(\.name))
        #expect(names.isSuperset(of: ["null", "sluice_capture", "sluice_playback", "sluice_null"]), "\(names)")
        let capture = pcms.first { $0.name == "sluice_capture" }
        #expect(capture?.description == "Sluice test capture (reads a raw file)")
        #expect(capture?.capture == true && capture?.playback == true)
    }

    @Test("a missing device fails to open, naming it", arguments: ["alsa:nosuchpcm", "nosuchpcm"])
    func missingDevice(name: String) throws {
        let error = try #require(throws: ALSAError.self) {
            try ALSACaptureNode(device: name, format: Self.stereo48k)
        }
        guard case .noSuchDevice(let device, let reason) = error else { Issue.record("\(error)"); return }
        #expect(device == name)
        #expect(!reason.isEmpty)
        #expect("\(error)".contains(name))
        #expect(throws: ALSAError.noSuchDevice(name: name, reason: reason)) { try ALSAPlaybackNode(device: name) }
    }

    @Test("s16 capture gives exactly the samples of the file behind the PCM, in periods, timed by samples")
    func captureS16() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let raw = try TestAudio.raw(seconds: 1)
            try raw.write(to: URL(fileURLWithPath: dir.file("in.raw")))
            let source = try ALSACaptureNode(device: ALSATestConfiguration.captureDevice(reading: dir.file("in.raw")),
                                             format: Self.stereo48k, maxDuration: .seconds(1))
            #expect(source.deviceFormat == Self.stereo48k)
            try source.start(output: .audio(source.format), context: .standalone(name: source.name))
            defer { source.close() }
            var captured = Data(), periods = 0
            while case .item(let frame) = try source.produce() {
                #expect(frame.sampleCount == source.periodFrames)
                #expect(frame.pts == MediaTime(Int64(periods * source.periodFrames), timebase: Rational(1, 48_000)))
                captured += Data(frame.bytes)
                periods += 1
            }
            #expect(periods * source.periodFrames == 48_000)
            #expect(captured == raw)
            #expect(source.xruns == 0)
            // Pooled storage: the frames handed on and dropped are reused, not allocated per period.
            #expect(source.pool.allocations <= 2)
        }
    }

    @Test("the test PCMs without arguments use the files the configuration was written with, as a subprocess would")
    func defaultFiles() throws {
        let raw = try TestAudio.raw(seconds: 0.1)
        try raw.write(to: URL(fileURLWithPath: configuration.captureInput))
        #expect(ProcessInfo.processInfo.environment["ALSA_CONFIG_PATH"] == configuration.path)
        let source = try ALSACaptureNode(device: "sluice_capture", format: Self.stereo48k, maxDuration: .milliseconds(100))
        #expect(try captureAll(source).reduce(Data()) { $0 + Data($1.bytes) } == raw)
    }

    @Test("float capture from an s16-only device is the same signal within 1 LSB")
    func captureFloat() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let raw = try TestAudio.raw(seconds: 1)
            try raw.write(to: URL(fileURLWithPath: dir.file("in.raw")))
            let format = AudioFormat(encoding: .samples(.f32), sampleRate: 48_000, channels: 2)
            let source = try ALSACaptureNode(device: ALSATestConfiguration.captureDevice(reading: dir.file("in.raw"), s16Only: true),
                                             format: format, maxDuration: .seconds(1))
            #expect(source.deviceFormat == Self.stereo48k)
            let captured = floats(try captureAll(source))
            let expected = floats(raw, format: .s16)
            #expect(captured.count == expected.count)
            #expect(zip(captured, expected).allSatisfy { abs($0 - $1) <= 1.0 / 32768 })
        }
    }

    @Test("a rate the device lacks is captured at its rate and resampled by speexdsp, timed by output samples")
    func captureResampled() throws {
        let format = AudioFormat(encoding: .samples(.f32), sampleRate: 16_000, channels: 2)
        let source = try ALSACaptureNode(device: "sluice_capture_48k", format: format, maxDuration: .seconds(1))
        #expect(source.deviceFormat.sampleRate == 48_000)
        let frames = try captureAll(source)
        #expect(frames.allSatisfy { $0.sampleRate == 16_000 && $0.channels == 2 && $0.sampleFormat == .f32 })
        #expect(frames.map(\.sampleCount).reduce(0, +) == 16_000)
        var next = MediaTime.zero(Rational(1, 16_000))
        for frame in frames {
            #expect(frame.pts == next)
            next = next + frame.duration
        }
    }

    @Test("a capture without maxDuration runs until the graph stops")
    func captureUntilCancelled() throws {
        let graph = Graph()
        let source = try ALSACaptureNode(device: "sluice_capture_48k", format: Self.stereo48k)
        let sink = CollectingSink<AudioFrame>(accepting: .anyAudio)
        graph.add(sink, input: graph.add(source))
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.2)
            graph.cancel()
        }
        let error = #expect(throws: GraphError.self) { try graph.run() }
        #expect(error.map { "\($0)" } == "cancelled")
        #expect(!sink.items.isEmpty)
    }

    @Test("capture → Opus encoder → Ogg Opus file lasts as long as captured")
    func captureToOpus() throws {
        try TestSupport.withTemporaryDirectory { dir in
            try TestAudio.raw(seconds: 2).write(to: URL(fileURLWithPath: dir.file("in.raw")))
            let graph = Graph()
            let source = try ALSACaptureNode(device: ALSATestConfiguration.captureDevice(reading: dir.file("in.raw")),
                                             format: Self.stereo48k, maxDuration: .seconds(2))
            let encoder = AudioEncoderNode(OpusEncoderProvider(), settings: AudioEncoderSettings())
            let sink = OggOpusFileSink(path: dir.file("out.opus"), preSkip: { encoder.preSkip })
            graph.add(sink, input: graph.add(encoder, input: graph.add(source)))
            try graph.run()

            let duration = Double(try TestSupport.ffprobe(dir.file("out.opus"), entries: "format=duration")["duration"] ?? "") ?? 0
            let expected = 2 + Double(encoder.preSkip) / 48_000
            #expect(abs(duration - expected) <= 0.020, "ffprobe: \(duration) s, expected \(expected) s")
            let decoded = try TestSupport.ffmpeg(["-i", dir.file("out.opus"), "-f", "s16le", "-ac", "2", "-"]).stdout
            #expect(abs(decoded.count / 4 - 96_000) <= 960)
        }
    }

    @Test("Ogg Opus file → decoder → playback on a file PCM writes the decoded samples as WAV")
    func opusToPlayback() throws {
        try TestSupport.withTemporaryDirectory { dir in
            try TestAudio.raw(seconds: 2).write(to: URL(fileURLWithPath: dir.file("in.raw")))
            try TestSupport.ffmpeg(["-f", "s16le", "-ar", "48000", "-ac", "2", "-i", dir.file("in.raw"), "-c:a", "libopus",
                                    dir.file("in.opus")])
            /// Decodes in.opus to s16 into `sink`.
            func decode<Sink: MediaSink>(into sink: Sink) throws where Sink.Input == AudioFrame {
                let graph = Graph()
                let source = try OggOpusFileSource(path: dir.file("in.opus"))
                let decoder = AudioDecoderNode(OpusDecoderProvider(), preferredOutput: [.audio(.exactly(.samples(.s16)))],
                                               preSkip: source.preSkip)
                graph.add(sink, input: graph.add(decoder, input: graph.add(source)))
                try graph.run()
            }
            let playback = try ALSAPlaybackNode(device: ALSATestConfiguration.playbackDevice(writing: dir.file("played.wav")))
            try decode(into: playback)
            try decode(into: WAVFileSink(path: dir.file("reference.wav")))
            #expect(playback.samplesWritten == 96_000)
            #expect(playback.xruns == 0)

            let played = try WAVReader(path: dir.file("played.wav"), pool: BufferPool(name: "played"))
            let reference = try WAVReader(path: dir.file("reference.wav"), pool: BufferPool(name: "reference"))
            #expect(played.format == reference.format)
            func samples(_ reader: WAVReader) throws -> Data {
                var data = Data()
                while let frame = try reader.next(maxSamples: 4096) { data += Data(frame.bytes) }
                return data
            }
            let playedSamples = try samples(played), referenceSamples = try samples(reference)
            #expect(playedSamples.count == 96_000 * 4)
            #expect(playedSamples == referenceSamples)
        }
    }

    @Test("playback to the null PCM takes every frame and drains", arguments: ["null", "sluice_null"])
    func playbackToNull(device: String) throws {
        let playback = try ALSAPlaybackNode(device: device)
        #expect(playback.inputCaps.matches(.audio(Self.stereo48k)))
        let pool = BufferPool(name: "test")
        let frames = TestAudio.frames(try TestAudio.raw(seconds: 0.5), format: Self.stereo48k, pool: pool)
        let graph = Graph()
        graph.add(playback, input: graph.add(ItemsSource(frames, format: .audio(Self.stereo48k))))
        try graph.run()
        #expect(playback.samplesWritten == 24_000)
        #expect(playback.xruns == 0)
    }
}
