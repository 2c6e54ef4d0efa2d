// RTP packets as a receive session reads them: parse, read the CSRCs and extension elements, write the
// packet again (as a relay does) and check that the copy reads the same.
import FuzzSupport
import MediaRTP

@_cdecl("FuzzRTP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        guard let packet = try? RTPPacket(parsing: bytes) else { return }
        precondition(packet.length == bytes.count, "the packet fills the datagram")
        precondition(packet.header.length <= packet.payloadRange.lowerBound)
        _ = packet.header.csrcs.reduce(0, &+)
        if let extensions = packet.headerExtensions {
            var elements = extensions.elements(in: bytes)
            while let element = try? elements.next() {
                precondition(element.valueRange.upperBound <= extensions.dataRange.upperBound)
                _ = bytes[element.valueRange].reduce(0, &+)
            }
            _ = try? extensions.value(id: 1, in: bytes)
        }
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: packet.marshalSize, alignment: 4)
        defer { copy.deallocate() }
        do {
            let written = try packet.write(from: bytes, into: copy)
            let again = try RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: copy[..<written]))
            precondition(again == packet, "a rewritten packet reads as the original")
            if packet.paddingLength == 0 {
                precondition(copy.elementsEqual(bytes), "an unpadded packet is rewritten byte for byte")
            }
        } catch {
            preconditionFailure("a parsed packet could not be written again: \(error)")
        }
    }
}
