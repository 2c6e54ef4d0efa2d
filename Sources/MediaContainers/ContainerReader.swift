import CFFmpeg
import Glibc
import MediaCore
import MediaFiles

/// One stream of a container file, as the demuxer describes it.
public struct ContainerStream: Sendable, Equatable {
    public enum Kind: String, Sendable { case video, audio, other }

    /// The stream's index in the file.
    public var index: Int
    public var kind: Kind
    /// The codec as Sluice names it; nil for a codec Sluice does not read (see `codecName`).
    public var codec: CodecName?
    /// FFmpeg's name of the codec ("h264", "hevc", "mp3").
    public var codecName: String
    /// The timebase of the stream's timestamps, as stored in the file.
    public var timebase: Rational
    /// Video: picture size and frame rate (average, else nominal; nil when the file gives neither).
    public var width = 0, height = 0
    public var frameRate: Rational?
    /// Audio: sample rate and channels; for Opus, samples at 48 kHz to drop from the decoded start.
    public var sampleRate = 0, channels = 0
    public var preSkip = 0
    /// Frames the file says the stream holds (0 when it does not say).
    public var frameCount = 0
    /// The codec's configuration as the container stores it (FFmpeg's extradata: an `avcC`, an AAC
    /// AudioSpecificConfig, an OpusHead); empty when there is none.
    public var configuration: [UInt8] = []

    /// `preSkip` in the stream's timebase.
    var preSkipTicks: Int64 { MediaTime(Int64(preSkip), timebase: Rational(1, 48_000)).rescaled(to: timebase).value }
}

/// Reads a container file (MP4/MOV, WebM, Matroska, Ogg and whatever else libavformat opens) packet
/// by packet, giving Sluice's encoded frames with the file's timestamps and timebases. H.264 stored
/// with length prefixes (MP4, Matroska) is converted to Annex-B access units with SPS and PPS in
/// front of each IDR picture (`CodecName.h264`).
///
/// Damage ends reading with a `MediaFileError` naming the file and the byte offset where it was
/// found; every packet before it has been returned. A file cut short is `truncated`: some demuxers
/// (Matroska, WebM) stop at the cut without an error, so the end of the last packet is checked against
/// the file's size and the container's own account of its length.
public final class ContainerReader {
    public let path: String
    /// libavformat's name of the container ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "ogg").
    public let formatName: String
    public let streams: [ContainerStream]
    /// Seconds the container says it lasts; nil when it does not say.
    public let duration: Double?
    public private(set) var packetsRead = 0

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private var configurations: [Int: AVCConfiguration] = [:]
    private let fileSize: Int
    private var failure: MediaFileError?
    /// The file offset past the last packet read, when the demuxer tells packet positions.
    private var endOfLastPacket = 0
    /// Seconds from the file's start to the end of the latest packet read, of any stream.
    private var endOfPackets = 0.0
    /// Whether the container's duration was read from it (not estimated from the bitrate).
    private let durationIsDeclared: Bool
    private let startTime: Double

    /// Packets may end this much before the duration the container declares without the file being
    /// taken as cut short (the last packet's duration is not always stored).
    static let durationTolerance = 0.5

    public init(path: String) throws {
        self.path = path
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw MediaFileError.cannotOpen(path: path, reason: String(cString: strerror(errno)))
        }
        fileSize = Int(info.st_size)
        FFmpeg.setUp()
        // Demuxers that can resynchronise past damage (Matroska, Ogg) fail instead, so nothing is skipped silently.
        var context: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        context?.pointee.error_recognition = AV_EF_EXPLODE | AV_EF_CRCCHECK
        var status = avformat_open_input(&context, path, nil, nil)
        guard status >= 0, let context else {
            throw Self.openFailure(path: path, fileSize: fileSize, status: status)
        }
        self.context = context
        status = avformat_find_stream_info(context, nil)
        guard status >= 0 else {
            var context: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&context)
            throw MediaFileError.corrupt(path: path, offset: 0, detail: "cannot read the stream parameters: \(FFmpeg.message(status))")
        }
        // Only now: an initializer that throws does not run `deinit`, which frees it (found by FuzzContainer).
        packet = av_packet_alloc()
        formatName = String(cString: context.pointee.iformat.pointee.name)
        duration = context.pointee.duration > 0 ? Double(context.pointee.duration) / Double(AV_TIME_BASE) : nil
        durationIsDeclared = context.pointee.duration_estimation_method != AVFMT_DURATION_FROM_BITRATE
        startTime = context.pointee.start_time == FFmpeg.noTimestamp ? 0 : Double(context.pointee.start_time) / Double(AV_TIME_BASE)
        var streams: [ContainerStream] = []
        for index in 0..<Int(context.pointee.nb_streams) {
            let stream = context.pointee.streams[index]!.pointee
            streams.append(Self.describe(stream, index: index))
            if streams[index].codec == .h264, let configuration = AVCConfiguration(streams[index].configuration) {
                configurations[index] = configuration
            }
        }
        self.streams = streams
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
        avformat_close_input(&context)
    }

    /// Why `avformat_open_input` failed: an empty file, a cut MP4 (its index, written last, missing),
    /// or bytes that are no container at all.
    private static func openFailure(path: String, fileSize: Int, status: Int32) -> MediaFileError {
        guard fileSize > 0 else { return .truncated(path: path, offset: 0, detail: "empty file") }
        var probe = [UInt8](repeating: 0, count: min(fileSize, 4096) + Int(AVPROBE_PADDING_SIZE))
        let head = fopen(path, "rb")
        let read = head.map { fread(&probe, 1, min(fileSize, 4096), $0) } ?? 0
        if let head { fclose(head) }
        // The file name must outlive the probe (libavformat matches its extension): a String passed
        // straight to AVProbeData's initializer is a C string freed when the initializer returns.
        let name: String? = path.withCString { filename in
            probe.withUnsafeMutableBufferPointer { buffer in
                var data = AVProbeData(filename: filename, buf: buffer.baseAddress, buf_size: Int32(read), mime_type: nil)
                return av_probe_input_format(&data, 1).map { String(cString: $0.pointee.name) }
            }
        }
        switch name {
        case .some(let name) where name.hasPrefix("mov"):
            return .truncated(path: path, offset: fileSize,
                              detail: "MP4 without its index (moov box), which is written last: the file was cut before its end")
        case .some(let name):
            return .corrupt(path: path, offset: 0, detail: "a \(name) file libavformat cannot open: \(FFmpeg.message(status))")
        case nil:
            return .corrupt(path: path, offset: 0, detail: "not a container libavformat reads: \(FFmpeg.message(status))")
        }
    }

    private static func describe(_ stream: AVStream, index: Int) -> ContainerStream {
        let parameters = stream.codecpar.pointee
        let kind: ContainerStream.Kind = switch parameters.codec_type {
        case AVMEDIA_TYPE_VIDEO: .video
        case AVMEDIA_TYPE_AUDIO: .audio
        default: .other
        }
        var description = ContainerStream(index: index, kind: kind, codec: FFmpeg.codec(parameters.codec_id),
                                          codecName: FFmpeg.name(parameters.codec_id),
                                          timebase: FFmpeg.rational(stream.time_base) ?? Rational(1, 90_000))
        if kind == .video {
            description.width = Int(parameters.width)
            description.height = Int(parameters.height)
            description.frameRate = FFmpeg.rational(stream.avg_frame_rate) ?? FFmpeg.rational(stream.r_frame_rate)
        } else if kind == .audio {
            description.sampleRate = Int(parameters.sample_rate)
            description.channels = Int(parameters.ch_layout.nb_channels)
            description.preSkip = Int(parameters.initial_padding)
            // An OpusHead (RFC 7845 §5.1) carries the pre-skip at bytes 10-11, little-endian.
            if parameters.codec_id == AV_CODEC_ID_OPUS, parameters.extradata_size >= 19,
               let head = parameters.extradata, memcmp(head, "OpusHead", 8) == 0 {
                description.preSkip = Int(head[10]) | Int(head[11]) << 8
            }
        }
        description.frameCount = Int(stream.nb_frames)
        if let extradata = parameters.extradata, parameters.extradata_size > 0 {
            description.configuration = Array(UnsafeBufferPointer(start: extradata, count: Int(parameters.extradata_size)))
        }
        return description
    }

    /// The first stream of `kind`, checked to be in a codec Sluice reads; a file without one, or
    /// with one in another codec, is an error naming it.
    public func firstStream(_ kind: ContainerStream.Kind) throws -> ContainerStream {
        guard let stream = streams.first(where: { $0.kind == kind }) else {
            let held = streams.map { "\($0.kind) \($0.codecName)" }.joined(separator: ", ")
            throw MediaFileError.unsupported(path: path, detail: "no \(kind) stream (the file holds: \(held.isEmpty ? "nothing" : held))")
        }
        guard stream.codec != nil else {
            throw MediaFileError.unsupported(
                path: path, detail: "stream \(stream.index) is \(stream.codecName) \(kind); Sluice reads H.264 and VP8 video, Opus and AAC audio")
        }
        return stream
    }

    /// The next packet of any stream Sluice reads, its bytes in a buffer from `pool` (or a fresh
    /// one); nil at the end of the file. Packets of streams in other codecs are skipped.
    public func next(pool: BufferPool?) throws -> (stream: Int, frame: EncodedFrame)? {
        if let failure { throw failure }
        do {
            return try readPacket(pool: pool)
        } catch let error as MediaFileError {
            failure = error
            throw error
        }
    }

    private func readPacket(pool: BufferPool?) throws -> (stream: Int, frame: EncodedFrame)? {
        guard let context else { return nil }
        while true {
            let (status, logged) = FFmpeg.recordingErrors { av_read_frame(context, packet) }
            if status == FFmpeg.eof {
                if let logged { throw damage(logged) }
                try checkComplete()
                return nil
            }
            guard status >= 0 else { throw damage(logged.map { "\(FFmpeg.message(status)) (\($0))" } ?? FFmpeg.message(status)) }
            defer { av_packet_unref(packet) }
            let index = Int(packet.pointee.stream_index)
            guard index < streams.count else { continue }
            if packet.pointee.pts != FFmpeg.noTimestamp {
                let end = Double(packet.pointee.pts + max(packet.pointee.duration, 0)) * streams[index].timebase.doubleValue
                endOfPackets = max(endOfPackets, end - startTime)
            }
            let data = UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))
            let position = Int(packet.pointee.pos)
            if packet.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 {
                // A packet the demuxer could not read whole: cut short at the end of the file, else damaged.
                let atEnd = context.pointee.pb.map { avio_feof($0) != 0 || Int(avio_tell($0)) >= fileSize } ?? false
                let detail = "packet \(packetsRead) (stream \(index)) is " + (atEnd ? "cut short" : "damaged")
                throw atEnd ? MediaFileError.truncated(path: path, offset: max(position, 0), detail: detail)
                    : MediaFileError.corrupt(path: path, offset: max(position, 0), detail: detail)
            }
            if let logged {
                // The demuxer stepped over damage to reach this packet: what lay before it is lost.
                throw MediaFileError.corrupt(path: path, offset: endOfLastPacket,
                                             detail: "after packet \(packetsRead): \(logged)" + (position >= 0 ? "; the demuxer resumed at byte \(position)" : ""))
            }
            if position >= 0 { endOfLastPacket = max(endOfLastPacket, position + data.count) }
            guard let codec = streams[index].codec else { continue }
            let timebase = streams[index].timebase
            // libavformat puts an Opus stream's pre-skip before zero (the first packet at -preSkip: MP4's
            // edit list, Matroska's CodecDelay); on Sluice's timeline, as in Ogg's granule positions, the
            // stream starts with it and `OpusDecoder` takes it off again.
            let shift = codec == .opus ? streams[index].preSkipTicks : 0
            let dts = packet.pointee.dts == FFmpeg.noTimestamp ? nil : packet.pointee.dts + shift
            guard let pts = packet.pointee.pts == FFmpeg.noTimestamp ? dts : packet.pointee.pts + shift else {
                throw MediaFileError.corrupt(path: path, offset: max(position, 0),
                                             detail: "packet \(packetsRead) (stream \(index)) has no timestamp")
            }
            let duration = packet.pointee.duration > 0 ? MediaTime(packet.pointee.duration, timebase: timebase) : nil
            var isKeyframe = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
            let frame: EncodedFrame
            if let configuration = configurations[index] {
                do {
                    let accessUnit = try configuration.annexB(data)
                    isKeyframe = accessUnit.isIDR
                    frame = accessUnit.bytes.withUnsafeBytes {
                        EncodedFrame(codec: codec, isKeyframe: isKeyframe, pts: MediaTime(pts, timebase: timebase),
                                     dts: dts.map { MediaTime($0, timebase: timebase) }, duration: duration, copying: $0, pool: pool)
                    }
                } catch {
                    throw MediaFileError.corrupt(path: path, offset: max(position, 0) + error.offset,
                                                 detail: "packet \(packetsRead) (stream \(index)): \(error.detail)")
                }
            } else {
                frame = EncodedFrame(codec: codec, isKeyframe: isKeyframe, pts: MediaTime(pts, timebase: timebase),
                                     dts: dts.map { MediaTime($0, timebase: timebase) }, duration: duration,
                                     copying: data, pool: pool)
            }
            packetsRead += 1
            return (index, frame)
        }
    }

    /// At the demuxer's end of file: a demuxer that stopped quietly at a cut still leaves its I/O
    /// context short of the file's end or of the size the container declared for itself.
    private func checkComplete() throws {
        guard let io = context?.pointee.pb else { return }
        if io.pointee.error < 0 && io.pointee.error != FFmpeg.eof { throw damage(FFmpeg.message(io.pointee.error)) }
        if endOfLastPacket > fileSize {
            throw MediaFileError.truncated(path: path, offset: fileSize,
                                           detail: "the last packet runs to byte \(endOfLastPacket), past the end of the file")
        }
        // Matroska and WebM demuxers end quietly at a cut; the declared duration tells.
        if durationIsDeclared, let duration, endOfPackets < duration - Self.durationTolerance {
            throw MediaFileError.truncated(
                path: path, offset: fileSize,
                detail: "the packets end at \(Self.milliseconds(endOfPackets)) s of the \(Self.milliseconds(duration)) s the container declares")
        }
    }

    private static func milliseconds(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

    /// The error for a failed read: truncated when the demuxer was at the end of the file, else corrupt.
    private func damage(_ reason: String) -> MediaFileError {
        let offset = context?.pointee.pb.map { Int(avio_tell($0)) } ?? endOfLastPacket
        if offset >= fileSize || reason.lowercased().contains("end of file") {
            return .truncated(path: path, offset: min(endOfLastPacket, fileSize),
                              detail: "after packet \(packetsRead): \(reason)")
        }
        return .corrupt(path: path, offset: offset, detail: "after packet \(packetsRead): \(reason)")
    }
}
