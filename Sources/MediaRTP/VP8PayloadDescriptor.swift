/// The VP8 payload descriptor that begins every VP8 RTP payload (RFC 7741 §4.2):
///
/// ```
///       0 1 2 3 4 5 6 7
///      +-+-+-+-+-+-+-+-+
///      |X|R|N|S|R| PID | (REQUIRED)
///      +-+-+-+-+-+-+-+-+
/// X:   |I|L|T|K| RSV   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// I:   |M| PictureID   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
///      |   PictureID   | (second byte when M = 1)
///      +-+-+-+-+-+-+-+-+
/// L:   |   TL0PICIDX   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// T/K: |TID|Y| KEYIDX  | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// ```
///
/// The R bits and RSV are written as zero and ignored when read. A field is present when its value
/// is not `nil`; the X octet is written when any optional field is present.
public struct VP8PayloadDescriptor: Sendable, Hashable {
    /// The descriptor's fields, to name the one an error is about.
    public enum Field: Sendable, Hashable {
        /// The first, required octet (X, N, S, PID).
        case requiredOctet
        /// The X octet of I, L, T and K flags.
        case extensionOctet
        /// PictureID: one byte when M is 0, two when M is 1.
        case pictureID
        case partitionIndex
        case tl0PicIndex
        /// The octet of TID, Y and KEYIDX, present when T or K is set.
        case temporalLayerAndKeyIndex
        case temporalLayerIndex
        case keyIndex
    }

    /// The PictureID (I and M bits): a running number of the frame, 7 or 15 bits wide.
    public enum PictureID: Sendable, Hashable {
        case sevenBit(UInt8)
        case fifteenBit(UInt16)

        public var value: Int {
            switch self {
            case .sevenBit(let value): return Int(value)
            case .fifteenBit(let value): return Int(value)
            }
        }
    }

    /// The TID and Y fields (T bit).
    public struct TemporalLayer: Sendable, Hashable {
        /// TID: the temporal layer index, 0 to 3.
        public var index: UInt8
        /// Y: the frame depends only on the base layer (layer sync).
        public var isLayerSync: Bool

        public init(index: UInt8, isLayerSync: Bool) {
            self.index = index
            self.isLayerSync = isLayerSync
        }
    }

    /// N: the frame is not used to predict others, a receiver may discard it.
    public var isNonReference: Bool
    /// S: the payload starts a VP8 partition.
    public var startsPartition: Bool
    /// PID: the index of the partition the payload's first byte belongs to, 0 to 7.
    public var partitionIndex: UInt8
    public var pictureID: PictureID?
    /// TL0PICIDX (L bit): a running index of the base temporal layer's frames.
    public var tl0PicIndex: UInt8?
    public var temporalLayer: TemporalLayer?
    /// KEYIDX (K bit): a running index of key frames, 0 to 31.
    public var keyIndex: UInt8?
    /// X = 1 with none of I, L, T, K set: an X octet with no field after it. Some senders write one; it
    /// is kept so that `byteCount` and `write` match the bytes read.
    public var hasEmptyExtensionOctet = false

    public init(isNonReference: Bool = false, startsPartition: Bool = false, partitionIndex: UInt8 = 0,
                pictureID: PictureID? = nil, tl0PicIndex: UInt8? = nil, temporalLayer: TemporalLayer? = nil,
                keyIndex: UInt8? = nil) {
        self.isNonReference = isNonReference
        self.startsPartition = startsPartition
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.tl0PicIndex = tl0PicIndex
        self.temporalLayer = temporalLayer
        self.keyIndex = keyIndex
    }

    /// Whether the payload begins a frame: the start of partition 0 (S = 1, PID = 0, §4.2).
    public var startsFrame: Bool { startsPartition && partitionIndex == 0 }

    private var hasExtension: Bool {
        hasEmptyExtensionOctet || pictureID != nil || tl0PicIndex != nil || temporalLayer != nil || keyIndex != nil
    }

    /// S in the first octet: the payload starts a partition.
    static let startOfPartitionBit: UInt8 = 0x10

    /// The descriptor's length in bytes.
    public var byteCount: Int {
        guard hasExtension else { return 1 }
        var count = 2
        switch pictureID {
        case .sevenBit: count += 1
        case .fifteenBit: count += 2
        case nil: break
        }
        if tl0PicIndex != nil { count += 1 }
        if temporalLayer != nil || keyIndex != nil { count += 1 }
        return count
    }

    /// Reads the descriptor at the start of `payload`; the VP8 data begins `byteCount` bytes in.
    public init(parsing payload: UnsafeRawBufferPointer) throws(RTPPayloadError) {
        guard let first = payload.first else { throw .emptyPayload }
        self.init(isNonReference: first & 0x20 != 0, startsPartition: first & Self.startOfPartitionBit != 0,
                  partitionIndex: first & 0x07)
        guard first & 0x80 != 0 else { return }
        var octets = OctetReader(payload: payload)
        let flags = try octets.next(.extensionOctet)
        hasEmptyExtensionOctet = flags & 0xF0 == 0
        if flags & 0x80 != 0 {
            let high = try octets.next(.pictureID)
            if high & 0x80 != 0 {
                let low = try octets.next(.pictureID)
                pictureID = .fifteenBit(UInt16(high & 0x7F) << 8 | UInt16(low))
            } else {
                pictureID = .sevenBit(high)
            }
        }
        if flags & 0x40 != 0 { tl0PicIndex = try octets.next(.tl0PicIndex) }
        if flags & 0x30 != 0 {
            let byte = try octets.next(.temporalLayerAndKeyIndex)
            if flags & 0x20 != 0 { temporalLayer = TemporalLayer(index: byte >> 6, isLayerSync: byte & 0x20 != 0) }
            if flags & 0x10 != 0 { keyIndex = byte & 0x1F }
        }
    }

    /// The extension's octets after the first (RFC 7741 §4.2), read in order. A struct rather than a
    /// nested function over a captured variable: that variable is checked for exclusive access at
    /// run time on every octet, twice per packet received (inspected, then depacketized).
    private struct OctetReader {
        let payload: UnsafeRawBufferPointer
        var offset = 1

        mutating func next(_ field: Field) throws(RTPPayloadError) -> UInt8 {
            guard offset < payload.count else { throw .vp8DescriptorTruncated(field) }
            defer { offset += 1 }
            return payload[offset]
        }
    }

    /// Writes the descriptor at the start of `buffer`, returning its length.
    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) -> Int {
        guard partitionIndex <= 7 else { throw .vp8FieldOutOfRange(.partitionIndex) }
        switch pictureID {
        case .sevenBit(let value) where value > 0x7F: throw .vp8FieldOutOfRange(.pictureID)
        case .fifteenBit(let value) where value > 0x7FFF: throw .vp8FieldOutOfRange(.pictureID)
        default: break
        }
        if let temporalLayer, temporalLayer.index > 3 { throw .vp8FieldOutOfRange(.temporalLayerIndex) }
        if let keyIndex, keyIndex > 0x1F { throw .vp8FieldOutOfRange(.keyIndex) }
        let count = byteCount
        guard buffer.count >= count else { throw .outputTooSmall(needed: count, available: buffer.count) }

        buffer[0] = (hasExtension ? 0x80 : 0) | (isNonReference ? 0x20 : 0) | (startsPartition ? Self.startOfPartitionBit : 0)
            | partitionIndex
        guard hasExtension else { return 1 }
        let hasTK = temporalLayer != nil || keyIndex != nil
        buffer[1] = (pictureID != nil ? 0x80 : 0) | (tl0PicIndex != nil ? 0x40 : 0)
            | (temporalLayer != nil ? 0x20 : 0) | (keyIndex != nil ? 0x10 : 0)
        var offset = 2
        switch pictureID {
        case .sevenBit(let value):
            buffer[offset] = value
            offset += 1
        case .fifteenBit(let value):
            buffer[offset] = 0x80 | UInt8(value >> 8)
            buffer[offset + 1] = UInt8(value & 0xFF)
            offset += 2
        case nil: break
        }
        if let tl0PicIndex {
            buffer[offset] = tl0PicIndex
            offset += 1
        }
        if hasTK {
            let tid = temporalLayer.map { $0.index << 6 | ($0.isLayerSync ? 0x20 : 0) } ?? 0
            buffer[offset] = tid | (keyIndex ?? 0)
            offset += 1
        }
        return offset
    }
}
