import DeviceALSA
import DeviceV4L2
import MediaCodecs
import MediaCore
import MediaNodes
import MediaPeer

extension LocalTrack {
    /// A track from anything `sluice` reads (`MediaEndpoint`): a file played in real time and
    /// looped (`.y4m`, `.wav` as they are; `.ivf`, `.h264`, `.opus` and the video of `.mp4`, `.webm`,
    /// `.mkv` decoded with `registry`'s decoders), a camera (`v4l2:/dev/videoN`, 640x480 at 30 fps or the nearest it has) or a
    /// microphone (`alsa:PCM`, 48 kHz stereo). The file is opened now, so a missing or damaged one
    /// is named here.
    public static func input(_ text: String, registry: CodecRegistry = .builtIn, id: String? = nil) throws -> LocalTrack {
        let id = id ?? text
        switch try MediaEndpoint(naming: text) {
        case .file(let path, .y4m): return try y4mFile(path, id: id)
        case .file(let path, .wav): return try wavFile(path, id: id)
        case .file(let path, .ivf):
            let codec = try IVFFileSource(path: path).reader.header.codec
            let decoder = try registry.videoDecoder(for: codec)
            return LocalTrack(id: id, .video { graph in
                let frames = graph.add(try LoopingSource(pacing: .realTime) { try IVFFileSource(path: path) })
                return graph.add(VideoDecoderNode(decoder), input: frames)
            })
        case .file(let path, .h264):
            _ = try AnnexBFileSource(path: path)
            let decoder = try registry.videoDecoder(for: .h264)
            return LocalTrack(id: id, .video { graph in
                let frames = graph.add(try LoopingSource(pacing: .realTime) { try AnnexBFileSource(path: path) })
                return graph.add(VideoDecoderNode(decoder), input: frames)
            })
        case .file(let path, .mp4), .file(let path, .webm), .file(let path, .mkv):
            // The container's video stream; its audio would be a second track (not taken yet).
            let codec = try ContainerFileSource(path: path, kind: .video).stream.codec ?? .h264
            let decoder = try registry.videoDecoder(for: codec)
            return LocalTrack(id: id, .video { graph in
                let frames = graph.add(try LoopingSource(pacing: .realTime) { try ContainerFileSource(path: path, kind: .video) })
                return graph.add(VideoDecoderNode(decoder), input: frames)
            })
        case .file(let path, .opus):
            let preSkip = try OggOpusFileSource(path: path).preSkip
            let decoder = try registry.audioDecoder(for: .opus)
            return LocalTrack(id: id, .audio { graph in
                let packets = graph.add(try LoopingSource(pacing: .realTime) { try OggOpusFileSource(path: path) })
                return graph.add(AudioDecoderNode(decoder, preferredOutput: [.audio(.exactly(.samples(.s16)))], preSkip: preSkip),
                                 input: packets)
            })
        case .camera(let path):
            let constraints = VideoConstraints(width: .init(ideal: 640), height: .init(ideal: 480), frameRate: .init(ideal: 30))
            _ = try V4L2Devices.cameras().first { $0.path == path }
                ?? { throw TranscodeError.incompatible("\(text): no such camera (see 'sluice devices')") }()
            return LocalTrack(id: id, .video { graph in graph.add(try V4L2CaptureNode(device: path, constraints: constraints)) })
        case .sound(let pcm):
            let format = AudioFormat(encoding: .samples(.s16), sampleRate: 48_000, channels: 2)
            return LocalTrack(id: id, .audio { graph in
                graph.add(try ALSACaptureNode(device: pcm, format: format, periodFrames: 480))
            })
        }
    }
}
