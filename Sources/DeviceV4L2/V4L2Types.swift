import MediaCore

/// A video capture device as V4L2 describes it (V4L2 API §1.2 "Querying Capabilities", §1.10
/// "Image Formats" enumeration).
public struct V4L2Camera: Sendable, Hashable {
    /// The device node, e.g. `/dev/video0`.
    public var path: String
    /// `v4l2_capability.card`: the device's name, e.g. "HD Pro Webcam C920".
    public var card: String
    /// `v4l2_capability.driver`, e.g. "uvcvideo".
    public var driver: String
    /// `v4l2_capability.bus_info`, e.g. "usb-0000:00:14.0-1".
    public var busInfo: String
    /// The capture formats the hardware delivers (not libv4l2's emulated ones), in the driver's order.
    public var formats: [V4L2FormatDescription]

    public init(path: String, card: String, driver: String, busInfo: String, formats: [V4L2FormatDescription]) {
        self.path = path
        self.card = card
        self.driver = driver
        self.busInfo = busInfo
        self.formats = formats
    }
}

/// One pixel format of a camera with the sizes and rates it is offered at (`VIDIOC_ENUM_FMT`,
/// `VIDIOC_ENUM_FRAMESIZES`, `VIDIOC_ENUM_FRAMEINTERVALS`).
public struct V4L2FormatDescription: Sendable, Hashable {
    /// The four-character code, e.g. "YUYV", "MJPG", "NV12", "YU12".
    public var fourcc: String
    /// The driver's description, e.g. "YUYV 4:2:2".
    public var description: String
    /// Discrete sizes; for a stepwise or continuous range, common sizes inside it (see `sizeRange`).
    public var sizes: [V4L2FrameSize]
    /// A stepwise or continuous size range (`V4L2_FRMSIZE_TYPE_STEPWISE`/`CONTINUOUS`), nil for discrete sizes.
    public var sizeRange: V4L2SizeRange?

    public init(fourcc: String, description: String = "", sizes: [V4L2FrameSize], sizeRange: V4L2SizeRange? = nil) {
        self.fourcc = fourcc
        self.description = description.isEmpty ? fourcc : description
        self.sizes = sizes
        self.sizeRange = sizeRange
    }

    /// Describes a stepwise range by the common sizes inside it (and its largest size) in `sizes`.
    public init(fourcc: String, description: String = "", range: V4L2SizeRange) {
        self.init(fourcc: fourcc, description: description, sizes: range.representativeSizes, sizeRange: range)
    }
}

/// A picture size with the frame rates offered at it, highest first.
public struct V4L2FrameSize: Sendable, Hashable {
    public var width: Int
    public var height: Int
    /// Frames per second (the reciprocal of V4L2's frame interval).
    public var frameRates: [Rational]

    public init(width: Int, height: Int, frameRates: [Rational]) {
        self.width = width
        self.height = height
        self.frameRates = frameRates
    }
}

/// A stepwise frame-size range (`struct v4l2_frmsize_stepwise`); continuous when both steps are 1.
public struct V4L2SizeRange: Sendable, Hashable {
    public var minWidth, maxWidth, stepWidth: Int
    public var minHeight, maxHeight, stepHeight: Int
    /// The rates offered at the largest size, highest first.
    public var frameRates: [Rational]

    public init(minWidth: Int, maxWidth: Int, stepWidth: Int = 1, minHeight: Int, maxHeight: Int, stepHeight: Int = 1,
                frameRates: [Rational]) {
        self.minWidth = minWidth
        self.maxWidth = maxWidth
        self.stepWidth = Swift.max(1, stepWidth)
        self.minHeight = minHeight
        self.maxHeight = maxHeight
        self.stepHeight = Swift.max(1, stepHeight)
        self.frameRates = frameRates
    }

    /// Whether the range holds a `width`x`height` picture (on its step grid).
    public func contains(width: Int, height: Int) -> Bool {
        (minWidth...maxWidth).contains(width) && (minHeight...maxHeight).contains(height)
            && (width - minWidth) % stepWidth == 0 && (height - minHeight) % stepHeight == 0
    }

    /// The size of the range nearest `width`x`height`: each side clamped, then snapped to the step grid.
    public func nearest(width: Int, height: Int) -> (width: Int, height: Int) {
        func snap(_ value: Int, _ low: Int, _ high: Int, _ step: Int) -> Int {
            let clamped = Swift.min(Swift.max(value, low), high)
            let snapped = low + ((clamped - low) + step / 2) / step * step
            return snapped > high ? snapped - step : snapped
        }
        return (snap(width, minWidth, maxWidth, stepWidth), snap(height, minHeight, maxHeight, stepHeight))
    }

    /// Common camera sizes inside the range, smallest first, ending with the largest size.
    public var representativeSizes: [V4L2FrameSize] {
        let common = [(160, 120), (320, 240), (352, 288), (640, 360), (640, 480), (800, 600), (960, 540),
                      (1024, 768), (1280, 720), (1280, 960), (1920, 1080), (2560, 1440), (3840, 2160)]
        var sizes = common.filter { contains(width: $0.0, height: $0.1) }
            .map { V4L2FrameSize(width: $0.0, height: $0.1, frameRates: frameRates) }
        let largest = nearest(width: maxWidth, height: maxHeight)
        if !sizes.contains(where: { ($0.width, $0.height) == largest }) {
            sizes.append(V4L2FrameSize(width: largest.width, height: largest.height, frameRates: frameRates))
        }
        return sizes
    }
}

/// The format a capture runs at: what `chooseCaptureFormat` picks and the device is set to.
public struct V4L2CaptureFormat: Sendable, Hashable, CustomStringConvertible {
    public var fourcc: String
    public var width: Int
    public var height: Int
    public var frameRate: Rational

    public init(fourcc: String, width: Int, height: Int, frameRate: Rational) {
        self.fourcc = fourcc
        self.width = width
        self.height = height
        self.frameRate = frameRate
    }

    public var description: String { "\(fourcc) \(width)x\(height)@\(frameRate)" }
}

/// The four-character codes Sluice converts to I420, cheapest conversion first.
public enum V4L2PixelFormat: String, Sendable, CaseIterable {
    /// Planar 4:2:0 (`V4L2_PIX_FMT_YUV420`): a copy.
    case yu12 = "YU12"
    /// Y plane and interleaved CbCr (`V4L2_PIX_FMT_NV12`).
    case nv12 = "NV12"
    /// Packed Y0 Cb Y1 Cr (`V4L2_PIX_FMT_YUYV`).
    case yuyv = "YUYV"
    /// Packed Cb Y0 Cr Y1 (`V4L2_PIX_FMT_UYVY`).
    case uyvy = "UYVY"
    /// Motion JPEG (`V4L2_PIX_FMT_MJPEG`), decoded by libjpeg-turbo.
    case mjpg = "MJPG"

    /// The format for `fourcc`; "JPEG" (`V4L2_PIX_FMT_JPEG`) reads as MJPEG, "I420" as YU12.
    public init?(fourcc: String) {
        switch fourcc {
        case "JPEG": self = .mjpg
        case "I420": self = .yu12
        default: self.init(rawValue: fourcc)
        }
    }

    /// Lower is cheaper to turn into I420.
    public var conversionCost: Int { Self.allCases.firstIndex(of: self)! }

    /// The raw picture layout, nil for MJPEG.
    public var pixelFormat: PixelFormat? {
        switch self {
        case .yu12: return .i420
        case .nv12: return .nv12
        case .yuyv: return .yuy2
        case .uyvy: return .uyvy
        case .mjpg: return nil
        }
    }
}

/// A fourcc as V4L2 stores it: the first character in the lowest byte (`v4l2_fourcc`).
enum FourCC {
    static func code(_ text: String) -> UInt32 {
        text.utf8.prefix(4).enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    static func text(_ code: UInt32) -> String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: code >> (8 * $0)) }
        // Big-endian variants (V4L2_PIX_FMT_FLAG_BE) set the top bit; keep the letters, drop padding spaces.
        var text = String(decoding: bytes.map { $0 & 0x7f }, as: UTF8.self)
        while text.last == " " || text.last == "\0" { text.removeLast() }
        return text
    }
}
