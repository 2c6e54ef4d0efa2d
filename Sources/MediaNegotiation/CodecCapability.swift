import MediaCore
import MediaSDP

/// The kind of an SDP media section a codec belongs in (RFC 8866 §5.14 `<media>`).
public enum MediaKind: String, Sendable, Hashable, CaseIterable {
    case audio, video
}

/// One RTCP feedback message a codec can take part in: `a=rtcp-fb:<pt> <type> [<parameter>]`
/// (RFC 4585 §4.2) without the payload type.
public struct RTCPFeedbackType: Sendable, Hashable, CustomStringConvertible {
    public var type: String
    public var parameter: String?

    public init(_ type: String, _ parameter: String? = nil) {
        self.type = type
        self.parameter = parameter
    }

    /// Generic NACK (RFC 4585 §6.2.1).
    public static let nack = RTCPFeedbackType("nack")
    /// Picture loss indication (RFC 4585 §6.3.1).
    public static let pli = RTCPFeedbackType("nack", "pli")
    /// Full intra request (RFC 5104 §7.1).
    public static let fir = RTCPFeedbackType("ccm", "fir")
    /// Receiver estimated maximum bitrate (draft-alvestrand-rmcat-remb).
    public static let remb = RTCPFeedbackType("goog-remb")
    /// Transport-wide congestion control (draft-holmer-rmcat-transport-wide-cc-extensions §4).
    public static let transportCC = RTCPFeedbackType("transport-cc")

    /// The message of an `a=rtcp-fb` line, whatever payload type it names.
    public init(_ line: SDPRTCPFeedback) { self.init(line.type, line.parameter) }

    /// Whether `other` is the same message, compared case-insensitively.
    public func matches(_ other: RTCPFeedbackType) -> Bool {
        type.lowercased() == other.type.lowercased() && parameter?.lowercased() == other.parameter?.lowercased()
    }

    public var description: String { parameter.map { "\(type) \($0)" } ?? type }
}

/// A codec Sluice can receive and send over RTP, as a value: what its `a=rtpmap`, `a=fmtp` and
/// `a=rtcp-fb` lines say in an offer, and what it accepts in an answer. Capabilities come from the
/// codec registry (see `CodecRegistry.capabilities` in Sluice) or are written by the application;
/// this module never links a codec library.
public struct CodecCapability: Sendable, Hashable, CustomStringConvertible {
    public var codec: CodecName
    public var kind: MediaKind
    /// The encoding name as written in `a=rtpmap` (RFC 4855 §3: compared case-insensitively).
    public var encodingName: String
    public var clockRate: Int
    /// The rtpmap encoding parameter: channels for audio, nil for video.
    public var channels: Int?
    /// The format parameters (`a=fmtp`) this side declares: for receiving, its limits and wishes.
    public var parameters: [String: String]
    /// The RTCP feedback it supports, in the order an offer lists it.
    public var feedback: [RTCPFeedbackType]
    /// Whether it wants an RTX payload type for retransmissions (RFC 4588 §8.1).
    public var retransmission: Bool

    public init(codec: CodecName, kind: MediaKind, encodingName: String? = nil, clockRate: Int, channels: Int? = nil,
                parameters: [String: String] = [:], feedback: [RTCPFeedbackType] = [], retransmission: Bool = false)
    {
        self.codec = codec
        self.kind = kind
        self.encodingName = encodingName ?? codec.rawValue
        self.clockRate = clockRate
        self.channels = channels
        self.parameters = parameters
        self.feedback = feedback
        self.retransmission = retransmission
    }

    /// The feedback video codecs use by default: NACK, PLI, FIR (RFC 4585, RFC 5104).
    public static let videoFeedback: [RTCPFeedbackType] = [.nack, .pli, .fir]

    /// VP8 (RFC 7741 §6.1); `maxFrameSize` in macroblocks and `maxFrameRate` are receive limits.
    public static func vp8(maxFrameSize: Int? = nil, maxFrameRate: Int? = nil,
                           feedback: [RTCPFeedbackType] = videoFeedback, retransmission: Bool = true) -> CodecCapability {
        var parameters: [String: String] = [:]
        if let maxFrameSize { parameters["max-fs"] = String(maxFrameSize) }
        if let maxFrameRate { parameters["max-fr"] = String(maxFrameRate) }
        return CodecCapability(codec: .vp8, kind: .video, clockRate: 90_000, parameters: parameters, feedback: feedback,
                               retransmission: retransmission)
    }

    /// H.264 (RFC 6184 §8.1): one profile, the highest level received, one packetization mode.
    public static func h264(_ profileLevelID: H264ProfileLevelID, packetizationMode: Int = 1,
                            levelAsymmetryAllowed: Bool = true, feedback: [RTCPFeedbackType] = videoFeedback,
                            retransmission: Bool = true) -> CodecCapability {
        var parameters = ["profile-level-id": profileLevelID.description, "packetization-mode": String(packetizationMode)]
        if levelAsymmetryAllowed { parameters["level-asymmetry-allowed"] = "1" }
        return CodecCapability(codec: .h264, kind: .video, clockRate: 90_000, parameters: parameters, feedback: feedback,
                               retransmission: retransmission)
    }

    /// Opus (RFC 7587 §7): always `opus/48000/2`; the parameters say what this side wants to receive.
    public static func opus(stereo: Bool = true, inbandFEC: Bool = true, maxPlaybackRate: Int? = nil,
                            minimumPacketTime: Int? = 10, feedback: [RTCPFeedbackType] = []) -> CodecCapability {
        var parameters = ["stereo": stereo ? "1" : "0", "useinbandfec": inbandFEC ? "1" : "0"]
        if let maxPlaybackRate { parameters["maxplaybackrate"] = String(maxPlaybackRate) }
        if let minimumPacketTime { parameters["minptime"] = String(minimumPacketTime) }
        return CodecCapability(codec: .opus, kind: .audio, encodingName: "opus", clockRate: 48_000, channels: 2,
                               parameters: parameters, feedback: feedback)
    }

    /// The messages of `lines` (the other side's `a=rtcp-fb`) this codec supports too, in their order,
    /// once each (RFC 4585 §4.2).
    func commonFeedback(_ lines: [SDPRTCPFeedback]) -> [RTCPFeedbackType] {
        var common: [RTCPFeedbackType] = []
        for type in lines.map(RTCPFeedbackType.init) where feedback.contains(where: type.matches) && !common.contains(type) {
            common.append(type)
        }
        return common
    }

    public var description: String {
        let name = "\(encodingName)/\(clockRate)" + (channels.map { "/\($0)" } ?? "")
        let fmtp = parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
        return fmtp.isEmpty ? name : "\(name) \(fmtp)"
    }
}

extension Array where Element == CodecCapability {
    /// The same capabilities with every one of `codec` moved to the front, the rest in order: the
    /// offer lists formats in preference order (RFC 3264 §5.1).
    public func preferring(_ codec: CodecName) -> [CodecCapability] {
        filter { $0.codec == codec } + filter { $0.codec != codec }
    }
}
