// IVF files as `sluice` opens them: the header, then the frames (each one's bytes read).
import FuzzSupport
import MediaCore
import MediaFiles

@_cdecl("FuzzIVF_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let pool = BufferPool(name: "fuzz")
    return fuzzFileReader(argc, argv, suffix: ".ivf", open: { path, _ in try IVFReader(path: path) }, next: { try $0.next(pool: pool) }) {
        _ = touch($0.buffer.bytes)
    }
}
