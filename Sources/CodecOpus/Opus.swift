import COpus
import MediaCodecs
import MediaCore

/// Facts about the linked libopus and Opus itself, and the error mapping shared by the encoder and
/// decoder.
public enum Opus {
    /// The libopus version, e.g. "libopus 1.3.1".
    public static var version: String { String(cString: opus_get_version_string()) }

    /// The sample rates libopus encodes and decodes at (RFC 6716 §2: NB to FB), best first.
    public static let sampleRates = [48_000, 24_000, 16_000, 12_000, 8_000]
    /// Channel counts of a plain (mapping family 0) stream.
    public static let channelCounts = [1, 2]
    /// Opus timestamps count samples at 48 kHz whatever the coding rate (RFC 7587 §4.1, RFC 7845 §4).
    public static let timebase = Rational(1, 48_000)
    /// The longest packet, 120 ms, in 48 kHz samples (RFC 6716 §3.2.5).
    public static let maxPacketSamples = 5760
    /// Bytes enough for any packet libopus produces (its documentation recommends 4000).
    static let maxPacketBytes = 4000

    /// `CodecError.library` with libopus's message for `code`.
    static func error(_ code: Int32, _ operation: String) -> CodecError {
        .library(name: "libopus", operation: operation, code: code, message: String(cString: opus_strerror(code)))
    }

    /// Throws `CodecError.library` unless `code` is `OPUS_OK`; returns `code` otherwise.
    static func check(_ code: Int32, _ operation: String) throws {
        guard code == OPUS_OK else { throw error(code, operation) }
    }

    /// The sample format of a raw-audio encoding, if libopus takes it (16-bit integers or floats).
    static func sampleFormat(of encoding: Encoding) -> SampleFormat? {
        if case .samples(let format) = encoding { return format }
        return nil
    }
}
