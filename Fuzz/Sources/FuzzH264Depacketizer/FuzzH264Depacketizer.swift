// H264 RTP payloads into frames (see fuzzDepacketizer for the input's layout).
import FuzzRTPSupport
import FuzzSupport
import MediaRTP

@_cdecl("FuzzH264Depacketizer_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { fuzzDepacketizer(H264Depacketizer(), $0) }
}
