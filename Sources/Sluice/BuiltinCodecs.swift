extension CodecRegistry {
    /// Every codec that ships with Sluice, in Sluice's order of preference: VP8, then H.264 (x264
    /// encodes, OpenH264 encodes second and decodes), then Opus; MJPEG decoding (camera pictures, into
    /// video-range I420). libavcodec's own VP8 and H.264 decoders, where the linked libavcodec has
    /// them, decode ahead of libvpx and OpenH264 (faster, and exact on every H.264 profile).
    public static var builtIn: CodecRegistry {
        var registry = CodecRegistry()
        for codec in FFmpegDecoders.codecs {
            if let decoders = FFmpegDecoderProvider(codec: codec) { registry.register(decoders) }
        }
        registry.register(VP8EncoderProvider())
        registry.register(VP8DecoderProvider())
        registry.register(X264EncoderProvider())
        registry.register(OpenH264EncoderProvider())
        registry.register(OpenH264DecoderProvider())
        registry.register(OpusEncoderProvider())
        registry.register(OpusDecoderProvider())
        registry.register(MJPEGDecoderProvider())
        return registry
    }
}
