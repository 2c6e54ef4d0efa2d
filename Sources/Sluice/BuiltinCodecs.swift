extension CodecRegistry {
    /// Every codec that ships with Sluice, in Sluice's order of preference: VP8, then H.264 (x264
    /// encodes, OpenH264 encodes second and decodes), then Opus; MJPEG decoding (camera pictures, into
    /// video-range I420).
    public static var builtIn: CodecRegistry {
        var registry = CodecRegistry()
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
