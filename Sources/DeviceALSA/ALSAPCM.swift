import CALSA
import Glibc
import MediaCore

/// The direction of a PCM.
enum ALSAStream {
    case capture, playback

    var raw: snd_pcm_stream_t { self == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK }
}

/// The interleaved formats a PCM's hardware parameters admit, among those Sluice carries.
struct ALSAHardwareSupport: Equatable {
    var sampleFormats: [SampleFormat]
    /// The common rates it takes, 48 kHz first.
    var sampleRates: [Int]
    var channelCounts: [Int]
}

/// The hardware parameters a PCM was set up with.
struct ALSAHardwareSetup: Equatable {
    /// Sample format, rate and channels in use (raw samples, interleaved).
    var format: AudioFormat
    var periodFrames: Int
    var bufferFrames: Int
}

/// An open ALSA PCM: the `snd_pcm_t` handle, its hardware and software parameters, and blocking
/// interleaved reads and writes that recover from overruns, underruns and suspends.
///
/// Not thread-safe: one node drives it. The handle is closed by `close()` or `deinit`.
final class ALSAPCM {
    let device: String
    let stream: ALSAStream
    private var handle: OpaquePointer?
    /// Overruns (capture) or underruns (playback) and suspends recovered from.
    private(set) var xruns = 0

    /// Sample rates tried when listing what the hardware takes, in order of preference.
    static let commonRates = [48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000,
                              88_200, 96_000, 176_400, 192_000]

    /// alsa-lib's messages on stderr silenced, once: its errors reach the caller as `ALSAError`s.
    static let quietErrors: Void = sluice_alsa_keep_errors_quiet()

    /// Opens `device` (`snd_pcm_open`, blocking mode); `ALSAError.noSuchDevice` when it cannot.
    init(device: String, stream: ALSAStream) throws {
        self.device = device
        self.stream = stream
        _ = Self.quietErrors
        var pcm: OpaquePointer?
        let code = snd_pcm_open(&pcm, device, stream.raw, 0)
        guard code >= 0, let pcm else { throw ALSAError.noSuchDevice(name: device, reason: ALSAError.message(code)) }
        handle = pcm
    }

    deinit { close() }

    func close() {
        guard let pcm = handle else { return }
        handle = nil
        snd_pcm_close(pcm)
    }

    /// The formats the hardware parameters admit (`snd_pcm_hw_params_test_*`).
    func support() throws -> ALSAHardwareSupport {
        try withHardwareParameters { pcm, params in
            _ = snd_pcm_hw_params_set_access(pcm, params, SND_PCM_ACCESS_RW_INTERLEAVED)
            _ = snd_pcm_hw_params_set_rate_resample(pcm, params, 0)
            let formats = SampleFormat.allCases.filter { snd_pcm_hw_params_test_format(pcm, params, Self.alsaFormat($0)) == 0 }
            let rates = Self.commonRates.filter { snd_pcm_hw_params_test_rate(pcm, params, UInt32($0), 0) == 0 }
            let channels = [2, 1].filter { snd_pcm_hw_params_test_channels(pcm, params, UInt32($0)) == 0 }
            return ALSAHardwareSupport(sampleFormats: formats, sampleRates: rates, channelCounts: channels)
        }
    }

    /// Sets hardware parameters for low latency (interleaved read/write access, a period near
    /// `periodFrames`, a buffer of four periods) as close to `wanted` as the device goes, then
    /// software parameters, and prepares the PCM. With `exact`, anything but `wanted` is an error;
    /// otherwise the caller converts from what the returned setup says. ALSA's own resampling is
    /// off: a rate the hardware lacks is converted by the caller (speexdsp).
    func configure(_ wanted: AudioFormat, periodFrames: Int, exact: Bool) throws -> ALSAHardwareSetup {
        guard case .samples(let wantedSamples) = wanted.encoding else {
            throw ALSAError.unsupportedFormat(device: device, detail: "\(wanted): raw samples only")
        }
        let setup = try withHardwareParameters { pcm, params in
            try check(snd_pcm_hw_params_set_access(pcm, params, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
            _ = snd_pcm_hw_params_set_rate_resample(pcm, params, 0)
            let candidates = [wantedSamples] + SampleFormat.allCases.filter { $0 != wantedSamples && !exact }
            guard let samples = candidates.first(where: { snd_pcm_hw_params_test_format(pcm, params, Self.alsaFormat($0)) == 0 })
            else { throw ALSAError.unsupportedFormat(device: device, detail: "\(wanted): neither S16_LE nor FLOAT_LE") }
            try check(snd_pcm_hw_params_set_format(pcm, params, Self.alsaFormat(samples)), "sample format \(samples)")
            var channels = UInt32(wanted.channels)
            try check(snd_pcm_hw_params_set_channels_near(pcm, params, &channels), "channels near \(wanted.channels)")
            var rate = UInt32(wanted.sampleRate), direction: Int32 = 0
            try check(snd_pcm_hw_params_set_rate_near(pcm, params, &rate, &direction), "rate near \(wanted.sampleRate)")
            let format = AudioFormat(encoding: .samples(samples), sampleRate: Int(rate), channels: Int(channels))
            if exact && format != wanted {
                throw ALSAError.unsupportedFormat(device: device, detail: "\(wanted) asked, \(format) offered")
            }
            var period = snd_pcm_uframes_t(periodFrames)
            try check(snd_pcm_hw_params_set_period_size_near(pcm, params, &period, &direction), "period near \(periodFrames) frames")
            var buffer = period * 4
            try check(snd_pcm_hw_params_set_buffer_size_near(pcm, params, &buffer), "buffer near \(period * 4) frames")
            try check(snd_pcm_hw_params(pcm, params), "hardware parameters")
            _ = snd_pcm_hw_params_get_period_size(params, &period, &direction)
            _ = snd_pcm_hw_params_get_buffer_size(params, &buffer)
            return ALSAHardwareSetup(format: format, periodFrames: Int(period), bufferFrames: Int(buffer))
        }
        try setSoftwareParameters(setup)
        try check(snd_pcm_prepare(handle), "prepare")
        return setup
    }

    /// Capture starts at the first read; playback once two periods are queued (or at drain).
    private func setSoftwareParameters(_ setup: ALSAHardwareSetup) throws {
        var params: OpaquePointer?
        try check(snd_pcm_sw_params_malloc(&params), "software parameters")
        defer { snd_pcm_sw_params_free(params) }
        try check(snd_pcm_sw_params_current(handle, params), "software parameters")
        let start = stream == .capture ? 1 : Swift.min(setup.bufferFrames, 2 * setup.periodFrames)
        try check(snd_pcm_sw_params_set_start_threshold(handle, params, snd_pcm_uframes_t(start)), "start threshold")
        try check(snd_pcm_sw_params_set_avail_min(handle, params, snd_pcm_uframes_t(setup.periodFrames)), "avail min")
        try check(snd_pcm_sw_params(handle, params), "software parameters")
    }

    /// Reads exactly `frames` interleaved frames into `buffer` (`snd_pcm_readi`), recovering from
    /// overruns and suspends (counted in `xruns`); `ALSAError.deviceLost` on any other error.
    func read(into buffer: UnsafeMutableRawPointer, frames: Int, bytesPerFrame: Int) throws {
        var done = 0
        while done < frames {
            let count = snd_pcm_readi(handle, buffer + done * bytesPerFrame, snd_pcm_uframes_t(frames - done))
            if count >= 0 { done += count } else { try recover(from: Int32(count)) }
        }
    }

    /// Writes all `frames` interleaved frames of `buffer` (`snd_pcm_writei`), recovering from
    /// underruns and suspends (counted in `xruns`); `ALSAError.deviceLost` on any other error.
    func write(_ buffer: UnsafeRawPointer, frames: Int, bytesPerFrame: Int) throws {
        var done = 0
        while done < frames {
            let count = snd_pcm_writei(handle, buffer + done * bytesPerFrame, snd_pcm_uframes_t(frames - done))
            if count >= 0 { done += count } else { try recover(from: Int32(count)) }
        }
    }

    /// Plays out what is queued, then stops (`snd_pcm_drain`).
    func drain() throws {
        let code = snd_pcm_drain(handle)
        guard code >= 0 else { throw ALSAError.deviceLost(device: device, reason: "drain: \(ALSAError.message(code))") }
    }

    /// Recovers from the error code a read or write returned: overruns, underruns and suspends
    /// (`snd_pcm_recover`, counted), interruptions (nothing to do); any other ends the stream.
    func recover(from code: Int32) throws {
        switch -code {
        case EINTR, EAGAIN:
            return
        case EPIPE, ESTRPIPE:
            xruns += 1
            let recovered = snd_pcm_recover(handle, code, 1)
            guard recovered >= 0 else { throw ALSAError.deviceLost(device: device, reason: ALSAError.message(recovered)) }
        default:
            throw ALSAError.deviceLost(device: device, reason: ALSAError.message(code))
        }
    }

    private func withHardwareParameters<T>(_ body: (OpaquePointer, OpaquePointer) throws -> T) throws -> T {
        var params: OpaquePointer?
        try check(snd_pcm_hw_params_malloc(&params), "hardware parameters")
        defer { snd_pcm_hw_params_free(params) }
        guard let pcm = handle, let params else { throw ALSAError.configurationFailed(device: device, step: "hardware parameters", reason: "closed") }
        try check(snd_pcm_hw_params_any(pcm, params), "hardware parameters")
        return try body(pcm, params)
    }

    private func check(_ code: Int32, _ step: String) throws {
        guard code >= 0 else { throw ALSAError.configurationFailed(device: device, step: step, reason: ALSAError.message(code)) }
    }

    static func alsaFormat(_ format: SampleFormat) -> snd_pcm_format_t {
        format == .s16 ? SND_PCM_FORMAT_S16_LE : SND_PCM_FORMAT_FLOAT_LE
    }
}
