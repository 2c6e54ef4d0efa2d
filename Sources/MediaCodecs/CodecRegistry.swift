import MediaCore

/// The codecs an application can use, in order of preference.
///
/// Providers are looked up by codec name; the first registered provider for a codec wins unless
/// `prefer(_:)` moves another to the front. Applications may register providers from their own
/// packages.
public struct CodecRegistry: Sendable {
    public private(set) var videoEncoders: [any VideoEncoderProvider] = []
    public private(set) var videoDecoders: [any VideoDecoderProvider] = []
    public private(set) var audioEncoders: [any AudioEncoderProvider] = []
    public private(set) var audioDecoders: [any AudioDecoderProvider] = []

    public init() {}

    public mutating func register(_ provider: any VideoEncoderProvider) { videoEncoders.append(provider) }
    public mutating func register(_ provider: any VideoDecoderProvider) { videoDecoders.append(provider) }
    public mutating func register(_ provider: any AudioEncoderProvider) { audioEncoders.append(provider) }
    public mutating func register(_ provider: any AudioDecoderProvider) { audioDecoders.append(provider) }

    /// Moves the providers named `name` (encoders and decoders) to the front, keeping the rest in order.
    public mutating func prefer(_ name: String) {
        videoEncoders = videoEncoders.filter { $0.name == name } + videoEncoders.filter { $0.name != name }
        videoDecoders = videoDecoders.filter { $0.name == name } + videoDecoders.filter { $0.name != name }
        audioEncoders = audioEncoders.filter { $0.name == name } + audioEncoders.filter { $0.name != name }
        audioDecoders = audioDecoders.filter { $0.name == name } + audioDecoders.filter { $0.name != name }
    }

    /// The preferred encoder provider for `codec`, optionally restricted to the provider `named`.
    public func videoEncoder(for codec: CodecName, named: String? = nil) throws -> any VideoEncoderProvider {
        guard let found = videoEncoders.first(where: { $0.codec == codec && (named == nil || $0.name == named) })
        else { throw CodecError.noProvider(codec, role: named.map { "video encoder named \($0)" } ?? "video encoder") }
        return found
    }

    /// The preferred decoder provider for `codec`, optionally restricted to the provider `named`.
    public func videoDecoder(for codec: CodecName, named: String? = nil) throws -> any VideoDecoderProvider {
        guard let found = videoDecoders.first(where: { $0.codec == codec && (named == nil || $0.name == named) })
        else { throw CodecError.noProvider(codec, role: named.map { "video decoder named \($0)" } ?? "video decoder") }
        return found
    }

    /// The preferred audio encoder provider for `codec`, optionally restricted to the provider `named`.
    public func audioEncoder(for codec: CodecName, named: String? = nil) throws -> any AudioEncoderProvider {
        guard let found = audioEncoders.first(where: { $0.codec == codec && (named == nil || $0.name == named) })
        else { throw CodecError.noProvider(codec, role: named.map { "audio encoder named \($0)" } ?? "audio encoder") }
        return found
    }

    /// The preferred audio decoder provider for `codec`.
    public func audioDecoder(for codec: CodecName) throws -> any AudioDecoderProvider {
        guard let found = audioDecoders.first(where: { $0.codec == codec })
        else { throw CodecError.noProvider(codec, role: "audio decoder") }
        return found
    }

    /// Every registered provider, encoders then decoders, video then audio, each with its rank: 1 for
    /// the one chosen for its codec and kind, 2 for the next, and so on.
    public var providers: [CodecProviderEntry] {
        func ranked(_ list: [(name: String, codec: CodecName)], _ kind: CodecProviderEntry.Kind,
                    _ media: CodecProviderEntry.Media) -> [CodecProviderEntry] {
            var seen: [CodecName: Int] = [:]
            return list.map { provider in
                seen[provider.codec, default: 0] += 1
                return CodecProviderEntry(name: provider.name, codec: provider.codec, kind: kind, media: media,
                                          rank: seen[provider.codec]!)
            }
        }
        return ranked(videoEncoders.map { ($0.name, $0.codec) }, .encoder, .video)
            + ranked(audioEncoders.map { ($0.name, $0.codec) }, .encoder, .audio)
            + ranked(videoDecoders.map { ($0.name, $0.codec) }, .decoder, .video)
            + ranked(audioDecoders.map { ($0.name, $0.codec) }, .decoder, .audio)
    }
}

/// One provider of a registry, as `CodecRegistry.providers` lists it.
public struct CodecProviderEntry: Sendable, Hashable {
    public enum Kind: String, Sendable, CaseIterable { case encoder, decoder }
    public enum Media: String, Sendable { case video, audio }
    public var name: String
    public var codec: CodecName
    public var kind: Kind
    public var media: Media
    /// 1 for the provider chosen for this codec and kind, 2 for the next, ...
    public var rank: Int
}
