import MediaCore

/// The device operations `V4L2CaptureNode` needs, in the order it uses them: describe the camera,
/// set a format and rate, start streaming, dequeue and requeue buffers, stop, close. The real one is
/// `LibV4L2Driver` (libv4l2 through `V4L2Device` and `V4L2Stream`); tests give the node a fake
/// through `V4L2CaptureNode.init(driver:constraints:maxFrames:name:)`, so that its streaming logic
/// runs without a camera.
///
/// Failures are `V4L2Error`s, a failing ioctl's errno mapped by `V4L2Error.failure(of:errno:path:)`
/// (ENODEV: `.deviceLost`).
protocol V4L2CaptureDriver: AnyObject {
    /// The device node, e.g. "/dev/video0", named in errors.
    var path: String { get }
    /// The camera: capabilities checked, every format it delivers.
    func describe() throws -> V4L2Camera
    /// VIDIOC_S_FMT: the format the driver actually set (it may pick another size) and its bytes per line.
    func setFormat(_ format: V4L2CaptureFormat) throws -> (format: V4L2CaptureFormat, bytesPerLine: Int)
    /// VIDIOC_S_PARM: the rate the driver set.
    func setFrameRate(_ rate: Rational) throws -> Rational
    /// Allocates and queues the buffers and turns streaming on (VIDIOC_STREAMON); the buffers granted.
    @discardableResult
    func startStreaming() throws -> Int
    /// Waits up to `milliseconds` for a filled buffer (VIDIOC_DQBUF); nil when none came in time.
    func dequeue(timeout milliseconds: Int32) throws -> V4L2CapturedBuffer?
    /// Gives buffer `index` back to the driver to fill again (VIDIOC_QBUF).
    func requeue(_ index: Int) throws
    /// Turns streaming off (VIDIOC_STREAMOFF) and frees the buffers, so that the format can change.
    /// Errors are ignored: the device may be gone. Does nothing when not streaming.
    func stopStreaming()
    /// Stops streaming and closes the device.
    func close()
}

/// One filled capture buffer, valid until it is requeued or streaming stops.
struct V4L2CapturedBuffer {
    var index: Int
    /// The `bytesused` bytes the driver wrote.
    var bytes: UnsafeRawBufferPointer
    /// The driver's capture time on CLOCK_MONOTONIC in nanoseconds, nil when its timestamps
    /// are of another kind (V4L2 API §"struct v4l2_buffer", V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC).
    var monotonicTime: Int64?
    /// V4L2_BUF_FLAG_ERROR: the data may be corrupted.
    var damaged: Bool
}

/// The capture driver of a real camera: `V4L2Device` for set-up, a `V4L2Stream` (the mmap buffer
/// ring) while streaming.
final class LibV4L2Driver: V4L2CaptureDriver {
    private let device: V4L2Device
    private var stream: V4L2Stream?

    /// Opens `path`; throws as `V4L2Device.init(path:)`.
    init(path: String) throws { device = try V4L2Device(path: path) }

    var path: String { device.path }
    func describe() throws -> V4L2Camera { try device.describe() }

    func setFormat(_ format: V4L2CaptureFormat) throws -> (format: V4L2CaptureFormat, bytesPerLine: Int) {
        try device.setFormat(format)
    }

    func setFrameRate(_ rate: Rational) throws -> Rational { try device.setFrameRate(rate) }

    func startStreaming() throws -> Int {
        let started = try V4L2Stream(device: device)
        stream = started
        return started.bufferCount
    }

    func dequeue(timeout milliseconds: Int32) throws -> V4L2CapturedBuffer? {
        guard let stream else { preconditionFailure("\(path): dequeue while not streaming") }
        return try stream.next(timeout: milliseconds)
    }

    func requeue(_ index: Int) throws {
        guard let stream else { preconditionFailure("\(path): requeue while not streaming") }
        try stream.requeue(index)
    }

    func stopStreaming() {
        stream?.stop()
        stream = nil
    }

    func close() {
        stopStreaming()
        device.close()
    }
}
