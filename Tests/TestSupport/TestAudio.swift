import Foundation
import MediaCodecs
import MediaCore

/// Raw audio for the tests, made by ffmpeg's lavfi: a music-like mix (a vibrato chord with tremolo,
/// a gated overtone, different in each channel) over pink noise.
public enum TestAudio {
    /// The lavfi graph for `seconds` of the mix at 48 kHz stereo.
    public static func graph(seconds: Double) -> String {
        let left = "0.25*sin(2*PI*(220+3*sin(2*PI*5*t))*t)*(0.6+0.4*sin(2*PI*1.5*t))+0.12*sin(2*PI*330*t)"
            + "+0.08*sin(2*PI*495*t)*gt(mod(t\\,0.5)\\,0.1)"
        let right = "0.22*sin(2*PI*277*t)*(0.6+0.4*cos(2*PI*1.3*t))+0.1*sin(2*PI*415*t)"
            + "+0.06*sin(2*PI*1245*t)*gt(mod(t+0.25\\,0.5)\\,0.1)"
        return "aevalsrc=exprs='\(left)|\(right)':s=48000:d=\(seconds)[m];"
            + "anoisesrc=c=pink:a=0.03:r=48000:d=\(seconds):seed=7,aformat=channel_layouts=stereo[n];"
            + "[m][n]amix=inputs=2:normalize=0"
    }

    /// A voice-like signal: a buzz (sawtooth) gliding around 140 Hz, shaped by three formant peaks,
    /// in syllables of about 0.3 s, over faint noise. SILK's voice activity detector takes it for
    /// speech, which its in-band FEC needs (libopus codes LBRR only for active frames).
    public static func speechGraph(seconds: Double) -> String {
        "aevalsrc=exprs='(2*mod(140*t-6.82*cos(4.398*t)\\,1)-1)*(0.2+0.8*pow(abs(sin(2*PI*1.6*t))\\,0.5))':s=48000:d=\(seconds),"
            + "lowpass=f=3800,equalizer=f=650:t=q:w=3:g=14,equalizer=f=1150:t=q:w=4:g=10,equalizer=f=2500:t=q:w=5:g=6,"
            + "volume=0.12[v];anoisesrc=c=pink:a=0.003:r=48000:d=\(seconds):seed=3[n];[v][n]amix=inputs=2:normalize=0"
    }

    /// Interleaved samples as ffmpeg writes them (`s16le` or `f32le`), resampled and mixed down as asked.
    public static func raw(sampleRate: Int = 48_000, channels: Int = 2, format: SampleFormat = .s16, seconds: Double = 2,
                    speech: Bool = false) throws -> Data
    {
        let data = try TestSupport.ffmpeg([
            "-filter_complex", speech ? speechGraph(seconds: seconds) : graph(seconds: seconds),
            "-ar", "\(sampleRate)", "-ac", "\(channels)",
            "-f", format == .s16 ? "s16le" : "f32le", "-",
        ]).stdout
        let expected = Int((Double(sampleRate) * seconds).rounded()) * channels * format.bytesPerSample
        guard data.count == expected else { throw FixtureError(description: "ffmpeg gave \(data.count) bytes, not \(expected)") }
        return data
    }

    /// `data` cut into frames of varying lengths (so that packets straddle frames), pts counting
    /// samples from `start`.
    public static func frames(_ data: Data, format: AudioFormat, start: Int64 = 0, lengths: [Int] = [480, 333, 1000, 17, 2048],
                       pool: BufferPool) -> [AudioFrame] {
        guard case .samples(let sampleFormat) = format.encoding else { return [] }
        let bytesPerFrame = format.channels * sampleFormat.bytesPerSample
        let total = data.count / bytesPerFrame
        var frames: [AudioFrame] = []
        var offset = 0
        while offset < total {
            let count = Swift.min(lengths[frames.count % lengths.count], total - offset)
            let frame = AudioFrame(sampleFormat: sampleFormat, sampleRate: format.sampleRate, channels: format.channels,
                                   sampleCount: count, pts: MediaTime(start + Int64(offset), timebase: Rational(1, format.sampleRate)),
                                   pool: pool)
            data.withUnsafeBytes { bytes in
                frame.bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[(offset * bytesPerFrame)..<((offset + count) * bytesPerFrame)]))
            }
            frames.append(frame)
            offset += count
        }
        return frames
    }
}

/// Interleaved samples as floats in -1...1, whatever the sample format.
public func floats(_ data: Data, format: SampleFormat) -> [Float] {
    data.withUnsafeBytes { bytes in
        switch format {
        case .s16: return bytes.bindMemory(to: Int16.self).map { Float($0) / 32768 }
        case .f32: return Array(bytes.bindMemory(to: Float.self))
        }
    }
}

/// The samples of `frames`, one after the other, as floats in -1...1.
public func floats(_ frames: [AudioFrame]) -> [Float] {
    var result: [Float] = []
    for frame in frames { result += floats(Data(frame.bytes), format: frame.sampleFormat) }
    return result
}

/// Signal-to-noise ratio of `decoded` against `original` in dB, over their common length.
public func snr(_ original: ArraySlice<Float>, _ decoded: ArraySlice<Float>) -> Double {
    var signal = 0.0, noise = 0.0
    for (a, b) in zip(original, decoded) {
        signal += Double(a) * Double(a)
        noise += Double(a - b) * Double(a - b)
    }
    return 10 * log10(signal / Swift.max(noise, 1e-20))
}

public func snr(_ original: [Float], _ decoded: [Float]) -> Double { snr(original[...], decoded[...]) }

/// Every packet `encoder` makes of `frames`, the ones `flush` drains at the end included.
public func encodeAll(_ frames: [AudioFrame], with encoder: any AudioEncoder) throws -> [EncodedFrame] {
    var packets: [EncodedFrame] = []
    for frame in frames { try encoder.encode(frame) { packets.append($0) } }
    try encoder.flush { packets.append($0) }
    return packets
}

/// Every frame `decoder` makes of `packets`, flush included.
public func decodeAll(_ packets: [EncodedFrame], with decoder: any AudioDecoder) throws -> [AudioFrame] {
    var frames: [AudioFrame] = []
    for packet in packets { try decoder.decode(packet) { frames.append($0) } }
    try decoder.flush { frames.append($0) }
    return frames
}
