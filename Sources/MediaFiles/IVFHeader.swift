import MediaCore

/// The 32-byte header of an IVF file, as written by libvpx (`ivfenc.c`): "DKIF", version 0, header size 32,
/// fourcc, width, height, timebase denominator ("rate"), numerator ("scale"), frame count, 4 unused bytes;
/// all little-endian.
public struct IVFHeader: Equatable, Sendable {
    public var codec: CodecName
    public var width: Int
    public var height: Int
    /// Seconds per tick of the frame timestamps: scale/rate.
    public var timebase: Rational
    /// As recorded in the file. Many writers leave it 0 or wrong, so readers must not rely on it.
    public var frameCount: Int

    public init(codec: CodecName, width: Int, height: Int, timebase: Rational, frameCount: Int) {
        self.codec = codec
        self.width = width
        self.height = height
        self.timebase = timebase
        self.frameCount = frameCount
    }

    static let size = 32
    static let signature = Array("DKIF".utf8)
    private static let fourccs: [(fourcc: String, codec: CodecName)] = [("VP80", .vp8), ("VP90", .vp9), ("H264", .h264)]

    /// The codec a fourcc names: the known ones mapped, any other taken as the codec's name.
    static func codec(fourcc: [UInt8]) -> CodecName {
        let text = String(decoding: fourcc, as: UTF8.self)
        return fourccs.first { $0.fourcc == text }?.codec ?? CodecName(rawValue: text)
    }

    /// The fourcc for `codec`: the known ones mapped, any other name of 4 ASCII characters as is.
    static func fourcc(for codec: CodecName) -> [UInt8]? {
        if let known = fourccs.first(where: { $0.codec == codec }) { return Array(known.fourcc.utf8) }
        let name = Array(codec.rawValue.utf8)
        return name.count == 4 && name.allSatisfy({ (0x21..<0x7F).contains($0) }) ? name : nil
    }

    /// Parses and checks `bytes`, the first 32 bytes of the file (fewer if it is shorter).
    init(decoding bytes: [UInt8], path: String) throws {
        guard Self.signature.starts(with: bytes.prefix(Self.signature.count)) else {
            throw MediaFileError.corrupt(
                path: path, offset: 0, detail: "not an IVF file: starts with \(quoted(bytes.prefix(4))), not \"DKIF\"")
        }
        guard bytes.count == Self.size else {
            throw MediaFileError.truncated(
                path: path, offset: 0, detail: "file header needs \(Self.size) bytes, \(bytes.count) present")
        }
        let version = bytes.littleEndian(UInt16.self, at: 4)
        guard version == 0 else { throw MediaFileError.unsupported(path: path, detail: "IVF version \(version)") }
        let headerSize = bytes.littleEndian(UInt16.self, at: 6)
        guard headerSize == Self.size else {
            throw MediaFileError.corrupt(path: path, offset: 6, detail: "header size \(headerSize), expected \(Self.size)")
        }
        let rate = Int(bytes.littleEndian(UInt32.self, at: 16)), scale = Int(bytes.littleEndian(UInt32.self, at: 20))
        guard rate > 0, scale > 0 else {
            throw MediaFileError.corrupt(path: path, offset: 16, detail: "timebase \(scale)/\(rate)")
        }
        self.init(
            codec: Self.codec(fourcc: Array(bytes[8..<12])),
            width: Int(bytes.littleEndian(UInt16.self, at: 12)), height: Int(bytes.littleEndian(UInt16.self, at: 14)),
            timebase: Rational(scale, rate), frameCount: Int(bytes.littleEndian(UInt32.self, at: 24)))
    }

    /// The 32 header bytes, with `fourcc` for the codec.
    func encoded(fourcc: [UInt8]) -> [UInt8] {
        var bytes = Self.signature
        bytes.appendLittleEndian(UInt16(0))
        bytes.appendLittleEndian(UInt16(Self.size))
        bytes += fourcc
        bytes.appendLittleEndian(UInt16(width))
        bytes.appendLittleEndian(UInt16(height))
        bytes.appendLittleEndian(UInt32(timebase.denominator))
        bytes.appendLittleEndian(UInt32(timebase.numerator))
        bytes.appendLittleEndian(UInt32(frameCount))
        bytes.appendLittleEndian(UInt32(0))
        return bytes
    }
}

extension CodecName {
    /// VP9; MediaCore names no VP9 constant yet, so IVF keeps its own.
    static let vp9: CodecName = "VP9"
}
