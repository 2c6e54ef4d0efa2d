import Glibc

/// Finds the cameras of this machine.
public enum V4L2Devices {
    /// Every `video*` node in `directory` that can capture video (V4L2 API §1.2 "Querying
    /// Capabilities"), in number order: `/dev/video0` before `/dev/video10`. Metadata, output-only
    /// and unreadable nodes are left out; a machine without a camera gives an empty array.
    public static func cameras(in directory: String = "/dev") -> [V4L2Camera] {
        videoNodes(in: directory).compactMap { try? camera(at: $0) }
    }

    /// The camera at `path` with all the formats it offers. Throws `V4L2Error.noSuchDevice`,
    /// `.permissionDenied`, or `.notACaptureDevice` for a node that cannot capture.
    public static func camera(at path: String) throws -> V4L2Camera {
        let device = try V4L2Device(path: path)
        defer { device.close() }
        return try device.describe()
    }

    /// The paths of `directory`'s `video<number>` entries, by number.
    static func videoNodes(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var numbered: [(Int, String)] = []
        while let entry = readdir(stream) {
            let name = cString(entry.pointee.d_name)
            guard name.hasPrefix("video"), let number = Int(name.dropFirst(5)) else { continue }
            numbered.append((number, directory.hasSuffix("/") ? directory + name : directory + "/" + name))
        }
        return numbered.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
