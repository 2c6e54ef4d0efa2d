// RFC 8285 header extension elements: the input's first two bytes are the profile, the rest the data.
// The elements read before any error are written again with RTPHeaderExtensionWriter and must read back
// the same.
import FuzzSupport
import MediaRTP

@_cdecl("FuzzRTPHeaderExtensions_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        var reader = FuzzReader(bytes)
        let profile = reader.uint16()
        let start = bytes.count - reader.rest.count
        let extensions = RTPHeaderExtensions(profile: profile, dataRange: start..<bytes.count)
        var iterator = extensions.elements(in: bytes)
        var elements: [(id: UInt8, value: [UInt8])] = []
        while let element = try? iterator.next() {
            precondition(extensions.dataRange.contains(element.valueRange.lowerBound) || element.valueRange.isEmpty)
            elements.append((element.id, Array(bytes[element.valueRange])))
        }
        if case .opaque = extensions.form { precondition(elements.isEmpty, "an opaque block has no elements") }

        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 + 2 * bytes.count + 8, alignment: 4)
        defer { block.deallocate() }
        var writer = RTPHeaderExtensionWriter(buffer: block)
        do {
            for element in elements { try writer.append(id: element.id, value: element.value) }
            let size = try writer.finish()
            let written = UnsafeRawBufferPointer(rebasing: block[..<size])
            let readBack = RTPHeaderExtensions(profile: UInt16(block[0]) << 8 | UInt16(block[1]), dataRange: 4..<size)
            var again = readBack.elements(in: written)
            for element in elements {
                let other = try again.next()
                precondition(other?.id == element.id && other.map { Array(written[$0.valueRange]) } == element.value,
                             "written elements read back the same")
            }
            let extra = try again.next()
            precondition(extra == nil, "no element is added by writing")
        } catch {
            preconditionFailure("elements that were read could not be written again: \(error)")
        }
    }
}
