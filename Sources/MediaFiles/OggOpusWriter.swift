import COgg
import MediaCore

/// Writes an Ogg Opus file (RFC 7845) of one mono or stereo stream, through libogg.
///
/// The OpusHead and OpusTags headers each get a page of their own (§3), then audio pages whose
/// granule position counts 48 kHz samples including the pre-skip (§4). Packets are taken as one
/// continuous stream: the first one starts at granule 0, each advances it by the duration its TOC
/// byte gives. The last packet is held back until the next one arrives or `close()`, so that its
/// page can carry the end-of-stream flag and a granule position trimmed to the packet's
/// `duration` when that is shorter than the audio it holds (end trimming, §4.4; `OpusEncoder`'s
/// flush marks its last packet so). A page is written whenever libogg fills one (about 4 KB) and
/// at least every `maxPageDuration` of audio, so a run that stops part-way leaves a valid file of
/// all but the last page's worth of packets.
public final class OggOpusWriter {
    public let path: String
    public let header: OggOpusHeader
    /// The logical stream's serial number, random as RFC 3533 §4 advises.
    public let serialNumber: Int32
    /// Pages are flushed once they hold this many 48 kHz samples of audio.
    public let maxPageDuration: Int
    /// Audio packets written (including the one held back).
    public private(set) var packetsWritten = 0
    /// Samples (48 kHz, per channel) of decoded audio the pages written so far stand for, pre-skip and
    /// trimmed end taken off: after `close()`, the file's playing time.
    public var samplesWritten: Int { Swift.max(0, Int(granule) - header.preSkip) }

    private let file: FileWriter
    private let stream: UnsafeMutablePointer<ogg_stream_state>
    /// Granule position after the last packet given to libogg.
    private var granule: Int64 = 0
    private var packetNumber: Int64 = 0
    /// Audio given to libogg since the last page went out.
    private var unpagedSamples = 0
    /// The packet held back, with its TOC duration.
    private var held: (frame: EncodedFrame, samples: Int)?
    /// Where the OpusTags page is, and its bytes, for setting its end-of-stream flag if no audio follows.
    private var tagsPage: (offset: Int, bytes: [UInt8])?
    /// One page's bytes, reused so that each page is one write.
    private var scratch: [UInt8] = []
    private var closed = false

    /// Creates the file and writes both headers. `channels` is 1 or 2 (mapping family 0), `preSkip`
    /// in 48 kHz samples (an `OpusEncoder`'s `preSkip`), `inputSampleRate` informational.
    public init(path: String, channels: Int, inputSampleRate: Int, preSkip: Int, outputGain: Int16 = 0,
                maxPageDuration: Int = 48_000) throws {
        guard (1...2).contains(channels) else {
            throw MediaFileError.unsupported(path: path, detail: "\(channels) channels (Ogg Opus mapping family 0 takes 1 or 2)")
        }
        guard (0...0xFFFF).contains(preSkip) else {
            throw MediaFileError.unsupported(path: path, detail: "pre-skip \(preSkip) (OpusHead allows 0 to 65535)")
        }
        guard (0...Int(UInt32.max)).contains(inputSampleRate) else {
            throw MediaFileError.unsupported(path: path, detail: "input sample rate \(inputSampleRate)")
        }
        self.path = path
        header = OggOpusHeader(channels: channels, preSkip: preSkip, inputSampleRate: inputSampleRate,
                               outputGain: outputGain)
        serialNumber = Int32(bitPattern: UInt32.random(in: 0...UInt32.max))
        self.maxPageDuration = Swift.max(1, maxPageDuration)
        file = try FileWriter(path: path)
        stream = .allocate(capacity: 1)
        stream.initialize(to: ogg_stream_state())
        ogg_stream_init(stream, serialNumber)

        try submit(header.encoded(), beginning: true, end: false, granule: 0)
        try flushPages()
        let tagsOffset = file.length
        try submit(OggOpusTags(vendor: "Sluice", comments: []).encoded(), beginning: false, end: false, granule: 0)
        try flushPages()
        tagsPage = (tagsOffset, scratch)
    }

    deinit {
        try? close()
        ogg_stream_clear(stream)
        stream.deallocate()
    }

    /// Adds one Opus packet; it is written when the next packet comes or at `close()`.
    public func write(_ packet: EncodedFrame) throws {
        guard !closed else { throw MediaFileError.writeFailed(path: path, reason: "file is closed") }
        guard packet.codec == .opus else {
            throw MediaFileError.writeFailed(path: path, reason: "packet is \(packet.codec), file is Opus")
        }
        guard let samples = OpusPacket.duration(packet.bytes) else {
            throw MediaFileError.writeFailed(
                path: path, reason: "packet \(packetsWritten) (\(packet.byteCount) bytes) is not a well-formed Opus packet")
        }
        if let held { try submitAudio(held.frame, samples: held.samples, last: false) }
        held = (packet, samples)
        packetsWritten += 1
    }

    /// Writes the held packet with the end-of-stream flag and its trimmed granule position, flushes
    /// the last page and closes the file; later calls do nothing.
    public func close() throws {
        guard !closed else { return }
        closed = true
        let written = Result {
            if let held {
                self.held = nil
                try submitAudio(held.frame, samples: held.samples, last: true)
            } else if let tagsPage {
                try markEndOfStream(tagsPage)
            }
            try flushPages()
        }
        try file.close()
        try written.get()
    }

    // MARK: - Helpers

    private func submitAudio(_ packet: EncodedFrame, samples: Int, last: Bool) throws {
        var end = granule + Int64(samples)
        if last, let duration = packet.duration {
            let kept = duration.rescaled(to: Rational(1, 48_000)).value
            if kept >= 0 && kept < Int64(samples) { end = granule + kept }  // end trimming, RFC 7845 §4.4
        }
        try withExtendedLifetime(packet) {
            try submit(packet.bytes, beginning: false, end: last, granule: end)
        }
        granule = end
        unpagedSamples += samples
        if last { return }
        // Pages libogg considers full, then a forced one when the page holds enough time.
        try writePages(flush: false)
        if unpagedSamples >= maxPageDuration { try flushPages() }
    }

    private func submit(_ bytes: [UInt8], beginning: Bool, end: Bool, granule: Int64) throws {
        try bytes.withUnsafeBytes { try submit($0, beginning: beginning, end: end, granule: granule) }
    }

    private func submit(_ bytes: UnsafeRawBufferPointer, beginning: Bool, end: Bool, granule: Int64) throws {
        var packet = ogg_packet()
        packet.packet = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        packet.bytes = bytes.count
        packet.b_o_s = beginning ? 1 : 0
        packet.e_o_s = end ? 1 : 0
        packet.granulepos = granule
        packet.packetno = packetNumber
        guard ogg_stream_packetin(stream, &packet) == 0 else {
            throw MediaFileError.writeFailed(path: path, reason: "libogg refused packet \(packetNumber)")
        }
        packetNumber += 1
    }

    /// Writes every complete page, then (with `flush`) what remains as a last page.
    private func writePages(flush: Bool) throws {
        var page = ogg_page()
        while (flush ? ogg_stream_flush(stream, &page) : ogg_stream_pageout(stream, &page)) != 0 {
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: UnsafeRawBufferPointer(start: page.header, count: page.header_len))
            scratch.append(contentsOf: UnsafeRawBufferPointer(start: page.body, count: page.body_len))
            try file.append(scratch)
            unpagedSamples = 0
        }
    }

    private func flushPages() throws { try writePages(flush: true) }

    /// Sets the end-of-stream flag on the already written OpusTags page (a file with no audio).
    private func markEndOfStream(_ written: (offset: Int, bytes: [UInt8])) throws {
        var bytes = written.bytes
        bytes[5] |= 0x04
        let headerLength = 27 + Int(bytes[26])
        try bytes.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var page = ogg_page(header: base, header_len: headerLength, body: base + headerLength,
                                body_len: raw.count - headerLength)
            ogg_page_checksum_set(&page)
            try file.patch(Array(raw), at: written.offset)
        }
    }
}
