import Foundation
import Sluice

/// The SDP of a stream `sluice send` sends (temporary text form).
enum SessionDescriptionWriter {
    static func write(for sender: Transcoder, to path: String) throws {
        let rtp = sender.rtpSender!
        let address = rtp.destination.address
        let media = rtp.codec == .opus ? "audio" : "video"
        let encoding = rtp.codec == .opus ? "opus/48000/2" : "\(rtp.codec.rawValue)/90000"
        var lines = ["v=0", "o=- \(rtp.ssrc) 1 IN IP4 \(address.host)", "s=sluice", "c=IN IP4 \(address.host)", "t=0 0",
                     "m=\(media) \(address.port) RTP/AVP \(rtp.payloadType)", "a=rtpmap:\(rtp.payloadType) \(encoding)"]
        if rtp.codec == .h264 { lines.append("a=fmtp:\(rtp.payloadType) packetization-mode=1") }
        lines.append("a=sendonly")
        try (lines.joined(separator: "\r\n") + "\r\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}
