// Opus encoding of 10 s of 48 kHz stereo (64 kbit/s, 20 ms packets, complexity 10), through
// Sluice's OpusEncoder (input frames of 10 ms, so every packet straddles two frames and goes
// through the encoder's buffer), through a Sluice graph (source -> AudioEncoderNode -> sink, one
// thread per node; also over the first 5 s) and as libopus called in a bare loop; and Sluice's
// decoder. Malloc counts are per run of 500 packets: once warm, the wrappers and the graph
// allocate nothing per packet.
import Benchmark
import BenchmarkSupport
import Sluice

// The clip (samples, 10 ms frames, packets) and the bare libopus loop are BenchLoops', shared with pipebench.
let frames = OpusClip.frames
let packets = OpusClip.packets
let settings = OpusClip.settings
let format = OpusClip.format
let channels = OpusClip.channels

func encodeWithSluice() throws -> Int {
    let encoder = try OpusEncoder(format: format, settings: settings)
    var bytes = 0
    for frame in frames { try encoder.encode(frame) { bytes += $0.byteCount } }
    try encoder.flush { bytes += $0.byteCount }
    return bytes
}

func decodeWithSluice() throws -> Int {
    let decoder = try OpusDecoder(input: AudioFormat(encoding: .compressed(.opus), sampleRate: 48_000, channels: channels),
                                  output: format, preSkip: 312)
    var count = 0
    for packet in packets { try decoder.decode(packet) { count += $0.sampleCount } }
    return count
}

let benchmarks: @Sendable () -> Void = {
    _ = frames.count
    _ = packets.count
    // The allocation budget (Thresholds/, recorded: about 20 a run, for creating the codec and
    // warming its pool). The slack is small next to what one allocation per packet would add: 500.
    Benchmark.defaultConfiguration = .codec(mallocSlack: 16)

    Benchmark("SluiceEncoder") { benchmark in
        blackHole(try encodeWithSluice())
    }
    graphBenchmarks(frames, format: .audio(format)) { AudioEncoderNode(OpusEncoderProvider(), settings: settings) }
    Benchmark("BareLibopus") { benchmark in
        blackHole(BareOpus.encode(OpusClip.samples[...]))
    }
    Benchmark("SluiceDecoder") { benchmark in
        blackHole(try decodeWithSluice())
    }
}
