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
        guard let header = payload.first else { throw .emptyPayload }
        let type = H264Payload.type(header)
        switch type {
        case 1...23:
            // Single NAL unit packet: the payload is the NAL unit (§5.6).
            return RTPPayloadInfo(
                startsFrame: H264Payload.startsAccessUnit(type: type, firstByte: payload.count > 1 ? payload[1] : nil),
                isKeyframe: type == H264Payload.idrSlice,
                mediaByteCount: H264Payload.startCodeLength + payload.count)
        case H264Payload.stapA:
            return try Self.inspectAggregation(payload)
        case H264Payload.fuA:
            // FU indicator, FU header |S|E|R|Type|, then a fragment of the NAL unit's payload (§5.8).
            guard payload.count >= 2 else { throw .h264FragmentTooShort }
            let fuHeader = payload[1]
            let start = fuHeader & 0x80 != 0, end = fuHeader & 0x40 != 0
            if start && end { throw .h264FragmentStartAndEnd }
            let nalType = H264Payload.type(fuHeader)
            let fragment = payload.count - 2
            return RTPPayloadInfo(
                startsFrame: start && H264Payload.startsAccessUnit(type: nalType, firstByte: payload.count > 2 ? payload[2] : nil),
                isKeyframe: nalType == H264Payload.idrSlice,
                // The start fragment gets a start code and the rebuilt NAL unit header.
                mediaByteCount: start ? H264Payload.startCodeLength + 1 + fragment : fragment)
        case 25, 26, 27, 29:
            throw .h264UnsupportedPacketType(type)
        default:
            throw .h264ReservedPacketType(type)
        }
    }

    public mutating func startFrame() {
        assembly = FrameAssembly()
        fragmentType = nil
        isKeyframe = false
    }

    /// Inspects the payload again rather than trust `info`: the bytes it writes follow from the
    /// payload's headers (an FU-A's and a STAP-A's sizes cost little to read).
    public mutating func append(_ payload: UnsafeRawBufferPointer, inspected _: RTPPayloadInfo, sequenceNumber: UInt16,
                                marker: Bool, into output: UnsafeMutableRawBufferPointer) throws(RTPPayloadError) {
        let info = try inspect(payload)
        try assembly.check(sequenceNumber: sequenceNumber, adding: info.mediaByteCount, to: output)
        let type = H264Payload.type(payload[0])
        var offset = assembly.byteCount
        if type == H264Payload.fuA {
            let fuHeader = payload[1]
            let nalType = H264Payload.type(fuHeader)
            if fuHeader & 0x80 != 0 {
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
            fragmentType = fuHeader & 0x40 != 0 ? nil : nalType
        } else {
            guard fragmentType == nil else { throw .h264FragmentNotEnded }
            if type == H264Payload.stapA {
                var units = AggregationUnits(payload)
                while let unit = units.next() {
                    H264Payload.writeStartCode(to: output, at: offset)
                    offset = FrameAssembly.copy(payload.slice(unit), to: output, at: offset + H264Payload.startCodeLength)
                }
            } else {
                H264Payload.writeStartCode(to: output, at: offset)
                FrameAssembly.copy(payload, to: output, at: offset + H264Payload.startCodeLength)
            }
        }
        isKeyframe = isKeyframe || info.isKeyframe
        assembly.accept(sequenceNumber: sequenceNumber, endsFrame: marker, added: info.mediaByteCount)
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
