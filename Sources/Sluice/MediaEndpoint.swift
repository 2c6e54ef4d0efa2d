import Glibc

/// What a pipeline reads or writes, as a user names it: a file, whose extension gives its format,
/// or a device: `v4l2:/dev/video0` for a V4L2 camera, `alsa:default` for an ALSA PCM.
public enum MediaEndpoint: Equatable, Sendable, CustomStringConvertible {
    case file(path: String, Container)
    case camera(path: String)
    case sound(pcm: String)

    public static let cameraScheme = "v4l2:"
    public static let soundScheme = "alsa:"

    public init(naming text: String) throws {
        if text.hasPrefix(Self.cameraScheme) {
            self = .camera(path: try Self.deviceName(text, scheme: Self.cameraScheme))
        } else if text.hasPrefix(Self.soundScheme) {
            self = .sound(pcm: try Self.deviceName(text, scheme: Self.soundScheme))
        } else {
            var info = stat()
            if stat(text, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR {
                throw TranscodeError.incompatible("\(text): is a directory, not a file")
            }
            self = .file(path: text, try Container(path: text))
        }
    }

    private static func deviceName(_ text: String, scheme: String) throws -> String {
        let name = String(text.dropFirst(scheme.count))
        guard !name.isEmpty else {
            throw TranscodeError.incompatible("\(text): name the device, e.g. \(scheme == cameraScheme ? "v4l2:/dev/video0" : "alsa:default")")
        }
        return name
    }

    /// Whether it is video; a container file (`.mp4`, `.webm`, `.mkv`) that exists and holds audio but
    /// no video is audio.
    public var isVideo: Bool {
        switch self {
        case .file(let path, let container) where container.containerFormat != nil:
            if let streams = try? ContainerReader(path: path).streams, !streams.contains(where: { $0.kind == .video }),
               streams.contains(where: { $0.kind == .audio }) {
                false
            } else {
                true
            }
        case .file(_, let container): container.isVideo
        case .camera: true
        case .sound: false
        }
    }

    /// The codecs it holds, the default first; empty for raw media and devices.
    public var codecs: [CodecName] {
        if case .file(_, let container) = self { container.codecs } else { [] }
    }

    public var description: String {
        switch self {
        case .file(let path, _): path
        case .camera(let path): Self.cameraScheme + path
        case .sound(let pcm): Self.soundScheme + pcm
        }
    }
}
