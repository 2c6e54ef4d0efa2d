import Foundation

/// An ALSA configuration for tests on machines without a sound card: the system's `alsa.conf`
/// (included first, so `null`, `default` and the rest still resolve) plus PCMs backed by files.
///
/// alsa-lib reads the files listed in `ALSA_CONFIG_PATH` (separated by `:`) instead of
/// `/usr/share/alsa/alsa.conf`. For a subprocess, pass `environment`; in this process, `install()`
/// sets the variable (alsa-lib notices the changed file list at its next `snd_pcm_open`).
///
/// | PCM | what it is |
/// | --- | --- |
/// | `sluice_capture` | `type file` over `null`, reading the capture data from `INFILE` (raw, in whatever format the PCM was set up with; after its end the reads go on, with stale samples: capture with `maxDuration`) |
/// | `sluice_capture_s16` | the same, but taking integer formats only (a `linear` plugin to S16_LE under it): no float |
/// | `sluice_capture_48k` | `type plug` over `null` at 48 kHz only (Sluice disables ALSA's resampling); its samples are stale memory, not silence |
/// | `sluice_playback` | `type file` over integer-only `null` (a `linear` plugin), writing what is played to `FILE` as WAV (header completed when the PCM closes; the plugin's WAV header cannot say float) |
/// | `sluice_null` | `type null` |
///
/// `INFILE` and `FILE` default to the paths given when writing the file; a test can pass its own,
/// e.g. `sluice_capture:INFILE="/tmp/in.raw"` (`captureDevice(reading:)`). The `file` plugin reads
/// `INFILE` only in read/write access: under a `plug` (which reads its slave through mmap) the data
/// comes out shuffled, hence `linear` below it, not `plug` above.
public struct ALSATestConfiguration: Sendable {
    /// The configuration file.
    public let path: String
    /// What `sluice_capture` reads and `sluice_playback` writes when the device name has no arguments.
    public let captureInput: String, playbackOutput: String

    /// Writes the configuration to `path`, with `captureInput` and `playbackOutput` as the default files.
    public init(path: String, captureInput: String, playbackOutput: String) throws {
        self.path = path
        self.captureInput = captureInput
        self.playbackOutput = playbackOutput
        try Self.text(captureInput: captureInput, playbackOutput: playbackOutput).write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The environment a subprocess needs to see the test PCMs.
    public var environment: [String: String] { ["ALSA_CONFIG_PATH": path] }

    /// Makes alsa-lib in this process read this configuration.
    public func install() { setenv("ALSA_CONFIG_PATH", path, 1) }

    /// `sluice_capture` reading `input`.
    public static func captureDevice(reading input: String, s16Only: Bool = false) -> String {
        "sluice_capture\(s16Only ? "_s16" : ""):INFILE=\"\(input)\""
    }

    /// `sluice_playback` writing a WAV file at `output`.
    public static func playbackDevice(writing output: String) -> String { "sluice_playback:FILE=\"\(output)\"" }

    /// One configuration for this whole test process, in a folder of its own, installed on first use.
    public static let shared: ALSATestConfiguration = {
        let folder = sharedFolder
        try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let configuration = try! ALSATestConfiguration(path: folder.file("asound.conf"), captureInput: folder.file("capture.raw"),
                                                      playbackOutput: folder.file("playback.wav"))
        configuration.install()
        // The folder goes with the test process.
        atexit { try? FileManager.default.removeItem(at: ALSATestConfiguration.sharedFolder) }
        return configuration
    }()

    /// The shared configuration's folder. No process id in its name: pipebench's test that nothing is
    /// written beside its scratch folder looks for this process's id in the temporary directory.
    static let sharedFolder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-alsa-\(UUID().uuidString)")

    public static func text(captureInput: String, playbackOutput: String) -> String {
        """
        </usr/share/alsa/alsa.conf>

        pcm.sluice_capture {
            @args [ INFILE ]
            @args.INFILE { type string default "\(captureInput)" }
            type file
            slave.pcm "null"
            file "/dev/null"
            infile $INFILE
            hint { show on description "Sluice test capture (reads a raw file)" }
        }

        pcm.sluice_capture_s16 {
            @args [ INFILE ]
            @args.INFILE { type string default "\(captureInput)" }
            type file
            slave.pcm { type linear slave { pcm "null" format S16_LE } }
            file "/dev/null"
            infile $INFILE
            hint { show on description "Sluice test capture, integer samples only" }
        }

        pcm.sluice_capture_48k {
            type plug
            slave { pcm "null" rate 48000 }
            hint { show on description "Sluice test capture, 48 kHz only (stale samples)" }
        }

        pcm.sluice_playback {
            @args [ FILE ]
            @args.FILE { type string default "\(playbackOutput)" }
            type file
            slave.pcm { type linear slave { pcm "null" format S16_LE } }
            file $FILE
            format "wav"
            hint { show on description "Sluice test playback (writes a WAV file)" }
        }

        pcm.sluice_null {
            type null
            hint { show on description "Sluice test null device" }
        }

        """
    }
}
