// libopus called in bare loops, as an application using libopus directly would: the reference the
// graph's Opus encoding and decoding are measured against.
import COpus
import Sluice

/// Opus through libopus alone, no Sluice types in the loops.
public enum BareOpus {
    /// Encodes interleaved `samples` (48 kHz, `OpusClip.channels`) in whole 20 ms packets with the
    /// settings OpusEncoder applies for `OpusClip.settings` (or `bitrate` and `complexity`, nil:
    /// libopus's default); returns the compressed bytes.
    public static func encode(_ samples: ArraySlice<Int16>, bitrate: Int = OpusClip.settings.bitrate,
                              complexity: Int? = 10) -> Int {
        let channels = OpusClip.channels
        var error: Int32 = 0
        let encoder = opus_encoder_create(Int32(OpusClip.sampleRate), Int32(channels), OPUS_APPLICATION_AUDIO, &error)!
        defer { opus_encoder_destroy(encoder) }
        _ = sluice_opus_set_bitrate(encoder, Int32(bitrate))
        if let complexity { _ = sluice_opus_set_complexity(encoder, Int32(complexity)) }
        var output = [UInt8](repeating: 0, count: 4000)
        var bytes = 0
        let step = OpusClip.packetSamples * channels
        samples.withUnsafeBufferPointer { pcm in
            output.withUnsafeMutableBufferPointer { out in
                for start in stride(from: 0, to: pcm.count - step + 1, by: step) {
                    bytes += Int(opus_encode(encoder, pcm.baseAddress! + start, Int32(OpusClip.packetSamples),
                                             out.baseAddress!, Int32(out.count)))
                }
            }
        }
        return bytes
    }

    /// Decodes `packets` (48 kHz, `OpusClip.channels`) to s16; returns the samples per channel.
    public static func decode(_ packets: ArraySlice<EncodedFrame>) -> Int {
        var error: Int32 = 0
        let decoder = opus_decoder_create(Int32(OpusClip.sampleRate), Int32(OpusClip.channels), &error)!
        defer { opus_decoder_destroy(decoder) }
        let maxSamples = 5760  // 120 ms at 48 kHz, the longest Opus packet
        var pcm = [Int16](repeating: 0, count: maxSamples * OpusClip.channels)
        var total = 0
        pcm.withUnsafeMutableBufferPointer { out in
            for packet in packets {
                let bytes = packet.bytes
                let decoded = opus_decode(decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(bytes.count),
                                          out.baseAddress!, Int32(maxSamples), 0)
                precondition(decoded > 0)
                total += Int(decoded)
            }
        }
        return total
    }
}
