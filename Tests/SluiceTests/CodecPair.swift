import Sluice

/// An encoder provider and a decoder provider of one codec: what the conformance suites run over.
struct CodecPair<Encoder: Sendable, Decoder: Sendable>: CustomStringConvertible, Sendable {
    let encoder: Encoder
    let decoder: Decoder
    /// "codec encoder -> decoder", e.g. "OPUS libopus -> libopus".
    let description: String

    /// Every encoder with every decoder of its codec; `identify` gives a provider's codec and name.
    static func matching(_ encoders: [Encoder], _ decoders: [Decoder],
                         encoder identifyEncoder: (Encoder) -> (codec: CodecName, name: String),
                         decoder identifyDecoder: (Decoder) -> (codec: CodecName, name: String)) -> [CodecPair] {
        encoders.flatMap { encoder in
            let (codec, name) = identifyEncoder(encoder)
            return decoders.filter { identifyDecoder($0).codec == codec }.map { decoder in
                CodecPair(encoder: encoder, decoder: decoder, description: "\(codec) \(name) -> \(identifyDecoder(decoder).name)")
            }
        }
    }
}

typealias VideoCodecPair = CodecPair<any VideoEncoderProvider, any VideoDecoderProvider>
typealias AudioCodecPair = CodecPair<any AudioEncoderProvider, any AudioDecoderProvider>

extension CodecPair where Encoder == any VideoEncoderProvider, Decoder == any VideoDecoderProvider {
    /// Every video encoder of the built-in registry with every decoder of its codec.
    static var builtIn: [CodecPair] {
        let registry = CodecRegistry.builtIn
        return matching(registry.videoEncoders, registry.videoDecoders, encoder: { ($0.codec, $0.name) },
                        decoder: { ($0.codec, $0.name) })
    }
}

extension CodecPair where Encoder == any AudioEncoderProvider, Decoder == any AudioDecoderProvider {
    /// Every audio encoder of the built-in registry with every decoder of its codec.
    static var builtIn: [CodecPair] {
        let registry = CodecRegistry.builtIn
        return matching(registry.audioEncoders, registry.audioDecoders, encoder: { ($0.codec, $0.name) },
                        decoder: { ($0.codec, $0.name) })
    }
}
