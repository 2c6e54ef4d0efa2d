// JPEG headers as the MJPEG decoder reads a camera's frame before decoding it: the frame header's size
// and sampling, which then size the decoder's output.
import CodecMJPEG
import FuzzSupport

@_cdecl("FuzzJPEGHeader_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv) { bytes in
        guard let header = try? JPEGFrameHeader(parsing: bytes) else { return }
        precondition(header.width > 0 && header.height > 0, "a parsed header has a picture size")
        _ = header.subsampling
    }
}
