import CTurboJPEG
@testable import DeviceV4L2
import Glibc
import MediaCore

/// A camera without hardware: a `V4L2CaptureDriver` that serves synthetic pictures (YUYV with padded
/// rows, NV12, or real JPEGs made with TurboJPEG for MJPG) from a ring of buffers, with monotonic
/// driver timestamps a little uneven around the set rate, and records what the node asks of it.
///
/// Every picture is flat: its luma is `FakeCaptureDriver.luma(sequence:)` (sequence counting every
/// dequeue since the fake was made), its chroma 128, so a test can tell which buffer a picture came from.
final class FakeCaptureDriver: V4L2CaptureDriver {
    /// What the node asked of the driver, in order.
    enum Call: Equatable, CustomStringConvertible {
        case setFormat(String, Int, Int)
        case setFrameRate(Rational)
        case streamOn
        case streamOff
        case close

        var description: String {
            switch self {
            case .setFormat(let fourcc, let width, let height): return "S_FMT \(fourcc) \(width)x\(height)"
            case .setFrameRate(let rate): return "S_PARM \(rate)"
            case .streamOn: return "STREAMON"
            case .streamOff: return "STREAMOFF"
            case .close: return "close"
            }
        }
    }

    let path: String
    let formats: [V4L2FormatDescription]
    /// Sizes `describe` lists but S_FMT does not take: it sets the nearest other size of the format.
    var refusedSizes: [(width: Int, height: Int)] = []
    /// Which dequeues (by sequence) come back with V4L2_BUF_FLAG_ERROR.
    var damaged: (Int) -> Bool = { _ in false }
    /// The dequeue (by sequence) that fails with ENODEV, as when the camera is unplugged.
    var lostAt: Int?
    /// Called at each dequeue with its sequence, before the buffer is filled (e.g. to post an event).
    var onDequeue: (Int) -> Void = { _ in }

    private(set) var calls: [Call] = []
    /// Buffer indices in the order they were dequeued, and requeued.
    private(set) var dequeued: [Int] = []
    private(set) var requeued: [Int] = []
    /// The driver timestamp (CLOCK_MONOTONIC ns) of every dequeue, damaged ones included.
    private(set) var timestamps: [Int64] = []

    private static let bufferCount = 4
    private static let rowPadding = 32
    private var format: V4L2CaptureFormat?
    private var bytesPerLine = 0
    private var rate = Rational(30, 1)
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var queued: [Int] = []
    private var sequence = 0
    private var driverClock: Int64 = 7_000_000_000_000
    private let jpegCompressor: tjhandle

    init(path: String = "/dev/video-fake", formats: [V4L2FormatDescription]) {
        self.path = path
        self.formats = formats
        jpegCompressor = tjInitCompress()!
    }

    deinit {
        freeBuffers()
        tjDestroy(jpegCompressor)
    }

    /// The luma of the picture of dequeue `sequence`.
    static func luma(sequence: Int) -> UInt8 { UInt8(20 + (sequence * 11) % 200) }

    /// Buffers dequeued and not given back.
    var outstanding: Int { dequeued.count - requeued.count }

    func describe() throws -> V4L2Camera {
        V4L2Camera(path: path, card: "Fake Camera", driver: "fake", busInfo: "none", formats: formats)
    }

    func setFormat(_ asked: V4L2CaptureFormat) throws -> (format: V4L2CaptureFormat, bytesPerLine: Int) {
        calls.append(.setFormat(asked.fourcc, asked.width, asked.height))
        guard let description = formats.first(where: { $0.fourcc == asked.fourcc }) else {
            throw V4L2Error.failure(of: "VIDIOC_S_FMT", errno: EINVAL, path: path)
        }
        let takes = description.sizes.filter { size in
            !refusedSizes.contains { $0 == (size.width, size.height) }
        }
        let nearest = takes.min { a, b in
            abs(a.width * a.height - asked.width * asked.height) < abs(b.width * b.height - asked.width * asked.height)
        }!
        var set = asked
        (set.width, set.height) = (nearest.width, nearest.height)
        bytesPerLine = switch asked.fourcc {
        case "YUYV": set.width * 2 + Self.rowPadding
        case "NV12": set.width
        default: 0
        }
        format = set
        return (set, bytesPerLine)
    }

    func setFrameRate(_ rate: Rational) throws -> Rational {
        calls.append(.setFrameRate(rate))
        self.rate = rate
        return rate
    }

    func startStreaming() throws -> Int {
        guard let format else { preconditionFailure("STREAMON before S_FMT") }
        calls.append(.streamOn)
        let size = max(bytesPerLine * format.height * 3 / 2, format.width * format.height * 2, 4096)
        buffers = (0..<Self.bufferCount).map { _ in .allocate(byteCount: size, alignment: 64) }
        queued = Array(buffers.indices)
        return buffers.count
    }

    func dequeue(timeout milliseconds: Int32) throws -> V4L2CapturedBuffer? {
        precondition(!buffers.isEmpty, "DQBUF while not streaming")
        if sequence == lostAt { throw V4L2Error.failure(of: "VIDIOC_DQBUF", errno: ENODEV, path: path) }
        guard !queued.isEmpty else { return nil }  // every buffer is out: nothing can be filled
        let (current, index) = (sequence, queued.removeFirst())
        sequence += 1
        onDequeue(current)
        // The rate's interval, and up to 0.5 ms of jitter that the pts must follow.
        driverClock += Int64(1_000_000_000 * rate.denominator / rate.numerator)
        let time = driverClock + Int64(current % 3) * 250_000
        timestamps.append(time)
        dequeued.append(index)
        let used = fill(buffers[index], luma: Self.luma(sequence: current))
        return V4L2CapturedBuffer(index: index, bytes: UnsafeRawBufferPointer(rebasing: buffers[index][0..<used]),
                                  monotonicTime: time, damaged: damaged(current))
    }

    func requeue(_ index: Int) throws {
        guard buffers.indices.contains(index), !queued.contains(index) else {
            throw V4L2Error.failure(of: "VIDIOC_QBUF", errno: EINVAL, path: path)
        }
        requeued.append(index)
        queued.append(index)
    }

    func stopStreaming() {
        guard !buffers.isEmpty else { return }
        calls.append(.streamOff)
        freeBuffers()
    }

    func close() {
        stopStreaming()
        calls.append(.close)
    }

    private func freeBuffers() {
        buffers.forEach { $0.deallocate() }
        buffers = []
        queued = []
    }

    /// Writes a flat picture of the current format into `buffer`; the bytes used.
    private func fill(_ buffer: UnsafeMutableRawBufferPointer, luma: UInt8) -> Int {
        let format = format!
        let (width, height) = (format.width, format.height)
        switch format.fourcc {
        case "YUYV":
            buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)  // the padding at the end of the rows
            for row in 0..<height {
                for pair in 0..<width / 2 {
                    let at = row * bytesPerLine + pair * 4
                    (buffer[at], buffer[at + 1], buffer[at + 2], buffer[at + 3]) = (luma, 128, luma, 128)
                }
            }
            return bytesPerLine * height
        case "NV12":
            let lumaBytes = bytesPerLine * height
            buffer[0..<lumaBytes].initializeMemory(as: UInt8.self, repeating: luma)
            buffer[lumaBytes..<lumaBytes * 3 / 2].initializeMemory(as: UInt8.self, repeating: 128)
            return lumaBytes * 3 / 2
        case "MJPG":
            let planes = [UInt8](repeating: luma, count: width * height)
                + [UInt8](repeating: 128, count: width * height / 2)
            var jpeg: UnsafeMutablePointer<UInt8>?
            var size: UInt = 0
            let code = tjCompressFromYUV(jpegCompressor, planes, Int32(width), 1, Int32(height),
                                         Int32(TJSAMP_420.rawValue), &jpeg, &size, 100, 0)
            precondition(code == 0 && Int(size) <= buffer.count, "TurboJPEG could not make the picture")
            defer { tjFree(jpeg) }
            buffer.copyMemory(from: UnsafeRawBufferPointer(start: jpeg, count: Int(size)))
            return Int(size)
        default:
            preconditionFailure("the fake makes no \(format.fourcc) pictures")
        }
    }
}
