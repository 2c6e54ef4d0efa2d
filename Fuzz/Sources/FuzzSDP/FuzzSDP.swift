// Session descriptions as the product reads a remote one: parse, read every section's typed attributes,
// answer it as an RTP endpoint and as a WebRTC peer, and read it as a remote offer and answer. A parsed
// description must serialize to text that parses to the same description.
import FuzzSupport
import MediaNegotiation
import MediaSDP

private let capabilities: [CodecCapability] = [
    .opus(), .vp8(), .h264(H264ProfileLevelID(profile: .constrainedBaseline, level: .level3_1)),
]
private let transport = TransportDescription(
    iceUfrag: "fuzz", icePwd: "fuzzfuzzfuzzfuzzfuzzfuzz",
    fingerprints: [SDPFingerprint(algorithm: "sha-256", bytes: Array(repeating: 0xAB, count: 32))])

@_cdecl("FuzzSDP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        guard let session = try? SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
        let text = session.serialized()
        guard let again = try? SessionDescription(parsing: text) else {
            preconditionFailure("a parsed description serializes to text that does not parse:\n\(text)")
        }
        precondition(again.serialized() == text, "serializing is stable")
        _ = try? session.groups()
        for media in session.media {
            for format in media.formats {
                guard let payloadType = UInt8(format) else { continue }
                _ = try? media.rtpMap(for: payloadType)
                _ = try? media.formatParameters(for: payloadType)
                _ = try? media.feedback(for: payloadType)
                _ = try? media.retransmissionPayloadType(for: payloadType)
            }
            _ = try? media.extensionMaps(in: session)
            _ = try? media.rtcpAddress(in: session)
            _ = try? media.sourceAttributes()
            _ = try? media.sourceGroups()
            _ = try? media.packetTime()
            _ = try? media.frameRate()
            _ = media.direction(in: session)
        }
        _ = makeAnswer(to: session, capabilities: capabilities)
        _ = try? makeWebRTCAnswer(to: session, capabilities: capabilities, transport: transport)
        _ = try? readRemoteDescription(session, type: .offer, capabilities: capabilities)
        _ = try? readRemoteDescription(session, type: .answer, capabilities: capabilities)
    }
}
