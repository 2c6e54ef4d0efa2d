// The versions of the C libraries the bare loops call, as the libraries report them.
import COpenH264
import COpus
import CSRTP
import CVPX
import CX264

/// Library name -> version string, for reports.
public enum LibraryVersions {
    public static var all: [String: String] {
        let openh264 = WelsGetCodecVersion()
        return [
            "libvpx": String(cString: vpx_codec_version_str()),
            "libx264": "build \(X264_BUILD)",
            "openh264": "\(openh264.uMajor).\(openh264.uMinor).\(openh264.uRevision)",
            "libopus": String(cString: opus_get_version_string()),
            "libsrtp2": String(cString: srtp_get_version_string()),
        ]
    }
}
