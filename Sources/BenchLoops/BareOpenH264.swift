// OpenH264 called in bare loops, as an application using it directly would: the reference the graph's
// OpenH264 encoding and decoding are measured against.
import COpenH264
import Sluice

/// H.264 through OpenH264 alone: the C++ objects through their vtables, no Sluice types in the loops.
public enum BareOpenH264 {
    /// Encodes `pictures` of `format` with the parameters OpenH264Encoder applies for `settings`;
    /// returns the compressed bytes.
    public static func encode(_ pictures: ArraySlice<VideoFrame>, format: VideoFormat,
                              settings: VideoEncoderSettings) -> Int {
        var created: UnsafeMutablePointer<ISVCEncoder?>?
        precondition(WelsCreateSVCEncoder(&created) == 0)
        let encoder = created!
        defer { WelsDestroySVCEncoder(encoder) }
        var level = Int32(WELS_LOG_ERROR)  // as OpenH264Encoder: errors only, no warnings on stderr
        _ = sluice_openh264_encoder_set_option(encoder, ENCODER_OPTION_TRACE_LEVEL, &level)
        var parameters = SEncParamExt()
        precondition(sluice_openh264_encoder_get_default_params(encoder, &parameters) == 0)
        OpenH264Encoder.configure(&parameters, format: format, settings: settings)
        precondition(sluice_openh264_encoder_initialize_ext(encoder, &parameters) == 0)
        defer { _ = sluice_openh264_encoder_uninitialize(encoder) }
        var dataFormat = Int32(videoFormatI420.rawValue)
        _ = sluice_openh264_encoder_set_option(encoder, ENCODER_OPTION_DATAFORMAT, &dataFormat)

        let info = UnsafeMutablePointer<SFrameBSInfo>.allocate(capacity: 1)
        defer { info.deallocate() }
        info.initialize(to: SFrameBSInfo())
        var bytes = 0
        var source = SSourcePicture()
        source.iColorFormat = Int32(videoFormatI420.rawValue)
        source.iPicWidth = Int32(format.width)
        source.iPicHeight = Int32(format.height)
        let millisecondsPerFrame = 1000 * Int64(format.frameRate.denominator) / Int64(format.frameRate.numerator)
        for (index, frame) in pictures.enumerated() {
            let base = frame.buffer.storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let layout = frame.layout
            source.iStride = (Int32(layout[0].stride), Int32(layout[1].stride), Int32(layout[2].stride), 0)
            source.pData = (base + layout[0].offset, base + layout[1].offset, base + layout[2].offset, nil)
            source.uiTimeStamp = Int64(index) * millisecondsPerFrame
            precondition(sluice_openh264_encode(encoder, &source, info) == 0)
            bytes += Int(info.pointee.iFrameSizeInBytes)
        }
        return bytes
    }

    /// Decodes Annex-B access units `frames` with error concealment off; returns the pictures handed out.
    public static func decode(_ frames: ArraySlice<EncodedFrame>) -> Int {
        var created: UnsafeMutablePointer<ISVCDecoder?>?
        precondition(WelsCreateDecoder(&created) == 0)
        let decoder = created!
        defer { WelsDestroyDecoder(decoder) }
        var parameters = SDecodingParam()
        parameters.eEcActiveIdc = ERROR_CON_DISABLE
        parameters.sVideoProperty.size = UInt32(MemoryLayout<SVideoProperty>.size)
        parameters.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_AVC
        precondition(sluice_openh264_decoder_initialize(decoder, &parameters) == 0)
        defer { _ = sluice_openh264_decoder_uninitialize(decoder) }

        var planes: (UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?) = (nil, nil, nil)
        var pictures = 0
        withUnsafeMutableBytes(of: &planes) { raw in
            let planes = raw.baseAddress!.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
            var info = SBufferInfo()
            for frame in frames {
                let bytes = frame.bytes
                let state = sluice_openh264_decode(decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                   Int32(bytes.count), planes, &info)
                precondition(state == dsErrorFree)
                if info.iBufferStatus == 1 { pictures += 1 }
            }
        }
        return pictures
    }
}
