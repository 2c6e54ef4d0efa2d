// H.264 Annex-B streams as `sluice` opens them: the reader cuts access units (reading SPSs for the
// picture size and timing); every SPS in the stream is also parsed as the encoder's checks do.
import FuzzSupport
import MediaCore
import MediaFiles

@_cdecl("FuzzAnnexB_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let pool = BufferPool(name: "fuzz")
    return fuzzFileReader(argc, argv, suffix: ".h264", open: { path, bytes in
        for unit in AnnexB.nalUnits(in: bytes) {
            let nal = UnsafeRawBufferPointer(rebasing: bytes[unit])
            if let header = nal.first, H264NALType.type(ofHeader: header) == 7 { _ = try? H264SequenceParameterSet(parsing: nal) }
        }
        return try AnnexBReader(path: path)
    }, next: { try $0.next(pool: pool) }) { _ = touch($0.buffer.bytes) }
}
