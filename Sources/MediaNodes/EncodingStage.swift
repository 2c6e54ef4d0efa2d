import MediaCodecs
import MediaCore

/// The encoding stage of every sending pipeline, whoever builds it: a peer connection's track
/// (`LocalTrack`), `sluice send` and `sluice transcode` (`Transcoder`), a shared encoding for many
/// viewers. Video goes straight into the encoder; audio is first converted to the format nearest
/// its own that the encoder takes.
public enum EncodingStage {
    /// Adds the encoder of `codec` (the provider `named`, else `registry`'s preferred one) after `pictures`.
    public static func video(_ pictures: Port<VideoFrame>, in graph: Graph, codec: CodecName, named name: String? = nil,
                             registry: CodecRegistry, settings: VideoEncoderSettings) throws -> (Port<EncodedFrame>, VideoEncoderNode) {
        let encoder = VideoEncoderNode(try registry.videoEncoder(for: codec, named: name), settings: settings)
        return (graph.add(encoder, input: pictures), encoder)
    }

    /// Adds the encoder of `codec` after `samples`, with a conversion node before it when the
    /// encoder does not take `format` (`nearestFormat`). `format` nil, for a source whose format is
    /// only known once negotiated: the samples are always converted, to the format nearest
    /// `unknownTo` that the encoder takes. Throws when the encoder takes nothing near.
    public static func audio(_ samples: Port<AudioFrame>, format: AudioFormat?, in graph: Graph, codec: CodecName,
                             named name: String? = nil, registry: CodecRegistry, settings: AudioEncoderSettings,
                             fixedRate: Bool = false, fixedChannels: Bool = false,
                             unknownTo: AudioFormat = AudioFormat(encoding: .samples(.s16), sampleRate: 48_000, channels: 2))
        throws -> (Port<EncodedFrame>, AudioEncoderNode) {
        let provider = try registry.audioEncoder(for: codec, named: name)
        let given = format ?? unknownTo
        guard let target = nearestFormat(to: given, in: provider.inputCaps, rateIsFixed: fixedRate, channelsAreFixed: fixedChannels) else {
            throw EncodingStageError.formatNotTaken(encoder: provider.name, format: given, accepted: provider.inputCaps)
        }
        let converted = format == target ? samples : graph.add(AudioConvertNode(to: target), input: samples)
        let encoder = AudioEncoderNode(provider, settings: settings)
        return (graph.add(encoder, input: converted), encoder)
    }

    /// `format` if `accepted` takes it; else the nearest format it takes, changing only what is not
    /// fixed: the rate to 48 kHz, the channels to stereo or mono, the samples to float or 16-bit.
    /// Nil when nothing fits.
    public static func nearestFormat(to format: AudioFormat, in accepted: Caps, rateIsFixed: Bool,
                                     channelsAreFixed: Bool) -> AudioFormat? {
        let rates = rateIsFixed ? [format.sampleRate] : [format.sampleRate, 48_000]
        let channelCounts = channelsAreFixed ? [format.channels] : [format.channels, min(format.channels, 2), 1]
        for rate in rates {
            for channels in channelCounts {
                for encoding in [format.encoding, .samples(.f32), .samples(.s16)] {
                    let candidate = AudioFormat(encoding: encoding, sampleRate: rate, channels: channels)
                    if !accepted.intersection(Caps(.audio(candidate))).isEmpty { return candidate }
                }
            }
        }
        return nil
    }
}

public enum EncodingStageError: Error, CustomStringConvertible, Equatable {
    /// The encoder takes no format near the samples' (`EncodingStage.nearestFormat`).
    case formatNotTaken(encoder: String, format: AudioFormat, accepted: Caps)

    public var description: String {
        switch self {
        case .formatNotTaken(let encoder, let format, let accepted):
            "\(encoder) cannot take \(format.sampleRate) Hz, \(format.channels) channels (it takes \(accepted))"
        }
    }
}
