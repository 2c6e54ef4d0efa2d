// ICE candidate attributes (RFC 8839 §5.1) as remote descriptions and trickled candidates bring them:
// parse, read the address, and check that the attribute value written back parses to the same candidate.
import FuzzSupport
import MediaICE

@_cdecl("FuzzICECandidate_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        guard let candidate = try? ICECandidate(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
        _ = (candidate.address, candidate.isMDNS, candidate.type.typePreference)
        let text = candidate.attributeValue
        guard let again = try? ICECandidate(parsing: text) else {
            preconditionFailure("a parsed candidate writes a value that does not parse: \(text)")
        }
        precondition(again == candidate, "a candidate reads back what it wrote: \(text)")
    }
}
