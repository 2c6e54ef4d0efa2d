import CFFmpeg
import MediaCore
import MediaFiles

/// A container Sluice writes through libavformat, with the codecs it takes.
public enum ContainerFormat: String, Sendable, CaseIterable {
    /// ISO base media (`.mp4`, `.m4v`, `.mov`): H.264 video, Opus audio.
    case mp4
    /// WebM (`.webm`): VP8 video, Opus audio.
    case webm
    /// Matroska (`.mkv`, `.mka`): any codec Sluice carries.
    case matroska

    /// The format a path's extension names; nil for other extensions.
    public init?(path: String) {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "mp4", "m4v", "mov": self = .mp4
        case "webm": self = .webm
        case "mkv", "mka": self = .matroska
        default: return nil
        }
    }

    /// The codecs this format takes, video first, each kind's default first.
    public var codecs: [CodecName] {
        switch self {
        case .mp4: [.h264, .opus]
        case .webm: [.vp8, .opus]
        case .matroska: [.vp8, .h264, .opus]
        }
    }

    /// The usual extension of a file in this format.
    public var fileExtension: String {
        switch self {
        case .mp4: "mp4"
        case .webm: "webm"
        case .matroska: "mkv"
        }
    }

    /// libavformat's muxer name.
    var muxerName: String { self == .mp4 ? "mp4" : rawValue }
}

/// What one track of a written container holds.
public enum ContainerTrack: Sendable, Equatable {
    case video(codec: CodecName, width: Int, height: Int)
    /// `preSkip`: samples at 48 kHz the decoder drops from the start (Opus; `AudioEncoderNode.preSkip`).
    case audio(codec: CodecName, sampleRate: Int, channels: Int, preSkip: Int)

    public var codec: CodecName {
        switch self {
        case .video(let codec, _, _), .audio(let codec, _, _, _): codec
        }
    }
}

/// Writes encoded frames of one or more tracks into an MP4, WebM or Matroska file through libavformat,
/// interleaved by timestamp (libavformat's interleaving queue), from one thread or several (one per
/// track, as a graph's sinks are).
///
/// Tracks are added first, up to `trackCount`; the header is written once they all are and every
/// H.264 track has had an access unit with its SPS and PPS (which become the track's configuration);
/// frames arriving before that wait. `close()` writes the trailer (the index of an MP4) however the
/// run ends, so an interrupted run leaves a playable file holding every frame written.
public final class ContainerWriter: @unchecked Sendable {
    public let path: String
    public let format: ContainerFormat
    /// The tracks expected; the header waits for all of them.
    public let trackCount: Int

    private let lock = ConditionLock()
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var tracks: [ContainerTrack] = []
    private var ended: [Bool] = []
    private var configured: [Bool] = []
    private var headerWritten = false
    private var closed = false
    private var waiting: [(track: Int, frame: EncodedFrame)] = []
    private var written: [Int] = []
    /// Per track, a frame without a duration waiting for the next one to give it one (an MP4's last
    /// sample without a duration falls outside its edit list, and players drop it).
    private var held: [EncodedFrame?] = []
    private var lastDuration: [MediaTime?] = []
    private var failure: MediaFileError?

    /// Creates `path` (its extension gives the format unless `format` does) for `trackCount` tracks.
    public init(path: String, format: ContainerFormat? = nil, trackCount: Int = 1) throws {
        guard let format = format ?? ContainerFormat(path: path) else {
            throw MediaFileError.unsupported(path: path, detail: "not a container Sluice writes (.mp4, .webm, .mkv)")
        }
        precondition(trackCount > 0)
        FFmpeg.setUp()
        self.path = path
        self.format = format
        self.trackCount = trackCount
        var context: UnsafeMutablePointer<AVFormatContext>?
        let status = avformat_alloc_output_context2(&context, nil, format.muxerName, path)
        guard status >= 0, let context else {
            throw MediaFileError.writeFailed(path: path, reason: FFmpeg.message(status))
        }
        self.context = context
    }

    deinit { try? close() }

    /// Frames written to the file so far, per track.
    public var framesWritten: [Int] { lock.withLock { written } }

    /// Adds a track and returns its index; fails for a codec the format does not take.
    public func addTrack(_ track: ContainerTrack) throws -> Int {
        try lock.withLock {
            guard let context, !headerWritten, tracks.count < trackCount else {
                preconditionFailure("\(path): tracks are added before any frame is written, at most \(trackCount)")
            }
            guard format.codecs.contains(track.codec), let id = FFmpeg.codecID(track.codec) else {
                throw MediaFileError.writeFailed(
                    path: path, reason: "a .\(format.rawValue) file takes \(format.codecs.map(\.rawValue).joined(separator: ", ")), not \(track.codec)")
            }
            // The file is created with the first track, when the graph starts, not when it is built.
            if context.pointee.pb == nil {
                let opened = avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE)
                guard opened >= 0 else { throw MediaFileError.cannotOpen(path: path, reason: FFmpeg.message(opened)) }
            }
            guard let stream = avformat_new_stream(context, nil) else { throw fail("out of memory") }
            let parameters = stream.pointee.codecpar!
            parameters.pointee.codec_id = id
            switch track {
            case .video(_, let width, let height):
                parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
                parameters.pointee.width = Int32(width)
                parameters.pointee.height = Int32(height)
                stream.pointee.time_base = AVRational(num: 1, den: 90_000)
            case .audio(let codec, let sampleRate, let channels, let preSkip):
                parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
                parameters.pointee.sample_rate = Int32(codec == .opus ? 48_000 : sampleRate)
                av_channel_layout_default(&parameters.pointee.ch_layout, Int32(channels))
                stream.pointee.time_base = AVRational(num: 1, den: parameters.pointee.sample_rate)
                if codec == .opus {
                    parameters.pointee.initial_padding = Int32(preSkip)
                    setExtradata(parameters, OggOpusHeader(channels: channels, preSkip: preSkip, inputSampleRate: sampleRate).encoded())
                }
            }
            tracks.append(track)
            ended.append(false)
            written.append(0)
            held.append(nil)
            lastDuration.append(nil)
            configured.append(track.codec != .h264)
            return tracks.count - 1
        }
    }

    /// Writes `frame` to `track` (or keeps it until the header can be written). A frame without a
    /// duration is written when the next one comes, lasting until it (by decoding time).
    public func write(_ frame: EncodedFrame, track: Int) throws {
        try lock.withLock {
            if let failure { throw failure }
            guard !closed else { throw MediaFileError.writeFailed(path: path, reason: "written after close") }
            if var previous = held[track] {
                let step = frame.dts - previous.dts
                previous.duration = step.value > 0 ? step : lastDuration[track]
                held[track] = nil
                try accept(previous, track: track)
            }
            if frame.duration == nil {
                held[track] = frame
            } else {
                try accept(frame, track: track)
            }
        }
    }

    /// Writes a frame whose duration is settled, or keeps it until the header is written.
    private func accept(_ frame: EncodedFrame, track: Int) throws {
        lastDuration[track] = frame.duration
        if !headerWritten {
            if !configured[track], let sets = AVCConfiguration.parameterSets(inAnnexB: frame.bytes) {
                setExtradata(context!.pointee.streams[track]!.pointee.codecpar, sets)
                configured[track] = true
            }
            waiting.append((track, frame))
            guard tracks.count == trackCount, !configured.contains(false) else { return }
            try writeHeader()
            return
        }
        try send(frame, track: track)
    }

    /// Writes what `track` holds back, lasting as long as the frame before it.
    private func release(_ track: Int) throws {
        guard var last = held[track] else { return }
        held[track] = nil
        last.duration = lastDuration[track]
        try accept(last, track: track)
    }

    /// Says that `track` has no more frames; the file is closed when every track has ended.
    public func endTrack(_ track: Int) throws {
        let last = try lock.withLock {
            ended[track] = true
            try release(track)
            return tracks.count == trackCount && !ended.contains(false)
        }
        if last { try close() }
    }

    /// Writes what waits, the header if it was not yet written, and the trailer; later calls do nothing.
    public func close() throws {
        try lock.withLock {
            guard !closed, let context else { return }
            closed = true
            defer {
                avio_closep(&context.pointee.pb)
                avformat_free_context(context)
                self.context = nil
            }
            if let failure { throw failure }
            guard !tracks.isEmpty else { return }
            for track in tracks.indices { try release(track) }
            if !headerWritten { try writeHeader() }
            let status = av_write_trailer(context)
            guard status >= 0 else { throw fail(FFmpeg.message(status)) }
        }
    }

    private func writeHeader() throws {
        // Opus in MP4 is marked experimental in FFmpeg 5.1's muxer.
        context!.pointee.strict_std_compliance = -2
        let status = avformat_write_header(context, nil)
        guard status >= 0 else { throw fail("cannot write the header: \(FFmpeg.message(status))") }
        headerWritten = true
        let queued = waiting
        waiting = []
        for (track, frame) in queued { try send(frame, track: track) }
    }

    private func send(_ frame: EncodedFrame, track: Int) throws {
        guard let context, let stream = context.pointee.streams[track] else { return }
        var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
        defer { av_packet_free(&packet) }
        guard let packet, av_new_packet(packet, Int32(frame.byteCount)) >= 0 else { throw fail("out of memory") }
        if let source = frame.bytes.baseAddress { packet.pointee.data.update(from: source.assumingMemoryBound(to: UInt8.self), count: frame.byteCount) }
        let timebase = stream.pointee.time_base
        // Sluice's Opus timeline starts with the pre-skip (see `ContainerReader`). Matroska keeps it so and
        // states the pre-skip as CodecDelay, which readers subtract; an MP4 states it by an edit list,
        // which the muxer writes when the first packet lies that much before zero.
        let shift: Int64 = if format == .mp4, case .audio(.opus, _, _, let preSkip) = tracks[track] {
            av_rescale_q(Int64(preSkip), AVRational(num: 1, den: 48_000), timebase)
        } else { 0 }
        func rescale(_ time: MediaTime) -> Int64 { av_rescale_q(time.value, FFmpeg.avRational(time.timebase), timebase) - shift }
        packet.pointee.pts = rescale(frame.pts)
        packet.pointee.dts = rescale(frame.dts)
        packet.pointee.duration = frame.duration.map(rescale) ?? 0
        packet.pointee.stream_index = Int32(track)
        if frame.isKeyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        let status = av_interleaved_write_frame(context, packet)
        guard status >= 0 else { throw fail("frame \(written[track]) of track \(track): \(FFmpeg.message(status))") }
        written[track] += 1
    }

    private func fail(_ reason: String) -> MediaFileError {
        let error = MediaFileError.writeFailed(path: path, reason: reason)
        failure = error
        return error
    }

    private func setExtradata(_ parameters: UnsafeMutablePointer<AVCodecParameters>, _ bytes: [UInt8]) {
        av_freep(&parameters.pointee.extradata)
        let padded = av_mallocz(bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))!.assumingMemoryBound(to: UInt8.self)
        padded.update(from: bytes, count: bytes.count)
        parameters.pointee.extradata = padded
        parameters.pointee.extradata_size = Int32(bytes.count)
    }
}
