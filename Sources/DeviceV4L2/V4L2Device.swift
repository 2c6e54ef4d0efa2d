import CV4L2
import Glibc
import MediaCore

/// An open V4L2 device node: the file descriptor (through libv4l2) and the ioctls that query and
/// set it up. Closes the descriptor in `deinit` if `close()` was not called.
final class V4L2Device {
    let path: String
    private(set) var descriptor: Int32

    /// What VIDIOC_QUERYCAP says (V4L2 API §"ioctl VIDIOC_QUERYCAP").
    struct Capabilities {
        var driver: String
        var card: String
        var busInfo: String
        /// `device_caps` when the driver fills it (V4L2_CAP_DEVICE_CAPS), else `capabilities`.
        var deviceCaps: UInt32

        var canCapture: Bool { deviceCaps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 }
        var canStream: Bool { deviceCaps & UInt32(V4L2_CAP_STREAMING) != 0 }
    }

    /// Opens `path` read-write and non-blocking (`VIDIOC_DQBUF` then answers EAGAIN; `poll` waits).
    /// A path that is not a character device, or a device that does not answer VIDIOC_QUERYCAP, is
    /// refused before libv4l2 sees it; the descriptor is then handed to libv4l2 (`v4l2_fd_open`).
    init(path: String) throws {
        self.path = path
        var info = stat()
        guard stat(path, &info) == 0 else { throw V4L2Device.openError(path: path, errno: errno) }
        guard info.st_mode & S_IFMT == S_IFCHR else {
            throw V4L2Error.notACaptureDevice(path: path, reason: "not a character device, so not a V4L2 camera")
        }
        let raw = retryingInterrupts { open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
        guard raw >= 0 else { throw V4L2Device.openError(path: path, errno: errno) }
        var caps = v4l2_capability()
        guard retryingInterrupts({ sluice_ioctl(raw, sluice_VIDIOC_QUERYCAP(), &caps) }) == 0 else {
            let code = errno
            Glibc.close(raw)
            throw code == ENOTTY || code == EINVAL ? V4L2Device.notV4L2(path) : V4L2Device.openError(path: path, errno: code)
        }
        let descriptor = v4l2_fd_open(raw, 0)
        guard descriptor >= 0 else {
            let code = errno
            Glibc.close(raw)
            throw V4L2Error.system(path: path, operation: "v4l2_fd_open", errno: code)
        }
        self.descriptor = descriptor
    }

    deinit { close() }

    func close() {
        guard descriptor >= 0 else { return }
        _ = v4l2_close(descriptor)
        descriptor = -1
    }

    private static func notV4L2(_ path: String) -> V4L2Error {
        .notACaptureDevice(path: path, reason: "does not answer VIDIOC_QUERYCAP, so is no V4L2 device")
    }

    private static func openError(path: String, errno code: Int32) -> V4L2Error {
        switch code {
        case ENOENT, ENXIO, ENODEV: return .noSuchDevice(path: path)
        case EACCES, EPERM: return .permissionDenied(path: path)
        case EBUSY: return .busy(path: path)
        case EISDIR: return .notACaptureDevice(path: path, reason: "a directory, not a V4L2 camera")
        default: return .system(path: path, operation: "open", errno: code)
        }
    }

    // MARK: ioctl

    /// Runs one ioctl, again when a signal interrupts it (EINTR); 0 or the errno.
    func control<Argument>(_ request: UInt, _ argument: inout Argument) -> Int32 {
        let result = retryingInterrupts { withUnsafeMutablePointer(to: &argument) { sluice_v4l2_ioctl(descriptor, request, $0) } }
        return result == -1 ? errno : 0
    }

    /// Runs one ioctl; a failure is an error naming `name` (ENODEV: the device was lost).
    func check<Argument>(_ name: String, _ request: UInt, _ argument: inout Argument) throws {
        let code = control(request, &argument)
        guard code != 0 else { return }
        throw error(name, code)
    }

    /// The error for `name` failing with `code`.
    func error(_ name: String, _ code: Int32) -> V4L2Error { .failure(of: name, errno: code, path: path) }

    // MARK: Queries

    /// VIDIOC_QUERYCAP; a node that does not answer it is not a V4L2 device.
    func capabilities() throws -> Capabilities {
        var caps = v4l2_capability()
        let code = control(sluice_VIDIOC_QUERYCAP(), &caps)
        guard code == 0 else {
            if code == ENOTTY || code == EINVAL { throw V4L2Device.notV4L2(path) }
            throw error("VIDIOC_QUERYCAP", code)
        }
        let hasDeviceCaps = caps.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
        return Capabilities(driver: cString(caps.driver), card: cString(caps.card), busInfo: cString(caps.bus_info),
                            deviceCaps: hasDeviceCaps ? caps.device_caps : caps.capabilities)
    }

    /// The device as a camera: its capabilities checked for single-planar capture with streaming
    /// I/O, and every format it delivers.
    func describe() throws -> V4L2Camera {
        let caps = try capabilities()
        guard caps.canCapture else {
            throw V4L2Error.notACaptureDevice(
                path: path, reason: "\(caps.card) (\(caps.driver)) has no video capture (a metadata, output or multi-planar node)")
        }
        guard caps.canStream else {
            throw V4L2Error.notACaptureDevice(path: path, reason: "\(caps.card) (\(caps.driver)) has no streaming I/O")
        }
        return V4L2Camera(path: path, card: caps.card, driver: caps.driver, busInfo: caps.busInfo, formats: try formats())
    }

    /// VIDIOC_ENUM_FMT over the capture queue, leaving out libv4l2's emulated formats
    /// (V4L2_FMT_FLAG_EMULATED): Sluice converts the hardware's own formats with libyuv.
    func formats() throws -> [V4L2FormatDescription] {
        var formats: [V4L2FormatDescription] = []
        for index in 0... {
            var description = v4l2_fmtdesc()
            description.index = UInt32(index)
            description.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard try enumerate("VIDIOC_ENUM_FMT", sluice_VIDIOC_ENUM_FMT(), &description) else { break }
            if description.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0 { continue }
            formats.append(try sizes(of: description.pixelformat, description: cString(description.description)))
        }
        return formats
    }

    /// VIDIOC_ENUM_FRAMESIZES for one pixel format: discrete sizes, or one stepwise/continuous range.
    private func sizes(of code: UInt32, description: String) throws -> V4L2FormatDescription {
        let fourcc = FourCC.text(code)
        var sizes: [V4L2FrameSize] = []
        for index in 0... {
            var size = v4l2_frmsizeenum()
            size.index = UInt32(index)
            size.pixel_format = code
            guard try enumerate("VIDIOC_ENUM_FRAMESIZES", sluice_VIDIOC_ENUM_FRAMESIZES(), &size) else { break }
            if size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                let (width, height) = (Int(size.discrete.width), Int(size.discrete.height))
                sizes.append(V4L2FrameSize(width: width, height: height,
                                           frameRates: try frameRates(of: code, width: width, height: height)))
                continue
            }
            let step = size.stepwise
            let rates = try frameRates(of: code, width: Int(step.max_width), height: Int(step.max_height))
            let range = V4L2SizeRange(minWidth: Int(step.min_width), maxWidth: Int(step.max_width),
                                      stepWidth: Int(step.step_width), minHeight: Int(step.min_height),
                                      maxHeight: Int(step.max_height), stepHeight: Int(step.step_height), frameRates: rates)
            return V4L2FormatDescription(fourcc: fourcc, description: description, range: range)
        }
        return V4L2FormatDescription(fourcc: fourcc, description: description, sizes: sizes)
    }

    /// VIDIOC_ENUM_FRAMEINTERVALS at one size, as rates (frames per second), highest first. A
    /// stepwise or continuous interval range gives its ends and the common rates between them; a
    /// driver that enumerates no intervals gives its current rate (VIDIOC_G_PARM), else 30.
    private func frameRates(of code: UInt32, width: Int, height: Int) throws -> [Rational] {
        var rates: Set<Rational> = []
        for index in 0... {
            var interval = v4l2_frmivalenum()
            interval.index = UInt32(index)
            interval.pixel_format = code
            interval.width = UInt32(width)
            interval.height = UInt32(height)
            guard try enumerate("VIDIOC_ENUM_FRAMEINTERVALS", sluice_VIDIOC_ENUM_FRAMEINTERVALS(), &interval) else { break }
            if interval.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                if let rate = rate(ofInterval: interval.discrete) { rates.insert(rate) }
                continue
            }
            let fastest = rate(ofInterval: interval.stepwise.min), slowest = rate(ofInterval: interval.stepwise.max)
            if let fastest, let slowest {
                rates.formUnion([fastest, slowest])
                rates.formUnion([5, 10, 15, 20, 24, 25, 30, 50, 60].map { Rational($0, 1) }.filter { $0 >= slowest && $0 <= fastest })
            }
            break
        }
        if rates.isEmpty { rates.insert(currentFrameRate() ?? Rational(30, 1)) }
        return rates.sorted(by: >)
    }

    /// VIDIOC_G_PARM's time per frame as a rate, nil when the driver does not say.
    func currentFrameRate() -> Rational? {
        var parameters = v4l2_streamparm()
        parameters.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        guard control(sluice_VIDIOC_G_PARM(), &parameters) == 0 else { return nil }
        return rate(ofInterval: parameters.parm.capture.timeperframe)
    }

    /// Runs one step of an enumeration: true for an entry, false at its end (EINVAL, V4L2 API
    /// §"ioctl VIDIOC_ENUM_FMT": the index is past the last entry; ENOTTY: the driver cannot enumerate).
    private func enumerate<Argument>(_ name: String, _ request: UInt, _ argument: inout Argument) throws -> Bool {
        let code = control(request, &argument)
        if code == EINVAL || code == ENOTTY { return false }
        guard code == 0 else { throw error(name, code) }
        return true
    }

    // MARK: Setting up

    /// VIDIOC_S_FMT (V4L2 API §"ioctl VIDIOC_G_FMT, VIDIOC_S_FMT") with progressive frames. Returns
    /// the format the driver set, which may be another size than asked (the nearest it has), and the
    /// bytes per line of its buffers.
    func setFormat(_ format: V4L2CaptureFormat) throws -> (format: V4L2CaptureFormat, bytesPerLine: Int) {
        var request = v4l2_format()
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.fmt.pix.width = UInt32(format.width)
        request.fmt.pix.height = UInt32(format.height)
        request.fmt.pix.pixelformat = FourCC.code(format.fourcc)
        request.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try check("VIDIOC_S_FMT", sluice_VIDIOC_S_FMT(), &request)
        let pix = request.fmt.pix
        guard pix.pixelformat == FourCC.code(format.fourcc) else {
            throw V4L2Error.formatRejected(path: path, asked: format,
                                           got: "\(FourCC.text(pix.pixelformat)) \(pix.width)x\(pix.height)")
        }
        var set = format
        (set.width, set.height) = (Int(pix.width), Int(pix.height))
        return (set, Int(pix.bytesperline))
    }

    /// VIDIOC_S_PARM's time per frame (V4L2 API §"ioctl VIDIOC_G_PARM, VIDIOC_S_PARM"); returns the
    /// rate the driver set, or `rate` itself when it cannot set one (no V4L2_CAP_TIMEPERFRAME).
    func setFrameRate(_ rate: Rational) throws -> Rational {
        var parameters = v4l2_streamparm()
        parameters.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        guard control(sluice_VIDIOC_G_PARM(), &parameters) == 0,
              parameters.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0
        else { return rate }
        parameters.parm.capture.timeperframe = v4l2_fract(numerator: UInt32(rate.denominator),
                                                          denominator: UInt32(rate.numerator))
        try check("VIDIOC_S_PARM", sluice_VIDIOC_S_PARM(), &parameters)
        return self.rate(ofInterval: parameters.parm.capture.timeperframe) ?? rate
    }

    private func rate(ofInterval interval: v4l2_fract) -> Rational? {
        guard interval.numerator > 0, interval.denominator > 0 else { return nil }
        return Rational(Int(interval.denominator), Int(interval.numerator))
    }
}

/// Calls `body` again while it fails with EINTR (a signal arrived during the call).
func retryingInterrupts(_ body: () -> Int32) -> Int32 {
    while true {
        let result = body()
        if result != -1 || errno != EINTR { return result }
    }
}

/// The text of a fixed-size, NUL-terminated C character array imported as a tuple.
func cString<Tuple>(_ tuple: Tuple) -> String {
    withUnsafeBytes(of: tuple) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
}
