/// What travels on the edges of a graph.
public protocol MediaPayload: Sendable {
    /// Presentation time of the first sample or the picture.
    var pts: MediaTime { get }
    /// Moves the item in time by `offset` (every timestamp it carries), keeping its timebases.
    mutating func shift(by offset: MediaTime)
}

extension MediaTime {
    /// This instant moved by `offset`, in this instant's timebase.
    public func shifted(by offset: MediaTime) -> MediaTime { (self + offset).rescaled(to: timebase) }
}

/// Where one plane of a picture lies in its buffer.
public struct Plane: Sendable, Hashable {
    public var offset: Int
    /// Bytes from the start of one row to the start of the next.
    public var stride: Int
    /// Meaningful bytes per row.
    public var width: Int
    public var rows: Int

    public init(offset: Int, stride: Int, width: Int, rows: Int) {
        self.offset = offset
        self.stride = stride
        self.width = width
        self.rows = rows
    }
}

/// The planes of a picture of a given pixel format and size, with rows aligned for SIMD code.
public struct PlaneLayout: Sendable, Hashable {
    public let planeCount: Int
    private let planes: (Plane, Plane, Plane)
    /// Bytes the whole picture needs.
    public let byteCount: Int

    /// The layout of a `width`x`height` picture whose rows start `rowAlignment` bytes apart at least
    /// (1 packs rows tightly, as raw video files and ffmpeg's `rawvideo` do).
    ///
    /// Odd sizes are allowed. Subsampled chroma rounds up (a 5x3 I420 picture has 3x2 chroma), and the
    /// packed 4:2:2 formats, 2 bytes a pixel, round the width up to even: an odd-width row ends with
    /// one padding pixel.
    public init(_ pixelFormat: PixelFormat, width: Int, height: Int, rowAlignment: Int = 32) {
        func aligned(_ n: Int) -> Int { (n + rowAlignment - 1) / rowAlignment * rowAlignment }
        let chromaWidth = (width + 1) / 2, chromaRows = (height + 1) / 2
        let luma = Plane(offset: 0, stride: aligned(width), width: width, rows: height)
        let unused = Plane(offset: 0, stride: 0, width: 0, rows: 0)
        let planes: (Plane, Plane, Plane)
        switch pixelFormat {
        case .i420:
            let u = Plane(offset: luma.stride * height, stride: aligned(chromaWidth), width: chromaWidth, rows: chromaRows)
            let v = Plane(offset: u.offset + u.stride * chromaRows, stride: u.stride, width: chromaWidth, rows: chromaRows)
            planes = (luma, u, v)
        case .nv12:
            let uv = Plane(offset: luma.stride * height, stride: aligned(2 * chromaWidth), width: 2 * chromaWidth,
                           rows: chromaRows)
            planes = (luma, uv, unused)
        case .yuy2, .uyvy:
            planes = (Plane(offset: 0, stride: aligned(4 * chromaWidth), width: 4 * chromaWidth, rows: height),
                      unused, unused)
        }
        self.init(planes: planes, count: pixelFormat.planeCount)
    }

    /// The layout of a capture buffer as V4L2 describes it (single-planar API): planes back to back,
    /// luma or packed rows `bytesPerLine` apart, interleaved chroma rows (NV12) `bytesPerLine` apart
    /// too and planar chroma rows (I420) `bytesPerLine / 2`. `nil` when a row does not fit its stride.
    public init?(_ pixelFormat: PixelFormat, width: Int, height: Int, bytesPerLine: Int) {
        let tight = PlaneLayout(pixelFormat, width: width, height: height, rowAlignment: 1)
        let strides = (bytesPerLine, pixelFormat == .i420 ? bytesPerLine / 2 : bytesPerLine)
        var planes = (tight[0], tight[1], tight[2])
        planes.0.stride = strides.0
        if tight.planeCount > 1 {
            planes.1.offset = strides.0 * planes.0.rows
            planes.1.stride = strides.1
        }
        if tight.planeCount > 2 {
            planes.2.offset = planes.1.offset + strides.1 * planes.1.rows
            planes.2.stride = strides.1
        }
        guard planes.0.width <= strides.0, tight.planeCount == 1 || planes.1.width <= strides.1 else { return nil }
        self.init(planes: planes, count: tight.planeCount)
    }

    /// The top-left `width`x`height` of a picture laid out as this: the same offsets and strides,
    /// each plane's width and rows cut to what that size shows (`pixelFormat`'s subsampling). A
    /// decoder's picture of whole macroblocks (640x368) is shown this way at its display size
    /// (640x360) without a copy.
    public func cropped(_ pixelFormat: PixelFormat, width: Int, height: Int) -> PlaneLayout {
        let visible = PlaneLayout(pixelFormat, width: width, height: height, rowAlignment: 1)
        precondition(visible.planeCount == planeCount, "cropping to another pixel format")
        var planes = (self[0], self[1], self[2])
        func cut(_ plane: inout Plane, to shown: Plane) {
            precondition(shown.width <= plane.width && shown.rows <= plane.rows, "cropping to a larger picture")
            plane.width = shown.width
            plane.rows = shown.rows
        }
        cut(&planes.0, to: visible[0])
        if planeCount > 1 { cut(&planes.1, to: visible[1]) }
        if planeCount > 2 { cut(&planes.2, to: visible[2]) }
        return PlaneLayout(planes: planes, count: planeCount)
    }

    private init(planes: (Plane, Plane, Plane), count: Int) {
        self.planes = planes
        planeCount = count
        let last = count == 3 ? planes.2 : count == 2 ? planes.1 : planes.0
        byteCount = last.offset + last.stride * last.rows
    }

    public subscript(index: Int) -> Plane {
        switch index {
        case 0: return planes.0
        case 1: return planes.1
        case 2: return planes.2
        default: preconditionFailure("plane \(index) out of range")
        }
    }

    public static func == (a: PlaneLayout, b: PlaneLayout) -> Bool {
        a.planeCount == b.planeCount && a.byteCount == b.byteCount
            && (0..<a.planeCount).allSatisfy { a[$0] == b[$0] }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(byteCount)
        for i in 0..<planeCount { hasher.combine(self[i]) }
    }
}

/// A raw picture. Its storage comes from a `BufferPool` and goes back there when the last copy of
/// the frame is dropped.
public struct VideoFrame: MediaPayload {
    public let pixelFormat: PixelFormat
    public let width: Int
    public let height: Int
    public let layout: PlaneLayout
    public let buffer: FrameBuffer
    public var pts: MediaTime
    public var duration: MediaTime?

    /// A frame whose storage comes from `pool`. Its pixels are uninitialised: fill them before use.
    /// Rows start `rowAlignment` bytes apart at least (`PlaneLayout`), and the buffer holds `padding`
    /// bytes past the last plane: a library that writes the picture may need wider alignment than
    /// the default 32, and read a little past the last row.
    public init(pixelFormat: PixelFormat = .i420, width: Int, height: Int, rowAlignment: Int = 32, padding: Int = 0,
                pts: MediaTime, duration: MediaTime? = nil, pool: BufferPool) {
        precondition(width > 0 && height > 0, "empty picture")
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.layout = PlaneLayout(pixelFormat, width: width, height: height, rowAlignment: rowAlignment)
        self.buffer = pool.acquire(capacity: layout.byteCount + padding)
        self.pts = pts
        self.duration = duration
    }

    private init(pixelFormat: PixelFormat, width: Int, height: Int, layout: PlaneLayout, buffer: FrameBuffer,
                 pts: MediaTime, duration: MediaTime?) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.layout = layout
        self.buffer = buffer
        self.pts = pts
        self.duration = duration
    }

    /// The top-left `width`x`height` of this picture, sharing its storage (see `PlaneLayout.cropped`).
    public func cropped(width: Int, height: Int) -> VideoFrame {
        precondition(width > 0 && height > 0, "empty picture")
        return VideoFrame(pixelFormat: pixelFormat, width: width, height: height,
                          layout: layout.cropped(pixelFormat, width: width, height: height), buffer: buffer,
                          pts: pts, duration: duration)
    }

    public mutating func shift(by offset: MediaTime) { pts = pts.shifted(by: offset) }

    /// The bytes of plane `index`, `layout[index].stride` bytes a row.
    public func plane(_ index: Int) -> UnsafeMutableRawBufferPointer {
        let p = layout[index]
        return UnsafeMutableRawBufferPointer(rebasing: buffer.storage[p.offset..<(p.offset + p.stride * p.rows)])
    }

    /// Row `row` of plane `index`, exactly `layout[index].width` bytes.
    public func row(_ row: Int, ofPlane index: Int) -> UnsafeMutableRawBufferPointer {
        let p = layout[index]
        let start = p.offset + row * p.stride
        return UnsafeMutableRawBufferPointer(rebasing: buffer.storage[start..<(start + p.width)])
    }

    /// Fills plane `index` from a picture a library keeps (a decoder's own), whose rows start
    /// `stride` bytes apart at `source`: `layout[index].width` bytes of each row. One copy when the
    /// strides agree, else one a row, the plane's bounds checked once rather than at every row
    /// (a 640x360 I420 picture has 720 rows in its three planes).
    public func copyPlane(_ index: Int, from source: UnsafeRawPointer, stride: Int) {
        let p = layout[index]
        guard p.rows > 0 else { return }
        precondition(p.offset + (p.rows - 1) * p.stride + p.width <= buffer.storage.count, "plane outside the buffer")
        let target = buffer.storage.baseAddress! + p.offset
        if stride == p.stride {
            target.copyMemory(from: source, byteCount: (p.rows - 1) * stride + p.width)
            return
        }
        for row in 0..<p.rows {
            (target + row * p.stride).copyMemory(from: source + row * stride, byteCount: p.width)
        }
    }
}

/// Raw audio: `sampleCount` samples per channel, channels interleaved.
public struct AudioFrame: MediaPayload {
    public let sampleFormat: SampleFormat
    public let sampleRate: Int
    public let channels: Int
    public let sampleCount: Int
    public let buffer: FrameBuffer
    public var pts: MediaTime

    /// A frame whose storage comes from `pool`; its samples are uninitialised.
    public init(sampleFormat: SampleFormat, sampleRate: Int, channels: Int, sampleCount: Int, pts: MediaTime,
                pool: BufferPool) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleCount = sampleCount
        self.buffer = pool.acquire(capacity: sampleCount * channels * sampleFormat.bytesPerSample)
        self.pts = pts
    }

    public var byteCount: Int { sampleCount * channels * sampleFormat.bytesPerSample }
    public var bytes: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: buffer.storage[0..<byteCount])
    }
    public var duration: MediaTime { MediaTime(Int64(sampleCount), timebase: Rational(1, sampleRate)) }

    public mutating func shift(by offset: MediaTime) { pts = pts.shifted(by: offset) }
}

/// One compressed access unit (a whole picture for video, one packet for audio).
public struct EncodedFrame: MediaPayload {
    public let codec: CodecName
    public var isKeyframe: Bool
    public var pts: MediaTime
    /// Decoding time; equal to `pts` for codecs without reordering.
    public var dts: MediaTime
    public var duration: MediaTime?
    public let buffer: FrameBuffer

    /// A frame holding a copy of `bytes`, stored in a buffer from `pool` (or a fresh one).
    public init(codec: CodecName, isKeyframe: Bool, pts: MediaTime, dts: MediaTime? = nil, duration: MediaTime? = nil,
                copying bytes: UnsafeRawBufferPointer, pool: BufferPool?) {
        self.codec = codec
        self.isKeyframe = isKeyframe
        self.pts = pts
        self.dts = dts ?? pts
        self.duration = duration
        if let pool {
            let buffer = pool.acquire(capacity: bytes.count)
            if let base = bytes.baseAddress { buffer.storage.baseAddress!.copyMemory(from: base, byteCount: bytes.count) }
            self.buffer = buffer
        } else {
            self.buffer = FrameBuffer(copying: bytes)
        }
    }

    /// A frame made of the first `buffer.count` bytes of `buffer`, filled by the caller (a file
    /// reader that reads straight into pooled storage, say).
    public init(codec: CodecName, isKeyframe: Bool, pts: MediaTime, dts: MediaTime? = nil, duration: MediaTime? = nil,
                buffer: FrameBuffer) {
        self.codec = codec
        self.isKeyframe = isKeyframe
        self.pts = pts
        self.dts = dts ?? pts
        self.duration = duration
        self.buffer = buffer
    }

    public var bytes: UnsafeRawBufferPointer { buffer.bytes }
    public var byteCount: Int { buffer.count }

    public mutating func shift(by offset: MediaTime) {
        pts = pts.shifted(by: offset)
        dts = dts.shifted(by: offset)
    }
}
