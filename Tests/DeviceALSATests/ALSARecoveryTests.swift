@testable import DeviceALSA
import Glibc
import MediaCore
import Testing
import TestSupport

/// The recovery a read or write goes through when alsa-lib returns an error. The test PCMs never
/// over- or underrun by themselves, so the codes alsa-lib returns for those are handed in directly;
/// the recovery itself (`snd_pcm_recover`) runs in alsa-lib on a real PCM.
@Suite("ALSA recovery")
struct ALSARecoveryTests {
    let configuration = ALSATestConfiguration.shared

    @Test("an underrun or a suspend is recovered and counted and the PCM plays on; another error ends the stream, naming the device")
    func xrunsAreRecoveredAndCounted() throws {
        let pcm = try ALSAPCM(device: "sluice_null", stream: .playback)
        defer { pcm.close() }
        _ = try pcm.configure(AudioFormat(encoding: .samples(.s16), sampleRate: 48_000, channels: 2), periodFrames: 480, exact: true)
        let silence = [Int16](repeating: 0, count: 2 * 480)
        func play() throws { try silence.withUnsafeBytes { try pcm.write($0.baseAddress!, frames: 480, bytesPerFrame: 4) } }

        try play()
        try pcm.recover(from: -EPIPE)
        try pcm.recover(from: -ESTRPIPE)
        try pcm.recover(from: -EINTR)
        #expect(pcm.xruns == 2, "an interruption is not an xrun")
        try play()
        #expect(throws: ALSAError.deviceLost(device: "sluice_null", reason: ALSAError.message(-ENODEV))) {
            try pcm.recover(from: -ENODEV)
        }
    }
}
