import MediaCore

/// Puts H.264 RTP payloads (RFC 6184, packetization-modes 0 and 1) back together into one Annex-B
/// access unit per frame, a start code `00 00 00 01` before each NAL unit, as `CodecName.h264` wants.
///
/// Reads single NAL unit packets (types 1-23, §5.6), STAP-A (24, §5.7.1) and FU-A (28, §5.8).
/// STAP-B, MTAP16, MTAP24 and FU-B (25, 26, 27, 29) belong to the interleaved mode and are refused
/// as unsupported; types 0, 30 and 31 are reserved. An access unit is a keyframe when it carries an
/// IDR slice (NAL unit type 5); parameter sets alone do not make one. NAL units whose F bit is set
/// (§5.3: may contain errors) are passed on as they are, for the decoder to judge. A STAP-A must be
/// filled exactly by its aggregation units: a trailing byte is `.h264AggregationSizeTruncated`, where
/// pion keeps the units before it.
public struct H264Depacketizer: RTPDepacketizer {
    public static let codec = CodecName.h264
    public static let clockRate = 90_000

    private var assembly = FrameAssembly()
    /// The type of the NAL unit being put together from FU-As, between its start and end fragments.
    private var fragmentType: Int?
    private var isKeyframe = false

    public init() {}

    public func inspect(_ payload: UnsafeRawBufferPointer) throws(RTPPayloadError) -> RTPPayloadInfo {
        let packet = try PacketHeader(payload)
        switch packet {
        case .single(let nalType):
            // The payload is the NAL unit (§5.6).
            return RTPPayloadInfo(
                startsFrame: H264Payload.startsAccessUnit(type: nalType, firstByte: payload.count > 1 ? payload[1] : nil),
                isKeyframe: nalType == H264Payload.idrSlice, mediaByteCount: packet.mediaByteCount(of: payload))
        case .aggregation:
            return try Self.inspectAggregation(payload)
        case .fragment(let start, _, let nalType):
            return RTPPayloadInfo(
                startsFrame: start && H264Payload.startsAccessUnit(type: nalType, firstByte: payload.count > 2 ? payload[2] : nil),
                isKeyframe: nalType == H264Payload.idrSlice, mediaByteCount: packet.mediaByteCount(of: payload))
        }
    }

    public mutating func startFrame() {
        assembly = FrameAssembly()
        fragmentType = nil
        isKeyframe = false
    }

    /// Checks `info` against the payload's header rather than trusting it, since the bytes it writes
    /// follow from that header: a single NAL unit or an FU-A by its length, a STAP-A by walking its
    /// aggregation units again (where each ends follows from their sizes). Takes whether the payload
    /// is a keyframe's from the header too.
    public mutating func append(_ payload: UnsafeRawBufferPointer, inspected info: RTPPayloadInfo, sequenceNumber: UInt16,
                                marker: Bool, into output: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) {
        let packet = try PacketHeader(payload)
        let (byteCount, carriesIDR): (Int, Bool)
        switch packet {
        case .single(let nalType), .fragment(_, _, let nalType):
            (byteCount, carriesIDR) = (packet.mediaByteCount(of: payload), nalType == H264Payload.idrSlice)
        case .aggregation:
            let units = try Self.inspectAggregation(payload)
            (byteCount, carriesIDR) = (units.mediaByteCount, units.isKeyframe)
        }
        guard info.mediaByteCount == byteCount else { throw .inspectionMismatch }
        try assembly.check(sequenceNumber: sequenceNumber, adding: byteCount, to: output)
        var offset = assembly.byteCount
        switch packet {
        case .fragment(let start, let end, let nalType):
            if start {
                guard fragmentType == nil else { throw .h264FragmentNotEnded }
                H264Payload.writeStartCode(to: output, at: offset)
                // The NAL unit header: F and NRI from the FU indicator, the type from the FU header.
                output[offset + 4] = payload[0] & 0xE0 | UInt8(nalType)
                offset += H264Payload.startCodeLength + 1
            } else {
                guard let open = fragmentType else { throw .h264FragmentWithoutStart }
                guard open == nalType else { throw .h264FragmentTypeMismatch(expected: open, received: nalType) }
            }
            FrameAssembly.copy(payload.slice(2..<payload.count), to: output, at: offset)
            fragmentType = end ? nil : nalType
        case .aggregation:
            guard fragmentType == nil else { throw .h264FragmentNotEnded }
            var units = AggregationUnits(payload)
            while let unit = units.next() {
                H264Payload.writeStartCode(to: output, at: offset)
                offset = FrameAssembly.copy(payload.slice(unit), to: output, at: offset + H264Payload.startCodeLength)
            }
        case .single:
            guard fragmentType == nil else { throw .h264FragmentNotEnded }
            H264Payload.writeStartCode(to: output, at: offset)
            FrameAssembly.copy(payload, to: output, at: offset + H264Payload.startCodeLength)
        }
        isKeyframe = isKeyframe || carriesIDR
        assembly.accept(sequenceNumber: sequenceNumber, endsFrame: marker, added: byteCount)
    }

    public mutating func finishFrame() throws(RTPPayloadError) -> RTPFrameInfo {
        defer { startFrame() }
        guard fragmentType == nil else { throw .h264FragmentNotEnded }
        guard assembly.packetCount > 0 else { throw .emptyFrame }
        return RTPFrameInfo(byteCount: assembly.byteCount, isKeyframe: isKeyframe, packetCount: assembly.packetCount)
    }

    /// Checks a STAP-A: aggregation units of a 16-bit size and a NAL unit of types 1-23, filling the
    /// payload exactly (§5.7.1).
    private static func inspectAggregation(_ payload: UnsafeRawBufferPointer) throws(RTPPayloadError) -> RTPPayloadInfo {
        guard payload.count > 1 else { throw .h264AggregationEmpty }
        var offset = 1, byteCount = 0
        var startsFrame = false, isKeyframe = false
        while offset < payload.count {
            guard offset + 2 <= payload.count else { throw .h264AggregationSizeTruncated(offset: offset) }
            let size = payload.uint16(at: offset)
            let available = payload.count - offset - 2
            guard size > 0 else { throw .h264AggregationUnitEmpty(offset: offset) }
            guard size <= available else { throw .h264AggregationUnitTruncated(declared: size, available: available) }
            let nalStart = offset + 2
            let type = H264Payload.type(payload[nalStart])
            guard (1...23).contains(type) else { throw .h264AggregatedPacketType(type) }
            if offset == 1 {
                startsFrame = H264Payload.startsAccessUnit(type: type, firstByte: size > 1 ? payload[nalStart + 1] : nil)
            }
            isKeyframe = isKeyframe || type == H264Payload.idrSlice
            byteCount += H264Payload.startCodeLength + size
            offset = nalStart + size
        }
        return RTPPayloadInfo(startsFrame: startsFrame, isKeyframe: isKeyframe, mediaByteCount: byteCount)
    }
}

/// What a payload's first bytes say it is (RFC 6184 §5.2, Table 3), checked.
private enum PacketHeader {
    /// A single NAL unit packet (types 1-23, §5.6).
    case single(nalType: Int)
    /// A STAP-A (§5.7.1), whose aggregation units are checked apart.
    case aggregation
    /// An FU-A (§5.8): the FU indicator, then the FU header |S|E|R|Type|.
    case fragment(start: Bool, end: Bool, nalType: Int)

    init(_ payload: UnsafeRawBufferPointer) throws(RTPPayloadError) {
        guard let header = payload.first else { throw .emptyPayload }
        let type = H264Payload.type(header)
        switch type {
        case 1...23:
            self = .single(nalType: type)
        case H264Payload.stapA:
            self = .aggregation
        case H264Payload.fuA:
            guard payload.count >= 2 else { throw .h264FragmentTooShort }
            let fuHeader = payload[1]
            let start = fuHeader & 0x80 != 0, end = fuHeader & 0x40 != 0
            if start && end { throw .h264FragmentStartAndEnd }
            self = .fragment(start: start, end: end, nalType: H264Payload.type(fuHeader))
        case 25, 26, 27, 29:
            throw .h264UnsupportedPacketType(type)
        default:
            throw .h264ReservedPacketType(type)
        }
    }

    /// The bytes the depacketizer writes for a single NAL unit or a fragment, `payload`: a start code
    /// before a NAL unit, and before a start fragment the NAL unit header rebuilt from the FU
    /// indicator and header too. A STAP-A's come from its units (`inspectAggregation`).
    func mediaByteCount(of payload: UnsafeRawBufferPointer) -> Int {
        switch self {
        case .single: H264Payload.startCodeLength + payload.count
        case .fragment(let start, _, _): start ? H264Payload.startCodeLength + 1 + payload.count - 2 : payload.count - 2
        case .aggregation: preconditionFailure("a STAP-A's length is its units'")
        }
    }
}

/// The NAL units of a STAP-A that `inspect` has checked: the range of each in the payload.
private struct AggregationUnits: IteratorProtocol {
    let payload: UnsafeRawBufferPointer
    var offset = 1

    init(_ payload: UnsafeRawBufferPointer) { self.payload = payload }

    mutating func next() -> Range<Int>? {
        guard offset + 2 <= payload.count else { return nil }
        let start = offset + 2
        offset = start + payload.uint16(at: offset)
        return start..<offset
    }
}
