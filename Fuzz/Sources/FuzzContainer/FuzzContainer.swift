// MP4, WebM, Matroska and Ogg files as `sluice` opens them (libavformat through MediaContainers):
// the streams, then the packets of every stream, each one's bytes read. libavformat itself is not
// instrumented: the target is Sluice's side (stream description, timestamps, Opus pre-skip, packet copies).
import FuzzSupport
import MediaContainers
import MediaCore

@_cdecl("FuzzContainer_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let pool = BufferPool(name: "fuzz")
    return fuzzFileReader(argc, argv, suffix: ".mkv", open: { path, _ in
        let reader = try ContainerReader(path: path)
        for stream in reader.streams { _ = (stream.codec, stream.frameCount, stream.preSkip) }
        return reader
    }, next: { try $0.next(pool: pool) }) { packet in
        _ = touch(packet.frame.buffer.bytes)
    }
}
