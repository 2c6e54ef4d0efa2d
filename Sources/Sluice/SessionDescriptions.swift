import Glibc
import MediaCore
import MediaSDP
import MediaTransport

/// Session descriptions (SDP, RFC 8866) of the streams Sluice sends, for receivers to open, and the
/// streams a description asks Sluice to receive.
extension SessionDescription {
    /// The session description in the file at `path`; the error says why it cannot be read or parsed.
    public init(contentsOfFile path: String) throws {
        // Read with open(2) and read(2), whose errno is this call's: FileManager's nil for a directory
        // or a device leaves a stale one ("Inappropriate ioctl for device").
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw SessionDescriptionError.unreadable(String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) != 0 || info.st_mode & S_IFMT != S_IFDIR else {
            throw SessionDescriptionError.unreadable("is a directory, not a session description")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            // A session description is a few KiB; what goes on past 64 KiB (/dev/zero, a video) is not one.
            guard bytes.count <= 1 << 16 else { throw SessionDescriptionError.unreadable("larger than 64 KiB, not a session description") }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw SessionDescriptionError.unreadable(String(cString: strerror(errno))) }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        self = try SessionDescription(parsing: String(decoding: bytes, as: UTF8.self))
    }

    /// Describes the stream `sender` sends, as a receiver at its destination should open it: the
    /// destination in `c=` and `m=`, the payload format (`a=rtpmap`, `a=fmtp`), RTCP feedback it
    /// answers (RFC 4585 §4.2), RTCP multiplexing (RFC 5761 §5.1.1), RTX (RFC 4588 §8) with its SSRC
    /// pairing (RFC 5576 §4.2), and the nominal frame rate.
    public init(describing sender: RTPSenderHandle, frameRate: Rational? = nil, channels: Int = 2) {
        let address = sender.destination.address
        let addressType = address.isIPv6 ? "IP6" : "IP4"
        let payloadType = sender.payloadType
        let srtp = sender.destination.srtp
        var media = MediaDescription(type: sender.codec == .opus ? "audio" : "video", port: Int(address.port),
                                     proto: srtp == nil ? "RTP/AVP" : "RTP/SAVP", formats: [String(payloadType)])
        switch sender.codec {
        case .opus:
            // RFC 7587 §7: always two channels in the rtpmap; sprop-stereo says what is sent.
            media.append(SDPRTPMap(payloadType: payloadType, encodingName: "opus", clockRate: 48_000, channels: 2))
            media.append(SDPFormatParameters(payloadType: payloadType, parameters: ["sprop-stereo": channels == 2 ? "1" : "0"]))
        case .h264:
            media.append(SDPRTPMap(payloadType: payloadType, encodingName: "H264", clockRate: 90_000))
            let mode = sender.destination.h264PacketizationMode.rawValue
            media.append(SDPFormatParameters(payloadType: payloadType, parameters: ["packetization-mode": "\(mode)"]))
        default:
            media.append(SDPRTPMap(payloadType: payloadType, encodingName: sender.codec.rawValue, clockRate: sender.clockRate))
        }
        if sender.codec != .opus {
            for (type, parameter) in [("nack", nil), ("nack", "pli"), ("ccm", "fir")] {
                media.append(SDPRTCPFeedback(payloadType: payloadType, type: type, parameter: parameter))
            }
            if let frameRate { media.append(SDPFrameRate(frameRate.doubleValue)) }
        } else {
            media.append(SDPRTCPFeedback(payloadType: payloadType, type: "nack"))
        }
        if sender.destination.multiplexed { media.appendAttribute("rtcp-mux") }
        if let srtp {
            // RFC 4568 §9.1: the key this side sends with, inline.
            media.append(SDPCrypto(tag: 1, suite: srtp.profile.sdesName, keys: [srtp.key.sdesKey]))
        }
        var sources = [sender.ssrc]
        if let rtx = sender.rtx {
            media.formats.append(String(rtx.payloadType))
            media.append(SDPRTPMap(payloadType: rtx.payloadType, encodingName: "rtx", clockRate: sender.clockRate))
            media.append(SDPFormatParameters(payloadType: rtx.payloadType, parameters: ["apt": "\(payloadType)"]))
            sources.append(rtx.ssrc)
            media.append(SDPSourceGroup(semantics: "FID", ssrcs: sources))
        }
        for ssrc in sources { media.append(SDPSourceAttribute(ssrc: ssrc, name: "cname", value: sender.cname)) }
        self.init(origin: SDPOrigin(sessionID: UInt64(sender.ssrc), sessionVersion: 1, addressType: addressType,
                                    address: address.host),
                  sessionName: "Sluice", connection: SDPConnection(addressType: addressType, address: address.host),
                  attributes: [SDPAttribute(name: "tool", value: "sluice")], media: [media])
    }
}

extension RTPStreamDescription {
    /// The stream of `media` (a section of `session`) that Sluice can receive: its first payload type
    /// with a payload format Sluice has (VP8, H.264, Opus), listened for at the section's port on the
    /// connection address when it is local, else on every address; RTCP as `a=rtcp-mux`/`a=rtcp`
    /// say, RTX as `a=fmtp:N apt=` and `a=ssrc-group:FID` say (RFC 4588 §8, RFC 5576 §4.2), the
    /// source as `a=ssrc` names it (RFC 5576 §4.1), SRTP
    /// with the first `a=crypto` key whose suite Sluice has (RFC 4568 §6).
    public init(media: MediaDescription, in session: SessionDescription) throws {
        var chosen: (payloadType: UInt8, codec: CodecName, map: SDPRTPMap)?
        for payloadType in media.payloadTypes {
            guard let map = try media.rtpMap(for: payloadType) ?? SDPRTPMap.staticMapping(payloadType) else { continue }
            let codec = CodecName(rawValue: map.encodingName)
            if RTPDestination.codecs.contains(codec) {
                chosen = (payloadType, codec, map)
                break
            }
        }
        guard let chosen else {
            throw SessionDescriptionError.noReceivableFormat(media: media.type, formats: media.formats)
        }
        guard (1...65_535).contains(media.port) else { throw SessionDescriptionError.noPort(media: media.type) }
        let port = UInt16(media.port)
        let host = media.connection(in: session)?.address
        self.init(codec: chosen.codec, payloadType: chosen.payloadType, local: try Self.listeningAddress(host: host, port: port))
        multiplexed = media.rtcpMux
        if !multiplexed, let rtcp = try media.rtcpAttribute() { rtcpPort = UInt16(exactly: rtcp.port) }
        channels = chosen.map.channels ?? 1
        if chosen.codec == .opus, let stereo = try media.formatParameters(for: chosen.payloadType)["stereo"] {
            channels = stereo == "0" ? 1 : 2
        }
        if let rate = try media.frameRate(), rate > 0, let rational = Rational(parsing: String(rate)) { frameRate = rational }
        // An a=crypto line keys SRTP even under RTP/AVP, as ffmpeg writes it with -srtp_out_params.
        if media.proto.contains("SAVP") || media.hasAttribute("crypto") {
            let offered = try media.values(SDPCrypto.self)
            guard let crypto = offered.first(where: { SRTPProfile(sdesName: $0.suite) != nil }),
                  let profile = SRTPProfile(sdesName: crypto.suite), let key = crypto.keys.first else {
                throw SessionDescriptionError.noUsableKey(suites: offered.map(\.suite))
            }
            srtp = SRTPParameters(profile: profile, key: try SRTPKeyMaterial(key, profile: profile))
        }
        let pairing = try media.sourceGroups().first(where: { $0.semantics == "FID" && $0.ssrcs.count == 2 })
        if let rtxPayloadType = try media.retransmissionPayloadType(for: chosen.payloadType), let pairing {
            rtx = (rtxPayloadType, pairing.ssrcs[1])
        }
        // The media source the section names (RFC 5576 §4.1; with RTX, the FID group's first): the
        // receiver follows it alone. Without one, the first source to pass probation (RFC 3550 §A.1).
        let named = try media.values(SDPSourceAttribute.self).first?.ssrc
        ssrc = pairing?.ssrcs[0] ?? named
    }

    /// The connection address at `port` if this machine has it, else every address at `port`.
    static func listeningAddress(host: String?, port: UInt16) throws -> SocketAddress {
        if let host, let address = try? SocketAddress(host: host, port: 0), (try? UDPSocket(bindingTo: address))?.close() != nil {
            return try SocketAddress(host: host, port: port)
        }
        return try SocketAddress(host: host?.contains(":") == true ? "::" : "0.0.0.0", port: port)
    }
}

/// Why a session description cannot be received.
public enum SessionDescriptionError: Error, Equatable, CustomStringConvertible {
    case noReceivableFormat(media: String, formats: [String])
    case noPort(media: String)
    case noMedia(kind: String)
    case noUsableKey(suites: [String])
    /// The file cannot be read as a session description (missing, a directory, too large).
    case unreadable(String)

    public var description: String {
        switch self {
        case .noReceivableFormat(let media, let formats):
            return "the \(media) section offers payload types \(formats.joined(separator: " ")), none of them VP8, H264 or OPUS"
        case .noPort(let media): return "the \(media) section has no port to receive on"
        case .noMedia(let kind): return "the session description has no \(kind) section"
        case .unreadable(let reason): return "cannot read: \(reason)"
        case .noUsableKey(let suites):
            let known = SRTPProfile.allCases.map(\.sdesName).joined(separator: ", ")
            return "an SRTP section without a key Sluice can use (a=crypto suites: \(suites.isEmpty ? "none" : suites.joined(separator: ", ")); known: \(known))"
        }
    }
}
