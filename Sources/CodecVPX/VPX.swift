import CSluiceShims
import CVPX
import MediaCodecs

/// Facts about the linked libvpx, and the error mapping shared by the VP8 encoder and decoder.
public enum VPX {
    /// The libvpx version, e.g. "v1.12.0".
    public static var version: String { String(cString: vpx_codec_version_str()) }

    /// Throws `CodecError.library` unless `status` is `VPX_CODEC_OK`.
    static func check(_ status: vpx_codec_err_t, _ operation: String,
                      _ context: UnsafeMutablePointer<vpx_codec_ctx_t>? = nil) throws {
        guard status != VPX_CODEC_OK else { return }
        throw error(status, operation, context)
    }

    /// A `CodecError.library` with libvpx's message and, when there is one, its detail.
    static func error(_ status: vpx_codec_err_t, _ operation: String,
                      _ context: UnsafeMutablePointer<vpx_codec_ctx_t>?) -> CodecError {
        var message = String(cString: vpx_codec_err_to_string(status))
        if let context, let detail = vpx_codec_error_detail(context) {
            message += ": " + String(cString: detail)
        }
        return .library(name: "libvpx", operation: operation, code: Int32(truncatingIfNeeded: status.rawValue),
                        message: message)
    }
}
