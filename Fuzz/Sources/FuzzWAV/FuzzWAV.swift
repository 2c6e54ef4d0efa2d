// WAV files as `sluice` opens them: the chunks and format, then the samples (each frame's bytes read).
import FuzzSupport
import MediaCore
import MediaFiles

private let pool = BufferPool(name: "fuzz")

@_cdecl("FuzzWAV_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzFileReader(argc, argv, suffix: ".wav", open: { path, _ in try WAVReader(path: path, pool: pool) },
                   next: { try $0.next(maxSamples: 256) }) {
        precondition($0.sampleCount <= 256, "a frame holds at most the samples asked for")
        _ = touch($0.buffer.bytes)
    }
}
