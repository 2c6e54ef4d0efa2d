/// SDES, source description (RFC 3550 §6.5): chunks of items (CNAME, NAME, ...) about sources. Every
/// compound packet carries the sender's CNAME (§6.1). Item values are owned bytes (UTF-8 text).
///
/// ```
/// chunk:  SSRC/CSRC (32) | type (8) | length (8) | text ... | ... | 0 (end) | 0 padding to 32 bits
/// ```

/// One SDES item: a type and up to 255 bytes of UTF-8 text (RFC 3550 §6.5).
public struct SourceDescriptionItem: Sendable, Hashable {
    /// The item type byte.
    public struct ItemType: RawRepresentable, Sendable, Hashable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Canonical end-point identifier, §6.5.1.
        public static let cname = ItemType(rawValue: 1)
        /// User name, §6.5.2.
        public static let name = ItemType(rawValue: 2)
        public static let email = ItemType(rawValue: 3)
        public static let phone = ItemType(rawValue: 4)
        public static let location = ItemType(rawValue: 5)
        public static let tool = ItemType(rawValue: 6)
        public static let note = ItemType(rawValue: 7)
        /// Private extensions, §6.5.8: a prefix length, prefix and value inside the text.
        public static let privateExtension = ItemType(rawValue: 8)
    }

    public var type: ItemType
    /// The item's text as bytes (normally UTF-8).
    public var value: [UInt8]

    public init(type: ItemType, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    public init(type: ItemType, text: String) { self.init(type: type, value: Array(text.utf8)) }

    /// The value decoded as UTF-8 (invalid bytes become U+FFFD).
    public var text: String { String(decoding: value, as: UTF8.self) }
}

/// SDES: chunks, each a source identifier and its items (RFC 3550 §6.5).
public struct SourceDescription: RTCPSerializable, Hashable {
    /// The items about one source.
    public struct Chunk: Sendable, Hashable {
        /// "SSRC/CSRC".
        public var source: UInt32
        public var items: [SourceDescriptionItem]

        public init(source: UInt32, items: [SourceDescriptionItem]) {
            self.source = source
            self.items = items
        }

        /// The CNAME item's text, if there is one.
        public var cname: String? { items.first { $0.type == .cname }?.text }

        /// SSRC, items, then at least one null octet, up to the next 32-bit boundary.
        var length: Int { 4 + (items.reduce(0) { $0 + 2 + $1.value.count } + 1 + 3) & ~3 }
    }

    /// Up to 31 chunks.
    public var chunks: [Chunk]

    public init(chunks: [Chunk]) { self.chunks = chunks }

    /// One chunk with a CNAME: what every compound RTCP packet carries about its sender (§6.1).
    public init(source: UInt32, cname: String) {
        self.init(chunks: [Chunk(source: source, items: [SourceDescriptionItem(type: .cname, text: cname)])])
    }

    init(body: UnsafeRawBufferPointer, header: RTCPHeader) throws(RTCPError) {
        var chunks: [Chunk] = []
        var offset = 0
        for _ in 0..<header.count {
            guard body.count - offset >= 4 else { throw .sourceDescriptionSourceTruncated }
            var chunk = Chunk(source: body.networkUInt32(at: offset), items: [])
            offset += 4
            while true {
                guard offset < body.count else { throw .sourceDescriptionItemTruncated }
                let type = body[offset]
                if type == 0 {
                    // End of the list: the null octet and the nulls up to the next word boundary
                    // (chunks start on word boundaries, and so does the body). A padded packet's body
                    // may end before that boundary.
                    offset = min((offset + 4) & ~3, body.count)
                    break
                }
                guard offset + 2 <= body.count, offset + 2 + Int(body[offset + 1]) <= body.count else {
                    throw .sourceDescriptionItemTruncated
                }
                let end = offset + 2 + Int(body[offset + 1])
                chunk.items.append(SourceDescriptionItem(type: .init(rawValue: type),
                                                         value: body.copyBytes(offset + 2..<end)))
                offset = end
            }
            chunks.append(chunk)
        }
        self.init(chunks: chunks)
    }

    public var marshalSize: Int { RTCPHeader.size + chunks.reduce(0) { $0 + $1.length } }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        for chunk in chunks {
            for item in chunk.items where item.value.count > 255 { throw .textTooLong(item.value.count) }
        }
        return try writeRTCPPacket(into: buffer, type: .sourceDescription, count: chunks.count,
                                   bodyLength: marshalSize - RTCPHeader.size) { body in
            var offset = 0
            for chunk in chunks {
                let chunkEnd = offset + chunk.length
                body.storeNetwork(chunk.source, at: offset)
                offset += 4
                for item in chunk.items {
                    body[offset] = item.type.rawValue
                    body[offset + 1] = UInt8(item.value.count)
                    offset = body.copy(contentsOf: item.value, to: offset + 2)
                }
                body.zero(chunkEnd - offset, at: offset)
                offset = chunkEnd
            }
        }
    }
}
