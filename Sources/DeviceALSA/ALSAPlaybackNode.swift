import MediaCore

/// Plays audio on an ALSA PCM.
///
/// The device is opened when the node is made (`ALSAError.noSuchDevice` when it cannot be), and
/// asked which interleaved s16/f32 formats, common rates and channel counts it takes: `inputCaps`
/// lists those, so negotiation picks one (or a converter goes in front). The hardware is set up
/// for the negotiated format at start, with periods near `periodFrames` and four of them buffered.
/// Frames are written with `snd_pcm_writei`; underruns and suspends are recovered from and counted
/// in `xruns`; `finish()` drains what is queued (`snd_pcm_drain`).
public final class ALSAPlaybackNode: MediaSink {
    public let name: String
    /// `consume()` waits while the sound card's buffer is full.
    public var execution: NodeExecution { .ownThread }
    public let device: String
    public let inputCaps: Caps
    private let requestedPeriodFrames: Int
    private let pcm: ALSAPCM
    /// Frames per period, as the device set it up (0 before start).
    public private(set) var periodFrames = 0
    /// Samples per channel written so far.
    public private(set) var samplesWritten = 0

    /// Underruns and suspends recovered from so far.
    public var xruns: Int { pcm.xruns }

    public init(device: String, name: String = "alsa-playback", periodFrames: Int = 480) throws {
        self.name = name
        self.device = device
        requestedPeriodFrames = periodFrames
        pcm = try ALSAPCM(device: device, stream: .playback)
        let support = try pcm.support()
        guard !support.sampleFormats.isEmpty, !support.sampleRates.isEmpty, !support.channelCounts.isEmpty else {
            throw ALSAError.unsupportedFormat(device: device, detail: "takes none of S16_LE/FLOAT_LE, mono/stereo, 8-192 kHz")
        }
        inputCaps = [.audio(.oneOf(support.sampleFormats.map { .samples($0) }), sampleRate: .oneOf(support.sampleRates),
                            channels: .oneOf(support.channelCounts))]
    }

    public func start(input: MediaFormat, context: NodeContext) throws {
        periodFrames = try pcm.configure(input.audio!, periodFrames: requestedPeriodFrames, exact: true).periodFrames
    }

    public func consume(_ frame: AudioFrame) throws {
        guard frame.sampleCount > 0 else { return }
        try pcm.write(frame.buffer.storage.baseAddress!, frames: frame.sampleCount, bytesPerFrame: frame.byteCount / frame.sampleCount)
        samplesWritten += frame.sampleCount
    }

    public func finish() throws { try pcm.drain() }
    public func close() { pcm.close() }
}
