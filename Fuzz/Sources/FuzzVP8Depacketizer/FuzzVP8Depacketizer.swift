// VP8 RTP payloads into frames (see fuzzDepacketizer for the input's layout).
import FuzzRTPSupport
import FuzzSupport
import MediaRTP

@_cdecl("FuzzVP8Depacketizer_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { fuzzDepacketizer(VP8Depacketizer(), $0) }
}
