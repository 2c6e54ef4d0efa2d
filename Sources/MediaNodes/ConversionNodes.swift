import MediaConvert
import MediaCore

/// Resizes pictures to a fixed size (libyuv). Inserted by pipelines when sizes differ.
public final class VideoScalerNode: MediaTransform {
    public let name: String
    public let scaler: VideoScaler

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
}

/// Converts to a fixed frame rate by dropping or repeating pictures (see `FrameRateConverter`).
public final class FrameRateNode: MediaTransform {
    public let name: String
    public let rate: Rational
    private var converter: FrameRateConverter

    public init(rate: Rational, name: String = "frame-rate") throws {
        converter = try FrameRateConverter(rate: rate)
        self.rate = rate
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
}
