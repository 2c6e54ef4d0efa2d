import CX264
import MediaCodecs

/// Facts about the linked libx264, and its error reporting.
public enum X264 {
    /// The libx264 version, e.g. "0.164.3095 baee400".
    public static var version: String { X264_POINTVER }
    /// The API build number the module was compiled against (`X264_BUILD`).
    public static var build: Int { Int(X264_BUILD) }
}

/// Receives x264's log for one encoder and keeps its last error, which becomes the message of a
/// `CodecError.library`. Must outlive the x264 handle that logs to it.
final class X264Log {
    let pointer: UnsafeMutablePointer<sluice_x264_log>

    init() {
        pointer = .allocate(capacity: 1)
        sluice_x264_log_init(pointer)
    }

    deinit {
        sluice_x264_log_destroy(pointer)
        pointer.deallocate()
    }

    /// Routes `param`'s log here (errors only; x264 prints nothing itself).
    func attach(to param: inout x264_param_t) { sluice_x264_param_set_log(&param, pointer) }

    /// The last error x264 logged since the previous call, without its trailing newline.
    func takeLastError() -> String {
        var text = [CChar](repeating: 0, count: 512)
        sluice_x264_log_take(pointer, &text, text.count)
        let bytes = text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self).trimmingTrailingNewlines
    }

    /// A `CodecError.library` for a failed x264 call, with x264's own message when it logged one.
    func error(_ operation: String, code: Int32, fallback: String) -> CodecError {
        let logged = takeLastError()
        return .library(name: "x264", operation: operation, code: code, message: logged.isEmpty ? fallback : logged)
    }
}

extension String {
    fileprivate var trimmingTrailingNewlines: String {
        var text = Substring(self)
        while let last = text.last, last.isNewline || last == " " { text.removeLast() }
        return String(text)
    }
}
