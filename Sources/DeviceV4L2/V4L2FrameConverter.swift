import CodecMJPEG
import MediaConvert
import MediaCore

/// Turns the bytes of one capture buffer into a pooled I420 picture: YU12, NV12, YUYV and UYVY
/// through libyuv (`PixelFormatConverter`), MJPEG through libjpeg-turbo (`MJPEGDecoder`). The buffer
/// is only read, so the caller can requeue it as soon as `convert` returns.
public final class V4L2FrameConverter {
    public let format: V4L2CaptureFormat
    /// Bytes from one row to the next in the capture buffer (`v4l2_pix_format.bytesperline`).
    public let bytesPerLine: Int
    private enum Path {
        case raw(PixelFormatConverter, PixelFormat, PlaneLayout)
        case jpeg(MJPEGDecoder, BufferPool)
    }
    private let path: Path

    /// A converter for buffers of `format` whose rows are `bytesPerLine` apart (0: tightly packed,
    /// as the V4L2 API allows drivers to say for compressed formats).
    public init(format: V4L2CaptureFormat, bytesPerLine: Int = 0) throws {
        guard let captured = V4L2PixelFormat(fourcc: format.fourcc) else {
            throw ConversionError.unsupportedConversion(from: nil, to: .i420)
        }
        self.format = format
        if let pixelFormat = captured.pixelFormat {
            let tight = PlaneLayout(pixelFormat, width: format.width, height: format.height, rowAlignment: 1)
            self.bytesPerLine = bytesPerLine > 0 ? bytesPerLine : tight[0].stride
            guard let layout = PlaneLayout(pixelFormat, width: format.width, height: format.height,
                                           bytesPerLine: self.bytesPerLine)
            else { throw ConversionError.layoutMismatch(pixelFormat, width: format.width, height: format.height) }
            path = .raw(try PixelFormatConverter(to: .i420), pixelFormat, layout)
        } else {
            self.bytesPerLine = bytesPerLine
            let stream = VideoFormat(encoding: .compressed(.mjpeg), width: format.width, height: format.height,
                                     frameRate: format.frameRate)
            path = .jpeg(try MJPEGDecoder(format: stream), BufferPool(name: "v4l2-mjpeg"))
        }
    }

    /// Buffers its pools ever allocated: constant once warm, when the pictures are let go.
    public var allocations: Int {
        switch path {
        case .raw(let converter, _, _): return converter.pool.allocations
        case .jpeg(let decoder, let pool): return decoder.outputPool.allocations + pool.allocations
        }
    }

    /// The I420 picture in `bytes`, timed `pts`. Throws the converter's or decoder's error for a
    /// buffer that is too short or a JPEG that is damaged.
    public func convert(_ bytes: UnsafeRawBufferPointer, pts: MediaTime, duration: MediaTime? = nil) throws -> VideoFrame {
        switch path {
        case .raw(let converter, let pixelFormat, let layout):
            return try converter.convert(bytes, pixelFormat: pixelFormat, width: format.width, height: format.height,
                                         layout: layout, pts: pts, duration: duration)
        case .jpeg(let decoder, let pool):
            // The JPEG is copied out of the driver's buffer into pooled storage, the decoder's input type.
            let jpeg = EncodedFrame(codec: .mjpeg, isKeyframe: true, pts: pts, duration: duration, copying: bytes, pool: pool)
            var picture: VideoFrame?
            try decoder.decode(jpeg) { picture = $0 }
            guard let picture else {
                throw ConversionError.unexpectedPicture(expected: "one picture from the MJPEG decoder", actual: "none")
            }
            return picture
        }
    }
}
