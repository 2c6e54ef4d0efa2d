import Glibc
import MediaContainers
import MediaCore
import MediaFiles
import MediaNegotiation
import MediaSDP

/// One stream of an inspected media file, counted by reading every frame or packet.
public struct InspectedStream: Sendable, Equatable {
    public var index: Int
    /// "video", "audio" or "other".
    public var kind: String
    /// The codec: "VP8", "H264", "OPUS", "AAC"; raw media as "rawvideo" or "pcm_s16le"/"pcm_f32le".
    public var codec: String
    public var width: Int?
    public var height: Int?
    public var frameRate: Rational?
    public var sampleRate: Int?
    public var channels: Int?
    /// Seconds from the first frame's start to the last one's end.
    public var duration: Double?
    /// Frames (video) or packets/blocks (audio) read.
    public var frames = 0
    public var keyframes = 0
    /// Bytes of frame payload read.
    public var payloadBytes = 0
    /// Extra facts, e.g. the H.264 profile or the Opus pre-skip.
    public var notes: [String] = []

    /// Payload bits per second of `duration`; nil when the duration is unknown or zero.
    public var bitrate: Int? {
        guard let duration, duration > 0 else { return nil }
        return Int((Double(payloadBytes) * 8 / duration).rounded())
    }
}

/// What `MediaInspector` found in a media file: its streams as far as they could be read and, for a
/// damaged or truncated file, the error (naming file and byte offset) that stopped the reading.
public struct MediaFileInspection: Sendable {
    public var path: String
    /// The format read: "y4m", "ivf", "wav", "h264", "ogg-opus", or libavformat's name of a container.
    public var format: String
    public var fileSize: Int
    public var streams: [InspectedStream]
    /// Seconds of the longest stream read, else the duration the container declares.
    public var duration: Double? { streams.compactMap(\.duration).max() ?? declaredDuration }
    /// The duration a container declares (libavformat's), for streams Sluice does not read.
    public var declaredDuration: Double?
    /// The file's bytes over its duration, in bits per second.
    public var bitrate: Int? {
        guard let duration, duration > 0 else { return nil }
        return Int(Double(fileSize) * 8 / duration)
    }
    /// Why reading stopped before the end, e.g. "clip.ivf: truncated at byte 4096: ...".
    public var error: String?
}

/// One media section (`m=`) of an inspected SDP.
public struct InspectedMediaSection: Sendable, Equatable {
    /// One payload type: its `rtpmap` (or static mapping) and `fmtp`.
    public struct Codec: Sendable, Equatable {
        public var payloadType: Int
        public var name: String
        public var clockRate: Int?
        public var channels: Int?
        public var parameters: String?
        /// Whether Sluice's answer takes it (RTX with the format it repairs).
        public var accepted = false
        /// Why not, when the answer looked at it and refused it.
        public var refusal: String?
    }

    /// What Sluice would answer to the section as an offer: `makeAnswer` (RFC 3264) with the built-in
    /// codecs (`CodecRegistry.builtIn.capabilities`).
    public struct Answer: Sendable, Equatable {
        /// The payload types of the codecs taken, in the offer's order (RTX not counted).
        public var accepted: [Int]
        /// The one Sluice would use: the first taken.
        public var chosen: Int? { accepted.first }
        /// The answer's direction, when accepted ("sendrecv", "recvonly", ...).
        public var direction: String?
        /// Why the whole section is refused (answered with port 0); nil when accepted.
        public var rejection: String?
    }

    public var type: String
    public var port: Int
    public var proto: String
    public var mid: String?
    public var direction: String
    public var codecs: [Codec]
    /// Whether the section (or the session) carries `a=crypto` (SDES) or `a=fingerprint` (DTLS).
    public var crypto: Bool
    public var fingerprint: Bool
    public var answer: Answer
}

/// What `MediaInspector` found in an SDP file.
public struct SDPInspection: Sendable {
    public var path: String
    public var sessionName: String
    public var media: [InspectedMediaSection]
}

/// Reads a media file or an SDP through the library's own readers (`MediaFiles`, `MediaContainers`,
/// `MediaSDP`) and describes it: `sluice inspect` is a thin adapter over it.
public enum MediaInspector {
    /// The result of one inspection.
    public enum Result: Sendable {
        case media(MediaFileInspection)
        case sdp(SDPInspection)
    }

    /// Inspects `path`: an `.sdp` as a session description, anything else as a media file chosen by
    /// its extension (`.y4m .ivf .wav .h264 .264 .opus .ogg`), else through libavformat (MP4/MOV,
    /// WebM, Matroska). A damaged file gives what was read with `error` set; a file that cannot be
    /// opened at all, or an SDP that does not parse, throws.
    public static func inspect(_ path: String) throws -> Result {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw MediaFileError.cannotOpen(path: path, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT != S_IFDIR else {
            throw MediaFileError.cannotOpen(path: path, reason: "is a directory")
        }
        let size = Int(info.st_size)
        let ext = path.split(separator: "/").last.flatMap { $0.contains(".") ? $0.split(separator: ".").last : nil }
            .map { $0.lowercased() } ?? ""
        if ext == "sdp" { return .sdp(try inspectSDP(path)) }
        var result = MediaFileInspection(path: path, format: ext, fileSize: size, streams: [])
        do {
            switch ext {
            case "y4m": try readY4M(path, into: &result)
            case "ivf": try readIVF(path, into: &result)
            case "wav": try readWAV(path, into: &result)
            case "h264", "264": try readAnnexB(path, into: &result)
            case "opus": try readOggOpus(try OggOpusReader(path: path), into: &result)
            case "ogg":
                // Ogg Opus through the library's reader; other Ogg codecs (Vorbis, Theora) through libavformat.
                if let reader = try? OggOpusReader(path: path) { try readOggOpus(reader, into: &result) } else {
                    try readContainer(path, into: &result)
                }
            default: try readContainer(path, into: &result)
            }
        } catch let error as MediaFileError {
            if result.streams.isEmpty, case .cannotOpen = error { throw error }
            result.error = error.description
        }
        return .media(result)
    }

    /// Adds one frame to `stream`: its bytes, keyframe flag and time span.
    private static func count(_ frame: EncodedFrame, in stream: inout InspectedStream, span: inout (start: Double, end: Double)?) {
        stream.frames += 1
        stream.payloadBytes += frame.byteCount
        if frame.isKeyframe { stream.keyframes += 1 }
        // Negative timestamps (AAC priming, B-frame delay) are decoded but not played.
        let start = max(0, seconds(frame.pts))
        let end = max(start, seconds(frame.pts) + (frame.duration.map(seconds) ?? 0))
        span = span.map { (min($0.start, start), max($0.end, end)) } ?? (start, end)
    }

    private static func seconds(_ time: MediaTime) -> Double { Double(time.value) * time.timebase.doubleValue }

    private static func readY4M(_ path: String, into result: inout MediaFileInspection) throws {
        let reader = try Y4MReader(path: path, pool: BufferPool(name: "inspect"))
        let format = reader.format
        result.format = "y4m"
        result.streams = [InspectedStream(index: 0, kind: "video", codec: "rawvideo", width: format.width, height: format.height,
                                          frameRate: format.frameRate, notes: ["i420"])]
        let frameBytes = PlaneLayout(.i420, width: format.width, height: format.height, rowAlignment: 1).byteCount
        defer {
            let frames = reader.framesRead
            result.streams[0].frames = frames
            result.streams[0].keyframes = frames
            result.streams[0].payloadBytes = frames * frameBytes
            result.streams[0].duration = Double(frames) / format.frameRate.doubleValue
        }
        while try reader.next() != nil {}
    }

    private static func readIVF(_ path: String, into result: inout MediaFileInspection) throws {
        let reader = try IVFReader(path: path)
        let header = reader.header
        result.format = "ivf"
        result.streams = [InspectedStream(index: 0, kind: "video", codec: header.codec.rawValue, width: header.width, height: header.height)]
        var span: (start: Double, end: Double)?
        var previous: MediaTime?
        var step: MediaTime?
        defer {
            // IVF frames carry no duration: the last one lasts as long as the step between frames.
            let last = step.map(seconds) ?? seconds(MediaTime(1, timebase: header.timebase))
            result.streams[0].duration = span.map { $0.end - $0.start + last }
            result.streams[0].frameRate = step.flatMap { $0.value > 0 ? Rational($0.timebase.denominator, Int($0.value) * $0.timebase.numerator) : nil }
                ?? header.timebase.reciprocal
        }
        while let frame = try reader.next(pool: nil) {
            if let previous, step == nil { step = frame.pts - previous }
            previous = frame.pts
            count(frame, in: &result.streams[0], span: &span)
        }
        if header.frameCount != reader.framesRead {
            result.streams[0].notes.append("header says \(header.frameCount) frames")
        }
    }

    private static func readWAV(_ path: String, into result: inout MediaFileInspection) throws {
        let reader = try WAVReader(path: path, pool: BufferPool(name: "inspect"))
        let format = reader.format
        result.format = "wav"
        let sampleFormat: SampleFormat = if case .samples(let sample) = format.encoding { sample } else { .s16 }
        result.streams = [InspectedStream(index: 0, kind: "audio", codec: sampleFormat == .s16 ? "pcm_s16le" : "pcm_f32le",
                                          sampleRate: format.sampleRate, channels: format.channels)]
        result.streams[0].notes.append("PCM: a frame is one sample per channel")
        defer {
            // PCM has no packets of its own: a frame is a sample of every channel.
            let samples = reader.samplesRead
            (result.streams[0].frames, result.streams[0].keyframes) = (samples, samples)
            result.streams[0].payloadBytes = samples * format.channels * sampleFormat.bytesPerSample
            result.streams[0].duration = Double(samples) / Double(format.sampleRate)
        }
        while try reader.next(maxSamples: 48_000) != nil {}
    }

    private static func readAnnexB(_ path: String, into result: inout MediaFileInspection) throws {
        let reader = try AnnexBReader(path: path)
        result.format = "h264"
        var stream = InspectedStream(index: 0, kind: "video", codec: CodecName.h264.rawValue, width: reader.width, height: reader.height,
                                     frameRate: reader.frameRate, notes: [reader.sequenceParameterSet.profileName])
        if reader.sequenceParameterSet.frameRate == nil { stream.notes.append("no timing in the SPS: frame rate assumed") }
        result.streams = [stream]
        defer { result.streams[0].duration = Double(result.streams[0].frames) / reader.frameRate.doubleValue }
        var span: (start: Double, end: Double)?
        while let frame = try reader.next(pool: nil) { count(frame, in: &result.streams[0], span: &span) }
    }

    private static func readOggOpus(_ reader: OggOpusReader, into result: inout MediaFileInspection) throws {
        let header = reader.header
        result.format = "ogg-opus"
        result.streams = [InspectedStream(index: 0, kind: "audio", codec: CodecName.opus.rawValue, sampleRate: 48_000,
                                          channels: header.channels,
                                          notes: ["pre-skip \(header.preSkip)", "input rate \(header.inputSampleRate) Hz"])]
        var span: (start: Double, end: Double)?
        defer {
            // The granule positions count the pre-skip, which is not played.
            result.streams[0].duration = span.map { max(0, $0.end - Double(header.preSkip) / 48_000) }
            if reader.damagedPages > 0 { result.streams[0].notes.append("\(reader.damagedPages) damaged pages skipped") }
        }
        while let frame = try reader.next(pool: nil) {
            count(frame, in: &result.streams[0], span: &span)
            result.streams[0].keyframes = result.streams[0].frames
        }
    }

    private static func readContainer(_ path: String, into result: inout MediaFileInspection) throws {
        let reader = try ContainerReader(path: path)
        result.format = reader.formatName
        result.declaredDuration = reader.duration
        result.streams = reader.streams.map { stream in
            var inspected = InspectedStream(index: stream.index, kind: stream.kind.rawValue,
                                            codec: stream.codec?.rawValue ?? stream.codecName)
            if stream.kind == .video {
                (inspected.width, inspected.height, inspected.frameRate) = (stream.width, stream.height, stream.frameRate)
            } else if stream.kind == .audio {
                (inspected.sampleRate, inspected.channels) = (stream.sampleRate, stream.channels)
                if stream.preSkip > 0 { inspected.notes.append("pre-skip \(stream.preSkip)") }
            }
            if stream.codec == nil { inspected.notes.append("not read by Sluice; \(stream.frameCount) frames declared") }
            return inspected
        }
        var spans: [Int: (start: Double, end: Double)] = [:]
        defer {
            for index in result.streams.indices {
                guard let span = spans[index] else { continue }
                var duration = span.end - span.start
                // Video packets without a stored duration: the last picture lasts one frame.
                if result.streams[index].kind == "video", let rate = result.streams[index].frameRate,
                   duration < Double(result.streams[index].frames) / rate.doubleValue - 0.5 / rate.doubleValue {
                    duration += 1 / rate.doubleValue
                }
                result.streams[index].duration = duration
            }
        }
        while let (index, frame) = try reader.next(pool: nil) {
            var span = spans[index]
            count(frame, in: &result.streams[index], span: &span)
            spans[index] = span
        }
    }

    /// What Sluice answers to `session` as an offer, section by section, with its built-in codecs: a
    /// WebRTC offer (ICE credentials and a DTLS fingerprint) as its peer connection does (JSEP, data
    /// channels taken; a track of each kind to send, as `sluice serve` has), anything else as plain
    /// RTP (`makeAnswer`, what `sluice answer` prints).
    static func sluiceAnswer(to session: SessionDescription) -> [MediaNegotiationResult] {
        let capabilities = CodecRegistry.builtIn.capabilities
        // The transport lines of the answer are not looked at: placeholders stand in for ICE and DTLS.
        let transport = TransportDescription(iceUfrag: "inspect", icePwd: String(repeating: "0", count: 22),
                                             fingerprints: [SDPFingerprint(algorithm: "sha-256", bytes: Array(repeating: 0, count: 32))])
        var senders: [MediaKind: WebRTCSender] = [:]
        for (ssrc, kind) in zip([UInt32(1), 2], [MediaKind.audio, .video]) {
            senders[kind] = WebRTCSender(streamID: "sluice", trackID: kind.rawValue, source: SendingSource(ssrc: ssrc, cname: "sluice"))
        }
        let options = WebRTCOptions(senders: senders, dataChannel: true)
        if let answer = try? makeWebRTCAnswer(to: session, capabilities: capabilities, transport: transport, options: options) {
            return answer.results
        }
        return makeAnswer(to: session, capabilities: capabilities).1
    }

    private static func inspectSDP(_ path: String) throws -> SDPInspection {
        let session: SessionDescription
        do { session = try SessionDescription(contentsOfFile: path) } catch {
            throw MediaFileError.corrupt(path: path, offset: 0, detail: "SDP: \(error)")
        }
        let sessionCrypto = session.hasAttribute("crypto"), sessionFingerprint = session.hasAttribute("fingerprint")
        let results = sluiceAnswer(to: session)
        let media = zip(session.media, results).map { section, result in
            let taken = Set(result.codecs.flatMap { [$0.payloadType] + ($0.retransmissionPayloadType.map { [$0] } ?? []) })
            let codecs = section.payloadTypes.map { type in
                let map = (try? section.rtpMap(for: type)) ?? SDPRTPMap.staticMapping(type)
                let fmtp = (try? section.formatParameterLine(for: type))?.map(\.parameterText)
                return InspectedMediaSection.Codec(payloadType: Int(type), name: map?.encodingName ?? "?", clockRate: map?.clockRate,
                                                   channels: map?.channels, parameters: fmtp, accepted: taken.contains(type),
                                                   refusal: result.refusedFormats.first { $0.payloadType == type }?.reason)
            }
            var direction: String?
            if case .accepted(_, let answered) = result.outcome { direction = answered.rawValue }
            let answer = InspectedMediaSection.Answer(accepted: result.codecs.map { Int($0.payloadType) }, direction: direction,
                                                      rejection: result.rejectionReason)
            return InspectedMediaSection(type: section.type, port: section.port, proto: section.proto, mid: section.mid,
                                         direction: section.direction(in: session).rawValue, codecs: codecs,
                                         crypto: sessionCrypto || section.hasAttribute("crypto"),
                                         fingerprint: sessionFingerprint || section.hasAttribute("fingerprint"), answer: answer)
        }
        return SDPInspection(path: path, sessionName: session.sessionName, media: media)
    }
}
