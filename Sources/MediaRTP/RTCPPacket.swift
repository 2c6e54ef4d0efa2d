/// Decoded RTCP packets and compound packets (RFC 3550 §6.1). `RTCPPacket` decodes one packet found by
/// `RTCPPacketIterator` into its type (SR, RR, SDES, BYE, APP, Generic NACK, PLI, FIR, REMB); any other
/// type or feedback format passes through as `.unknown` with its header and body, never as an error.
/// `RTCPCompoundPacket` parses and validates a whole datagram and writes one, e.g. RR + SDES CNAME.
/// Decoded packets own their contents: the arrays they hold allocate, which RTCP's few packets per
/// second allow (the RTP path does not allocate).

/// A packet of a type this module does not decode (or a feedback FMT it does not know), kept whole so
/// that it can be inspected or written again.
public struct RTCPUnknownPacket: RTCPSerializable, Hashable {
    public var packetType: RTCPPacketType
    /// The 5-bit count field (the FMT for feedback packets).
    public var count: UInt8
    /// Everything after the 4-byte header, without padding.
    public var body: [UInt8]

    public init(packetType: RTCPPacketType, count: UInt8, body: [UInt8]) {
        self.packetType = packetType
        self.count = count
        self.body = body
    }

    public var marshalSize: Int { RTCPHeader.size + body.count }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try writeRTCPPacket(into: buffer, type: packetType, count: Int(count), bodyLength: body.count) { out in
            _ = out.copy(contentsOf: body, to: 0)
        }
    }
}

/// One decoded RTCP packet.
public enum RTCPPacket: RTCPSerializable, Hashable {
    case senderReport(SenderReport)
    case receiverReport(ReceiverReport)
    case sourceDescription(SourceDescription)
    case goodbye(Goodbye)
    case applicationDefined(ApplicationDefined)
    case genericNACK(GenericNACK)
    case pictureLossIndication(PictureLossIndication)
    case fullIntraRequest(FullIntraRequest)
    case remb(REMB)
    /// Any other packet type or feedback format, e.g. XR, transport-wide congestion control feedback.
    case unknown(RTCPUnknownPacket)

    /// Decodes the packet `view` found in `bytes` (by `RTCPPacketIterator`).
    public init(_ view: RTCPPacketView, in bytes: UnsafeRawBufferPointer) throws(RTCPError) {
        let body = UnsafeRawBufferPointer(rebasing: bytes[view.bodyRange])
        let header = view.header
        switch header.packetType {
        case .senderReport: self = .senderReport(try SenderReport(body: body, header: header))
        case .receiverReport: self = .receiverReport(try ReceiverReport(body: body, header: header))
        case .sourceDescription: self = .sourceDescription(try SourceDescription(body: body, header: header))
        case .goodbye: self = .goodbye(try Goodbye(body: body, header: header))
        case .applicationDefined: self = .applicationDefined(try ApplicationDefined(body: body, header: header))
        case .transportFeedback:
            guard body.count >= feedbackSSRCsLength else { throw .transportFeedbackLengthInvalid }
            let (sender, media, fci) = Self.feedbackParts(body)
            switch header.count {
            case GenericNACK.format: self = .genericNACK(try GenericNACK(fci: fci, senderSSRC: sender, mediaSSRC: media))
            default: self = .unknown(RTCPUnknownPacket(header: header, body: body))
            }
        case .payloadSpecificFeedback:
            guard body.count >= feedbackSSRCsLength else { throw .payloadSpecificFeedbackLengthInvalid }
            let (sender, media, fci) = Self.feedbackParts(body)
            switch header.count {
            case PictureLossIndication.format:
                self = .pictureLossIndication(try PictureLossIndication(fci: fci, senderSSRC: sender, mediaSSRC: media))
            case FullIntraRequest.format:
                self = .fullIntraRequest(try FullIntraRequest(fci: fci, senderSSRC: sender, mediaSSRC: media))
            case REMB.format where REMB.isREMB(fci: fci):
                self = .remb(try REMB(fci: fci, senderSSRC: sender, mediaSSRC: media))
            default: self = .unknown(RTCPUnknownPacket(header: header, body: body))
            }
        default: self = .unknown(RTCPUnknownPacket(header: header, body: body))
        }
    }

    /// Sender SSRC, media SSRC and FCI of a feedback body of at least 8 bytes (RFC 4585 §6.1).
    private static func feedbackParts(_ body: UnsafeRawBufferPointer) -> (UInt32, UInt32, UnsafeRawBufferPointer) {
        (body.networkUInt32(at: 0), body.networkUInt32(at: 4),
         UnsafeRawBufferPointer(rebasing: body[feedbackSSRCsLength...]))
    }

    /// The packet type written for this packet.
    public var packetType: RTCPPacketType {
        switch self {
        case .senderReport: .senderReport
        case .receiverReport: .receiverReport
        case .sourceDescription: .sourceDescription
        case .goodbye: .goodbye
        case .applicationDefined: .applicationDefined
        case .genericNACK: .transportFeedback
        case .pictureLossIndication, .fullIntraRequest, .remb: .payloadSpecificFeedback
        case .unknown(let packet): packet.packetType
        }
    }

    private var content: any RTCPSerializable {
        switch self {
        case .senderReport(let packet): packet
        case .receiverReport(let packet): packet
        case .sourceDescription(let packet): packet
        case .goodbye(let packet): packet
        case .applicationDefined(let packet): packet
        case .genericNACK(let packet): packet
        case .pictureLossIndication(let packet): packet
        case .fullIntraRequest(let packet): packet
        case .remb(let packet): packet
        case .unknown(let packet): packet
        }
    }

    public var marshalSize: Int { content.marshalSize }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try content.write(into: buffer)
    }
}

extension RTCPUnknownPacket {
    init(header: RTCPHeader, body: UnsafeRawBufferPointer) {
        self.init(packetType: header.packetType, count: header.count, body: Array(body))
    }
}

/// A compound RTCP packet: the packets of one datagram (RFC 3550 §6.1).
public struct RTCPCompoundPacket: RTCPSerializable, Hashable {
    public var packets: [RTCPPacket]

    public init(_ packets: [RTCPPacket]) { self.packets = packets }

    /// Parses and decodes every packet in `bytes`, in order, checking the compound rules of RFC 3550
    /// §6.1 and Appendix A.2 as it goes: at least one packet, the first an SR or RR, every length inside
    /// the bytes and together filling them exactly, padding only in the last packet. With `reducedSize`
    /// (RFC 5506) the first packet may be of any type, e.g. a lone PLI or NACK.
    public init(parsing bytes: UnsafeRawBufferPointer, reducedSize: Bool = false) throws(RTCPError) {
        var packets: [RTCPPacket] = []
        try Self.forEachPacket(in: bytes, reducedSize: reducedSize) { (view) throws(RTCPError) in
            packets.append(try RTCPPacket(view, in: bytes))
        }
        self.init(packets)
    }

    public init(parsing bytes: [UInt8], reducedSize: Bool = false) throws(RTCPError) {
        self = try bytes.withUnsafeBytesTyped { (raw) throws(RTCPError) in
            try RTCPCompoundPacket(parsing: raw, reducedSize: reducedSize)
        }
    }

    /// Checks the framing and compound rules of `bytes` (as `init(parsing:reducedSize:)`) without
    /// decoding or allocating; returns the number of packets.
    @discardableResult
    public static func validate(_ bytes: UnsafeRawBufferPointer, reducedSize: Bool = false) throws(RTCPError) -> Int {
        var count = 0
        try forEachPacket(in: bytes, reducedSize: reducedSize) { _ in count += 1 }
        return count
    }

    /// Whether a packet of `bytes` is from `source`: an SR's sender, the first SDES chunk's or the
    /// first BYE's source (RFC 3550 §6.4.1, §6.5, §6.6). The framing is checked as
    /// `init(parsing:reducedSize:)` checks it, and throws as it does, but nothing is decoded or
    /// allocated: a receiver tells another source's compound (an RTCP bomb of reports among them)
    /// from its stream's this way, before paying for the decoding.
    public static func isFrom(_ source: UInt32, _ bytes: UnsafeRawBufferPointer, reducedSize: Bool = false) throws(RTCPError) -> Bool {
        var found = false
        try forEachPacket(in: bytes, reducedSize: reducedSize) { view in
            guard !found, view.bodyRange.count >= 4 else { return }
            switch view.header.packetType {
            case .senderReport: break
            case .sourceDescription, .goodbye where view.header.count > 0: break
            default: return
            }
            found = bytes.networkUInt32(at: view.bodyRange.lowerBound) == source
        }
        return found
    }

    private static func forEachPacket(in bytes: UnsafeRawBufferPointer, reducedSize: Bool,
                                      _ body: (RTCPPacketView) throws(RTCPError) -> Void) throws(RTCPError)
    {
        var iterator = RTCPPacketIterator(bytes)
        var isFirst = true
        while let view = try iterator.next() {
            if isFirst, !reducedSize, view.header.packetType != .senderReport,
               view.header.packetType != .receiverReport
            {
                throw .firstPacketNotReport(view.header.packetType)
            }
            if view.header.padding, view.range.upperBound != bytes.count { throw .paddingNotInLastPacket }
            // A report too short for its SSRC and blocks (a 4-byte SR) is no report: SRTCP could not
            // even protect it (found by the SRTP fuzz target).
            let reportBlocks = Int(view.header.count)
            switch view.header.packetType {
            case .senderReport where view.bodyRange.count < SenderReport.minimumBodyLength(count: reportBlocks):
                throw .senderReportLengthInvalid
            case .receiverReport where view.bodyRange.count < ReceiverReport.minimumBodyLength(count: reportBlocks):
                throw .receiverReportLengthInvalid
            default: break
            }
            isFirst = false
            try body(view)
        }
        if isFirst { throw .emptyCompound }
    }

    public var marshalSize: Int { packets.reduce(0) { $0 + $1.marshalSize } }

    /// Writes the packets one after another. The compound rules are not enforced here, so that
    /// reduced-size feedback can be written too; a regular compound starts with an SR or RR and
    /// includes an SDES CNAME (§6.1).
    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        let needed = marshalSize
        guard buffer.count >= needed else { throw .bufferTooSmall(needed: needed, available: buffer.count) }
        var offset = 0
        for packet in packets {
            offset += try packet.write(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
        }
        return offset
    }
}
