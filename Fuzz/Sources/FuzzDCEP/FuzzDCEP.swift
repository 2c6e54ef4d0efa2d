// DCEP messages (RFC 8832) as a data channel's SCTP stream delivers them: parse, then check that the
// message written again parses to the same message.
import FuzzSupport
import MediaSCTP

@_cdecl("FuzzDCEP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        guard let message = try? DCEPMessage(parsing: bytes) else { return }
        let again = try? DCEPMessage(parsing: message.bytes)
        precondition(again == message, "a DCEP message reads back what it wrote")
    }
}
