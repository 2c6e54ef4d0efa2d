import CFFmpeg
import MediaCodecs
import MediaCore

/// Copies a picture libavcodec decoded into a pooled 8-bit I420 frame of the same size.
enum PictureCopy {
    /// 8-bit 4:2:0 row by row (or plane by plane when the strides agree); other planar YUV formats
    /// (4:2:2, 4:4:4, 4:4:0, 4:0:0, 9 to 16 bits) converted: chroma averaged over the samples each
    /// I420 sample covers, depth rounded down to 8 bits.
    static func copy(_ frame: AVFrame, into picture: VideoFrame, decoder: String) throws {
        let format = AVPixelFormat(rawValue: frame.format)
        if format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P {
            let sources = [frame.data.0, frame.data.1, frame.data.2], strides = [frame.linesize.0, frame.linesize.1, frame.linesize.2]
            for index in 0..<3 {
                guard let source = sources[index] else { throw unsupported(format, decoder) }
                picture.copyPlane(index, from: source, stride: Int(strides[index]))
            }
            return
        }
        guard let descriptor = av_pix_fmt_desc_get(format)?.pointee,
              descriptor.flags & UInt64(AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_PAL) == 0,
              descriptor.nb_components == 1 || descriptor.nb_components == 3,
              descriptor.log2_chroma_w <= 1, descriptor.log2_chroma_h <= 1
        else { throw unsupported(format, decoder) }
        let depth = Int(descriptor.comp.0.depth), bytes = depth > 8 ? 2 : 1
        guard depth >= 8, depth <= 16, descriptor.comp.0.step == bytes, frame.data.0 != nil else {
            throw unsupported(format, decoder)
        }
        let components = [descriptor.comp.0, descriptor.comp.1, descriptor.comp.2]
        let sources = [frame.data.0, frame.data.1, frame.data.2], strides = [frame.linesize.0, frame.linesize.1, frame.linesize.2]
        for index in 0..<3 {
            let target = picture.layout[index]
            if index > 0 && descriptor.nb_components == 1 {  // 4:0:0: grey chroma
                picture.plane(index).initializeMemory(as: UInt8.self, repeating: 128)
                continue
            }
            let component = components[index]
            guard component.plane == index, component.step == bytes, let source = sources[index] else {
                throw unsupported(format, decoder)
            }
            // How many source samples one I420 sample covers, across and down.
            let across = index == 0 ? 1 : 2 >> Int(descriptor.log2_chroma_w)
            let down = index == 0 ? 1 : 2 >> Int(descriptor.log2_chroma_h)
            let sourceWidth = index == 0 ? Int(frame.width) : -((-Int(frame.width)) >> Int(descriptor.log2_chroma_w))
            let sourceRows = index == 0 ? Int(frame.height) : -((-Int(frame.height)) >> Int(descriptor.log2_chroma_h))
            let shift = depth - 8, stride = Int(strides[index])
            for row in 0..<target.rows {
                let line = picture.row(row, ofPlane: index).bindMemory(to: UInt8.self)
                for column in 0..<target.width {
                    var sum = 0, count = 0
                    for dy in 0..<down where row * down + dy < sourceRows {
                        let sourceRow = UnsafeRawPointer(source + (row * down + dy) * stride)
                        for dx in 0..<across where column * across + dx < sourceWidth {
                            let x = column * across + dx
                            sum += bytes == 1 ? Int(sourceRow.load(fromByteOffset: x, as: UInt8.self))
                                : Int(UInt16(littleEndian: sourceRow.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)))
                            count += 1
                        }
                    }
                    line[column] = UInt8(clamping: count == 0 ? 0 : ((sum + count / 2) / count) >> shift)
                }
            }
        }
    }

    private static func unsupported(_ format: AVPixelFormat, _ decoder: String) -> CodecError {
        let name = av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "\(format.rawValue)"
        return CodecError.library(name: FFmpegDecoders.name, operation: "decode", code: 0,
                                  message: "\(decoder): pixel format \(name) has no conversion to I420")
    }
}
