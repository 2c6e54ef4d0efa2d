import CALSA

/// Why opening, configuring or using an ALSA PCM failed. `description` names the device and
/// carries alsa-lib's message (`snd_strerror`).
public enum ALSAError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `snd_pcm_open` failed: the PCM is not defined, its card is missing, or it is busy.
    case noSuchDevice(name: String, reason: String)
    /// The device cannot take the format asked for (`detail` says what it does take).
    case unsupportedFormat(device: String, detail: String)
    /// Setting hardware or software parameters failed at `step`.
    case configurationFailed(device: String, step: String, reason: String)
    /// Reading or writing failed for good: the device vanished (unplugged) or stopped working.
    case deviceLost(device: String, reason: String)

    /// The device concerned, as given when opening it.
    public var device: String {
        switch self {
        case .noSuchDevice(let name, _): return name
        case .unsupportedFormat(let device, _), .configurationFailed(let device, _, _), .deviceLost(let device, _):
            return device
        }
    }

    public var description: String {
        switch self {
        case .noSuchDevice(let name, let reason): return "ALSA device \(name): cannot open: \(reason)"
        case .unsupportedFormat(let device, let detail): return "ALSA device \(device): unsupported format: \(detail)"
        case .configurationFailed(let device, let step, let reason):
            return "ALSA device \(device): \(step) failed: \(reason)"
        case .deviceLost(let device, let reason): return "ALSA device \(device): lost: \(reason)"
        }
    }

    /// alsa-lib's message for a negative error code.
    static func message(_ code: Int32) -> String { String(cString: snd_strerror(code)) }
}
