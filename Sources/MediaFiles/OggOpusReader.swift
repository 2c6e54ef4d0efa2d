import COgg
import MediaCore

/// Reads the Opus stream of an Ogg file (RFC 7845), through libogg.
///
/// The first Opus stream found among the beginning-of-stream pages is read; pages of other logical
/// streams are skipped, and reading stops at the Opus stream's end-of-stream page. Packets come
/// with pts and duration in 48 kHz ticks on the decoded stream's timeline, pre-skip included (as
/// an `OpusEncoder` stamps them): a page's granule position minus the TOC durations of the packets
/// that complete on it (RFC 6716 §3.1, RFC 7845 §4) gives the first one's pts, and the last page's
/// smaller granule position shortens the last packets (end trimming, §4.4). A decoder drops
/// `header.preSkip` samples from the start.
///
/// Every failure is a `MediaFileError` naming the file and the offset of the page concerned: bytes
/// that are not an Ogg page (or fail its CRC) are corrupt; a file that ends inside a page is
/// truncated at that page. A file that simply stops after a whole page, without an end-of-stream
/// flag (a recording cut short), ends cleanly there.
///
/// Damage after the headers does not end the stream: a page that fails its CRC, a missing page, or
/// a page whose packets or granule position do not add up is skipped, counted in `damagedPages`
/// (the first kept in `firstDamage`), and reading goes on at the next good page. The packets of the
/// skipped page are missing from the timeline, so a decoder sees a gap in pts and can conceal it.
public final class OggOpusReader {
    public let path: String
    public private(set) var header: OggOpusHeader
    /// The OpusTags vendor string and user comments ("TAG=value").
    public private(set) var vendor: String
    public private(set) var comments: [String]
    public private(set) var serialNumber: Int32
    public private(set) var packetsRead = 0
    /// Audio pages skipped because they were damaged or out of sequence.
    public private(set) var damagedPages = 0
    /// Why the first of them was skipped.
    public private(set) var firstDamage: MediaFileError?
    /// File offset of the next page to read.
    public var byteOffset: Int { consumed }

    private let input: BufferedFileReader
    private let sync: UnsafeMutablePointer<ogg_sync_state>
    private let stream: UnsafeMutablePointer<ogg_stream_state>
    /// Bytes of the file libogg has handed back as pages (or skipped): the next page's offset.
    private var consumed = 0
    private var endOfFile = false
    private var endOfStream = false
    /// Set once OpusHead and OpusTags are read: from then on damaged pages are skipped.
    private var headersRead = false
    /// A page was skipped, so the next one follows a gap already counted.
    private var gapExpected = false
    /// libogg is skipping bad bytes; set until it finds a good page.
    private var skippingBytes = false
    /// The packets that completed on the current page, as libogg holds them (valid until the next
    /// page goes in), with their times in 48 kHz ticks; and the next one's index.
    private var pagePackets: [(bytes: UnsafeRawBufferPointer, pts: Int64, duration: Int64)] = []
    private var pageIndex = 0
    private var previousGranule: Int64?
    static let timebase = Rational(1, 48_000)

    static let readSize = 64 * 1024
    static let capture = Array("OggS".utf8)

    public init(path: String) throws {
        self.path = path
        input = try BufferedFileReader(path: path)
        sync = .allocate(capacity: 1)
        sync.initialize(to: ogg_sync_state())
        ogg_sync_init(sync)
        stream = .allocate(capacity: 1)
        stream.initialize(to: ogg_stream_state())
        ogg_stream_init(stream, 0)
        // Placeholders until the headers are parsed (the helpers below need a whole `self`).
        header = OggOpusHeader(channels: 1, preSkip: 0, inputSampleRate: 0)
        vendor = ""
        comments = []
        serialNumber = 0
        let (header, serial) = try readIdentificationHeader()
        self.header = header
        serialNumber = serial
        let tags = try readCommentHeader()
        vendor = tags.vendor
        comments = tags.comments
        headersRead = true
    }

    deinit {
        ogg_stream_clear(stream)
        stream.deallocate()
        ogg_sync_clear(sync)
        sync.deallocate()
    }

    /// The next packet, its bytes copied into a buffer from `pool` (or a fresh one); `nil` after the last.
    public func next(pool: BufferPool?) throws -> EncodedFrame? {
        while pageIndex == pagePackets.count {
            pagePackets.removeAll(keepingCapacity: true)
            pageIndex = 0
            if endOfStream { return nil }
            guard case (var page, let offset)? = try nextPage() else {
                endOfStream = true
                return nil
            }
            guard ogg_page_serialno(&page) == serialNumber else { continue }
            do {
                try load(page, at: offset)
            } catch let damage as MediaFileError {
                skipDamagedPage(damage)
            }
        }
        let packet = pagePackets[pageIndex]
        pageIndex += 1
        packetsRead += 1
        let buffer = pool?.acquire(capacity: packet.bytes.count) ?? FrameBuffer(capacity: packet.bytes.count)
        buffer.storage.baseAddress!.copyMemory(from: packet.bytes.baseAddress!, byteCount: packet.bytes.count)
        return EncodedFrame(codec: .opus, isKeyframe: true, pts: MediaTime(packet.pts, timebase: Self.timebase),
                            duration: MediaTime(packet.duration, timebase: Self.timebase), buffer: buffer)
    }

    // MARK: - Headers

    /// Finds the OpusHead packet among the beginning-of-stream pages (RFC 7845 §3).
    private func readIdentificationHeader() throws -> (OggOpusHeader, Int32) {
        while true {
            guard case (var page, let offset)? = try nextPage() else {
                throw MediaFileError.truncated(path: path, offset: consumed, detail: "no OpusHead packet before the end")
            }
            guard ogg_page_bos(&page) != 0 else {
                throw MediaFileError.corrupt(path: path, offset: offset,
                                             detail: "no OpusHead packet in the beginning-of-stream pages")
            }
            let body = UnsafeRawBufferPointer(start: page.body, count: page.body_len)
            guard body.starts(with: OggOpusHeader.magic) else { continue }  // another codec's stream
            let serial = ogg_page_serialno(&page)
            ogg_stream_reset_serialno(stream, serial)
            try pageIn(page, at: offset)
            guard let packet = try packetOut(at: offset) else {
                throw MediaFileError.corrupt(path: path, offset: offset, detail: "OpusHead packet does not end on its page")
            }
            let header = try OggOpusHeader(decoding: packet, path: path, offset: offset)
            if try packetOut(at: offset) != nil {
                throw MediaFileError.corrupt(path: path, offset: offset, detail: "OpusHead page holds another packet")
            }
            return (header, serial)
        }
    }

    /// Reads the OpusTags packet, which may span pages and must end its last one (RFC 7845 §3).
    private func readCommentHeader() throws -> OggOpusTags {
        while true {
            guard case (var page, let offset)? = try nextPage() else {
                throw MediaFileError.truncated(path: path, offset: consumed, detail: "no OpusTags packet before the end")
            }
            guard ogg_page_serialno(&page) == serialNumber else { continue }
            try pageIn(page, at: offset)
            guard let packet = try packetOut(at: offset) else { continue }
            let tags = try OggOpusTags(decoding: packet, path: path, offset: offset)
            if try packetOut(at: offset) != nil {
                throw MediaFileError.corrupt(path: path, offset: offset, detail: "audio packet on the OpusTags page")
            }
            if ogg_page_eos(&page) != 0 { endOfStream = true }
            return tags
        }
    }

    // MARK: - Audio pages

    private func recordDamage(_ damage: MediaFileError) {
        damagedPages += 1
        if firstDamage == nil { firstDamage = damage }
    }

    /// Records `damage` and forgets whatever the page held, so the next page starts clean. The
    /// sequence gap the next page will show is then expected, not counted again.
    private func skipDamagedPage(_ damage: MediaFileError) {
        recordDamage(damage)
        gapExpected = true
        pagePackets.removeAll(keepingCapacity: true)
        pageIndex = 0
        var packet = ogg_packet()
        while ogg_stream_packetout(stream, &packet) != 0 {}
        previousGranule = nil
    }

    /// Takes the packets that complete on `page` and works out their times.
    private func load(_ page: ogg_page, at offset: Int) throws {
        var page = page
        try pageIn(page, at: offset)
        defer { gapExpected = false }
        let last = ogg_page_eos(&page) != 0
        if last { endOfStream = true }
        var total = 0
        while true {
            var packet = ogg_packet()
            let status = ogg_stream_packetout(stream, &packet)
            if status == 0 { break }
            guard status > 0 else {
                // libogg drops what the missing page would have completed; this page's packets follow.
                if !gapExpected {
                    recordDamage(.corrupt(path: path, offset: offset, detail: "page sequence gap: a page is missing before this one"))
                }
                continue
            }
            let bytes = UnsafeRawBufferPointer(start: packet.packet, count: packet.bytes)
            guard let samples = OpusPacket.duration(bytes) else {
                throw MediaFileError.corrupt(
                    path: path, offset: offset,
                    detail: "packet \(packetsRead + pagePackets.count) (\(bytes.count) bytes) is not a well-formed Opus packet")
            }
            pagePackets.append((bytes, 0, Int64(samples)))  // times below, once the page's total is known
            total += samples
        }
        guard !pagePackets.isEmpty else { return }

        let granule = ogg_page_granulepos(&page)
        guard granule >= 0 else {
            throw MediaFileError.corrupt(path: path, offset: offset,
                                         detail: "page completes \(pagePackets.count) packets but has no granule position")
        }
        // RFC 7845 §4: the granule position is the sample count at the end of the page's last packet;
        // on the last page it may be smaller (end trimming), and then the page starts where the
        // previous one ended.
        var start = granule - Int64(total)
        if last, start < (previousGranule ?? 0) { start = previousGranule ?? 0 }
        guard start >= 0 else {
            throw MediaFileError.corrupt(
                path: path, offset: offset,
                detail: "granule position \(granule) is less than the \(total) samples of the packets ending on the page")
        }
        previousGranule = granule
        var time = start
        for index in pagePackets.indices {
            let samples = pagePackets[index].duration
            pagePackets[index].pts = time
            pagePackets[index].duration = Swift.max(0, Swift.min(time + samples, granule) - time)
            time += samples
        }
    }

    // MARK: - Pages and packets

    private func pageIn(_ page: ogg_page, at offset: Int) throws {
        var page = page
        guard ogg_stream_pagein(stream, &page) == 0 else {
            throw MediaFileError.corrupt(path: path, offset: offset,
                                         detail: "page rejected by libogg (Ogg version \(ogg_page_version(&page)))")
        }
    }

    /// The next whole packet of the stream as bytes; `nil` when the pages so far hold none.
    private func packetOut(at offset: Int) throws -> [UInt8]? {
        var packet = ogg_packet()
        let status = ogg_stream_packetout(stream, &packet)
        if status == 0 { return nil }
        guard status > 0 else {
            throw MediaFileError.corrupt(path: path, offset: offset, detail: "page sequence gap: a page is missing before this one")
        }
        return Array(UnsafeRawBufferPointer(start: packet.packet, count: packet.bytes))
    }

    /// The next page and its file offset; `nil` at a clean end of file. The page points into libogg's
    /// sync buffer: it is valid until the next call.
    private func nextPage() throws -> (ogg_page, Int)? {
        var page = ogg_page()
        while true {
            let result = ogg_sync_pageseek(sync, &page)
            if result > 0 {
                skippingBytes = false
                let offset = consumed
                consumed += result
                return (page, offset)
            }
            if result < 0 {
                // libogg has moved past the bad bytes; they are still in its buffer, `-result` bytes back.
                let found = Array(unreturned(from: -result).prefix(4))
                let damage = MediaFileError.corrupt(
                    path: path, offset: consumed,
                    detail: Array(found) == Self.capture
                        ? "Ogg page fails its CRC or has a bad header"
                        : "not an Ogg page: \(quoted(found)) where \"OggS\" should be")
                consumed -= result
                // Once the headers are read, bad bytes between pages are skipped (see the type's comment).
                guard headersRead else { throw damage }
                // libogg skips ahead to the next "O" at a time: one run of bad bytes is one damage.
                if !skippingBytes { skipDamagedPage(damage) }
                skippingBytes = true
                continue
            }
            if endOfFile {
                let rest = unreturned
                if rest.isEmpty { return nil }
                guard Self.capture.starts(with: rest.prefix(4)) else {
                    throw MediaFileError.corrupt(path: path, offset: consumed,
                                                 detail: "not an Ogg page: \(quoted(rest.prefix(4))) where \"OggS\" should be")
                }
                throw MediaFileError.truncated(path: path, offset: consumed, detail: Self.describeTruncation(rest))
            }
            guard let buffer = ogg_sync_buffer(sync, Self.readSize) else {
                throw MediaFileError.readFailed(path: path, offset: input.offset, reason: "libogg could not grow its buffer")
            }
            let count = try input.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Self.readSize))
            if count == 0 { endOfFile = true } else { ogg_sync_wrote(sync, count) }
        }
    }

    /// Bytes libogg holds that it has not returned as pages.
    private var unreturned: UnsafeRawBufferPointer { unreturned(from: 0) }

    /// Bytes in libogg's buffer from `back` bytes before the first unreturned one.
    private func unreturned(from back: Int) -> UnsafeRawBufferPointer {
        let state = sync.pointee
        let start = Int(state.returned) - back
        guard let data = state.data, start >= 0, Int(state.fill) > start else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: data + start, count: Int(state.fill) - start)
    }

    /// What is missing from a page cut short: its header, or part of its body.
    static func describeTruncation(_ rest: UnsafeRawBufferPointer) -> String {
        let headerSize = 27
        guard rest.count >= headerSize, rest.count >= headerSize + Int(rest[26]) else {
            let needed = rest.count >= headerSize ? headerSize + Int(rest[26]) : headerSize
            return "page header needs \(needed) bytes, \(rest.count) present"
        }
        let segments = Int(rest[26])
        let bodySize = (0..<segments).reduce(0) { $0 + Int(rest[headerSize + $1]) }
        return "page needs \(headerSize + segments + bodySize) bytes, \(rest.count) present"
    }
}
