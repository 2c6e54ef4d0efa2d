/// Why reading or writing a media file failed.
///
/// `description` is one line naming the file and, where it matters, the byte offset, e.g.
/// `clip.y4m: truncated at byte 115254: frame 3 needs 115200 bytes, 4000 present`.
public enum MediaFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be opened or created.
    case cannotOpen(path: String, reason: String)
    /// The operating system reported an error while reading at `offset`.
    case readFailed(path: String, offset: Int, reason: String)
    /// The file ends inside the unit (header, frame, sample) that starts at `offset`.
    case truncated(path: String, offset: Int, detail: String)
    /// The bytes at `offset` do not follow the format.
    case corrupt(path: String, offset: Int, detail: String)
    /// Valid in its format, but a variant this module does not handle (or cannot write).
    case unsupported(path: String, detail: String)
    /// Writing, or closing after writing, failed; or what was given cannot be written to this file.
    case writeFailed(path: String, reason: String)

    /// The file concerned, as given when opening it.
    public var path: String {
        switch self {
        case .cannotOpen(let path, _), .readFailed(let path, _, _), .truncated(let path, _, _),
             .corrupt(let path, _, _), .unsupported(let path, _), .writeFailed(let path, _):
            return path
        }
    }

    public var description: String {
        let text: String
        switch self {
        case .cannotOpen(let path, let reason): text = "\(path): cannot open: \(reason)"
        case .readFailed(let path, let offset, let reason): text = "\(path): read failed at byte \(offset): \(reason)"
        case .truncated(let path, let offset, let detail): text = "\(path): truncated at byte \(offset): \(detail)"
        case .corrupt(let path, let offset, let detail): text = "\(path): corrupt at byte \(offset): \(detail)"
        case .unsupported(let path, let detail): text = "\(path): unsupported: \(detail)"
        case .writeFailed(let path, let reason): text = "\(path): write failed: \(reason)"
        }
        return text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
