// libavcodec called in a bare loop, as an application using it directly would: the reference the
// graph's FFmpeg decoding is measured against.
import CFFmpeg
import Sluice

/// Decoding through libavcodec alone: send a packet, take the pictures, no Sluice types in the loop.
public enum BareFFmpeg {
    /// Decodes `frames` with libavcodec's own decoder `name` ("h264", "vp8") on one thread, each
    /// packet copied in as Sluice's decoder does; returns the pictures handed out.
    public static func decode(_ frames: ArraySlice<EncodedFrame>, decoder name: String) -> Int {
        let codec = avcodec_find_decoder_by_name(name)!
        var context = avcodec_alloc_context3(codec)
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer {
            av_frame_free(&frame)
            av_packet_free(&packet)
            avcodec_free_context(&context)
        }
        context!.pointee.thread_count = 1
        precondition(avcodec_open2(context, codec, nil) == 0)
        var pictures = 0
        func drain() {
            while avcodec_receive_frame(context, frame) == 0 {
                pictures += 1
                av_frame_unref(frame)
            }
        }
        for encoded in frames {
            precondition(av_new_packet(packet, Int32(encoded.byteCount)) == 0)
            packet!.pointee.data.update(from: encoded.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                        count: encoded.byteCount)
            precondition(avcodec_send_packet(context, packet) == 0)
            av_packet_unref(packet)
            drain()
        }
        _ = avcodec_send_packet(context, nil)
        drain()
        return pictures
    }
}
