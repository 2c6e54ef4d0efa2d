import MediaCore
import MediaSDP

/// One format of an offered media section: its payload type, mapping and parameters.
struct OfferedFormat {
    var payloadType: UInt8
    var map: SDPRTPMap
    var parameters: [String: String]

    /// Whether it is a retransmission format (RFC 4588 §8.1), answered with the format it repairs.
    var isRetransmission: Bool { map.encodingName.lowercased() == "rtx" }

    /// For a rejection's reason: `H264 profile 64001f (High 3.1) packetization-mode 1`, `VP9/90000`.
    var summary: String {
        guard map.encodingName.uppercased() == "H264" else {
            return "\(map.encodingName)/\(map.clockRate)" + (map.channels.map { "/\($0)" } ?? "")
        }
        let text = parameters["profile-level-id"] ?? H264Matching.defaultProfileLevelID
        let named = (try? H264ProfileLevelID(parsing: text)).map { " (\($0.profile.rawValue) \($0.level))" } ?? ""
        return "H264 profile \(text)\(named) packetization-mode \(parameters["packetization-mode"] ?? "0")"
    }
}

/// How a capability meets an offered format.
enum FormatMatch {
    /// The same format; the answer states `parameters` for it.
    case match(parameters: [String: String])
    /// The same codec, but not a format this side takes, and why; a higher `closeness` (e.g. the
    /// profile matched, the packetization mode did not) makes the better reason.
    case mismatch(String, closeness: Int)
}

/// A format this side takes: the capability, and the parameters the answer states.
struct FormatChoice {
    var capability: CodecCapability
    var parameters: [String: String]
}

extension OfferedFormat {
    /// The first of `capabilities` that takes this format (RFC 3264 §6.1), else why none does.
    func choose(from capabilities: [CodecCapability]) -> Result<FormatChoice, FormatRefusal> {
        var refusal = FormatRefusal(reason: "not supported", closeness: -1)
        for capability in capabilities {
            switch capability.match(self) {
            case .match(let parameters)?: return .success(FormatChoice(capability: capability, parameters: parameters))
            case .mismatch(let reason, let closeness)? where closeness > refusal.closeness:
                refusal = FormatRefusal(reason: reason, closeness: closeness)
            default: continue
            }
        }
        return .failure(refusal)
    }
}

/// Why no capability takes an offered format.
struct FormatRefusal: Error {
    var reason: String
    var closeness: Int
}

extension CodecCapability {
    /// Whether this capability takes `offered` (RFC 3264 §6.1): nil when it is another codec (name,
    /// clock rate or channels differ), else a match with the answer's parameters, or why not. The
    /// answer's parameters are this side's own (they describe what it receives, RFC 3264 §6.1),
    /// with H.264's profile-level-id answered as RFC 6184 §8.2.2 says.
    func match(_ offered: OfferedFormat) -> FormatMatch? {
        guard offered.map.encodingName.lowercased() == encodingName.lowercased(), offered.map.clockRate == clockRate,
              kind == .video || (offered.map.channels ?? 1) == (channels ?? 1)
        else { return nil }
        switch codec {
        case .h264: return H264Matching.match(offered.parameters, local: parameters)
        default: return .match(parameters: parameters)
        }
    }
}

/// H.264 formats match by profile and packetization mode, and the answer's level follows RFC 6184
/// §8.2.2 (compare pion `internal/fmtp/h264.go`, libwebrtc `h264_profile_level_id.cc`).
enum H264Matching {
    /// Baseline at level 1, inferred when `profile-level-id` is absent (RFC 6184 §8.1).
    static let defaultProfileLevelID = "42000a"

    static func match(_ offered: [String: String], local: [String: String]) -> FormatMatch {
        let offeredText = offered["profile-level-id"] ?? defaultProfileLevelID
        let localText = local["profile-level-id"] ?? defaultProfileLevelID
        let offeredID: H264ProfileLevelID, localID: H264ProfileLevelID
        do {
            offeredID = try H264ProfileLevelID(parsing: offeredText)
            localID = try H264ProfileLevelID(parsing: localText)
        } catch {
            return .mismatch(error.description, closeness: 0)
        }
        let offeredMode = offered["packetization-mode"] ?? "0", localMode = local["packetization-mode"] ?? "0"
        guard offeredID.profile == localID.profile else {
            return .mismatch("no \(offeredID.profile.rawValue) profile here", closeness: 1)
        }
        // RFC 6184 §8.2.2: a different packetization mode is a different format.
        guard offeredMode == localMode else {
            return .mismatch("\(offeredID.profile.rawValue) only in packetization-mode \(localMode)", closeness: 2)
        }
        let asymmetry = offered["level-asymmetry-allowed"] == "1" && local["level-asymmetry-allowed"] == "1"
        let level = H264ProfileLevelID.answerLevel(offered: offeredID.level, local: localID.level,
                                                   levelAsymmetryAllowed: asymmetry)
        var parameters = local
        parameters["profile-level-id"] = H264ProfileLevelID(profile: offeredID.profile, level: level).description
        return .match(parameters: parameters)
    }
}
