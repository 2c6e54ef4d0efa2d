import ArgumentParser
import Sluice

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the cameras (V4L2) and sound devices (ALSA PCMs) Sluice can capture from or play to.",
        discussion: """
            Cameras are the /dev/video* nodes that capture, with each pixel format, picture
            size and frame rate they offer. Sound devices are the ALSA PCMs alsa-lib knows
            (from the cards present and the configuration, ALSA_CONFIG_PATH included).
            Use them as inputs and outputs of transcode and send:
              sluice transcode v4l2:/dev/video0 camera.ivf --size 640x480 --fps 30 --frames 300
              sluice send v4l2:/dev/video0 --to 127.0.0.1:5004 --codec h264
              sluice transcode alsa:default mic.opus --duration 10
              sluice transcode speech.opus alsa:default
            A machine without cameras or sound cards is not an error: the list says so.
            """)

    @Option(help: "Where to look for cameras.")
    var directory = "/dev"

    func run() throws {
        print(Self.cameraList(V4L2Devices.cameras(in: directory)))
        print(Self.soundList(ALSADevices.pcms()))
    }

    static func cameraList(_ cameras: [V4L2Camera]) -> String {
        guard !cameras.isEmpty else { return "cameras: none found (no /dev/video* device that captures)" }
        var lines = ["cameras:"]
        for camera in cameras {
            lines.append("  v4l2:\(camera.path)  \(camera.card) (\(camera.driver), \(camera.busInfo))")
            for format in camera.formats {
                lines.append("    \(format.fourcc)  \(format.description)")
                if let range = format.sizeRange {
                    lines.append("      any size from \(range.minWidth)x\(range.minHeight) to \(range.maxWidth)x\(range.maxHeight)"
                                 + " in steps of \(range.stepWidth)x\(range.stepHeight); for instance:")
                }
                for size in format.sizes {
                    let rates = size.frameRates.map { formatted($0.doubleValue, digits: $0.denominator == 1 ? 0 : 2) }
                    lines.append("      \(size.width)x\(size.height)" + (rates.isEmpty ? "" : " @ " + rates.joined(separator: ", ") + " fps"))
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    static func soundList(_ pcms: [ALSAPCMDescription]) -> String {
        guard !pcms.isEmpty else { return "sound devices: none found (no ALSA PCM)" }
        var lines = ["sound devices (ALSA PCMs):"]
        for pcm in pcms {
            let directions = [pcm.capture ? "capture" : nil, pcm.playback ? "playback" : nil].compactMap { $0 }
            lines.append("  alsa:\(pcm.name)  [\(directions.joined(separator: ", "))]  \(pcm.description)")
        }
        return lines.joined(separator: "\n")
    }
}
