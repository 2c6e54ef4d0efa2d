/// The identification header of an Ogg Opus stream, the "OpusHead" packet (RFC 7845 §5.1).
public struct OggOpusHeader: Sendable, Equatable {
    /// The version byte; readers accept major version 0 (values 0...15).
    public var version: UInt8
    public var channels: Int
    /// Samples at 48 kHz to drop from the start of the decoded stream (RFC 7845 §4.2).
    public var preSkip: Int
    /// The sample rate of the encoder's input, for information only (0 = unspecified); Opus itself
    /// always runs at 48 kHz as far as timestamps go.
    public var inputSampleRate: Int
    /// Gain to apply when decoding, in dB as a Q7.8 number (RFC 7845 §5.1).
    public var outputGain: Int16
    /// 0: mono or stereo, one stream; 1: Vorbis channel order; 255: undefined (RFC 7845 §5.1.1).
    public var mappingFamily: Int
    /// Opus streams and coupled (stereo) streams in each packet; 1 and `channels - 1` for family 0.
    public var streamCount: Int
    public var coupledStreamCount: Int
    /// Decoded channel for each output channel; empty for family 0.
    public var channelMapping: [UInt8]

    /// A family 0 header for one mono or stereo stream.
    public init(channels: Int, preSkip: Int, inputSampleRate: Int, outputGain: Int16 = 0) {
        version = 1
        self.channels = channels
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
        self.outputGain = outputGain
        mappingFamily = 0
        streamCount = 1
        coupledStreamCount = channels - 1
        channelMapping = []
    }

    static let magic = Array("OpusHead".utf8)
    static let baseSize = 19

    /// The packet's bytes: magic, version, channels, pre-skip, rate, gain, family (and mapping table).
    public func encoded() -> [UInt8] {
        var bytes = Self.magic
        bytes.append(version)
        bytes.append(UInt8(channels))
        bytes.appendLittleEndian(UInt16(preSkip))
        bytes.appendLittleEndian(UInt32(inputSampleRate))
        bytes.appendLittleEndian(outputGain)
        bytes.append(UInt8(mappingFamily))
        if mappingFamily != 0 {
            bytes.append(UInt8(streamCount))
            bytes.append(UInt8(coupledStreamCount))
            bytes += channelMapping
        }
        return bytes
    }

    /// Parses an OpusHead packet that came from the page at `offset` of `path`.
    init(decoding packet: [UInt8], path: String, offset: Int) throws {
        func corrupt(_ detail: String) -> MediaFileError { .corrupt(path: path, offset: offset, detail: "OpusHead: " + detail) }
        guard packet.starts(with: Self.magic) else {
            throw corrupt("packet starts with \(quoted(packet.prefix(8))), not \"OpusHead\"")
        }
        guard packet.count >= Self.baseSize else { throw corrupt("\(packet.count) bytes, at least 19 needed") }
        version = packet[8]
        guard version & 0xF0 == 0 else {
            throw MediaFileError.unsupported(path: path, detail: "Ogg Opus version \(version) (major version \(version >> 4))")
        }
        channels = Int(packet[9])
        preSkip = Int(packet.littleEndian(UInt16.self, at: 10))
        inputSampleRate = Int(packet.littleEndian(UInt32.self, at: 12))
        outputGain = Int16(bitPattern: packet.littleEndian(UInt16.self, at: 16))
        mappingFamily = Int(packet[18])
        guard channels >= 1 else { throw corrupt("0 channels") }
        if mappingFamily == 0 {
            guard channels <= 2 else { throw corrupt("mapping family 0 with \(channels) channels (1 or 2 allowed)") }
            streamCount = 1
            coupledStreamCount = channels - 1
            channelMapping = []
            return
        }
        // RFC 7845 §5.1.1: stream count, coupled count, then one mapping byte per channel.
        guard packet.count >= Self.baseSize + 2 + channels else {
            throw corrupt("mapping family \(mappingFamily) needs \(Self.baseSize + 2 + channels) bytes, \(packet.count) present")
        }
        streamCount = Int(packet[19])
        coupledStreamCount = Int(packet[20])
        channelMapping = Array(packet[21..<(21 + channels)])
        guard streamCount >= 1, coupledStreamCount <= streamCount, streamCount + coupledStreamCount <= 255 else {
            throw corrupt("\(streamCount) streams with \(coupledStreamCount) coupled")
        }
        let decodedChannels = streamCount + coupledStreamCount
        if let bad = channelMapping.first(where: { $0 != 255 && Int($0) >= decodedChannels }) {
            throw corrupt("channel mapping names channel \(bad) of \(decodedChannels)")
        }
    }
}

/// The comment header of an Ogg Opus stream, the "OpusTags" packet (RFC 7845 §5.2).
struct OggOpusTags: Equatable {
    var vendor: String
    var comments: [String]

    static let magic = Array("OpusTags".utf8)

    func encoded() -> [UInt8] {
        var bytes = Self.magic
        let vendorBytes = Array(vendor.utf8)
        bytes.appendLittleEndian(UInt32(vendorBytes.count))
        bytes += vendorBytes
        bytes.appendLittleEndian(UInt32(comments.count))
        for comment in comments {
            let commentBytes = Array(comment.utf8)
            bytes.appendLittleEndian(UInt32(commentBytes.count))
            bytes += commentBytes
        }
        return bytes
    }

    /// Parses an OpusTags packet that ends on the page at `offset` of `path`.
    init(decoding packet: [UInt8], path: String, offset: Int) throws {
        func corrupt(_ detail: String) -> MediaFileError { .corrupt(path: path, offset: offset, detail: "OpusTags: " + detail) }
        guard packet.starts(with: Self.magic) else {
            throw corrupt("second packet starts with \(quoted(packet.prefix(8))), not \"OpusTags\"")
        }
        var cursor = Self.magic.count
        func field(_ what: String) throws -> [UInt8] {
            guard packet.count - cursor >= 4 else { throw corrupt("ends inside the length of the \(what)") }
            let length = Int(packet.littleEndian(UInt32.self, at: cursor))
            cursor += 4
            guard length <= packet.count - cursor else {
                throw corrupt("\(what) of \(length) bytes, \(packet.count - cursor) left")
            }
            defer { cursor += length }
            return Array(packet[cursor..<(cursor + length)])
        }
        vendor = String(decoding: try field("vendor string"), as: UTF8.self)
        guard packet.count - cursor >= 4 else { throw corrupt("ends before the comment count") }
        let count = Int(packet.littleEndian(UInt32.self, at: cursor))
        cursor += 4
        guard count <= (packet.count - cursor) / 4 else {
            throw corrupt("\(count) comments cannot fit in \(packet.count - cursor) bytes")
        }
        comments = []
        comments.reserveCapacity(count)
        for index in 0..<count {
            comments.append(String(decoding: try field("comment \(index)"), as: UTF8.self))
        }
    }

    init(vendor: String, comments: [String]) {
        self.vendor = vendor
        self.comments = comments
    }
}
