// STUN messages and TURN ChannelData as the ICE agent and TURN client read them: sniff, parse, check the
// integrity under a short-term key, read the attributes. A parsed message, signed again without its old
// integrity and fingerprint, must parse under that key to the same attributes; ChannelData likewise.
import FuzzSupport
import MediaSTUN

private let key = STUNIntegrityKey.shortTerm(password: "fuzzfuzzfuzzfuzzfuzzfuzz")

@_cdecl("FuzzSTUN_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        if let channelData = try? TURNChannelData(parsing: bytes) {
            precondition(TURNChannelData.looksLikeChannelData(bytes))
            let again = try? TURNChannelData(parsing: channelData.serialized())
            precondition(again == channelData, "ChannelData reads back what it wrote")
        }
        _ = STUNMessage.looksLikeSTUN(bytes)
        guard let message = try? STUNMessage(parsing: bytes) else { return }
        _ = try? STUNMessage.verifyIntegrity(of: bytes, key: key)
        _ = (message.username, message.realm, message.nonce, message.software, message.mappedAddress,
             message.xorMappedAddress, message.alternateServer, message.priority, message.useCandidate,
             message.iceControlling, message.iceControlled, message.errorCode, message.unknownAttributes,
             message.lifetime, message.xorRelayedAddress, message.xorPeerAddress, message.data,
             message.channelNumber, message.reservationToken, message.passwordAlgorithms,
             message.hasIntegrity, message.hasFingerprint, message.unknownComprehensionRequired)
        var unsigned = message
        unsigned.attributes.removeAll {
            switch $0 {
            case .messageIntegrity, .messageIntegritySHA256, .fingerprint: true
            default: false
            }
        }
        let signed = unsigned.serialized(integrity: key, fingerprint: true)
        do {
            var again = try STUNMessage(parsing: signed, key: key)
            again.attributes.removeAll {
                switch $0 {
                case .messageIntegrity, .fingerprint: true
                default: false
                }
            }
            precondition(again == unsigned, "a message signed again reads back the same")
        } catch {
            preconditionFailure("a parsed message signed again does not parse: \(error)")
        }
    }
}
