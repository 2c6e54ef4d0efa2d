// Ogg Opus files as `sluice` opens them: pages through libogg, the OpusHead and OpusTags headers, then
// the packets (each one's bytes read).
import FuzzSupport
import MediaCore
import MediaFiles

@_cdecl("FuzzOggOpus_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let pool = BufferPool(name: "fuzz")
    return fuzzFileReader(argc, argv, suffix: ".opus", open: { path, _ in try OggOpusReader(path: path) }, next: { try $0.next(pool: pool) }) {
        _ = touch($0.buffer.bytes)
    }
}
