extension CodecRegistry {
    /// Every codec that ships with Sluice, in Sluice's order of preference.
    public static var builtIn: CodecRegistry {
        var registry = CodecRegistry()
        registry.register(VP8EncoderProvider())
        registry.register(VP8DecoderProvider())
        registry.register(OpusEncoderProvider())
        registry.register(OpusDecoderProvider())
        return registry
    }
}
