// The jitter buffer fed a random packet sequence: the first byte picks the payload format (H.264, VP8,
// Opus), the rest are packets (see fuzzJitterBuffer for their layout).
import FuzzRTPSupport
import FuzzSupport
import MediaRTP

@_cdecl("FuzzJitterBuffer_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        guard let format = bytes.first else { return }
        let packets = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        switch format % 3 {
        case 0: fuzzJitterBuffer(H264Depacketizer(), packets)
        case 1: fuzzJitterBuffer(VP8Depacketizer(), packets)
        default: fuzzJitterBuffer(OpusDepacketizer(), packets)
        }
    }
}
