/// The audio branch of a transcode from one container file (`.mp4`, `.webm`, `.mkv`) to another, beside
/// the video branch in the same graph: the input's audio stream read from the demuxer the video source
/// shares, and written as Opus to the writer's second track, which interleaves both by timestamp, or
/// sent as an RTP stream of its own beside the video's (`sluice send clip.mp4 --audio-to`).
/// Opus is copied as it is (with its pre-skip); AAC is decoded (libavcodec, mixed down to stereo),
/// resampled to 48 kHz and encoded with the registry's Opus encoder.
public final class ContainerAudioBranch: @unchecked Sendable {
    public let stream: ContainerStream
    private var sink: ContainerFileSink?
    private var decoder: AudioDecoderNode?
    /// The sender, when the audio goes over RTP.
    public private(set) var rtpSender: RTPSenderHandle?

    /// Where the branch's Opus goes.
    enum Output {
        /// The writer's audio track.
        case container(ContainerWriter)
        /// An RTP stream, with the tracer of the call.
        case rtp(RTPDestination, tracer: FrameTracer?)
    }

    init(stream: ContainerStream) { self.stream = stream }

    /// Audio packets written so far.
    public var framesWritten: Int { sink?.framesWritten ?? rtpSender?.statistics().framesSent ?? 0 }
    /// Seconds of audio written.
    public var mediaSeconds: Double { sink?.mediaSeconds ?? 0 }
    /// Packets the decoder rejected (each concealed), when the audio is decoded.
    public var corruptPackets: Int { decoder?.corruptPackets ?? 0 }

    /// The audio stream to carry from `input` beside its video: the first Opus or AAC one of a
    /// container file, unless `options` leave audio out or loop the input.
    static func audioStream(input: MediaEndpoint, options: TranscodeOptions) throws -> ContainerStream? {
        guard options.includeAudio, !options.loop, case .file(let path, let container) = input,
              container.containerFormat != nil else { return nil }
        return try ContainerReader(path: path).streams.first { $0.kind == .audio && ($0.codec == .opus || $0.codec == .aac) }
    }

    /// Adds the branch to `graph`. `videoEnd`: seconds at which the video stops (a frame limit), so the
    /// audio stops there too.
    func attach(to graph: Graph, demuxer: ContainerDemuxer, output: Output, options: TranscodeOptions,
                videoEnd: Double?, registry: CodecRegistry) throws {
        let source = try ContainerFileSource(demuxer: demuxer, stream: stream, endTime: videoEnd, pacing: options.pacing)
        let packets = graph.add(source)
        if stream.codec == .opus && stream.channels <= 2 {
            let preSkip = stream.preSkip
            try finish(packets, in: graph, output: output, preSkip: { preSkip })
            return
        }
        let provider: any AudioDecoderProvider = stream.codec == .opus ? try registry.audioDecoder(for: .opus)
            : ContainerAudioDecoderProvider(stream: stream)
        let channels = min(stream.channels, 2)
        let decoder = AudioDecoderNode(provider, preferredOutput: [.audio(.exactly(.samples(.f32)), channels: .exactly(channels))],
                                       preSkip: stream.preSkip)
        let (encoded, encoder) = try EncodingStage.audio(graph.add(decoder, input: packets), format: nil, in: graph, codec: .opus,
                                                         registry: registry,
                                                         settings: AudioEncoderSettings(bitrate: TranscodeOptions.defaultAudioBitrate),
                                                         unknownTo: AudioFormat(encoding: .samples(.f32), sampleRate: 48_000, channels: channels))
        self.decoder = decoder
        try finish(encoded, in: graph, output: output, preSkip: { encoder.preSkip })
    }

    /// The end of the branch: the writer's audio track, or an RTP sender (which has no pre-skip to say).
    private func finish(_ packets: Port<EncodedFrame>, in graph: Graph, output: Output, preSkip: @escaping () -> Int) throws {
        switch output {
        case .container(let writer):
            let sink = ContainerFileSink(writer: writer, kind: .audio, preSkip: preSkip)
            graph.add(sink, input: packets)
            self.sink = sink
        case .rtp(let destination, let tracer):
            let sender = try destination.makeSender(codec: .opus, tracer: tracer, name: "rtp-audio-sender")
            sender.add(to: graph, input: packets)
            rtpSender = sender
        }
    }
}
