import MediaCore

/// Reads a raw H.264 byte stream (ITU-T H.264 Annex B, a `.h264` file) access unit by access unit.
///
/// Each `EncodedFrame` is one access unit as it is in the file: from the start code of its first NAL
/// unit (with the zero_byte in front of `00 00 01` if there is one) to the start code of the next access
/// unit, so that the frames put back together give the file again. The boundaries follow §7.4.1.2.3:
/// once the current access unit has a slice (a VCL NAL unit, types 1 to 5), a new one starts at an
/// access unit delimiter, SPS, PPS, SEI (types 9, 7, 8, 6, and 14 to 18), or at a slice whose
/// first_mb_in_slice is 0 (the first bit after the NAL header is 1, ue(v) for 0). A raw stream has
/// no timestamps: `pts` and `dts` count access units in file (decoding) order at `frameRate`, which
/// is the one given, else the first SPS's VUI timing, else 25 fps.
/// `isKeyframe` means the access unit has an IDR slice (type 5).
///
/// The first sequence parameter set, which must come before the first slice, gives `width` and
/// `height`; later ones are not checked. Errors name the file and the byte offset of the offending
/// NAL unit. When damage follows a picture, that access unit (up to its last whole NAL unit) is still
/// returned and the error comes with the next call; after an error, every call throws it again.
public final class AnnexBReader {
    public let path: String
    public let frameRate: Rational
    /// The first sequence parameter set of the file.
    public let sequenceParameterSet: H264SequenceParameterSet
    /// The picture size the first sequence parameter set gives (cropping applied).
    public let width: Int
    public let height: Int
    public private(set) var accessUnitsRead = 0

    private let scanner: AnnexBScanner
    /// The NAL unit that ended the previous access unit by starting this one.
    private var pending: AnnexBScanner.NALUnit?
    /// The error that stopped reading, thrown again by every later call.
    private var failure: (any Error)?

    /// The frame rate assumed when neither the caller nor the stream gives one.
    public static let defaultFrameRate = Rational(25, 1)

    /// Opens `path` and reads up to its first sequence parameter set.
    public convenience init(path: String, frameRate: Rational? = nil) throws {
        try self.init(path: path, frameRate: frameRate, readSize: AnnexBScanner.defaultReadSize)
    }

    /// `readSize`: bytes read from the file at a time (tests use tiny ones to put start codes across reads).
    init(path: String, frameRate: Rational?, readSize: Int) throws {
        if let frameRate, frameRate.numerator <= 0 {
            throw MediaFileError.unsupported(path: path, detail: "frame rate \(frameRate) must be positive")
        }
        self.path = path
        sequenceParameterSet = try Self.firstSequenceParameterSet(path: path, readSize: readSize)
        self.frameRate = frameRate ?? sequenceParameterSet.frameRate.flatMap { $0 <= Rational(1000, 1) ? $0 : nil }
            ?? Self.defaultFrameRate
        width = sequenceParameterSet.width
        height = sequenceParameterSet.height
        scanner = try AnnexBScanner(path: path, readSize: readSize)
    }

    /// The next access unit, its bytes in a buffer from `pool` (or a fresh one); `nil` at the end of the file.
    public func next(pool: BufferPool?) throws -> EncodedFrame? {
        if let failure { throw failure }
        var start: Int?, end = 0
        var hasSlice = false, hasIDR = false
        while true {
            let unit: AnnexBScanner.NALUnit, type: Int
            do {
                guard let next = try pending ?? scanner.next() else { break }
                unit = next
                type = try Self.type(of: unit, in: scanner)
            } catch {
                // Damage after a picture: hand out what came before it, and the error next time.
                failure = error
                guard hasSlice else { throw error }
                break
            }
            pending = nil
            if hasSlice, Self.startsAccessUnit(unit, type: type, in: scanner) {
                pending = unit
                break
            }
            if start == nil { start = unit.unitStart }
            end = unit.end
            hasSlice = hasSlice || H264NALType.isVCL(type)
            hasIDR = hasIDR || type == H264NALType.idrSlice
        }
        guard let start else { return nil }
        guard hasSlice else {
            let error = MediaFileError.truncated(
                path: path, offset: start,
                detail: "access unit \(accessUnitsRead) has no slice: the file ends after its other NAL units")
            failure = error
            throw error
        }
        if failure == nil { end = pending?.unitStart ?? scanner.endOffset }
        let bytes = scanner.bytes(start..<end)
        let timebase = frameRate.reciprocal
        let frame = EncodedFrame(codec: .h264, isKeyframe: hasIDR, pts: MediaTime(Int64(accessUnitsRead), timebase: timebase),
                                 duration: MediaTime(1, timebase: timebase), copying: bytes, pool: pool)
        scanner.release(before: end)
        accessUnitsRead += 1
        return frame
    }

    /// The type of `unit`, after checking its header (§7.4.1: forbidden_zero_bit is 0; slices have a header).
    private static func type(of unit: AnnexBScanner.NALUnit, in scanner: AnnexBScanner) throws -> Int {
        let header = scanner.byte(at: unit.header)
        guard header & 0x80 == 0 else { throw scanner.corrupt(unit.header, "NAL unit header has forbidden_zero_bit set") }
        let type = H264NALType.type(ofHeader: header)
        if (type == 1 || type == 2 || type == 5) && unit.end - unit.header < 2 {
            throw scanner.corrupt(unit.header, "slice NAL unit of type \(type) has no slice header")
        }
        return type
    }

    /// Whether `unit` begins a new access unit after one that has a slice (§7.4.1.2.3).
    private static func startsAccessUnit(_ unit: AnnexBScanner.NALUnit, type: Int, in scanner: AnnexBScanner) -> Bool {
        switch type {
        case 6...9, 14...18: return true
        case 1, 2, 5: return scanner.byte(at: unit.header + 1) & 0x80 != 0  // first_mb_in_slice == 0
        default: return false
        }
    }

    /// Scans `path` up to its first SPS and parses it; a slice before it is an error.
    private static func firstSequenceParameterSet(path: String, readSize: Int) throws -> H264SequenceParameterSet {
        let scanner = try AnnexBScanner(path: path, readSize: readSize)
        while let unit = try scanner.next() {
            let type = try Self.type(of: unit, in: scanner)
            if type == H264NALType.sps {
                do {
                    return try H264SequenceParameterSet(
                        parsing: scanner.bytes(unit.header..<unit.end), path: path, offset: unit.header)
                } catch MediaFileError.corrupt(_, let offset, let detail) where scanner.isFinished {
                    // The SPS runs to the end of the file: the file was cut inside it.
                    throw MediaFileError.truncated(path: path, offset: offset, detail: detail)
                }
            }
            if H264NALType.isVCL(type) {
                throw scanner.corrupt(unit.unitStart, "slice (NAL unit type \(type)) before any sequence parameter set")
            }
            scanner.release(before: unit.end)
        }
        throw MediaFileError.corrupt(path: path, offset: scanner.endOffset, detail: "no sequence parameter set in the file")
    }
}

/// Finds the NAL units of an Annex-B file one after the other. The file's bytes from the last
/// `release(before:)` on stay in one buffer, so a whole access unit can be copied out at once; the
/// buffer grows as an access unit needs, up to `maxHeldBytes`.
final class AnnexBScanner {
    /// Where a NAL unit lies in the file.
    struct NALUnit {
        /// Its start code, counting the zero_byte in front of `00 00 01` if there is one.
        var unitStart: Int
        /// Its header byte.
        var header: Int
        /// Just past its last non-zero byte (trailing zero bytes are not part of it).
        var end: Int
    }

    let path: String
    /// More than this without an access unit boundary is taken as corruption.
    static let maxHeldBytes = 64 << 20
    static let defaultReadSize = 64 * 1024

    /// Bytes read from the file at a time.
    let readSize: Int

    private let input: BufferedFileReader
    private var buffer: UnsafeMutableRawBufferPointer
    /// File offset of `buffer[0]`; `buffer[0..<filled]` holds file bytes.
    private var bufferOffset = 0
    private var filled = 0
    /// Bytes before this file offset may be dropped.
    private var keepFrom = 0
    /// Where the search for the next start code resumes.
    private var searchFrom = 0
    private var atEnd = false
    private var started = false
    /// The NAL unit whose start is known but whose end is not yet.
    private var open: (unitStart: Int, header: Int)?

    init(path: String, readSize: Int = defaultReadSize) throws {
        precondition(readSize > 0)
        self.path = path
        self.readSize = readSize
        input = try BufferedFileReader(path: path, bufferSize: 4096)
        buffer = .allocate(byteCount: 2 * readSize, alignment: 64)
    }

    deinit { buffer.deallocate() }

    /// Whether the NAL unit `next()` returned last runs to the end of the file.
    var isFinished: Bool { started && open == nil }

    /// File offset just past the bytes read; the file's length once `next()` has returned `nil`.
    var endOffset: Int { bufferOffset + filled }

    /// The byte at file offset `offset`, which must be held.
    func byte(at offset: Int) -> UInt8 { buffer[offset - bufferOffset] }

    /// The held bytes at file offsets `range`; valid until the next call to `next()`.
    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[(range.lowerBound - bufferOffset)..<(range.upperBound - bufferOffset)])
    }

    /// Lets the scanner drop the bytes before `offset` (at most the start of the NAL unit after the last one returned).
    func release(before offset: Int) { keepFrom = Swift.max(keepFrom, offset) }

    func corrupt(_ offset: Int, _ detail: String) -> MediaFileError {
        .corrupt(path: path, offset: offset, detail: detail)
    }

    /// The next NAL unit of the file, `nil` after the last.
    func next() throws -> NALUnit? {
        if !started { try findFirstStartCode() }
        guard let current = open else { return nil }
        while true {
            let from = Swift.max(searchFrom, current.header)
            if let found = AnnexB.startCodePrefix(in: bytes(from..<endOffset)) {
                let prefix = from + found
                let end = lastNonZero(before: prefix, notBefore: current.header)
                guard end > current.header else {
                    throw corrupt(current.unitStart, "empty NAL unit: a start code follows the start code")
                }
                // One zero byte right before `00 00 01` is the next unit's zero_byte; more are trailing zeros.
                open = (prefix > end ? prefix - 1 : prefix, prefix + 3)
                searchFrom = prefix + 3
                return NALUnit(unitStart: current.unitStart, header: current.header, end: end)
            }
            // A start code may straddle what is held and what comes next.
            searchFrom = Swift.max(current.header, endOffset - 2)
            if try !readMore() {
                open = nil
                let end = lastNonZero(before: endOffset, notBefore: current.header)
                guard end > current.header else {
                    throw MediaFileError.truncated(path: path, offset: current.unitStart,
                                                   detail: "the file ends after a start code, with no NAL unit")
                }
                return NALUnit(unitStart: current.unitStart, header: current.header, end: end)
            }
        }
    }

    /// Just past the last non-zero byte in `start..<end`, or `start`.
    private func lastNonZero(before end: Int, notBefore start: Int) -> Int {
        var end = end
        while end > start && byte(at: end - 1) == 0 { end -= 1 }
        return end
    }

    /// Skips leading zero bytes (leading_zero_8bits, §B.2) to the first `00 00 01`.
    private func findFirstStartCode() throws {
        started = true
        var offset = 0
        while true {
            guard try hold(offset) else {
                throw corrupt(0, offset == 0 ? "empty file: no H.264 start code"
                                             : "\(offset) zero bytes and no H.264 start code")
            }
            if byte(at: offset) != 0 { break }
            offset += 1
            release(before: offset - 3)
        }
        guard offset >= 2, byte(at: offset) == 1 else {
            let shown = bytes(Swift.max(keepFrom, offset - 2)..<Swift.min(endOffset, offset + 6))
            throw corrupt(0, "does not start with an H.264 start code (00 00 01): \(quoted(shown)) at byte \(offset)")
        }
        open = (Swift.max(keepFrom, offset - 3), offset + 1)
        searchFrom = offset + 1
    }

    /// Reads until the byte at `offset` is held; false if the file ends first.
    private func hold(_ offset: Int) throws -> Bool {
        while offset >= endOffset {
            if try !readMore() { return false }
        }
        return true
    }

    /// Drops released bytes, grows the buffer if needed, and reads more of the file; false at its end.
    private func readMore() throws -> Bool {
        guard !atEnd else { return false }
        let dropped = keepFrom - bufferOffset
        if dropped > 0 {
            let kept = filled - dropped
            if kept > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + dropped, byteCount: kept) }
            bufferOffset = keepFrom
            filled = kept
        }
        if buffer.count - filled < readSize {
            guard filled < Self.maxHeldBytes else {
                throw corrupt(keepFrom, "no access unit boundary in the \(filled) bytes from here")
            }
            let grown = UnsafeMutableRawBufferPointer.allocate(
                byteCount: Swift.max(2 * buffer.count, filled + readSize), alignment: 64)
            grown.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: filled)
            buffer.deallocate()
            buffer = grown
        }
        let count = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<(filled + readSize)]))
        filled += count
        if count < readSize { atEnd = true }  // a short read happens only at the end of the file
        return count > 0
    }
}
