import MediaConvert
import MediaCore

/// Captures audio from an ALSA PCM, one period per frame.
///
/// The device is opened and set up when the node is made, so that a missing or unsuitable device
/// fails at once (`ALSAError`). It captures in the requested format when the device takes it, else
/// in the nearest one it offers, converted by MediaConvert's `AudioConverter` (speexdsp resampling,
/// channel mixing). Periods are read with `snd_pcm_readi` into buffers from `pool`. Timestamps
/// count the samples read since the start (pts 0 is the first sample). Overruns and suspends are
/// recovered from and counted in `xruns`; a device that vanishes ends the stream with
/// `ALSAError.deviceLost`. The stream ends after `maxDuration`, else when the graph stops.
public final class ALSACaptureNode: MediaSource {
    public let name: String
    /// `produce()` waits for the sound card's next period.
    public var execution: NodeExecution { .ownThread }
    public let device: String
    /// The format produced.
    public let format: AudioFormat
    /// The format the device captures in (differs from `format` when converting).
    public let deviceFormat: AudioFormat
    /// Frames per period, as the device set it up.
    public let periodFrames: Int
    public let maxDuration: ClockTime?
    /// Where the captured periods' storage comes from (and returns to).
    public let pool: BufferPool
    private let pcm: ALSAPCM
    private let converter: AudioConverter?
    private var pending: [AudioFrame] = []
    private var samplesRead = 0
    private var ended = false

    /// Overruns and suspends recovered from so far.
    public var xruns: Int { pcm.xruns }

    /// Opens `device` for capture in `format` (raw s16 or f32, interleaved).
    /// - Throws: `ALSAError.noSuchDevice` naming the device when it cannot be opened; another
    ///   `ALSAError` when it cannot be set up, `AudioConversionError` when its format cannot be converted.
    public init(device: String, format: AudioFormat, periodFrames: Int = 480, maxDuration: ClockTime? = nil,
                name: String = "alsa-capture") throws {
        self.name = name
        self.device = device
        self.format = format
        self.maxDuration = maxDuration
        pool = BufferPool(name: "alsa-capture:\(device)")
        pcm = try ALSAPCM(device: device, stream: .capture)
        let setup = try pcm.configure(format, periodFrames: periodFrames, exact: false)
        deviceFormat = setup.format
        self.periodFrames = setup.periodFrames
        converter = setup.format == format ? nil : try AudioConverter(from: setup.format, to: format)
    }

    public func outputCaps() throws -> Caps { Caps(.audio(format)) }
    public func start(output: MediaFormat, context: NodeContext) throws {}

    public func produce() throws -> Production<AudioFrame> {
        while pending.isEmpty {
            if ended { return .end }
            try capture()
        }
        return .item(pending.removeFirst())
    }

    /// Samples (at the device's rate) still to capture; nil without a limit.
    private var remaining: Int? {
        maxDuration.map { limit in
            let total = (Int128(limit.nanoseconds) * Int128(deviceFormat.sampleRate) + 500_000_000) / 1_000_000_000
            return Swift.max(0, Int(total) - samplesRead)
        }
    }

    /// Reads one period (or what is left of `maxDuration`) into `pending`, through the converter.
    private func capture() throws {
        let count = Swift.min(periodFrames, remaining ?? periodFrames)
        guard count > 0, case .samples(let samples) = deviceFormat.encoding else { return try end() }
        let frame = AudioFrame(sampleFormat: samples, sampleRate: deviceFormat.sampleRate, channels: deviceFormat.channels,
                               sampleCount: count, pts: MediaTime(Int64(samplesRead), timebase: Rational(1, deviceFormat.sampleRate)),
                               pool: pool)
        try pcm.read(into: frame.bytes.baseAddress!, frames: count, bytesPerFrame: frame.byteCount / count)
        samplesRead += count
        if let converter { try converter.convert(frame) { pending.append($0) } } else { pending.append(frame) }
    }

    private func end() throws {
        ended = true
        try converter?.flush { pending.append($0) }
    }

    public func close() { pcm.close() }
}
