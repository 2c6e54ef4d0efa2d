import CALSA
import Glibc

/// One PCM as alsa-lib's device name hints describe it.
public struct ALSAPCMDescription: Hashable, Sendable, CustomStringConvertible {
    /// What to pass as `device` to the capture and playback nodes, e.g. "default" or "hw:CARD=PCH,DEV=0".
    public var name: String
    /// The hint's description, its lines joined by " " (empty when the PCM has none).
    public var description: String
    public var capture: Bool
    public var playback: Bool
}

/// The PCMs alsa-lib knows of.
public enum ALSADevices {
    /// Every PCM with a device name hint (`snd_device_name_hint(-1, "pcm", …)`), in alsa-lib's order.
    ///
    /// That is each card's PCMs (hw, plughw, sysdefault, front, …), plus the PCMs of the active
    /// configuration (`/usr/share/alsa/alsa.conf`, `/etc/asound.conf`, `~/.asoundrc`, or the files of
    /// `ALSA_CONFIG_PATH`) that carry a `hint { show on description "…" }` section. PCMs without a hint
    /// are not listed, though they open. On a machine without a sound card this is typically just
    /// `null` (and `default` when a sound server's plugin defines it); an empty list when alsa-lib
    /// cannot read its configuration. Never fails.
    public static func pcms() -> [ALSAPCMDescription] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        _ = ALSAPCM.quietErrors
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var result: [ALSAPCMDescription] = []
        var cursor = hints
        while let hint = cursor.pointee {
            defer { cursor += 1 }
            guard let name = field(hint, "NAME") else { continue }
            let text = field(hint, "DESC")?.split(whereSeparator: \.isNewline).joined(separator: " ") ?? ""
            let direction = field(hint, "IOID")
            result.append(ALSAPCMDescription(name: name, description: text,
                                             capture: direction == nil || direction == "Input",
                                             playback: direction == nil || direction == "Output"))
        }
        return result
    }

    private static func field(_ hint: UnsafeMutableRawPointer, _ id: String) -> String? {
        guard let value = snd_device_name_get_hint(hint, id) else { return nil }
        defer { free(value) }
        return String(cString: value)
    }
}
