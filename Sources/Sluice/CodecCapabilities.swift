import MediaCodecs
import MediaCore
import MediaNegotiation
import MediaPeer

extension CodecRegistry {
    /// What the registry's codecs offer and accept over RTP, in registry order (the preference
    /// order; `prefer(_:)` changes it): one capability per codec that has both an encoder and a
    /// decoder here and an RTP payload format in Sluice. H.264 is Constrained Baseline (which every
    /// H.264 encoder here makes and OpenH264 decodes exactly) at level 3.1, as 42e01f and as
    /// 42001f (Baseline, which peers such as Chrome offer first), each in packetization mode 1 then 0.
    public var capabilities: [CodecCapability] {
        let sendable = Set(videoEncoders.map(\.codec) + audioEncoders.map(\.codec))
        let receivable = Set(videoDecoders.map(\.codec) + audioDecoders.map(\.codec))
        var seen: Set<CodecName> = []
        var result: [CodecCapability] = []
        for codec in videoEncoders.map(\.codec) + audioEncoders.map(\.codec)
        where receivable.contains(codec) && sendable.contains(codec) && seen.insert(codec).inserted {
            result += Self.rtpCapabilities(codec)
        }
        return result
    }

    /// The RTP formats of a built-in codec; none for a codec Sluice has no payload format for.
    static func rtpCapabilities(_ codec: CodecName) -> [CodecCapability] {
        switch codec {
        case .vp8:
            return [.vp8()]
        case .h264:
            let constrained = H264ProfileLevelID(profile: .constrainedBaseline, level: .level3_1)
            let baseline = H264ProfileLevelID(profile: .baseline, level: .level3_1)
            return [1, 0].flatMap { mode in [constrained, baseline].map { CodecCapability.h264($0, packetizationMode: mode) } }
        case .opus:
            return [.opus()]
        default:
            return []
        }
    }
}

extension PeerConnectionFactory {
    /// A factory with the built-in codecs (`CodecRegistry.builtIn`), `preferredCodecs` offered first.
    public convenience init(preferredCodecs: [CodecName] = []) {
        let registry = CodecRegistry.builtIn
        self.init(registry: registry, capabilities: registry.capabilities, preferredCodecs: preferredCodecs)
    }
}
