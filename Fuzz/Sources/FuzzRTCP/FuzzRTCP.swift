// RTCP compound packets as a receive session reads them (RFC 5506 reduced size allowed): validate, parse,
// then write the parsed packets and check that they parse to the same values.
import FuzzSupport
import MediaRTP

@_cdecl("FuzzRTCP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        for reducedSize in [false, true] {
            let count = try? RTCPCompoundPacket.validate(bytes, reducedSize: reducedSize)
            // validate checks framing only, so it may take what decoding refuses, but not the reverse.
            guard let compound = try? RTCPCompoundPacket(parsing: bytes, reducedSize: reducedSize) else { continue }
            precondition(count == compound.packets.count, "validate takes what parsing takes")
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: compound.marshalSize, alignment: 4)
            defer { copy.deallocate() }
            guard let written = try? compound.write(into: copy) else { continue }
            precondition(written == compound.marshalSize, "a compound writes its marshalSize")
            let again = try? RTCPCompoundPacket(parsing: UnsafeRawBufferPointer(copy), reducedSize: reducedSize)
            precondition(again == compound, "a written compound parses to what was written")
        }
    }
}
