import DeviceV4L2
import Foundation
import MediaCodecs
import MediaCore
import MediaPeer

extension LocalTrack {
    /// A track from anything `sluice` reads (`MediaEndpoint`), read by the same source chain as
    /// `sluice send` and `sluice transcode` (`SourceChain`): a file played in real time and looped
    /// (`.y4m`, `.wav` as they are; `.ivf`, `.h264`, `.opus` and the video of `.mp4`, `.webm`,
    /// `.mkv` decoded with `registry`'s decoders), a camera (`v4l2:/dev/videoN`, 640x480 at 30 fps
    /// or the nearest it has) or a microphone (`alsa:PCM`, 48 kHz stereo). A file is opened now, so
    /// a missing or damaged one is named here; so is a camera that is not there.
    public static func input(_ text: String, registry: CodecRegistry = .builtIn, id: String? = nil) throws -> LocalTrack {
        let options = {
            var options = TranscodeOptions()
            options.pacing = .realTime
            options.loop = true
            return options
        }()
        let chain = try SourceChain(text, options: options, registry: registry)
        switch chain.endpoint {
        case .file:
            // Built once into a graph that never runs: the file is opened and its decoder found.
            let trial = Graph()
            if chain.endpoint.isVideo { _ = try chain.pictures(into: trial) } else { _ = try chain.samples(into: trial, preferring: .s16) }
        case .camera(let path):
            guard V4L2Devices.cameras().contains(where: { $0.path == path }) else {
                throw TranscodeError.incompatible("\(text): no such camera (see 'sluice devices')")
            }
        case .sound:
            break
        }
        // The id goes into a=msid, where it must be 1 to 64 token characters (RFC 8830 §2): a path is not.
        let id = id ?? UUID().uuidString.lowercased()
        if chain.endpoint.isVideo {
            return LocalTrack(id: id, .video { graph in try SourceChain(text, options: options, registry: registry).pictures(into: graph) })
        }
        return LocalTrack(id: id, .audio { graph in
            try SourceChain(text, options: options, registry: registry).samples(into: graph, preferring: .s16).0
        })
    }
}
