import DeviceALSA
import DeviceV4L2
import MediaCodecs
import MediaContainers
import MediaCore
import MediaFiles
import MediaNegotiation
import MediaNodes
import MediaTransport

/// A graph built from a `PipelineDescription`: every element checked against its kind's options,
/// every link's media checked before any node is made, then the formats negotiated (`Graph.build`)
/// before anything runs. `sluice run` is a thin adapter over it.
public final class TextPipeline: @unchecked Sendable {
    public let description: PipelineDescription
    public let graph = Graph()
    /// The links between graph nodes, for `dot`: producer, consumer.
    private var edges: [(from: any MediaNode, to: String)] = []
    private var nodes: [(node: any MediaNode, label: String)] = []
    /// Sinks whose counts the summary reports: graph node name and the file written.
    public private(set) var outputs: [(node: String, target: String)] = []

    private let registry: CodecRegistry
    private var named: [String: Named] = [:]
    private var sinks: [SinkRequest] = []
    private var usedNames = Set<String>()
    private var pacing: Pacing
    /// The WHIP sinks' connections, negotiated when the pipeline runs.
    private var publishers: [WHIPPublisher] = []
    /// `whep` sources, connected while the pipeline was built; closed at the end of the run or with the pipeline.
    private var viewers: [WHEPViewer] = []

    /// The output of a node as the builder tracks it.
    struct Output {
        enum Port {
            case video(MediaCore.Port<VideoFrame>)
            case audio(MediaCore.Port<AudioFrame>)
            case encoded(MediaCore.Port<EncodedFrame>)
        }
        var port: Port
        var kind: StreamKind
        var node: any MediaNode
        var label: String
        /// Opus samples to drop at the start; the container stream an AAC decoder needs.
        var preSkip: () -> Int = { 0 }
        var stream: ContainerStream?
    }

    /// A file sink is made once all its inputs are known (a container takes a video and an audio track).
    final class SinkRequest {
        let element: PipelineDescription.Element
        let path: String
        var inputs: [Output] = []
        init(element: PipelineDescription.Element, path: String) { (self.element, self.path) = (element, path) }
    }

    /// A container file read through one demuxer, its streams made into sources when first used.
    final class ContainerInput {
        let element: PipelineDescription.Element
        let demuxer: ContainerDemuxer
        let maxFrames: Int?
        var pads: [String: Output] = [:]
        init(element: PipelineDescription.Element, demuxer: ContainerDemuxer, maxFrames: Int?) {
            (self.element, self.demuxer, self.maxFrames) = (element, demuxer, maxFrames)
        }
    }

    enum Named {
        case output(Output)
        case container(ContainerInput)
        case sink(SinkRequest)
    }

    /// Parses and builds `text`; throws `PipelineError` for what is wrong in the text, or a
    /// `GraphError` naming the nodes and caps that do not negotiate.
    public convenience init(_ text: String, registry: CodecRegistry = .builtIn) throws {
        try self.init(description: try PipelineDescription(parsing: text), registry: registry)
    }

    public init(description: PipelineDescription, registry: CodecRegistry = .builtIn) throws {
        self.description = description
        self.registry = registry
        // Sending RTP paces the files read, like a camera; writing files goes as fast as it can.
        pacing = description.elements.contains { $0.kind == "rtpsend" || $0.kind == "whip" } ? .realTime : .asFastAsPossible
        // Every element's kind and properties are checked before any file is opened.
        for element in description.elements { _ = try PipelineNodeKinds.lookUp(element).check(element) }
        for chain in description.chains { try build(chain) }
        for case .output(let output) in named.values where !consumed.contains(ObjectIdentifier(output.node)) {
            throw PipelineError.badLink("\(output.label) leads nowhere: end its chain with a sink, e.g. ! file:out.ivf")
        }
        for request in sinks { try makeSink(request) }
        do { try graph.build() } catch GraphError.incompatibleFormats(let up, let offered, let down, let accepted) {
            throw PipelineError.incompatible(upstream: up, offered: "\(offered)", downstream: down, accepted: "\(accepted)",
                                             suggestion: Self.suggestion(offered: offered, accepted: accepted, before: down))
        }
    }

    /// The converter that would make `offered` fit `accepted`, when one would.
    static func suggestion(offered: Caps, accepted: Caps, before node: String) -> String? {
        guard let given = offered.patterns.first, let taken = accepted.patterns.first, given.mediaType == taken.mediaType else { return nil }
        if given.mediaType == .audio {
            let rate = taken.sampleRate.contains(48_000) ? 48_000 : taken.sampleRate.fixated ?? 48_000
            let channels = taken.channels.contains(2) ? 2 : taken.channels.fixated ?? 2
            return "insert 'audioconvert rate=\(rate) channels=\(channels)' before \(node)"
        }
        if given.encoding.intersection(taken.encoding) == nil { return "insert 'videoconvert' before \(node)" }
        if given.frameRate.intersection(taken.frameRate) == nil { return "insert 'framerate fps=...' before \(node)" }
        return "insert 'scale size=WxH' before \(node)"
    }

    /// Nodes whose output feeds another node.
    private var consumed = Set<ObjectIdentifier>()
    /// The files read, as absolute paths.
    private var inputPaths = Set<String>()

    // MARK: Chains

    private func build(_ chain: [PipelineDescription.Link]) throws {
        var current: Output?
        for (index, link) in chain.enumerated() {
            let isLast = index == chain.count - 1
            switch link {
            case .reference(let name, let pad):
                guard let target = named[name] else { throw PipelineError.unknownReference(name) }
                if let current {
                    guard isLast, case .sink(let request) = target else {
                        throw PipelineError.badLink("\(name). can only end a chain as a second input of a named output file")
                    }
                    request.inputs.append(current)
                    consumed.insert(ObjectIdentifier(current.node))
                } else {
                    current = try output(of: target, name: name, pad: pad)
                }
            case .element(let element):
                let kind = try PipelineNodeKinds.lookUp(element)
                let values = try kind.check(element)
                if element.kind == "file" {
                    if let current {
                        guard isLast else { throw PipelineError.badLink("\(element.label): a file is read first in a chain or written last") }
                        let request = SinkRequest(element: element, path: element.path!)
                        request.inputs.append(current)
                        consumed.insert(ObjectIdentifier(current.node))
                        sinks.append(request)
                        try remember(element, as: .sink(request))
                    } else if chain.count == 1 && element.name != nil {
                        // A named input alone in its chain: its streams are taken by NAME.video / NAME.audio.
                        try remember(element, as: try openInput(element, values: values))
                    } else {
                        let input = try openInput(element, values: values)
                        try remember(element, as: input)
                        current = try output(of: input, name: element.name ?? element.label, pad: nil)
                    }
                } else if ["rtpreceive", "whep", "v4l2src", "alsasrc"].contains(kind.name) {
                    guard current == nil else {
                        throw PipelineError.badLink("\(element.label) \(kind.name.hasPrefix("alsa") || kind.name.hasPrefix("v4l2") ? "captures" : "receives"): it starts its chain")
                    }
                    current = switch kind.name {
                    case "rtpreceive": try receive(element, values: values)
                    case "whep": try watch(element, values: values)
                    default: try capture(element, kind: kind.name, values: values)
                    }
                    try remember(element, as: .output(current!))
                } else {
                    guard let upstream = current else {
                        throw PipelineError.badLink("\(element.label) needs an input: start the chain with file:PATH or NAME.")
                    }
                    consumed.insert(ObjectIdentifier(upstream.node))
                    if element.kind == "rtpsend" || element.kind == "alsasink" || element.kind == "whip" {
                        guard isLast else {
                            throw PipelineError.badLink("\(element.label) \(element.kind == "alsasink" ? "plays" : "sends"): it ends its chain")
                        }
                        switch element.kind {
                        case "rtpsend": try send(element, values: values, input: upstream)
                        case "whip": try publish(element, values: values, input: upstream)
                        default: try play(element, values: values, input: upstream)
                        }
                        current = nil
                        continue
                    }
                    let made = try transform(element, values: values, input: upstream)
                    current = made
                    try remember(element, as: .output(made))
                    if isLast && element.name == nil && element.kind != "tee" {
                        throw PipelineError.badLink("\(element.label) leads nowhere: end its chain with a file, e.g. ! file:out.ivf")
                    }
                }
            }
        }
    }

    private func remember(_ element: PipelineDescription.Element, as target: Named) throws {
        guard let name = element.name else { return }
        guard named[name] == nil else { throw PipelineError.badLink("two elements are named \(name)") }
        named[name] = target
    }

    /// The output a reference reads: a node's, or a stream of a container file.
    private func output(of target: Named, name: String, pad: String?) throws -> Output {
        switch target {
        case .output(let output):
            if let pad { throw PipelineError.badLink("\(name).\(pad): \(name) has one output; write \(name).") }
            return output
        case .sink:
            throw PipelineError.badLink("\(name). is an output file; it cannot be read in the same pipeline")
        case .container(let input):
            let streams = input.demuxer.reader.streams
            let kind: ContainerStream.Kind
            switch pad {
            case nil: kind = streams.contains { $0.kind == .video } ? .video : .audio
            case "video": kind = .video
            case "audio": kind = .audio
            case .some(let other):
                throw PipelineError.badLink("\(name).\(other): a file's streams are \(name).video and \(name).audio")
            }
            if let made = input.pads[kind.rawValue] { return made }
            let stream = try input.demuxer.reader.firstStream(kind)
            // frames=N counts pictures: the audio of a file with video stops where the N-th picture does.
            let video = streams.first { $0.kind == .video && $0.codec != nil }
            let endTime = kind == .audio ? input.maxFrames.flatMap { frames in video?.frameRate.map { Double(frames) / $0.doubleValue } } : nil
            let source = try ContainerFileSource(demuxer: input.demuxer, stream: stream, maxFrames: endTime == nil ? input.maxFrames : nil,
                                                 endTime: endTime, pacing: pacing, name: uniqueName("\(name)-\(kind)"))
            let codec: CodecName = stream.codec!
            var made = Output(port: .encoded(graph.add(source)), kind: StreamKind(isVideo: kind == .video, codec: codec),
                              node: source, label: "\(input.element.label) \(kind)")
            let preSkip = stream.preSkip
            made.preSkip = { preSkip }
            made.stream = stream
            nodes.append((source, made.label))
            input.pads[kind.rawValue] = made
            return made
        }
    }

    private func uniqueName(_ base: String) -> String {
        var name = base
        var number = 2
        while !usedNames.insert(name).inserted {
            name = "\(base)-\(number)"
            number += 1
        }
        return name
    }

    private func nodeName(_ element: PipelineDescription.Element, default base: String) -> String {
        uniqueName(element.name ?? base)
    }

    // MARK: Sources

    private func openInput(_ element: PipelineDescription.Element, values: [String: PipelineValue]) throws -> Named {
        let path = element.path!
        let maxFrames = values["frames"].flatMap { if case .integer(let n) = $0 { n } else { nil } }
        var pacing = self.pacing
        if case .flag(let realtime) = values["realtime"] { pacing = realtime ? .realTime : .asFastAsPossible }
        let name = nodeName(element, default: "\(Self.fileName(path))-reader")
        let label = element.label
        if let read = Transcoder.canonicalPath(path) { inputPaths.insert(read) }
        if ContainerFormat(path: path) != nil {
            return .container(ContainerInput(element: element, demuxer: try ContainerDemuxer(path: path), maxFrames: maxFrames))
        }
        let made: Output
        switch Self.fileExtension(path) {
        case "y4m":
            let source = try Y4MFileSource(path: path, maxFrames: maxFrames, pacing: pacing, name: name)
            made = Output(port: .video(graph.add(source)), kind: .video(), node: source, label: label)
        case "ivf":
            let source = try IVFFileSource(path: path, maxFrames: maxFrames, pacing: pacing, name: name)
            made = Output(port: .encoded(graph.add(source)), kind: .video(source.reader.header.codec), node: source, label: label)
        case "h264", "264":
            let rate = values["fps"].flatMap { if case .rate(let r) = $0 { r } else { nil } }
            let source = try AnnexBFileSource(path: path, frameRate: rate, maxFrames: maxFrames, pacing: pacing, name: name)
            made = Output(port: .encoded(graph.add(source)), kind: .video(.h264), node: source, label: label)
        case "wav":
            let source = try WAVFileSource(path: path, maxFrames: maxFrames, pacing: pacing, name: name)
            made = Output(port: .audio(graph.add(source)), kind: .audio(), node: source, label: label)
        case "opus", "ogg":
            let source = try OggOpusFileSource(path: path, maxFrames: maxFrames, pacing: pacing, name: name)
            let preSkip = source.preSkip
            made = Output(port: .encoded(graph.add(source)), kind: .audio(.opus), node: source, label: label, preSkip: { preSkip })
        default:
            throw PipelineError.badValue(element: label, property: "path", value: path, expected: Self.knownFiles)
        }
        nodes.append((made.node, label))
        return .output(made)
    }

    static let knownFiles = "a file ending in .y4m, .ivf, .h264, .wav, .opus, .ogg, .mp4, .mov, .webm or .mkv"

    static func fileExtension(_ path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name.contains(".") ? name.split(separator: ".").last!.lowercased() : ""
    }

    static func fileName(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }

    // MARK: Transforms

    private func refuse(_ input: Output, _ element: PipelineDescription.Element, takes accepted: String, suggestion: String?) -> PipelineError {
        .incompatible(upstream: input.label, offered: input.kind.description, downstream: element.label, accepted: accepted,
                      suggestion: suggestion)
    }

    private func integer(_ values: [String: PipelineValue], _ key: String) -> Int? {
        if case .integer(let n) = values[key] { n } else { nil }
    }

    private func transform(_ element: PipelineDescription.Element, values: [String: PipelineValue], input: Output) throws -> Output {
        let label = element.label
        var made: Output
        switch element.kind {
        case "tee":
            return Output(port: input.port, kind: input.kind, node: input.node, label: label, preSkip: input.preSkip, stream: input.stream)
        case "decode":
            guard let codec = input.kind.codec, case .encoded(let port) = input.port else {
                throw refuse(input, element, takes: "video or audio in a codec", suggestion: "it is raw already: leave decode out")
            }
            if input.kind.isVideo {
                let decoder = VideoDecoderNode(try registry.videoDecoder(for: codec), threads: integer(values, "threads") ?? 1,
                                               name: nodeName(element, default: "\(codec.rawValue.lowercased())-decoder"))
                made = Output(port: .video(graph.add(decoder, input: port)), kind: .video(), node: decoder, label: label)
            } else {
                let provider: any AudioDecoderProvider = codec == .opus ? try registry.audioDecoder(for: .opus)
                    : try input.stream.map { ContainerAudioDecoderProvider(stream: $0) }
                        ?? { throw PipelineError.badLink("\(label): no decoder for \(codec) audio") }()
                let decoder = AudioDecoderNode(provider, preSkip: input.preSkip(),
                                               name: nodeName(element, default: "\(codec.rawValue.lowercased())-decoder"))
                made = Output(port: .audio(graph.add(decoder, input: port)), kind: .audio(), node: decoder, label: label)
            }
        case let kind where PipelineNodeKinds.videoEncoders[kind] != nil:
            let (codec, provider) = PipelineNodeKinds.videoEncoders[kind]!
            guard input.kind.isVideo, input.kind.codec == nil, case .video(let port) = input.port else {
                throw refuse(input, element, takes: "video/raw",
                             suggestion: input.kind.isVideo ? "insert 'decode' before \(kind)" : "\(kind) encodes video; use opusenc for audio")
            }
            let settings = VideoEncoderSettings(bitrate: integer(values, "bitrate") ?? TranscodeOptions.defaultVideoBitrate,
                                                keyframeInterval: integer(values, "keyint"), threads: integer(values, "threads") ?? 1)
            let encoder = VideoEncoderNode(try registry.videoEncoder(for: codec, named: provider), settings: settings,
                                           name: nodeName(element, default: kind))
            made = Output(port: .encoded(graph.add(encoder, input: port)), kind: .video(codec), node: encoder, label: label)
        case "opusenc":
            guard !input.kind.isVideo, input.kind.codec == nil, case .audio(let port) = input.port else {
                throw refuse(input, element, takes: "audio/raw",
                             suggestion: input.kind.isVideo ? "opusenc encodes audio; use vp8enc or x264enc for video" : "insert 'decode' before opusenc")
            }
            let settings = AudioEncoderSettings(bitrate: integer(values, "bitrate") ?? TranscodeOptions.defaultAudioBitrate)
            let encoder = AudioEncoderNode(try registry.audioEncoder(for: .opus), settings: settings, name: nodeName(element, default: "opusenc"))
            made = Output(port: .encoded(graph.add(encoder, input: port)), kind: .audio(.opus), node: encoder, label: label,
                          preSkip: { encoder.preSkip })
        case "scale", "framerate", "videoconvert":
            guard input.kind == .video(), case .video(let port) = input.port else {
                throw refuse(input, element, takes: "video/raw",
                             suggestion: input.kind.isVideo ? "insert 'decode' before \(element.kind)" : "\(element.kind) takes pictures")
            }
            let node: any MediaTransform
            let out: MediaCore.Port<VideoFrame>
            if element.kind == "scale" {
                guard case .size(let width, let height) = values["size"] else {
                    throw PipelineError.missingProperty(element: label, property: "size", example: "scale size=640x360")
                }
                let filter: VideoScaler.Filter = switch values["filter"] {
                case .text("bilinear"): .bilinear
                case .text("point"): .point
                default: .box
                }
                let scaler = try VideoScalerNode(width: width, height: height, filter: filter, name: nodeName(element, default: "scale"))
                (node, out) = (scaler, graph.add(scaler, input: port))
            } else if element.kind == "framerate" {
                guard case .rate(let rate) = values["fps"] else {
                    throw PipelineError.missingProperty(element: label, property: "fps", example: "framerate fps=15")
                }
                let converter = try FrameRateNode(rate: rate, name: nodeName(element, default: "framerate"))
                (node, out) = (converter, graph.add(converter, input: port))
            } else {
                let format: PixelFormat = values["format"] == .text("nv12") ? .nv12 : .i420
                let converter = try PixelFormatConverterNode(to: format, name: nodeName(element, default: "videoconvert"))
                (node, out) = (converter, graph.add(converter, input: port))
            }
            made = Output(port: .video(out), kind: .video(), node: node, label: label)
        case "audioconvert":
            guard input.kind == .audio(), case .audio(let port) = input.port else {
                throw refuse(input, element, takes: "audio/raw",
                             suggestion: input.kind.isVideo ? "audioconvert takes samples" : "insert 'decode' before audioconvert")
            }
            let sample: SampleFormat = values["format"] == .text("f32") ? .f32 : .s16
            let target = AudioFormat(encoding: .samples(sample), sampleRate: integer(values, "rate") ?? 48_000,
                                     channels: integer(values, "channels") ?? 2)
            let converter = AudioConvertNode(to: target, name: nodeName(element, default: "audioconvert"))
            made = Output(port: .audio(graph.add(converter, input: port)), kind: .audio(), node: converter, label: label)
        default:
            throw PipelineError.unsupportedElement(element.kind, reason: "not buildable here")
        }
        edges.append((input.node, made.node.name))
        nodes.append((made.node, label))
        return made
    }

    /// An RTP receiver (a source, so it starts its chain) of the stream an SDP file describes.
    private func receive(_ element: PipelineDescription.Element, values: [String: PipelineValue]) throws -> Output {
        let label = element.label
        guard case .text(let path) = values["sdp"] else {
            throw PipelineError.missingProperty(element: label, property: "sdp", example: "rtpreceive sdp=stream.sdp")
        }
        let session: SessionDescription
        do { session = try SessionDescription(contentsOfFile: path) } catch {
            throw PipelineError.badValue(element: label, property: "sdp", value: path, expected: "a session description (\(error))")
        }
        let wanted: String? = if case .text(let media) = values["media"] { media } else { nil }
        guard let media = session.media.first(where: { wanted == nil || $0.type == wanted }) else {
            throw PipelineError.badValue(element: label, property: "sdp", value: path, expected: "a \(wanted ?? "media") section")
        }
        let stream = try RTPStreamDescription(media: media, in: session)
        var options = ReceiveOptions()
        options.limits = RTPReceiveLimits(frames: integer(values, "frames"), silence: .seconds(Double(integer(values, "timeout") ?? 10)))
        let receiving = try RTPReceiveStream(stream.receiveSettings(options))
        let port = receiving.add(to: graph)
        // RTP does not carry Opus's encoder delay (RFC 7587): libopus's usual 312 samples are assumed.
        let made = Output(port: .encoded(port), kind: StreamKind(isVideo: stream.codec != .opus, codec: stream.codec),
                          node: receiving.receiverNode!, label: label, preSkip: { stream.codec == .opus ? 312 : 0 })
        nodes.append((made.node, label))
        return made
    }

    /// A WHEP viewer (a source, so it starts its chain) of the video an endpoint sends, as encoded
    /// frames. It connects now: the pipeline's formats come from the stream.
    private func watch(_ element: PipelineDescription.Element, values: [String: PipelineValue]) throws -> Output {
        let label = element.label
        guard let url = text(values, "url") else {
            throw PipelineError.missingProperty(element: label, property: "url", example: "whep url=http://127.0.0.1:8080/whep/cam")
        }
        guard HTTPExchange.split(url) != nil else {
            throw PipelineError.badValue(element: label, property: "url", value: url, expected: "http://HOST[:PORT]/PATH (https is not supported)")
        }
        let viewer = try WHEPViewer(url: url, registry: registry)
        viewers.append(viewer)
        let source = HandOverSource(handOver: viewer.handOver, name: nodeName(element, default: "whep"), maxFrames: integer(values, "frames"))
        let made = Output(port: .encoded(graph.add(source)), kind: StreamKind(isVideo: true, codec: viewer.codec), node: source, label: label)
        nodes.append((made.node, label))
        return made
    }

    private func text(_ values: [String: PipelineValue], _ key: String) -> String? {
        if case .text(let text) = values[key] { text } else { nil }
    }

    /// A camera (`v4l2src`) or microphone (`alsasrc`): a source, so it starts its chain. The device
    /// is opened and set up now, so a missing or unfit one is refused, named, before anything runs.
    private func capture(_ element: PipelineDescription.Element, kind: String, values: [String: PipelineValue]) throws -> Output {
        let label = element.label
        let device = text(values, "device") ?? (kind == "v4l2src" ? "/dev/video0" : "default")
        let made: Output
        do {
            if kind == "v4l2src" {
                let (width, height) = if case .size(let width, let height) = values["size"] { (width, height) } else { (640, 480) }
                let rate = if case .rate(let rate) = values["fps"] { rate.doubleValue } else { 30.0 }
                let constraints = VideoConstraints(width: .init(ideal: width), height: .init(ideal: height), frameRate: .init(ideal: rate))
                let camera = try V4L2CaptureNode(device: device, constraints: constraints, maxFrames: integer(values, "frames"),
                                                 name: nodeName(element, default: "v4l2-camera"))
                made = Output(port: .video(graph.add(camera)), kind: .video(), node: camera, label: label)
            } else {
                let rate = integer(values, "rate") ?? 48_000
                let format = AudioFormat(encoding: .samples(values["format"] == .text("f32") ? .f32 : .s16), sampleRate: rate,
                                         channels: integer(values, "channels") ?? 2)
                let duration: ClockTime? = if case .seconds(let seconds) = values["duration"] { .seconds(seconds) } else { nil }
                let microphone = try ALSACaptureNode(device: device, format: format, periodFrames: rate / 100, maxDuration: duration,
                                                     name: nodeName(element, default: "alsa-capture"))
                made = Output(port: .audio(graph.add(microphone)), kind: .audio(), node: microphone, label: label)
            }
        } catch let error as V4L2Error {
            throw PipelineError.device(element: label, device: device, reason: "\(error)")
        } catch let error as ALSAError {
            throw PipelineError.device(element: label, device: device, reason: "\(error)")
        }
        nodes.append((made.node, label))
        return made
    }

    /// An ALSA playback PCM (`alsasink`, a sink, so it ends its chain) for raw audio in a format the
    /// device takes (the graph's negotiation names the converter to insert when it does not).
    private func play(_ element: PipelineDescription.Element, values: [String: PipelineValue], input: Output) throws {
        let label = element.label
        guard input.kind == .audio(), case .audio(let port) = input.port else {
            throw refuse(input, element, takes: "audio/raw",
                         suggestion: input.kind.isVideo ? "alsasink plays audio" : "insert 'decode' before alsasink")
        }
        let device = text(values, "device") ?? "default"
        let speaker: ALSAPlaybackNode
        do { speaker = try ALSAPlaybackNode(device: device, name: nodeName(element, default: "alsa-playback")) } catch let error as ALSAError {
            throw PipelineError.device(element: label, device: device, reason: "\(error)")
        }
        graph.add(speaker, input: port)
        edges.append((input.node, speaker.name))
        nodes.append((speaker, label))
        outputs.append((speaker.name, "alsa:\(device)"))
    }

    /// A WHIP publisher (a sink, so it ends its chain) of raw video or audio: the frames go to a peer
    /// connection's sending pipeline (encoder, RTP over DTLS-SRTP), negotiated when the pipeline runs.
    private func publish(_ element: PipelineDescription.Element, values: [String: PipelineValue], input: Output) throws {
        let label = element.label
        guard case .text(let url) = values["url"] else {
            throw PipelineError.missingProperty(element: label, property: "url", example: "whip url=http://127.0.0.1:8080/whip/cam")
        }
        guard HTTPExchange.split(url) != nil else {
            throw PipelineError.badValue(element: label, property: "url", value: url, expected: "http://HOST[:PORT]/PATH (https is not supported)")
        }
        let name = nodeName(element, default: "whip")
        let bitrate = integer(values, "bitrate")
        let sink: any MediaSink
        switch input.port {
        case .video(let port) where input.kind == .video():
            let handOver = FrameHandOver<VideoFrame>()
            let node = HandOverSink(handOver: handOver, caps: [.video(.exactly(.pixels(.i420)))], url: url, name: name)
            graph.add(node, input: port)
            sink = node
            publishers.append(WHIPPublisher(url: url, handOver: handOver, bitrate: bitrate, registry: registry))
        case .audio(let port) where input.kind == .audio():
            let handOver = FrameHandOver<AudioFrame>()
            let node = HandOverSink(handOver: handOver, caps: [.audio(.oneOf([.samples(.s16), .samples(.f32)]), sampleRate: .exactly(48_000),
                                                                        channels: .range(1...2))], url: url, name: name)
            graph.add(node, input: port)
            sink = node
            publishers.append(WHIPPublisher(url: url, handOver: handOver, bitrate: bitrate, registry: registry))
        default:
            throw refuse(input, element, takes: "video/raw or audio/raw", suggestion: "insert 'decode' before whip: the connection encodes")
        }
        edges.append((input.node, sink.name))
        nodes.append((sink, label))
        outputs.append((sink.name, url))
    }

    /// An RTP sender (a sink, so it ends its chain) of `input`, which must be VP8, H.264 or Opus.
    private func send(_ element: PipelineDescription.Element, values: [String: PipelineValue], input: Output) throws {
        let label = element.label
        guard let codec = input.kind.codec, RTPDestination.codecs.contains(codec), case .encoded(let port) = input.port else {
            throw refuse(input, element, takes: "video/vp8, video/h264 or audio/opus",
                         suggestion: input.kind.isVideo ? "insert vp8enc before rtpsend" : "insert opusenc before rtpsend")
        }
        guard case .text(let to) = values["to"] else {
            throw PipelineError.missingProperty(element: label, property: "to", example: "rtpsend to=127.0.0.1:5004")
        }
        let address: SocketAddress
        do { address = try SocketAddress(parsing: to) } catch {
            throw PipelineError.badValue(element: label, property: "to", value: to, expected: "HOST:PORT, e.g. 127.0.0.1:5004")
        }
        var destination = RTPDestination(address: address)
        destination.payloadType = integer(values, "pt").map { UInt8($0) }
        if case .impairment(let profile) = values["impair"] { destination.impairment = profile }
        let sender = try destination.makeSender(codec: codec)
        sender.add(to: graph, input: port)
        edges.append((input.node, sender.name))
        outputs.append((sender.name, "rtp://\(to)"))
    }

    // MARK: Sinks

    private func makeSink(_ request: SinkRequest) throws {
        let element = request.element
        let path = request.path
        let label = element.label
        let name = nodeName(element, default: "\(Self.fileName(path))-writer")
        if let written = Transcoder.canonicalPath(path), inputPaths.contains(written) {
            throw PipelineError.badLink("\(label): the output would overwrite an input")
        }
        if let format = ContainerFormat(path: path) {
            let videos = request.inputs.filter(\.kind.isVideo), audios = request.inputs.filter { !$0.kind.isVideo }
            guard videos.count <= 1, audios.count <= 1 else {
                throw PipelineError.badLink("\(label): a container takes one video and one audio input")
            }
            for input in request.inputs {
                guard let codec = input.kind.codec, format.codecs.contains(codec) else {
                    let held = format.codecs.filter { ($0 == .opus) != input.kind.isVideo }
                    let encoder = input.kind.isVideo ? (held.first == .h264 ? "x264enc" : "vp8enc") : "opusenc"
                    throw refuse(input, element, takes: held.map { StreamKind(isVideo: input.kind.isVideo, codec: $0).description }.joined(separator: " or "),
                                 suggestion: PipelineNodeKinds.videoEncoders[input.label] != nil ? "encode with \(encoder) for \(Self.fileName(path))"
                                    : input.kind.codec == nil
                                    ? "insert \(input.kind.isVideo ? (held.first == .h264 ? "x264enc" : "vp8enc") : "opusenc") before it"
                                    : "insert 'decode ! \(input.kind.isVideo ? (held.first == .h264 ? "x264enc" : "vp8enc") : "opusenc")' before it")
                }
            }
            let writer = try ContainerWriter(path: path, format: format, trackCount: request.inputs.count)
            for input in request.inputs {
                guard case .encoded(let port) = input.port else { continue }
                let kind: ContainerStream.Kind = input.kind.isVideo ? .video : .audio
                let sink = ContainerFileSink(writer: writer, kind: kind, preSkip: input.preSkip,
                                             name: request.inputs.count == 1 ? name : uniqueName("\(name)-\(kind)"))
                graph.add(sink, input: port)
                attach(sink, input: input, target: request.inputs.count == 1 ? path : "\(path) \(kind)")
            }
            return
        }
        guard request.inputs.count == 1, let input = request.inputs.first else {
            throw PipelineError.badLink("\(label): only a container file (.mp4, .webm, .mkv) takes two inputs")
        }
        let ext = Self.fileExtension(path)
        let wanted: StreamKind? = switch ext {
        case "y4m": .video()
        case "wav": .audio()
        case "h264", "264": .video(.h264)
        case "opus", "ogg": .audio(.opus)
        case "ivf": input.kind.isVideo && input.kind.codec != nil ? input.kind : .video(.vp8)
        default: nil
        }
        guard let wanted else {
            throw PipelineError.badValue(element: label, property: "path", value: path, expected: Self.knownFiles)
        }
        guard wanted == input.kind else {
            let suggestion: String? = switch (wanted.codec, input.kind.codec, wanted.isVideo == input.kind.isVideo) {
            case (_, _, false): "a .\(ext) file holds \(wanted.isVideo ? "video" : "audio")"
            case (nil, .some, true): "insert 'decode' before it"
            case (.some(let codec), nil, true): "insert \(codec == .opus ? "opusenc" : codec == .h264 ? "x264enc" : "vp8enc") before it"
            default: "insert 'decode ! \(wanted.codec == .h264 ? "x264enc" : "vp8enc")' before it"
            }
            throw refuse(input, element, takes: wanted.description, suggestion: suggestion)
        }
        switch input.port {
        case .video(let port):
            let sink = Y4MFileSink(path: path, name: name)
            graph.add(sink, input: port)
            attach(sink, input: input, target: path)
        case .audio(let port):
            let sink = WAVFileSink(path: path, name: name)
            graph.add(sink, input: port)
            attach(sink, input: input, target: path)
        case .encoded(let port):
            let sink: any MediaSink
            switch ext {
            case "h264", "264":
                let annexB = AnnexBFileSink(path: path, name: name)
                graph.add(annexB, input: port)
                sink = annexB
            case "opus", "ogg":
                let ogg = OggOpusFileSink(path: path, preSkip: input.preSkip, name: name)
                graph.add(ogg, input: port)
                sink = ogg
            default:
                let ivf = IVFFileSink(path: path, codecs: [input.kind.codec!], name: name)
                graph.add(ivf, input: port)
                sink = ivf
            }
            attach(sink, input: input, target: path)
        }
    }

    private func attach(_ sink: any MediaSink, input: Output, target: String) {
        edges.append((input.node, sink.name))
        nodes.append((sink, "file:\(target)"))
        outputs.append((sink.name, target))
    }

    // MARK: Output

    /// The negotiated graph as Graphviz: one box per node (its name and the element it came from),
    /// one arrow per link labelled with the caps agreed on it.
    public func dot() -> String {
        var lines = ["digraph pipeline {", "  rankdir=LR;", "  node [shape=box, fontname=\"monospace\"];"]
        var seen = Set<String>()
        for (node, label) in nodes where seen.insert(node.name).inserted {
            lines.append("  \(quoted(node.name)) [label=\(quoted("\(node.name)\n\(label)"))];")
        }
        for edge in edges {
            let caps = graph.outputFormat(of: edge.from).map { "\($0)" } ?? "?"
            lines.append("  \(quoted(edge.from.name)) -> \(quoted(edge.to)) [label=\(quoted(caps))];")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences("\\", "\\\\").replacingOccurrences("\"", "\\\"").replacingOccurrences("\n", "\\n") + "\""
    }

    /// Frames written so far to each output, e.g. "out.ivf: 25 frames"; safe from any thread while running.
    public var progress: String {
        let counts = graph.progress
        return outputs.map { output in "\(output.target): \(counts.first { $0.name == output.node }?.itemsIn ?? 0) frames" }
            .joined(separator: ", ")
    }

    /// Runs to the end; the report's sinks count what was written.
    /// Runs the graph to its end. WHIP sinks first negotiate their connections (POSTing the offers),
    /// and after the end let them send what is queued, then close them and end their sessions; WHEP
    /// sources' connections are closed and their sessions ended too.
    public func run() throws -> GraphReport {
        var started: [WHIPPublisher] = []
        defer {
            for publisher in started { publisher.stop() }
            for viewer in viewers { viewer.stop() }
        }
        for publisher in publishers {
            try publisher.start()
            started.append(publisher)
        }
        let report = try graph.run()
        for publisher in started { publisher.finish() }
        return report
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
