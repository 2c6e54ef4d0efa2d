import CFFmpeg
import MediaCodecs
import MediaCore

/// Decodes the audio stream of a container through libavcodec (AAC, so that it can become Opus),
/// with the stream's own configuration (extradata). Output: interleaved float samples at the stream's
/// rate, in mono or stereo: more channels are mixed down (ITU-R BS.775: centre and surrounds at -3 dB
/// into both sides, LFE left out).
public struct ContainerAudioDecoderProvider: AudioDecoderProvider {
    public let stream: ContainerStream

    public init(stream: ContainerStream) {
        precondition(stream.kind == .audio && stream.codec != nil, "stream \(stream.index) is not audio Sluice reads")
        self.stream = stream
    }

    public var name: String { "libavcodec-\(stream.codecName)" }
    public var codec: CodecName { stream.codec! }

    public func outputCaps(for input: AudioFormat) -> Caps {
        Caps(.audio(AudioFormat(encoding: .samples(.f32), sampleRate: stream.sampleRate, channels: min(stream.channels, 2))))
    }

    public func makeDecoder(input: AudioFormat, output: AudioFormat) throws -> any AudioDecoder {
        try ContainerAudioDecoder(stream: stream, channels: output.channels, preSkip: 0)
    }

    public func makeDecoder(input: AudioFormat, output: AudioFormat, preSkip: Int) throws -> any AudioDecoder {
        try ContainerAudioDecoder(stream: stream, channels: output.channels, preSkip: preSkip)
    }
}

/// One libavcodec audio decoder; see `ContainerAudioDecoderProvider`.
final class ContainerAudioDecoder: AudioDecoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let stream: ContainerStream
    private let channels: Int
    private let pool = BufferPool(name: "container-audio")
    /// Samples still to drop from the start.
    private var skip: Int
    /// Weight of each decoded channel in each output channel, once the first frame has told the layout.
    private var mix: [[Float]] = []
    /// Where the audio emitted so far ends, in samples: concealment goes there.
    private var nextStart: Int64 = 0
    private var name: String { "libavcodec-\(stream.codecName)" }

    init(stream: ContainerStream, channels: Int, preSkip: Int) throws {
        self.stream = stream
        self.channels = channels
        skip = preSkip
        guard let id = FFmpeg.codecID(stream.codec!), let codec = avcodec_find_decoder(id),
              let context = avcodec_alloc_context3(codec) else {
            throw CodecError.noProvider(stream.codec!, role: "libavcodec decoder")
        }
        self.context = context
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        context.pointee.sample_rate = Int32(stream.sampleRate)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(stream.channels))
        context.pointee.pkt_timebase = FFmpeg.avRational(stream.timebase)
        if !stream.configuration.isEmpty {
            let extradata = av_mallocz(stream.configuration.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))!
                .assumingMemoryBound(to: UInt8.self)
            extradata.update(from: stream.configuration, count: stream.configuration.count)
            context.pointee.extradata = extradata
            context.pointee.extradata_size = Int32(stream.configuration.count)
        }
        try check(avcodec_open2(context, codec, nil), "avcodec_open2")
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&context)
    }

    private func check(_ status: Int32, _ operation: String) throws {
        guard status >= 0 else {
            throw CodecError.library(name: name, operation: operation, code: status, message: FFmpeg.message(status))
        }
    }

    func decode(_ encoded: EncodedFrame, emit: (consuming AudioFrame) throws -> Void) throws {
        guard let packet else { return }
        try check(av_new_packet(packet, Int32(encoded.byteCount)), "av_new_packet")
        defer { av_packet_unref(packet) }
        if let bytes = encoded.bytes.baseAddress {
            packet.pointee.data.update(from: bytes.assumingMemoryBound(to: UInt8.self), count: encoded.byteCount)
        }
        packet.pointee.pts = encoded.pts.rescaled(to: stream.timebase).value
        packet.pointee.dts = packet.pointee.pts
        try check(avcodec_send_packet(context, packet), "avcodec_send_packet")
        try receive(emit: emit)
    }

    private func receive(emit: (consuming AudioFrame) throws -> Void) throws {
        while true {
            let status = avcodec_receive_frame(context, frame)
            if status == FFmpeg.again || status == FFmpeg.eof { return }
            try check(status, "avcodec_receive_frame")
            defer { av_frame_unref(frame) }
            try convert(frame!.pointee, emit: emit)
        }
    }

    /// The decoded frame as interleaved float samples, mixed to the output channels.
    private func convert(_ decoded: AVFrame, emit: (consuming AudioFrame) throws -> Void) throws {
        let format = AVSampleFormat(rawValue: decoded.format)
        guard format == AV_SAMPLE_FMT_FLTP || format == AV_SAMPLE_FMT_FLT else {
            throw CodecError.library(name: name, operation: "decode", code: 0,
                                     message: "sample format \(String(cString: av_get_sample_fmt_name(format))) is not float")
        }
        let inputChannels = Int(decoded.ch_layout.nb_channels)
        if mix.count != channels || mix.first?.count != inputChannels { mix = Self.mixMatrix(decoded.ch_layout, to: channels) }
        let count = Int(decoded.nb_samples)
        let timebase = Rational(1, stream.sampleRate)
        let start = decoded.pts == FFmpeg.noTimestamp ? nextStart
            : MediaTime(decoded.pts, timebase: stream.timebase).rescaled(to: timebase).value
        // Samples before time 0 are the encoder's priming, which an MP4 edit list marks so (AAC's 1024).
        let dropped = min(max(skip, Int(-start)), count)
        skip = max(skip - dropped, 0)
        guard count > dropped else { return }
        let output = AudioFrame(sampleFormat: .f32, sampleRate: stream.sampleRate, channels: channels,
                                sampleCount: count - dropped, pts: MediaTime(start + Int64(dropped), timebase: timebase), pool: pool)
        output.buffer.count = output.byteCount
        nextStart = start + Int64(count)
        let samples = output.bytes.bindMemory(to: Float.self)
        let planar = format == AV_SAMPLE_FMT_FLTP
        for index in dropped..<count {
            for out in 0..<channels {
                var sum: Float = 0
                for input in 0..<inputChannels where mix[out][input] != 0 {
                    let value = planar ? UnsafeRawPointer(decoded.extended_data[input]!).load(fromByteOffset: 4 * index, as: Float.self)
                        : UnsafeRawPointer(decoded.extended_data[0]!).load(fromByteOffset: 4 * (index * inputChannels + input), as: Float.self)
                    sum += mix[out][input] * value
                }
                samples[(index - dropped) * channels + out] = sum
            }
        }
        try emit(output)
    }

    /// Weights of each input channel in each of `outputs` channels (1 or 2).
    static func mixMatrix(_ layout: AVChannelLayout, to outputs: Int) -> [[Float]] {
        let inputs = Int(layout.nb_channels)
        var matrix = [[Float]](repeating: [Float](repeating: 0, count: inputs), count: outputs)
        if inputs == outputs {
            for index in 0..<inputs { matrix[index][index] = 1 }
            return matrix
        }
        var layout = layout
        let half: Float = 0.7071
        for index in 0..<inputs {
            let channel = av_channel_layout_channel_from_index(&layout, UInt32(index))
            let (left, right): (Float, Float) = switch channel {
            case AV_CHAN_FRONT_LEFT, AV_CHAN_FRONT_LEFT_OF_CENTER, AV_CHAN_WIDE_LEFT: (1, 0)
            case AV_CHAN_FRONT_RIGHT, AV_CHAN_FRONT_RIGHT_OF_CENTER, AV_CHAN_WIDE_RIGHT: (0, 1)
            case AV_CHAN_SIDE_LEFT, AV_CHAN_BACK_LEFT, AV_CHAN_SURROUND_DIRECT_LEFT: (half, 0)
            case AV_CHAN_SIDE_RIGHT, AV_CHAN_BACK_RIGHT, AV_CHAN_SURROUND_DIRECT_RIGHT: (0, half)
            case AV_CHAN_LOW_FREQUENCY, AV_CHAN_LOW_FREQUENCY_2: (0, 0)
            default: (half, half)  // centres, and channels of an unknown order
            }
            if outputs == 1 { matrix[0][index] = (left + right) / 2 } else { (matrix[0][index], matrix[1][index]) = (left, right) }
        }
        // No clipping: each output's weights sum to at most 1.
        for out in 0..<outputs {
            let total = matrix[out].reduce(0, +)
            if total > 1 { matrix[out] = matrix[out].map { $0 / total } }
        }
        return matrix
    }

    func concealLoss(duration: MediaTime, emit: (consuming AudioFrame) throws -> Void) throws {
        let count = Int(duration.rescaled(to: Rational(1, stream.sampleRate)).value)
        guard count > 0 else { return }
        let silence = AudioFrame(sampleFormat: .f32, sampleRate: stream.sampleRate, channels: channels, sampleCount: count,
                                 pts: MediaTime(nextStart, timebase: Rational(1, stream.sampleRate)), pool: pool)
        nextStart += Int64(count)
        silence.buffer.count = silence.byteCount
        silence.bytes.initializeMemory(as: UInt8.self, repeating: 0)
        try emit(silence)
    }

    func flush(emit: (consuming AudioFrame) throws -> Void) throws {
        try check(avcodec_send_packet(context, nil), "avcodec_send_packet")
        try receive(emit: emit)
        avcodec_flush_buffers(context)
    }
}
