import CFFmpeg
import CFFmpegShims
import MediaCodecs
import MediaCore

/// H.264 or VP8 decoding through libavcodec's own decoders ("h264", "vp8").
///
/// Each `EncodedFrame` is one access unit (H.264 in Annex-B form, as the other H.264 decoders take
/// it). Pictures come out in display order with the pts and duration of the access unit that
/// carried them: every packet goes in with a sequence number as its pts, which libavcodec hands back
/// on the picture. H.264 decodes exactly as `ffmpeg` does, B-frames included, on any thread count.
///
/// Storage: 8-bit 4:2:0 pictures are decoded straight into frames of `outputPool` (a custom
/// `get_buffer2`) laid out for whole macroblocks, and handed out without a copy, cut to the display
/// size (`VideoFrame.cropped`: 360 rows of a 368-row picture, 1080 of 1088). Both decoders take a
/// fresh buffer for every picture and never write into one they have output, so sharing it
/// read-only is safe. Pictures cropped at the top or left, and rows Sluice's layout cannot align as
/// libavcodec needs, are copied; other formats (4:2:2, 4:4:4, 4:0:0, high bit depth) are converted
/// to 8-bit I420 on the way.
///
/// Damaged input throws `CodecError.library` (operation "decode"): libavcodec runs with
/// `AV_EF_EXPLODE`, so it reports the damage it finds instead of concealing it.
public final class FFmpegVideoDecoder: VideoDecoder {
    public let format: VideoFormat
    /// Storage of the pictures this decoder emits.
    public let outputPool: BufferPool
    /// Pictures copied out of libavcodec's own storage so far (the rest were decoded in place).
    public private(set) var picturesCopied = 0

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let allocator: PictureAllocator
    private let codecName: String
    /// Timing of the packets in flight, indexed by sequence number modulo its size: above what a
    /// picture buffer (16) and 64 frame threads can hold back.
    private var timing: [(sequence: Int64, pts: MediaTime, duration: MediaTime?)]
    private var sequence: Int64 = 0

    /// Makes a decoder for a `.compressed(.h264)` or `.compressed(.vp8)` stream on up to `threads`
    /// threads of the kind `threading` says (`threads` 1 decodes on the caller's thread).
    public init(format: VideoFormat, threads: Int = 1, threading: FFmpegThreading = .frameAndSlice) throws {
        guard case .compressed(let codec) = format.encoding, let decoderName = FFmpegDecoders.decoderName(codec) else {
            throw CodecError.invalidSetting("FFmpeg decoder: input must be H.264 or VP8, not \(format.encoding)")
        }
        guard (1...64).contains(threads) else {
            throw CodecError.invalidSetting("FFmpeg decoder: threads \(threads) is outside 1...64")
        }
        guard let decoder = avcodec_find_decoder_by_name(decoderName), let context = avcodec_alloc_context3(decoder) else {
            throw CodecError.noProvider(codec, role: "libavcodec decoder \(decoderName)")
        }
        FFmpegDecoders.setUpLogging()
        self.format = format
        self.codecName = decoderName
        self.context = context
        outputPool = BufferPool(name: "ffmpeg-\(decoderName)-decoder")
        allocator = PictureAllocator(pool: outputPool)
        timing = Array(repeating: (-1, .zero(format.frameRate.reciprocal), nil), count: 256)
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        // From here on deinit cleans up.
        context.pointee.thread_count = Int32(threads)
        context.pointee.thread_type = threading.rawValue
        context.pointee.err_recognition |= AV_EF_EXPLODE
        context.pointee.opaque = Unmanaged.passUnretained(allocator).toOpaque()
        context.pointee.get_buffer2 = pooledGetBuffer
        guard packet != nil, frame != nil else {
            throw CodecError.library(name: FFmpegDecoders.name, operation: "av_frame_alloc", code: 0, message: "out of memory")
        }
        try check(avcodec_open2(context, decoder, nil), "avcodec_open2")
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&context)
    }

    /// Decodes one access unit and emits the pictures that are ready.
    public func decode(_ encoded: EncodedFrame, emit: (consuming VideoFrame) throws -> Void) throws {
        guard let packet, encoded.byteCount > 0, encoded.byteCount < Int(Int32.max) - 64 else {
            throw CodecError.library(name: FFmpegDecoders.name, operation: "decode", code: sluice_averror_invaliddata(),
                                     message: "\(codecName): compressed frame of \(encoded.byteCount) bytes")
        }
        try check(av_new_packet(packet, Int32(encoded.byteCount)), "av_new_packet")
        defer { av_packet_unref(packet) }
        packet.pointee.data.update(from: encoded.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                   count: encoded.byteCount)
        sequence += 1
        timing[slot(sequence)] = (sequence, encoded.pts, encoded.duration)
        packet.pointee.pts = sequence
        packet.pointee.dts = sequence
        if encoded.isKeyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        var status: Int32, logged: String?
        repeat {
            sluice_ffmpeg_log_begin()
            status = avcodec_send_packet(context, packet)
            logged = sluice_ffmpeg_log_end().map { String(cString: $0) }
            // A picture finished before the damage is still good: hand it out before reporting.
            // EAGAIN: the pictures waiting must come out before the packet goes in.
            try receive(emit: emit)
        } while status == FFmpegDecoders.again
        try check(status, "decode", logged: logged)
    }

    /// Hands out the pictures still held for reordering or in other threads, then starts afresh:
    /// the next access unit may begin a new stream.
    public func flush(emit: (consuming VideoFrame) throws -> Void) throws {
        defer { avcodec_flush_buffers(context) }
        let status = avcodec_send_packet(context, nil)
        if status != FFmpegDecoders.eof { try check(status, "flush") }
        try receive(emit: emit)
    }

    // MARK: - Pictures out

    private func receive(emit: (consuming VideoFrame) throws -> Void) throws {
        guard let frame else { return }
        while true {
            sluice_ffmpeg_log_begin()
            let status = avcodec_receive_frame(context, frame)
            let logged = sluice_ffmpeg_log_end().map { String(cString: $0) }
            if status == FFmpegDecoders.again || status == FFmpegDecoders.eof { return }
            try check(status, "decode", logged: logged)
            let picture: VideoFrame
            do {
                defer { av_frame_unref(frame) }
                picture = try output(frame)
            }
            try emit(picture)
        }
    }

    /// The decoded picture as a pooled frame with its access unit's timing: the frame it was decoded
    /// into, cut to the display size, when that is one of ours and the picture starts at its first
    /// row and column; else a copy.
    private func output(_ decoded: UnsafeMutablePointer<AVFrame>) throws -> VideoFrame {
        let number = decoded.pointee.pts != sluice_av_nopts_value() ? decoded.pointee.pts : decoded.pointee.best_effort_timestamp
        let entry = timing[slot(number)]
        guard number > 0, entry.sequence == number else {
            throw CodecError.library(name: FFmpegDecoders.name, operation: "decode", code: 0,
                                     message: "\(codecName): picture of packet #\(number), which is no longer known")
        }
        let width = Int(decoded.pointee.width), height = Int(decoded.pointee.height)
        if let opaque = decoded.pointee.opaque {
            let coded = Unmanaged<PictureBox>.fromOpaque(opaque).takeUnretainedValue().picture
            if width > 0, height > 0, width <= coded.width, height <= coded.height,
               UnsafeMutableRawPointer(decoded.pointee.data.0) == coded.plane(0).baseAddress,
               UnsafeMutableRawPointer(decoded.pointee.data.1) == coded.plane(1).baseAddress,
               UnsafeMutableRawPointer(decoded.pointee.data.2) == coded.plane(2).baseAddress {
                var picture = coded.cropped(width: width, height: height)
                picture.pts = entry.pts
                picture.duration = entry.duration
                return picture
            }
        }
        guard width > 0, height > 0 else {
            throw CodecError.library(name: FFmpegDecoders.name, operation: "decode", code: 0,
                                     message: "\(codecName): empty picture \(width)x\(height)")
        }
        let picture = VideoFrame(pixelFormat: .i420, width: width, height: height, pts: entry.pts,
                                 duration: entry.duration, pool: outputPool)
        try PictureCopy.copy(decoded.pointee, into: picture, decoder: codecName)
        picturesCopied += 1
        return picture
    }

    private func slot(_ number: Int64) -> Int { Int(UInt64(bitPattern: number) % UInt64(timing.count)) }

    private func check(_ status: Int32, _ operation: String, logged: String? = nil) throws {
        guard status < 0 else { return }
        var message = "\(codecName): \(FFmpegDecoders.message(status))"
        if let logged, !logged.isEmpty { message += ": " + logged }
        throw CodecError.library(name: FFmpegDecoders.name, operation: operation, code: status, message: message)
    }
}

/// How libavcodec spreads a decode over threads.
public enum FFmpegThreading: Int32, Sendable, CaseIterable {
    /// Several pictures at once (a picture of latency per extra thread).
    case frame = 1
    /// The slices of one picture at once (only streams with several slices gain).
    case slice = 2
    /// Frame threads where the codec has them, else slice threads.
    case frameAndSlice = 3
}

/// A pooled frame lent to libavcodec, kept alive by the `AVBufferRef` that wraps its storage.
final class PictureBox {
    let picture: VideoFrame
    init(_ picture: VideoFrame) { self.picture = picture }
}

/// What `get_buffer2` reads, on whichever thread libavcodec calls it: only the pool (thread-safe).
final class PictureAllocator: Sendable {
    let pool: BufferPool
    init(pool: BufferPool) { self.pool = pool }

    /// A pooled frame laid out as libavcodec needs for `frame`'s size, or nil when Sluice's layout
    /// does not fit (then libavcodec allocates, and the picture is copied out).
    func picture(for frame: AVFrame, context: UnsafeMutablePointer<AVCodecContext>) -> VideoFrame? {
        let format = AVPixelFormat(rawValue: frame.format)
        guard format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P else { return nil }
        guard frame.width > 0, frame.height > 0 else { return nil }
        // Decoders write whole macroblocks: a picture of whole ones keeps every write in its plane.
        let width = (Int(frame.width) + 15) / 16 * 16, height = (Int(frame.height) + 15) / 16 * 16
        var alignedWidth = Int32(width), alignedHeight = Int32(height)
        var lineAlign = [Int32](repeating: 0, count: 8)
        lineAlign.withUnsafeMutableBufferPointer { avcodec_align_dimensions2(context, &alignedWidth, &alignedHeight, $0.baseAddress) }
        // Rows as far apart as libavcodec's SIMD needs (64 bytes with AVX-512: 160-byte chroma rows
        // of a 320-wide picture would not do).
        let rowAlignment = max(32, Int(lineAlign[0]), Int(lineAlign[1]), Int(lineAlign[2]))
        let layout = PlaneLayout(.i420, width: width, height: height, rowAlignment: rowAlignment)
        for index in 0..<3 {
            let plane = layout[index], align = max(Int(lineAlign[index]), 1)
            let neededWidth = index == 0 ? Int(alignedWidth) : (Int(alignedWidth) + 1) / 2
            guard plane.stride >= neededWidth, plane.stride % align == 0, plane.offset % 64 == 0 else { return nil }
        }
        // Motion compensation may read a few rows past the picture (the aligned height): past the last
        // plane, that must still be inside the buffer.
        let overread = (max(Int(alignedHeight) - height, 0) + 2) * layout[0].stride + 256
        return VideoFrame(pixelFormat: .i420, width: width, height: height, rowAlignment: rowAlignment, padding: overread,
                          pts: .zero(Rational(1, 1)), pool: pool)
    }
}

/// libavcodec's `get_buffer2`: a pooled frame when it fits, else libavcodec's own allocation.
private let pooledGetBuffer: @convention(c) (UnsafeMutablePointer<AVCodecContext>?, UnsafeMutablePointer<AVFrame>?, Int32) -> Int32 = {
    context, frame, flags in
    guard let context, let frame, let opaque = context.pointee.opaque,
          context.pointee.codec_type == AVMEDIA_TYPE_VIDEO else {
        return avcodec_default_get_buffer2(context, frame, flags)
    }
    let allocator = Unmanaged<PictureAllocator>.fromOpaque(opaque).takeUnretainedValue()
    guard let picture = allocator.picture(for: frame.pointee, context: context) else {
        return avcodec_default_get_buffer2(context, frame, flags)
    }
    let box = Unmanaged.passRetained(PictureBox(picture))
    let storage = picture.buffer.storage
    guard let buffer = av_buffer_create(storage.baseAddress!.assumingMemoryBound(to: UInt8.self), storage.count,
                                        { opaque, _ in opaque.map { Unmanaged<PictureBox>.fromOpaque($0).release() } },
                                        box.toOpaque(), 0) else {
        box.release()
        return avcodec_default_get_buffer2(context, frame, flags)
    }
    frame.pointee.buf.0 = buffer
    let base = storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
    let layout = picture.layout
    frame.pointee.data.0 = base + layout[0].offset
    frame.pointee.data.1 = base + layout[1].offset
    frame.pointee.data.2 = base + layout[2].offset
    frame.pointee.linesize.0 = Int32(layout[0].stride)
    frame.pointee.linesize.1 = Int32(layout[1].stride)
    frame.pointee.linesize.2 = Int32(layout[2].stride)
    frame.pointee.extended_data = (UnsafeMutableRawPointer(frame) + MemoryLayout<AVFrame>.offset(of: \AVFrame.data)!)
        .assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
    frame.pointee.opaque = box.toOpaque()
    return 0
}
