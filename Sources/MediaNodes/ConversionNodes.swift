import MediaConvert
import MediaCore

/// Resizes pictures to a fixed size (libyuv). Inserted by pipelines when sizes differ. An
/// `.outputFormatChange` with a size changes it while running (and travels on upstream, to a
/// frame-rate node).
public final class VideoScalerNode: MediaTransform {
    public let name: String
    public private(set) var scaler: VideoScaler

    public init(width: Int, height: Int, filter: VideoScaler.Filter = .box, name: String = "scaler") throws {
        scaler = try VideoScaler(width: width, height: height, filter: filter)
        self.name = name
    }

    public var inputCaps: Caps { [.video(.exactly(.pixels(.i420)))] }

    public func outputCaps(for input: MediaFormat) throws -> Caps {
        guard let video = input.video else { return Caps([]) }
        return Caps(.video(VideoFormat(encoding: video.encoding, width: scaler.width, height: scaler.height,
                                       frameRate: video.frameRate)))
    }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {}

    public func process(_ picture: VideoFrame, into outbox: inout Outbox<VideoFrame>) throws {
        outbox.emit(try scaler.scale(picture))
    }

    public func finish(into outbox: inout Outbox<VideoFrame>) throws {}

    public func handle(_ event: UpstreamEvent) throws -> Bool {
        if case .outputFormatChange(let width?, let height?, _) = event, (width, height) != (scaler.width, scaler.height) {
            scaler = try VideoScaler(width: width, height: height, filter: scaler.filter)
        }
        return false
    }
}

/// Converts raw pictures to one pixel format (see `PixelFormatConverter`): NV12, YUY2 or UYVY from a
/// camera into the I420 that encoders take, say. Pictures already in that format pass through.
///
/// It accepts every format the converter reads, so negotiation settles on whatever its source offers;
/// each picture must then be of the negotiated format and size, or the node fails with
/// `ConversionError.unexpectedPicture`.
public final class PixelFormatConverterNode: MediaTransform {
    public let name: String
    public let converter: PixelFormatConverter
    private var input: VideoFormat?

    public init(to target: PixelFormat = .i420, name: String = "pixel-format") throws {
        converter = try PixelFormatConverter(to: target)
        self.name = name
    }

    public var inputCaps: Caps {
        [.video(.oneOf(PixelFormatConverter.sources(for: converter.target).map { .pixels($0) }))]
    }

    public func outputCaps(for input: MediaFormat) throws -> Caps {
        guard var video = input.video else { return Caps([]) }
        video.encoding = .pixels(converter.target)
        return Caps(.video(video))
    }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {
        self.input = input.video
    }

    public func process(_ picture: VideoFrame, into outbox: inout Outbox<VideoFrame>) throws {
        guard let input, input.encoding == .pixels(picture.pixelFormat), input.width == picture.width,
              input.height == picture.height
        else {
            throw ConversionError.unexpectedPicture(
                expected: input.map { "\($0.encoding) \($0.width)x\($0.height)" } ?? "negotiated",
                actual: "\(picture.pixelFormat.rawValue) \(picture.width)x\(picture.height)")
        }
        outbox.emit(try converter.convert(picture))
    }

    public func finish(into outbox: inout Outbox<VideoFrame>) throws {}
}

/// Converts to a fixed frame rate by dropping or repeating pictures (see `FrameRateConverter`). An
/// `.outputFormatChange` with a rate changes it while running.
public final class FrameRateNode: MediaTransform {
    public let name: String
    public var rate: Rational { converter.rate }
    private var converter: FrameRateConverter

    public init(rate: Rational, name: String = "frame-rate") throws {
        converter = try FrameRateConverter(rate: rate)
        self.name = name
    }

    public var inputCaps: Caps { .anyVideo }

    public func outputCaps(for input: MediaFormat) throws -> Caps {
        guard var video = input.video else { return Caps([]) }
        video.frameRate = rate
        return Caps(.video(video))
    }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {}

    public func process(_ picture: VideoFrame, into outbox: inout Outbox<VideoFrame>) throws {
        converter.push(picture) { outbox.emit($0) }
    }

    public func finish(into outbox: inout Outbox<VideoFrame>) throws {
        converter.finish { outbox.emit($0) }
    }

    public func handle(_ event: UpstreamEvent) throws -> Bool {
        guard case .outputFormatChange(_, _, let rate?) = event else { return false }
        try converter.changeRate(to: rate)
        return true
    }
}

/// Converts raw audio to a fixed sample format, rate and channel count (see `AudioConverter`).
public final class AudioConvertNode: MediaTransform {
    public let name: String
    public let target: AudioFormat
    private var converter: AudioConverter?

    public init(to target: AudioFormat, name: String = "audio-convert") {
        self.target = target
        self.name = name
    }

    public var inputCaps: Caps { [.audio(.oneOf([.samples(.s16), .samples(.f32)]), channels: .range(1...2))] }

    public func outputCaps(for input: MediaFormat) throws -> Caps { Caps(.audio(target)) }

    public func start(input: MediaFormat, output: MediaFormat, context: NodeContext) throws {
        converter = try AudioConverter(from: input.audio!, to: target)
    }

    public func process(_ frame: AudioFrame, into outbox: inout Outbox<AudioFrame>) throws {
        try converter!.convert(frame) { outbox.emit($0) }
    }

    public func finish(into outbox: inout Outbox<AudioFrame>) throws {
        try converter!.flush { outbox.emit($0) }
    }
}
