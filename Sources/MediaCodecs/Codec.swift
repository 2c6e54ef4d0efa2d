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

    public init(bitrate: Int = 800_000, keyframeInterval: Int? = nil, threads: Int = 1, realtime: Bool = true) {
        self.bitrate = bitrate
        self.keyframeInterval = keyframeInterval
        self.threads = threads
        self.realtime = realtime
    }
}

/// Turns pictures into compressed frames. One instance serves one stream, on one thread at a time.
public protocol VideoEncoder: AnyObject {
    /// Encodes `frame`, handing every compressed frame the encoder emits to `emit`.
    func encode(_ frame: VideoFrame, forceKeyframe: Bool, emit: (EncodedFrame) throws -> Void) throws
    /// Drains frames still inside the encoder at end of stream.
    func flush(emit: (EncodedFrame) throws -> Void) throws
    /// Changes the target bitrate while running.
    func setBitrate(_ bitsPerSecond: Int) throws
}

/// Turns compressed frames back into pictures.
public protocol VideoDecoder: AnyObject {
    /// Decodes `frame`, handing every picture the decoder emits to `emit`.
    func decode(_ frame: EncodedFrame, emit: (VideoFrame) throws -> Void) throws
    /// Drains pictures still inside the decoder at end of stream.
    func flush(emit: (VideoFrame) throws -> Void) throws
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
