import Glibc
import MediaConvert
import MediaCore
import MediaNegotiation

/// Captures I420 pictures from a V4L2 camera: the graph adapter around a `V4L2CaptureDriver`
/// (`LibV4L2Driver`: `V4L2Device` for set-up, `V4L2Stream` for the mmap buffer ring),
/// `V4L2FrameConverter` (to I420) and `CaptureTimeline` (pts).
///
/// ```
///   camera ──DQBUF──▶ mmap buffer ──libyuv / libjpeg-turbo──▶ pooled I420 ──▶ downstream
///      ▲                   │ requeued (QBUF) as soon as it is converted
///      └───────────────────┘
///   ◀── .outputFormatChange: STREAMOFF, unmap, choose again, S_FMT, S_PARM, STREAMON
/// ```
///
/// The format is chosen (`chooseCaptureFormat`) and set when the node is made, so its output caps
/// are the camera's real size and rate; streaming starts with the graph. Once warm, a picture costs
/// no allocation: the capture buffers are the driver's, the I420 pictures come from pools.
///
/// A format change while running (`.outputFormatChange`, e.g. from the remote's new limits) restarts
/// the capture with that size and rate as the new ideals. The graph keeps the formats negotiated when
/// it was built, and downstream nodes take pictures of another size as they come (the encoder starts
/// again at the new size, as after `VideoScalerNode`), so the node emits pictures of the size asked
/// for: the camera's own when it has that size, else the nearest it has, scaled (libyuv) to the size asked.
///
/// A camera unplugged while capturing ends the stream with `V4L2Error.deviceLost`; damaged buffers
/// (V4L2_BUF_FLAG_ERROR) and pictures that do not convert (a truncated JPEG) are dropped and
/// counted, unless 30 in a row fail, which ends the stream with the last error (for damaged buffers,
/// `V4L2Error.system` naming VIDIOC_DQBUF with EIO).
public final class V4L2CaptureNode: MediaSource {
    public let name: String
    /// `produce()` waits for the driver's next filled buffer.
    public var execution: NodeExecution { .ownThread }
    public let path: String
    public let camera: V4L2Camera
    public let maxFrames: Int?
    /// The constraints the format was last chosen with (their ideals follow format changes).
    public private(set) var constraints: VideoConstraints
    /// What the device captures now, as the driver set it.
    public private(set) var captureFormat: V4L2CaptureFormat
    public private(set) var framesDelivered = 0
    /// Buffers the driver marked damaged and pictures that failed to convert.
    public private(set) var droppedFrames = 0
    /// Times the capture restarted for a format change.
    public private(set) var restarts = 0

    private static let maxFailuresInARow = 30
    private let driver: any V4L2CaptureDriver
    private var converter: V4L2FrameConverter
    /// Whether the driver streams (between `start` and `close`, but for a restart that failed).
    private var streaming = false
    /// The output size asked by the last format change, when the camera captures another.
    private var scaler: VideoScaler?
    private var requestedSize: (width: Int, height: Int)?
    private var timeline: CaptureTimeline?
    private var clock: (any MediaClock)?
    private var failuresInARow = 0

    /// Opens `device` (e.g. "/dev/video0"), chooses its format for `constraints` and sets it.
    /// Throws `V4L2Error`: `.noSuchDevice`, `.permissionDenied`, `.notACaptureDevice`,
    /// `.noFormatFits` (listing the camera's offers), `.busy`.
    public convenience init(device path: String, constraints: VideoConstraints, maxFrames: Int? = nil,
                            name: String = "v4l2-camera") throws {
        try self.init(driver: LibV4L2Driver(path: path), constraints: constraints, maxFrames: maxFrames, name: name)
    }

    /// Captures through `driver` (a fake one in tests): describes the camera, chooses its format for
    /// `constraints` and sets it.
    init(driver: any V4L2CaptureDriver, constraints: VideoConstraints, maxFrames: Int? = nil,
         name: String = "v4l2-camera") throws {
        self.name = name
        self.path = driver.path
        self.maxFrames = maxFrames
        self.constraints = constraints
        self.driver = driver
        camera = try driver.describe()
        (captureFormat, converter) = try Self.configure(driver, formats: camera.formats, constraints: constraints)
    }

    /// The format the node emits: I420 at the capture size, or at the size a format change asked for.
    public var outputFormat: VideoFormat {
        VideoFormat(encoding: .pixels(.i420), width: requestedSize?.width ?? captureFormat.width,
                    height: requestedSize?.height ?? captureFormat.height, frameRate: captureFormat.frameRate)
    }

    public func outputCaps() throws -> Caps { Caps(.video(outputFormat)) }

    public func start(output: MediaFormat, context: NodeContext) throws {
        clock = context.clock
        timeline = CaptureTimeline(origin: context.clock.now)
        try driver.startStreaming()
        streaming = true
    }

    public func produce() throws -> Production<VideoFrame> {
        if let maxFrames, framesDelivered >= maxFrames { return .end }
        guard streaming, let clock else { preconditionFailure("\(name): produce() before start()") }
        // A short wait, so that upstream events and a stopping graph are noticed between frames.
        guard let filled = try driver.dequeue(timeout: 100) else { return .wait(until: clock.now) }
        let picture = Result { try self.picture(from: filled, arrival: clock.now) }
        try driver.requeue(filled.index)
        guard let picture = try picture.get() else { return .wait(until: clock.now) }
        framesDelivered += 1
        return .item(picture)
    }

    /// Restarts the capture for an `.outputFormatChange`; other events travel on.
    public func handle(_ event: UpstreamEvent) throws -> Bool {
        guard case .outputFormatChange(let width, let height, let rate) = event else { return false }
        var wanted = constraints
        if let width, let height {
            (wanted.width.ideal, wanted.height.ideal) = (width, height)
            requestedSize = (width, height)
        }
        if let rate { wanted.frameRate.ideal = rate.doubleValue }
        try restart(with: wanted)
        return true
    }

    public func close() {
        streaming = false
        driver.close()
    }

    /// STREAMOFF and unmap, then the format chosen and set again, then STREAMON if it was streaming.
    private func restart(with wanted: VideoConstraints) throws {
        let wasStreaming = streaming
        driver.stopStreaming()
        streaming = false
        (captureFormat, converter) = try Self.configure(driver, formats: camera.formats, constraints: wanted)
        constraints = wanted
        if let size = requestedSize, size != (captureFormat.width, captureFormat.height) {
            scaler = try VideoScaler(width: size.width, height: size.height)
        } else {
            scaler = nil
        }
        restarts += 1
        if wasStreaming {
            try driver.startStreaming()
            streaming = true
        }
    }

    /// The I420 picture of one filled buffer; nil when it is dropped.
    private func picture(from filled: V4L2CapturedBuffer, arrival: ClockTime) throws -> VideoFrame? {
        do {
            guard !filled.damaged else {
                throw V4L2Error.system(path: path, operation: "VIDIOC_DQBUF (a damaged buffer, V4L2_BUF_FLAG_ERROR)",
                                       errno: EIO)
            }
            let pts = timeline!.pts(driverTime: filled.monotonicTime, arrival: arrival)
            let duration = MediaTime(1, timebase: captureFormat.frameRate.reciprocal)
            let picture = try converter.convert(filled.bytes, pts: pts, duration: duration)
            failuresInARow = 0
            return try scaler?.scale(picture) ?? picture
        } catch {
            failuresInARow += 1
            droppedFrames += 1
            if failuresInARow >= Self.maxFailuresInARow { throw error }
            return nil
        }
    }

    /// Chooses the format for `constraints`, sets it (VIDIOC_S_FMT) and its rate (VIDIOC_S_PARM),
    /// and makes the converter for what the driver set.
    private static func configure(_ driver: any V4L2CaptureDriver, formats: [V4L2FormatDescription],
                                  constraints: VideoConstraints) throws -> (V4L2CaptureFormat, V4L2FrameConverter) {
        let chosen: V4L2CaptureFormat
        do {
            chosen = try chooseCaptureFormat(from: formats, constraints: constraints)
        } catch V4L2Error.noFormatFits(_, let offers) {
            throw V4L2Error.noFormatFits(path: driver.path, offers: offers)
        }
        var (format, bytesPerLine) = try driver.setFormat(chosen)
        format.frameRate = try driver.setFrameRate(chosen.frameRate)
        return (format, try V4L2FrameConverter(format: format, bytesPerLine: bytesPerLine))
    }
}
