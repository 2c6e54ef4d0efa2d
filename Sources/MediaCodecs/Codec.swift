import MediaCore

/// Settings common to video encoders. Codec-specific knobs belong to the provider.
public struct VideoEncoderSettings: Sendable, Hashable {
    /// Target bitrate in bits per second.
    public var bitrate: Int
    /// Maximum distance between keyframes in frames; `nil` lets the encoder choose.
    public var keyframeInterval: Int?
    /// Worker threads inside the encoder (1 = none).
    public var threads: Int
    /// Real-time tuning: low latency, no lookahead, speed over compression.
    public var realtime: Bool
    /// Constant quality instead of a target bitrate, on the codec's own scale (x264's CRF, 0...51).
    /// `nil` means bitrate control.
    public var quality: Int?
    /// Codec profile by its usual name, e.g. H.264 "constrained-baseline", "main", "high";
    /// `nil` lets the provider choose.
    public var profile: String?

    public init(bitrate: Int = 800_000, keyframeInterval: Int? = nil, threads: Int = 1, realtime: Bool = true,
                quality: Int? = nil, profile: String? = nil) {
        self.bitrate = bitrate
        self.keyframeInterval = keyframeInterval
        self.threads = threads
        self.realtime = realtime
        self.quality = quality
        self.profile = profile
    }
}

// Every `emit` takes its frame `consuming`: a codec hands over what it made, and the graph moves it
// into the node's outbox instead of copying it (a copy costs a reference count up and one down).

/// Turns pictures into compressed frames. One instance serves one stream, on one thread at a time.
public protocol VideoEncoder: AnyObject {
    /// Encodes `frame`, handing every compressed frame the encoder emits to `emit`.
    func encode(_ frame: VideoFrame, forceKeyframe: Bool, emit: (consuming EncodedFrame) throws -> Void) throws
    /// Drains frames still inside the encoder at end of stream.
    func flush(emit: (consuming EncodedFrame) throws -> Void) throws
    /// Changes the target bitrate while running.
    func setBitrate(_ bitsPerSecond: Int) throws
}

/// Turns compressed frames back into pictures.
public protocol VideoDecoder: AnyObject {
    /// Decodes `frame`, handing every picture the decoder emits to `emit`.
    func decode(_ frame: EncodedFrame, emit: (consuming VideoFrame) throws -> Void) throws
    /// Drains pictures still inside the decoder at end of stream.
    func flush(emit: (consuming VideoFrame) throws -> Void) throws
}

/// Makes video encoders of one codec. Stateless; safe to share.
public protocol VideoEncoderProvider: Sendable {
    /// A name that tells implementations apart, e.g. "libvpx".
    var name: String { get }
    var codec: CodecName { get }
    /// Raw formats the encoders accept.
    var inputCaps: Caps { get }
    func makeEncoder(format: VideoFormat, settings: VideoEncoderSettings) throws -> any VideoEncoder
}

/// Makes video decoders of one codec. Stateless; safe to share.
public protocol VideoDecoderProvider: Sendable {
    var name: String { get }
    var codec: CodecName { get }
    /// Raw formats the decoders can output, given the compressed input.
    func outputCaps(for input: VideoFormat) -> Caps
    func makeDecoder(format: VideoFormat, threads: Int) throws -> any VideoDecoder
}

/// Settings common to audio encoders.
public struct AudioEncoderSettings: Sendable, Equatable {
    /// Target bitrate in bits per second.
    public var bitrate: Int
    /// Duration of one compressed packet, e.g. 20 ms.
    public var frameDuration: MediaTime
    /// Encoder effort, 0 (fastest) to 10 (best), where the codec has such a knob.
    public var complexity: Int?
    /// In-band forward error correction (Opus LBRR), so that a lost packet can be rebuilt from the next.
    public var inbandFEC: Bool
    /// Discontinuous transmission: send (almost) nothing during silence.
    public var dtx: Bool
    /// Expected packet loss in percent, which tunes FEC.
    public var expectedLossPercent: Int

    public init(bitrate: Int = 64_000, frameDuration: MediaTime = MediaTime(20, timebase: Rational(1, 1000)),
                complexity: Int? = nil, inbandFEC: Bool = false, dtx: Bool = false, expectedLossPercent: Int = 0) {
        self.bitrate = bitrate
        self.frameDuration = frameDuration
        self.complexity = complexity
        self.inbandFEC = inbandFEC
        self.dtx = dtx
        self.expectedLossPercent = expectedLossPercent
    }
}

/// Turns audio samples into compressed packets. Input frames may have any length: the encoder
/// buffers samples up to its packet duration.
public protocol AudioEncoder: AnyObject {
    /// Encodes `frame`, handing every packet the encoder completes to `emit`.
    func encode(_ frame: AudioFrame, emit: (consuming EncodedFrame) throws -> Void) throws
    /// End of stream: pads and encodes what is buffered. The stream's packets then cover, by their
    /// durations, `preSkip` plus every input sample (the last one's shorter duration trims the
    /// padding); the next frame starts a new stream.
    func flush(emit: (consuming EncodedFrame) throws -> Void) throws
    func setBitrate(_ bitsPerSecond: Int) throws
    /// Samples (per channel, at the rate of the packets' timestamps: 48 kHz for Opus) of encoder delay
    /// at the start of the decoded stream, which the decoder must drop (Opus pre-skip).
    var preSkip: Int { get }
}

/// Turns compressed audio packets back into samples.
public protocol AudioDecoder: AnyObject {
    func decode(_ frame: EncodedFrame, emit: (consuming AudioFrame) throws -> Void) throws
    /// Makes up `duration` of audio for packets that never arrived (packet-loss concealment).
    func concealLoss(duration: MediaTime, emit: (consuming AudioFrame) throws -> Void) throws
    /// Rebuilds `duration` of audio lost just before `next` (which it does not decode) from the
    /// redundancy `next` carries, such as Opus in-band FEC, concealing what that does not cover.
    func recoverLoss(_ duration: MediaTime, from next: EncodedFrame, emit: (consuming AudioFrame) throws -> Void) throws
    /// End of stream: emits what is held back; the next packet starts a new stream.
    func flush(emit: (consuming AudioFrame) throws -> Void) throws
}

extension AudioDecoder {
    /// For codecs without redundancy: the whole span is concealed.
    public func recoverLoss(_ duration: MediaTime, from next: EncodedFrame, emit: (consuming AudioFrame) throws -> Void) throws {
        try concealLoss(duration: duration, emit: emit)
    }
}

/// Makes audio encoders of one codec. Stateless; safe to share.
public protocol AudioEncoderProvider: Sendable {
    var name: String { get }
    var codec: CodecName { get }
    /// Raw formats the encoders accept (sample formats, rates, channel counts).
    var inputCaps: Caps { get }
    func makeEncoder(format: AudioFormat, settings: AudioEncoderSettings) throws -> any AudioEncoder
}

/// Makes audio decoders of one codec. Stateless; safe to share.
public protocol AudioDecoderProvider: Sendable {
    var name: String { get }
    var codec: CodecName { get }
    /// Raw formats the decoders can output for the compressed input, best first.
    func outputCaps(for input: AudioFormat) -> Caps
    func makeDecoder(input: AudioFormat, output: AudioFormat) throws -> any AudioDecoder
    /// A decoder that drops the first `preSkip` samples (at the input's sample rate) of the decoded
    /// stream: the encoder delay a container declares, like Ogg Opus's pre-skip (RFC 7845 §4.2).
    func makeDecoder(input: AudioFormat, output: AudioFormat, preSkip: Int) throws -> any AudioDecoder
}

extension AudioDecoderProvider {
    /// For codecs without encoder delay: only a pre-skip of 0 is accepted, so none is silently kept.
    public func makeDecoder(input: AudioFormat, output: AudioFormat, preSkip: Int) throws -> any AudioDecoder {
        guard preSkip == 0 else { throw CodecError.invalidSetting("\(name) cannot drop a pre-skip of \(preSkip) samples") }
        return try makeDecoder(input: input, output: output)
    }
}

/// Codec failures. Library errors keep the library's own code and message.
public enum CodecError: Error, Equatable, CustomStringConvertible {
    /// A call into the codec library failed.
    case library(name: String, operation: String, code: Int32, message: String)
    /// A setting is out of the range the codec accepts.
    case invalidSetting(String)
    /// No registered provider handles the codec.
    case noProvider(CodecName, role: String)

    public var description: String {
        switch self {
        case .library(let name, let operation, let code, let message):
            return "\(name): \(operation) failed (\(code)): \(message)"
        case .invalidSetting(let text): return "invalid codec setting: \(text)"
        case .noProvider(let codec, let role): return "no \(role) registered for \(codec)"
        }
    }
}
