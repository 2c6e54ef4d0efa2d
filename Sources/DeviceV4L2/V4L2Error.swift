import Glibc

/// Why a camera could not be opened, set up or read. Each case names the device.
public enum V4L2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing at `path` (ENOENT, ENXIO).
    case noSuchDevice(path: String)
    /// The process may not open `path` (EACCES, EPERM): usually not in the `video` group.
    case permissionDenied(path: String)
    /// `path` opens but is no V4L2 device (VIDIOC_QUERYCAP fails: a regular file, `/dev/null`), or it
    /// is one that cannot capture single-planar video with streaming I/O (a metadata or output node).
    case notACaptureDevice(path: String, reason: String)
    /// No offered format meets the constraints. `path` is nil when the choice ran on a table alone.
    case noFormatFits(path: String?, offers: [String])
    /// The device is in use by another process (EBUSY on VIDIOC_S_FMT or VIDIOC_REQBUFS).
    case busy(path: String)
    /// The device went away while streaming (ENODEV: a USB camera unplugged).
    case deviceLost(path: String)
    /// The driver set another format than the one asked for.
    case formatRejected(path: String, asked: V4L2CaptureFormat, got: String)
    /// A system call failed: the operation (an ioctl's name, `mmap`, `poll`) and its errno.
    case system(path: String, operation: String, errno: Int32)

    /// `.notACaptureDevice` with the reason left for the description to give.
    public static func notACaptureDevice(path: String) -> V4L2Error {
        .notACaptureDevice(path: path, reason: "it is not a V4L2 video capture device")
    }

    /// The error for `operation` (an ioctl's name, `mmap`, `poll`) failing on `path` with `code`:
    /// ENODEV is `.deviceLost`, EBUSY `.busy`, anything else `.system`.
    static func failure(of operation: String, errno code: Int32, path: String) -> V4L2Error {
        switch code {
        case ENODEV: return .deviceLost(path: path)
        case EBUSY: return .busy(path: path)
        default: return .system(path: path, operation: operation, errno: code)
        }
    }

    public var description: String {
        switch self {
        case .noSuchDevice(let path):
            return "\(path): no such video device"
        case .permissionDenied(let path):
            return "\(path): permission denied (is the user in the 'video' group?)"
        case .notACaptureDevice(let path, let reason):
            return "\(path): \(reason)"
        case .noFormatFits(let path, let offers):
            let offered = offers.isEmpty ? "nothing" : offers.joined(separator: "; ")
            return "\(path ?? "the camera"): no capture format meets the constraints; it offers \(offered)"
        case .busy(let path):
            return "\(path): the device is busy (another program is capturing from it)"
        case .deviceLost(let path):
            return "\(path): the device was lost while capturing (unplugged?)"
        case .formatRejected(let path, let asked, let got):
            return "\(path): the driver did not take \(asked), it set \(got)"
        case .system(let path, let operation, let code):
            return "\(path): \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}
