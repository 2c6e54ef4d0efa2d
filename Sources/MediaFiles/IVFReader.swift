import MediaCore

/// Reads an IVF file: a 32-byte `IVFHeader`, then per frame a 12-byte header (4-byte little-endian size,
/// 8-byte little-endian pts) and the frame's bytes. The header's frame count is not trusted: frames are read
/// to the end of the file.
public final class IVFReader {
    public let path: String
    public let header: IVFHeader
    public private(set) var framesRead = 0
    /// File offset of the next byte to read.
    public var byteOffset: Int { input.offset }

    private let input: BufferedFileReader

    /// Larger frames are taken as corruption.
    static let maxFrameSize = 64 << 20
    static let frameHeaderSize = 12

    public init(path: String) throws {
        self.path = path
        input = try BufferedFileReader(path: path)
        header = try IVFHeader(decoding: try input.read(count: IVFHeader.size), path: path)
    }

    /// The next frame, its bytes in a buffer from `pool` (or a fresh one); `nil` at the end of the file.
    public func next(pool: BufferPool?) throws -> EncodedFrame? {
        let frameStart = input.offset
        let index = framesRead
        let frameHeader = try input.read(count: Self.frameHeaderSize)
        if frameHeader.isEmpty { return nil }
        guard frameHeader.count == Self.frameHeaderSize else {
            throw MediaFileError.truncated(
                path: path, offset: frameStart,
                detail: "frame \(index) header needs \(Self.frameHeaderSize) bytes, \(frameHeader.count) present")
        }
        let size = Int(frameHeader.littleEndian(UInt32.self, at: 0))
        guard (1...Self.maxFrameSize).contains(size) else {
            throw MediaFileError.corrupt(path: path, offset: frameStart, detail: "frame \(index) declares \(size) bytes")
        }
        let pts = MediaTime(Int64(bitPattern: frameHeader.littleEndian(UInt64.self, at: 4)), timebase: header.timebase)
        let buffer = pool?.acquire(capacity: size) ?? FrameBuffer(capacity: size)
        let present = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer.storage[0..<size]))
        guard present == size else {
            throw MediaFileError.truncated(
                path: path, offset: frameStart, detail: "frame \(index) needs \(size) bytes, \(present) present")
        }
        let frame = EncodedFrame(codec: header.codec, isKeyframe: Self.isKeyframe(buffer.bytes, codec: header.codec),
                                 pts: pts, buffer: buffer)
        framesRead += 1
        return frame
    }

    /// Whether `payload` starts a key frame; `false` for codecs whose headers are not parsed here.
    static func isKeyframe(_ payload: UnsafeRawBufferPointer, codec: CodecName) -> Bool {
        guard let first = payload.first else { return false }
        switch codec {
        case .vp8:
            // RFC 6386 §9.1: bit 0 of the frame tag is 0 for a key frame.
            return first & 1 == 0
        case .vp9:
            // VP9 bitstream spec §6.2: frame_marker(2), profile_low_bit, profile_high_bit,
            // reserved_zero (profile 3 only), show_existing_frame, frame_type (0 = KEY_FRAME).
            let profile = (first >> 5 & 1) | (first >> 3 & 2)
            let showExisting = profile == 3 ? first >> 2 & 1 : first >> 3 & 1
            let frameType = profile == 3 ? first >> 1 & 1 : first >> 2 & 1
            return first >> 6 == 2 && showExisting == 0 && frameType == 0
        default:
            return false
        }
    }
}
