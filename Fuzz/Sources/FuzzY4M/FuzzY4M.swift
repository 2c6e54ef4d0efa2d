// Y4M files as `sluice` opens them: the header, then the frames (each one's bytes read).
import FuzzSupport
import MediaCore
import MediaFiles

private let pool = BufferPool(name: "fuzz")

@_cdecl("FuzzY4M_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzFileReader(argc, argv, suffix: ".y4m", open: { path, _ in try Y4MReader(path: path, pool: pool) }, next: { try $0.next() }) {
        precondition($0.buffer.count >= $0.layout.byteCount, "a frame holds its planes")
        _ = touch($0.buffer.bytes)
    }
}
