import DeviceALSA
import DeviceV4L2
import Glibc
import MediaCodecs
import MediaContainers
import MediaCore
import MediaFiles
import MediaNodes

/// The source side of every pipeline that reads what a user names (`MediaEndpoint`): the file
/// source (looped when asked, paced as asked), its demuxer and decoder, or the camera or
/// microphone. `sluice transcode` and `sluice send` (`Transcoder`) and a peer connection's tracks
/// made from a name (`LocalTrack.input`) are all built on it, so every input reads the same way.
///
/// One chain adds one input to one graph; what it learns of the input while doing so (the pictures'
/// format, the frames to expect, the decoder's counts) is read from it afterwards.
final class SourceChain: @unchecked Sendable {
    let input: String
    let endpoint: MediaEndpoint
    let options: TranscodeOptions
    let registry: CodecRegistry

    /// The node that reads the input, and the last node the chain added.
    private(set) var firstNode: (any MediaNode)?
    private(set) var lastNode: (any MediaNode)?
    /// Frames the input holds, when that can be known up front (for progress).
    private(set) var expectedFrames: Int?
    /// The pool raw input pictures come from (Y4M input only).
    private(set) var sourcePool: BufferPool?
    /// The pictures' size and rate as the input says them.
    private(set) var pictureFormat: VideoFormat?
    /// A container input's demuxer, for an audio branch beside the video.
    private(set) var demuxer: ContainerDemuxer?
    /// What the decoder (or the file reader) found damaged, and the first such error.
    private(set) var decoderStatistics: () -> (corrupt: Int, skipped: Int, firstError: String?) = { (0, 0, nil) }

    /// `options` used: pacing, loop, maxFrames, maxDuration, decoderName, threads, inputFrameRate;
    /// for a camera, size and frameRate; for a microphone, sampleRate and channels.
    init(_ input: String, options: TranscodeOptions, registry: CodecRegistry) throws {
        self.input = input
        endpoint = try MediaEndpoint(naming: input)
        self.options = options
        self.registry = registry
    }

    // MARK: Video

    /// Raw pictures: a Y4M file as it is, a compressed file through its decoder, or a camera.
    func pictures(into graph: Graph) throws -> Port<VideoFrame> {
        guard case .file(_, let container) = endpoint else { return try camera(into: graph) }
        if container == .y4m {
            let (source, port) = try addFileSource(to: graph) { try Y4MFileSource(path: self.input, maxFrames: $1, pacing: $0) }
            sourcePool = source.pool
            let format = source.reader.format
            let frameBytes = format.width * format.height + 2 * ((format.width + 1) / 2) * ((format.height + 1) / 2) + 6
            var info = stat()
            if !options.loop, stat(input, &info) == 0 {
                expectedFrames = min(Int(info.st_size) / frameBytes, options.maxFrames ?? .max)
            }
            pictureFormat = format
            return port
        }
        let compressed = try encodedVideo(into: graph)
        let decoder = VideoDecoderNode(try registry.videoDecoder(for: compressed.codec, named: options.decoderName),
                                       threads: options.threads)
        // Read as fast as possible, the file feeds an encoder or a file: the encoder sets the pace.
        decoder.lowPriorityThreads = options.pacing == .asFastAsPossible
        decoderStatistics = { (decoder.corruptFrames, decoder.skippedFrames, decoder.firstError) }
        lastNode = decoder
        return graph.add(decoder, input: compressed.port)
    }

    /// A V4L2 camera, capturing the format nearest the size and rate asked for (640x480 at 30 fps,
    /// getUserMedia's usual default, when none is). It takes format changes itself
    /// (`adaptOutputFormat`), restarting its capture, so no adaptation nodes follow it.
    private func camera(into graph: Graph) throws -> Port<VideoFrame> {
        guard case .camera(let path) = endpoint else { preconditionFailure("\(endpoint) is not a camera") }
        let constraints = VideoConstraints(width: .init(ideal: options.size?.width ?? 640),
                                           height: .init(ideal: options.size?.height ?? 480),
                                           frameRate: .init(ideal: options.frameRate?.doubleValue ?? 30))
        // A duration counts pictures at the rate asked for.
        let pictures = options.maxDuration.map { Int(($0 * (constraints.frameRate.ideal ?? 30)).rounded()) }
        let camera = try V4L2CaptureNode(device: path, constraints: constraints,
                                         maxFrames: [options.maxFrames, pictures].compactMap { $0 }.min())
        expectedFrames = camera.maxFrames
        (firstNode, lastNode) = (camera, camera)
        return graph.add(camera)
    }

    /// The frames of a compressed video file as they are, and their codec.
    func encodedVideo(into graph: Graph) throws -> (port: Port<EncodedFrame>, codec: CodecName) {
        guard case .file(_, let container) = endpoint else {
            throw TranscodeError.incompatible("\(input): a device gives raw media, not compressed frames")
        }
        switch container {
        case .ivf:
            let (source, port) = try addFileSource(to: graph) { try IVFFileSource(path: self.input, maxFrames: $1, pacing: $0) }
            if source.reader.header.frameCount > 0, !options.loop {
                expectedFrames = min(source.reader.header.frameCount, options.maxFrames ?? .max)
            }
            pictureFormat = source.format
            return (port, source.reader.header.codec)
        case .h264:
            let rate = options.inputFrameRate
            let (source, port) = try addFileSource(to: graph) {
                try AnnexBFileSource(path: self.input, frameRate: rate, maxFrames: $1, pacing: $0)
            }
            pictureFormat = source.format
            return (port, .h264)
        case .mp4, .webm, .mkv:
            if options.loop {
                let (source, port) = try addFileSource(to: graph) {
                    try ContainerFileSource(path: self.input, kind: .video, maxFrames: $1, pacing: $0)
                }
                pictureFormat = source.format.video
                return (port, source.stream.codec!)
            }
            let demuxer = try ContainerDemuxer(path: input)
            self.demuxer = demuxer
            let stream = try demuxer.reader.firstStream(.video)
            let (source, port) = try addFileSource(to: graph) {
                try ContainerFileSource(demuxer: demuxer, stream: stream, maxFrames: $1, pacing: $0)
            }
            if stream.frameCount > 0 { expectedFrames = min(stream.frameCount, options.maxFrames ?? .max) }
            pictureFormat = source.format.video
            return (port, stream.codec!)
        case .y4m, .wav, .opus:
            throw TranscodeError.incompatible("\(input): a .\(container.rawValue) file holds no compressed video")
        }
    }

    /// The codec of a compressed video file, read from its header.
    func videoCodec() throws -> CodecName? {
        guard case .file(_, let container) = endpoint else { return nil }
        return switch container {
        case .h264: .h264
        case .ivf: try IVFReader(path: input).header.codec
        case .mp4, .webm, .mkv: try ContainerReader(path: input).firstStream(.video).codec
        case .y4m, .wav, .opus: nil
        }
    }

    // MARK: Audio

    /// Raw samples and their format: a WAV file as it is, a compressed file through its decoder
    /// (delivering `sampleFormat` and the rate and channels asked for where it can; libopus can), or
    /// a microphone.
    func samples(into graph: Graph, preferring sampleFormat: SampleFormat?) throws -> (Port<AudioFrame>, AudioFormat) {
        switch endpoint {
        case .sound(let pcm):
            return try microphone(pcm, into: graph, sampleFormat: sampleFormat)
        case .camera:
            throw TranscodeError.incompatible("\(input): a camera gives pictures, not sound")
        case .file(_, .wav):
            let (source, port) = try addFileSource(to: graph) { try WAVFileSource(path: self.input, maxFrames: $1, pacing: $0) }
            return (port, source.reader.format)
        case .file(_, let container) where container.containerFormat != nil:
            // An audio-only container: Opus through the registry's decoder, AAC through libavcodec.
            let (source, encoded) = try addFileSource(to: graph) {
                try ContainerFileSource(path: self.input, kind: .audio, maxFrames: $1, pacing: $0)
            }
            let provider: any AudioDecoderProvider = source.stream.codec == .opus ? try registry.audioDecoder(for: .opus)
                : ContainerAudioDecoderProvider(stream: source.stream)
            return decode(encoded, in: graph, format: source.format.audio!, with: provider, preSkip: source.stream.preSkip,
                          preferring: sampleFormat) { (0, nil) }
        case .file(_, .opus):
            let (source, encoded) = try opusPackets(into: graph)
            // Damaged pages the reader skipped count with the packets the decoder rejected: both are concealed.
            return decode(encoded, in: graph, format: source.format, with: try registry.audioDecoder(for: .opus),
                          preSkip: source.preSkip, preferring: sampleFormat) {
                (source.reader.damagedPages, source.reader.firstDamage.map { "\($0)" })
            }
        case .file(_, let container):
            throw TranscodeError.incompatible("\(input): a .\(container.rawValue) file holds no audio")
        }
    }

    /// The packets of an Ogg Opus file as they are, and the source that reads them (its pre-skip).
    func opusPackets(into graph: Graph) throws -> (OggOpusFileSource, Port<EncodedFrame>) {
        try addFileSource(to: graph) { try OggOpusFileSource(path: self.input, maxFrames: $1, pacing: $0) }
    }

    /// Adds a decoder of `encoded` delivering what the output wants where it can. `damage`: what the
    /// reader skipped, counted with the packets the decoder rejected.
    private func decode(_ encoded: Port<EncodedFrame>, in graph: Graph, format: AudioFormat, with provider: any AudioDecoderProvider,
                        preSkip: Int, preferring sampleFormat: SampleFormat?,
                        damage: @escaping () -> (Int, String?)) -> (Port<AudioFrame>, AudioFormat) {
        let offered = provider.outputCaps(for: format)
        let wanted = Caps([.audio(sampleFormat.map { .exactly(.samples($0)) } ?? .any,
                                  sampleRate: options.sampleRate.map { .exactly($0) } ?? .any,
                                  channels: options.channels.map { .exactly($0) } ?? .any)])
        let decodedFormat = offered.intersection(wanted).fixated?.audio ?? offered.fixated!.audio!
        let decoder = AudioDecoderNode(provider, preferredOutput: Caps(.audio(decodedFormat)), preSkip: preSkip)
        decoderStatistics = {
            let (skipped, first) = damage()
            return (decoder.corruptPackets + skipped, 0, decoder.firstError ?? first)
        }
        lastNode = decoder
        return (graph.add(decoder, input: encoded), decodedFormat)
    }

    /// An ALSA capture PCM, read in blocks of 10 ms at the rate and channels asked for (48 kHz
    /// stereo when none is; alsa-lib or the node converts from what the device captures).
    private func microphone(_ pcm: String, into graph: Graph, sampleFormat: SampleFormat?) throws -> (Port<AudioFrame>, AudioFormat) {
        let rate = options.sampleRate ?? 48_000
        let format = AudioFormat(encoding: .samples(sampleFormat ?? .s16), sampleRate: rate, channels: options.channels ?? 2)
        let blocks = options.maxFrames.map { Double($0) / 100 }
        let seconds = [options.maxDuration, blocks].compactMap { $0 }.min()
        let microphone = try ALSACaptureNode(device: pcm, format: format, periodFrames: rate / 100,
                                             maxDuration: seconds.map { ClockTime.seconds($0) })
        (firstNode, lastNode) = (microphone, microphone)
        return (graph.add(microphone), format)
    }

    // MARK: Files

    /// Adds the source of the input file, read again from its start at each end when `options.loop`
    /// says so. `open` makes the source with the pacing and frame limit it should apply. Returns the
    /// source reading the (first) pass, for what its reader tells of the file, and its port.
    private func addFileSource<Source: MediaSource>(
        to graph: Graph, _ open: @escaping (_ pacing: Pacing, _ maxFrames: Int?) throws -> Source
    ) throws -> (Source, Port<Source.Output>) {
        guard options.loop else {
            let source = try open(options.pacing, options.maxFrames)
            (firstNode, lastNode) = (source, source)
            return (source, graph.add(source))
        }
        let looping = try LoopingSource(pacing: options.pacing, maxFrames: options.maxFrames) {
            try open(.asFastAsPossible, nil)
        }
        expectedFrames = options.maxFrames
        (firstNode, lastNode) = (looping, looping)
        return (looping.first, graph.add(looping))
    }
}
