import COpenH264
import MediaCodecs
import MediaCore

/// H.264 decoding through OpenH264.
///
/// Each `EncodedFrame` must hold one whole access unit in Annex-B byte-stream format (ITU-T H.264
/// Annex B: a start code before every NAL unit), with the SPS and PPS before each IDR picture.
/// Pictures are copied into frames from `outputPool`.
///
/// Timing: every access unit goes in with a sequence number as OpenH264's timestamp, and each picture
/// comes out with the pts and duration of the access unit that carried it, looked up by that number.
/// Baseline streams (`profile_idc` 66) come out at once, one picture per access unit. For other
/// profiles OpenH264 holds pictures back to put them into display order (by `pic_order_cnt_lsb`,
/// H.264 8.2.1): streams without B slices come out up to one access unit late, streams with B slices
/// a little later, and `flush` hands out what is still held. Before an IDR access unit the decoder
/// hands out every held picture itself (an IDR picture ends the pictures before it, H.264 C.4.4),
/// because OpenH264 could otherwise emit some of them overwritten.
///
/// OpenH264 2.3.1 decodes Baseline, and Main and High without B slices, exactly as the standard
/// says (byte for byte like ffmpeg). It decodes B slices without errors and in the right order, but
/// not exactly: pictures with B macroblocks split into 8x8 sub-partitions, as libx264 makes by
/// default, come out 45-60 dB away from the exact decode.
///
/// Error concealment is off: a damaged access unit throws `CodecError.library` (operation "decode",
/// the `DECODING_STATE` bits as code and by name in the message) instead of yielding a patched
/// picture, and so do the following pictures that refer to it, until the next IDR picture, which
/// decodes cleanly again.
public final class OpenH264Decoder: VideoDecoder {
    public let format: VideoFormat
    /// Storage of the pictures this decoder emits.
    public let outputPool = BufferPool(name: "openh264-decoder")

    /// The decoder object (`ISVCDecoder*`, a pointer to its vtable pointer).
    private let handle: UnsafeMutablePointer<ISVCDecoder?>
    private let log = OpenH264.Log()
    /// The three plane pointers OpenH264 hands back.
    private let planes = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 3)
    /// Timing of the access units still in flight, indexed by sequence number modulo its size, which is
    /// well above the 16 pictures an H.264 decoded picture buffer can hold.
    private var timing: [(sequence: UInt64, pts: MediaTime, duration: MediaTime?)]
    private var sequence: UInt64 = 0
    /// Pictures that access units with slices should have produced so far, emitted or still held.
    private var expectedPictures = 0
    private var emittedPictures = 0

    /// Makes a decoder for a `.compressed(.h264)` stream.
    ///
    /// `threads` is checked (1...64) but OpenH264 always decodes on the calling thread: its frame
    /// threading (`DECODER_OPTION_NUM_OF_THREADS`) gives wrong pictures in 2.3.1, 46 to 50 dB away
    /// from ffmpeg's exact decode on every picture, IDR pictures included, of the streams in this
    /// module's tests (upstream: cisco/openh264 issues 3562 and 4005; hangs in 3487 and 3733).
    public init(format: VideoFormat, threads: Int = 1) throws {
        guard format.encoding == .compressed(.h264) else {
            throw CodecError.invalidSetting("OpenH264 decoder: input must be H.264, not \(format.encoding)")
        }
        guard (1...64).contains(threads) else {
            throw CodecError.invalidSetting("OpenH264 decoder: threads \(threads) is outside 1...64")
        }
        var created: UnsafeMutablePointer<ISVCDecoder?>?
        let status = WelsCreateDecoder(&created)
        guard status == 0, let handle = created else {
            throw CodecError.library(name: "openh264", operation: "WelsCreateDecoder", code: Int32(truncatingIfNeeded: status),
                                     message: OpenH264.describe(returnCode: status))
        }
        self.format = format
        self.handle = handle
        self.timing = Array(repeating: (0, .zero(format.frameRate.reciprocal), nil), count: 64)
        // From here on deinit cleans up.

        var context: UnsafeMutableRawPointer? = Unmanaged.passUnretained(log).toOpaque()
        var callback: WelsTraceCallback? = OpenH264.Log.callback
        var level = UInt32(WELS_LOG_ERROR)
        _ = sluice_openh264_decoder_set_option(handle, DECODER_OPTION_TRACE_CALLBACK_CONTEXT, &context)
        _ = sluice_openh264_decoder_set_option(handle, DECODER_OPTION_TRACE_CALLBACK, &callback)
        _ = sluice_openh264_decoder_set_option(handle, DECODER_OPTION_TRACE_LEVEL, &level)
        // DECODER_OPTION_NUM_OF_THREADS stays 0: see `init`.

        var parameters = SDecodingParam()
        parameters.eEcActiveIdc = ERROR_CON_DISABLE  // report damage, never conceal it
        parameters.sVideoProperty.size = UInt32(MemoryLayout<SVideoProperty>.size)
        parameters.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_AVC
        try OpenH264.check(sluice_openh264_decoder_initialize(handle, &parameters), "Initialize", log: log)
    }

    deinit {
        _ = sluice_openh264_decoder_uninitialize(handle)
        WelsDestroyDecoder(handle)
        planes.deallocate()
    }

    /// Decodes one access unit and emits the pictures that are ready.
    public func decode(_ frame: EncodedFrame, emit: (consuming VideoFrame) throws -> Void) throws {
        let bytes = frame.bytes
        guard let data = bytes.baseAddress, bytes.count > 0, bytes.count <= Int(Int32.max) else {
            throw CodecError.library(name: "openh264", operation: "decode", code: Int32(bitPattern: dsInvalidArgument.rawValue),
                                     message: "dsInvalidArgument: compressed frame of \(bytes.count) bytes")
        }
        // An IDR picture ends the pictures before it, which all come out first (H.264 C.4.4). OpenH264
        // would go on holding them for reordering while the IDR empties its picture buffer, and some
        // could come out overwritten: hand them out now.
        if Self.firstSliceType(in: bytes) == 5, heldPictures() > 0 {
            try flush(emit: emit)
        }
        sequence &+= 1
        timing[slot(sequence)] = (sequence, frame.pts, frame.duration)
        let heldBefore = heldPictures()
        log.clear()

        var info = SBufferInfo()
        info.uiInBsTimeStamp = sequence
        let state = withExtendedLifetime(frame) {
            sluice_openh264_decode(handle, data.assumingMemoryBound(to: UInt8.self), Int32(bytes.count), planes, &info)
        }
        // A picture handed out here is complete even when this access unit failed: it is an
        // earlier one released from the reordering buffer.
        var emitted = 0
        if info.iBufferStatus == 1 {
            try emit(copy(info))
            emitted = 1
        }
        guard state == dsErrorFree else {
            expectedPictures = emittedPictures + heldPictures()  // a failed access unit yields nothing
            var message = OpenH264.describe(decodingState: state.rawValue)
            if let detail = log.take() { message += ": " + detail }
            throw CodecError.library(name: "openh264", operation: "decode", code: Int32(bitPattern: state.rawValue),
                                     message: message)
        }
        if containsSlice() {
            expectedPictures += 1
            let held = heldPictures()
            // Each access unit with slices must either come out or join the reordering buffer.
            if emittedPictures + held < expectedPictures {
                let missing = expectedPictures - emittedPictures - held
                expectedPictures = emittedPictures + held
                var message = "no picture for an access unit with slices (\(missing) missing"
                    + ", \(heldBefore) held before, \(held) after, \(emitted) out)"
                if let detail = log.take() { message += ": " + detail }
                throw CodecError.library(name: "openh264", operation: "decode", code: Int32(bitPattern: state.rawValue),
                                         message: message)
            }
        }
    }

    /// Hands out the pictures OpenH264 still holds for reordering (`FlushFrame`), in display order.
    public func flush(emit: (consuming VideoFrame) throws -> Void) throws {
        var endOfStream: Int32 = 1
        try OpenH264.check(sluice_openh264_decoder_set_option(handle, DECODER_OPTION_END_OF_STREAM, &endOfStream),
                           "set end of stream", log: log)
        while heldPictures() > 0 {
            var info = SBufferInfo()
            let state = sluice_openh264_flush_frame(handle, planes, &info)
            guard state == dsErrorFree, info.iBufferStatus == 1 else {
                expectedPictures = emittedPictures + heldPictures()
                throw CodecError.library(name: "openh264", operation: "flush", code: Int32(bitPattern: state.rawValue),
                                         message: OpenH264.describe(decodingState: state.rawValue)
                                            + (info.iBufferStatus == 1 ? "" : ": no picture though \(heldPictures()) held"))
            }
            try emit(copy(info))
        }
        expectedPictures = emittedPictures
    }

    // MARK: - Helpers

    /// The NAL unit type (1 or 5) of the first slice in an Annex-B access unit, or `nil` if it has none.
    /// Only the NAL units before the first slice (delimiter, SEI, parameter sets) are scanned.
    static func firstSliceType(in bytes: UnsafeRawBufferPointer) -> Int? {
        var zeros = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 1, zeros >= 2, index + 1 < bytes.count {  // start code: the NAL header follows
                let type = Int(bytes[index + 1] & 0x1F)
                if type == 1 || type == 5 { return type }
                if (2...4).contains(type) { return nil }  // data partitioning: not decodable here anyway
                index += 2
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            index += 1
        }
        return nil
    }

    private func slot(_ sequence: UInt64) -> Int { Int(sequence % UInt64(timing.count)) }

    /// Pictures OpenH264 holds back for reordering.
    private func heldPictures() -> Int {
        var count: Int32 = 0
        guard sluice_openh264_decoder_get_option(handle, DECODER_OPTION_NUM_OF_FRAMES_REMAINING_IN_BUFFER, &count) == 0
        else { return 0 }
        return Int(count)
    }

    /// Whether the last access unit had VCL NAL units (slices), as OpenH264 reports it.
    private func containsSlice() -> Bool {
        var feedback: Int32 = 0
        guard sluice_openh264_decoder_get_option(handle, DECODER_OPTION_VCL_NAL, &feedback) == 0 else { return false }
        return UInt32(feedback) == FEEDBACK_VCL_NAL.rawValue
    }

    /// A pooled copy of a decoded picture, with the timing of the access unit that carried it.
    private func copy(_ info: SBufferInfo) throws -> VideoFrame {
        let buffer = info.UsrData.sSystemBuffer
        guard buffer.iFormat == Int32(videoFormatI420.rawValue), buffer.iWidth > 0, buffer.iHeight > 0,
              let y = info.pDst.0, let u = info.pDst.1, let v = info.pDst.2
        else {
            throw CodecError.library(name: "openh264", operation: "decode", code: 0,
                                     message: "unexpected picture: format \(buffer.iFormat), \(buffer.iWidth)x\(buffer.iHeight)")
        }
        let entry = timing[slot(info.uiOutYuvTimeStamp)]
        guard entry.sequence == info.uiOutYuvTimeStamp else {
            throw CodecError.library(name: "openh264", operation: "decode", code: 0,
                                     message: "picture of access unit #\(info.uiOutYuvTimeStamp), which is no longer known")
        }
        let picture = VideoFrame(pixelFormat: .i420, width: Int(buffer.iWidth), height: Int(buffer.iHeight),
                                 pts: entry.pts, duration: entry.duration, pool: outputPool)
        picture.copyPlane(0, from: y, stride: Int(buffer.iStride.0))
        picture.copyPlane(1, from: u, stride: Int(buffer.iStride.1))
        picture.copyPlane(2, from: v, stride: Int(buffer.iStride.1))
        emittedPictures += 1
        return picture
    }
}
