import MediaCore

/// What a JPEG picture's frame header (SOF) says: its size and how its chroma is subsampled. Read
/// without decoding, so that a picture Sluice cannot decode is named before libjpeg sees it.
///
/// The syntax is ITU-T T.81: a picture starts with SOI (`FF D8`), then marker segments `FF xx`
/// followed by a 2-byte big-endian length that counts itself (B.1.1.4), except the stand-alone
/// markers TEM and RST0-7. The frame header (B.2.2) holds sample precision, height, width and, per
/// component, an id and its horizontal and vertical sampling factors (Table B.2).
public struct JPEGFrameHeader: Equatable, Sendable {
    /// How the two chroma components are sampled relative to luma.
    public enum Subsampling: String, Equatable, Sendable {
        /// Chroma halved both ways (luma sampling factors 2x2, Cb and Cr 1x1).
        case yuv420 = "4:2:0"
        /// Chroma halved horizontally (luma 2x1 or 2x2 against chroma 1x1 or 1x2), what most cameras send.
        case yuv422 = "4:2:2"
        /// Full chroma (equal factors for every component).
        case yuv444 = "4:4:4"
        /// Luma alone (one component).
        case gray = "4:0:0"
    }

    public var width: Int
    public var height: Int
    public var subsampling: Subsampling
    /// The frame header's marker: `0xC0` baseline, `0xC1` extended sequential, `0xC2` progressive,
    /// `0xC9`/`0xCA` the same with arithmetic coding.
    public var process: UInt8

    public init(width: Int, height: Int, subsampling: Subsampling, process: UInt8 = 0xC0) {
        self.width = width
        self.height = height
        self.subsampling = subsampling
        self.process = process
    }

    /// Reads the frame header of the JPEG picture in `bytes`, checking the segments before it.
    ///
    /// Throws `MJPEGError.notJPEG` when `bytes` do not start with SOI, `.truncated` when a segment runs
    /// past the end, `.malformedSegment` for a marker or length that T.81 does not allow,
    /// `.missingFrameHeader` when the scan (SOS) or the end (EOI) comes first, and `.unsupported` for
    /// pictures that are not 8-bit sequential or progressive Y'CbCr (or gray) in one of the four
    /// subsamplings above. Where libjpeg guesses RGB from other markers (Adobe), libjpeg-turbo's
    /// own reading decides (see `MJPEGDecoder`).
    public init(parsing bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xD8 else { throw MJPEGError.notJPEG }
        var offset = 2
        while true {
            guard offset < bytes.count else { throw MJPEGError.truncated(offset: offset) }
            guard bytes[offset] == 0xFF else { throw MJPEGError.malformedSegment(marker: bytes[offset], offset: offset) }
            let start = offset
            while offset < bytes.count && bytes[offset] == 0xFF { offset += 1 }  // fill bytes (B.1.1.2)
            guard offset < bytes.count else { throw MJPEGError.truncated(offset: start) }
            let marker = bytes[offset]
            offset += 1
            switch marker {
            case 0x01, 0xD0...0xD7: continue  // TEM, RSTn: no length
            case 0xD9, 0xDA: throw MJPEGError.missingFrameHeader  // EOI or SOS before any SOF
            case 0x00, 0xD8: throw MJPEGError.malformedSegment(marker: marker, offset: start)
            default: break
            }
            guard offset + 2 <= bytes.count else { throw MJPEGError.truncated(offset: start) }
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard length >= 2 else { throw MJPEGError.malformedSegment(marker: marker, offset: start) }
            guard offset + length <= bytes.count else { throw MJPEGError.truncated(offset: start) }
            // SOF0-15 are C0-CF less DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
                self = try Self(frameHeader: UnsafeRawBufferPointer(rebasing: bytes[(offset + 2)..<(offset + length)]),
                                marker: marker, offset: start)
                return
            }
            offset += length
        }
    }

    /// Parses the body of a frame header segment (after its length).
    private init(frameHeader body: UnsafeRawBufferPointer, marker: UInt8, offset: Int) throws {
        switch marker {
        case 0xC0, 0xC1, 0xC2, 0xC9, 0xCA: break
        case 0xC3, 0xCB: throw MJPEGError.unsupported("lossless JPEG (SOF\(marker & 0x0F))")
        default: throw MJPEGError.unsupported("hierarchical JPEG (SOF\(marker & 0x0F))")
        }
        guard body.count >= 6 else { throw MJPEGError.malformedSegment(marker: marker, offset: offset) }
        let precision = Int(body[0])
        let height = Int(body[1]) << 8 | Int(body[2]), width = Int(body[3]) << 8 | Int(body[4])
        let components = Int(body[5])
        guard components >= 1, body.count == 6 + 3 * components, width > 0 else {
            throw MJPEGError.malformedSegment(marker: marker, offset: offset)
        }
        guard precision == 8 else { throw MJPEGError.unsupported("\(precision)-bit samples") }
        guard height > 0 else { throw MJPEGError.unsupported("height given after the first scan (DNL)") }
        /// Horizontal and vertical sampling factors of component `index` (1...4 each, Table B.2).
        func factors(_ index: Int) throws -> (Int, Int) {
            let hv = body[6 + 3 * index + 1]
            let h = Int(hv >> 4), v = Int(hv & 0x0F)
            guard (1...4).contains(h), (1...4).contains(v) else {
                throw MJPEGError.malformedSegment(marker: marker, offset: offset)
            }
            return (h, v)
        }
        switch components {
        case 1:
            _ = try factors(0)
            subsampling = .gray
        case 3:
            // Only the ratio of luma's factors to chroma's matters: libjpeg writes 4:2:2 as 2x1, 1x1, 1x1,
            // ffmpeg as 2x2, 1x2, 1x2.
            let (luma, cb, cr) = (try factors(0), try factors(1), try factors(2))
            let ratio = cb == cr && luma.0 % cb.0 == 0 && luma.1 % cb.1 == 0 ? (luma.0 / cb.0, luma.1 / cb.1) : (0, 0)
            switch ratio {
            case (2, 2): subsampling = .yuv420
            case (2, 1): subsampling = .yuv422
            case (1, 1): subsampling = .yuv444
            default:
                throw MJPEGError.unsupported("chroma sampling \(luma.0)x\(luma.1), \(cb.0)x\(cb.1), \(cr.0)x\(cr.1)")
            }
        default:
            throw MJPEGError.unsupported("\(components) components")
        }
        self.width = width
        self.height = height
        self.process = marker
    }
}

/// Why a JPEG picture was not decoded. Failures inside libjpeg come as `CodecError.library`.
public enum MJPEGError: Error, Equatable, CustomStringConvertible {
    /// The data does not start with a JPEG SOI marker.
    case notJPEG
    /// The data ends inside the segment that starts at `offset`.
    case truncated(offset: Int)
    /// No EOI marker near the end: the picture was cut short.
    case missingEndOfImage(byteCount: Int)
    /// A marker or segment length that the JPEG syntax does not allow, at `offset`.
    case malformedSegment(marker: UInt8, offset: Int)
    /// The scan or the end of the picture comes before any frame header.
    case missingFrameHeader
    /// A valid JPEG that Sluice does not decode (the reason says which feature).
    case unsupported(String)
    /// The picture's size is not the stream's.
    case sizeMismatch(width: Int, height: Int, expectedWidth: Int, expectedHeight: Int)

    public var description: String {
        switch self {
        case .notJPEG: return "not a JPEG picture (no SOI marker)"
        case .truncated(let offset): return "JPEG picture ends inside the segment at byte \(offset)"
        case .missingEndOfImage(let count): return "JPEG picture of \(count) bytes has no EOI marker: cut short"
        case .malformedSegment(let marker, let offset):
            return "malformed JPEG segment (marker 0x\(String(marker, radix: 16, uppercase: true))) at byte \(offset)"
        case .missingFrameHeader: return "JPEG picture has no frame header before its scan"
        case .unsupported(let what): return "unsupported JPEG: \(what)"
        case .sizeMismatch(let w, let h, let ew, let eh): return "JPEG picture is \(w)x\(h), stream is \(ew)x\(eh)"
        }
    }
}
