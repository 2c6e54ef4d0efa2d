import MediaCore

/// Cuts H.264 access units (one Annex-B access unit per `EncodedFrame`, as `CodecName.h264` says)
/// into RTP payloads (RFC 6184).
///
/// - packetization-mode 0 (`.singleNALUnit`, §6.2): one NAL unit per payload (§5.6); a NAL unit
///   larger than the maximum payload size is `RTPPayloadError.payloadTooLarge`.
/// - packetization-mode 1 (`.nonInterleaved`, §6.3): NAL units that fit go alone (§5.6) or, several
///   in a row, in one STAP-A (§5.7.1) as `aggregation` allows; larger ones are cut into FU-As (§5.8).
///
/// SPS and PPS go before every IDR: the packetizer remembers the latest of each it has seen (or been
/// given with `setParameterSets`), and sends them in front of an IDR access unit that lacks them.
/// The marker bit is set on the access unit's last payload (§5.1). Payloads are written in the
/// caller's buffer; once the NAL unit table and parameter-set copies have grown to fit, nothing is
/// allocated per frame or packet.
public struct H264Packetizer: RTPPacketizer {
    public static let codec = CodecName.h264
    /// The H.264 RTP clock rate (RFC 6184 §8.2.1).
    public static let clockRate = 90_000

    /// The packetization-mode of the session (RFC 6184 §8.1).
    public enum PacketizationMode: Int, Sendable, Hashable {
        /// Single NAL unit mode: no aggregation, no fragmentation.
        case singleNALUnit = 0
        /// Non-interleaved mode: single NAL units, STAP-A and FU-A.
        case nonInterleaved = 1
    }

    /// Which NAL units of an access unit may share a STAP-A in non-interleaved mode.
    public enum Aggregation: Sendable, Hashable {
        /// None: every NAL unit goes alone or in FU-As.
        case none
        /// Runs of NAL units without slice data (SPS, PPS, SEI, delimiters), slices alone.
        case nonVCL
        /// Any run of NAL units that fits in one payload.
        case all
    }

    public let mode: PacketizationMode
    public let maxPayloadSize: Int
    public let aggregation: Aggregation

    /// The latest sequence and picture parameter sets seen, as NAL units without start code.
    public private(set) var sequenceParameterSet: [UInt8] = []
    public private(set) var pictureParameterSet: [UInt8] = []

    private var frame: FrameBytes?
    /// The NAL units to send for the current frame, in order.
    private var units: [Unit] = []
    /// The unit the next payload begins with.
    private var unitIndex = 0
    /// Bytes of `units[unitIndex]` after its header already sent in FU-As; 0 before its first FU-A.
    private var fragmentOffset = 0

    private struct Unit: Sendable {
        enum Source: Sendable { case frame, sequenceParameterSet, pictureParameterSet }
        var source: Source
        var range: Range<Int>
        var count: Int { range.count }
    }

    /// What the next payload holds.
    private enum Step {
        case single(Int)
        case aggregate(Range<Int>, byteCount: Int)
        case fragment(Int, count: Int)
    }

    /// `maxPayloadSize` is the most bytes per payload (the path MTU less the IP, UDP, RTP and SRTP
    /// headers). Non-interleaved mode needs at least 3: an FU-A indicator, header and one byte.
    public init(mode: PacketizationMode = .nonInterleaved, maxPayloadSize: Int = 1200,
                aggregation: Aggregation = .all) throws(RTPPayloadError) {
        let minimum = mode == .nonInterleaved ? 3 : 1
        guard maxPayloadSize >= minimum else { throw .maxPayloadSizeTooSmall(maxPayloadSize, minimum: minimum) }
        self.mode = mode
        self.maxPayloadSize = maxPayloadSize
        self.aggregation = aggregation
    }

    /// Parameter sets to send before IDR access units that come without them, e.g. from the SDP's
    /// sprop-parameter-sets (RFC 6184 §8.1); NAL units without start code. Later ones in the stream
    /// replace them.
    public mutating func setParameterSets(sps: some Collection<UInt8>, pps: some Collection<UInt8>) {
        Self.replace(&sequenceParameterSet, with: sps)
        Self.replace(&pictureParameterSet, with: pps)
    }

    public mutating func startFrame(_ frame: EncodedFrame) throws(RTPPayloadError) {
        self.frame = nil
        units.removeAll(keepingCapacity: true)
        unitIndex = 0
        fragmentOffset = 0
        guard frame.codec == Self.codec else { throw .wrongCodec(frame.codec) }
        let bytes = frame.bytes
        guard !bytes.isEmpty else { throw .emptyFrame }
        guard let nalUnits = AnnexBNALUnits(bytes) else { throw .h264MissingStartCode }

        var hasIDR = false, hasSPS = false, hasPPS = false
        for range in nalUnits {
            let type = H264Payload.type(bytes[range.lowerBound])
            guard (1...23).contains(type) else { throw .h264UnsendableNALType(type) }
            if mode == .singleNALUnit && range.count > maxPayloadSize {
                throw .payloadTooLarge(size: range.count, maxPayloadSize: maxPayloadSize)
            }
            hasIDR = hasIDR || type == H264Payload.idrSlice
            hasSPS = hasSPS || type == H264Payload.sps
            hasPPS = hasPPS || type == H264Payload.pps
            units.append(Unit(source: .frame, range: range))
        }
        guard !units.isEmpty else { throw .emptyFrame }
        if hasSPS || hasPPS { remember(parameterSetsIn: bytes) }
        if hasIDR && !(hasSPS && hasPPS) { try insertParameterSets(hasSPS: hasSPS, hasPPS: hasPPS, in: bytes) }
        self.frame = FrameBytes(frame)
    }

    public mutating func nextPayload(into buffer: UnsafeMutableRawBufferPointer,
                                     leavingFrameSlice: Bool) throws(RTPPayloadError) -> PacketizedPayload? {
        guard let frame, unitIndex < units.count else { return nil }
        let step = nextStep()
        let byteCount: Int
        switch step {
        case .single(let index): byteCount = units[index].count
        case .aggregate(_, let count): byteCount = count
        case .fragment(_, let count): byteCount = 2 + count
        }
        let units = self.units, sent = fragmentOffset
        let frameSlice = Self.frameSlice(of: step, units: units, fragmentOffset: sent)
        let leaving = leavingFrameSlice && frameSlice != nil
        let written = byteCount - (leaving ? frameSlice!.count : 0)
        guard buffer.count >= written else { throw .outputTooSmall(needed: written, available: buffer.count) }

        sequenceParameterSet.withUnsafeBytes { sps in
            pictureParameterSet.withUnsafeBytes { pps in
                let source = Sources(frame: frame.bytes, sps: sps, pps: pps)
                Self.write(step, units: units, fragmentOffset: sent, from: source, into: buffer, leavingFrameSlice: leaving)
            }
        }

        switch step {
        case .single(let index): unitIndex = index + 1
        case .aggregate(let range, _): unitIndex = range.upperBound
        case .fragment(let index, let count):
            fragmentOffset += count
            if fragmentOffset == units[index].count - 1 {
                unitIndex = index + 1
                fragmentOffset = 0
            }
        }
        let isLast = unitIndex == units.count
        if isLast { self.frame = nil }
        return PacketizedPayload(byteCount: byteCount, isLast: isLast, marker: isLast, frameSlice: frameSlice)
    }

    // MARK: Planning

    /// The payload that starts at `unitIndex`: the rest of a fragmented unit, a unit too large for one
    /// payload, a run of units that fit together in a STAP-A, or one unit.
    private func nextStep() -> Step {
        let unit = units[unitIndex]
        if fragmentOffset > 0 || unit.count > maxPayloadSize {
            let remaining = unit.count - 1 - fragmentOffset
            return .fragment(unitIndex, count: min(remaining, maxPayloadSize - 2))
        }
        guard mode == .nonInterleaved, aggregation != .none else { return .single(unitIndex) }
        // STAP-A: the payload header, then a 16-bit size before each NAL unit (§5.7.1).
        var end = unitIndex, byteCount = 1
        while end < units.count, mayAggregate(units[end]), byteCount + 2 + units[end].count <= maxPayloadSize {
            byteCount += 2 + units[end].count
            end += 1
        }
        return end - unitIndex >= 2 ? .aggregate(unitIndex..<end, byteCount: byteCount) : .single(unitIndex)
    }

    private func mayAggregate(_ unit: Unit) -> Bool {
        switch aggregation {
        case .none: return false
        case .all: return true
        case .nonVCL:
            guard let frame else { return false }
            return unit.source != .frame || !H264Payload.isVCL(H264Payload.type(frame.bytes[unit.range.lowerBound]))
        }
    }

    // MARK: Writing

    /// The bytes of the frame that end the payload of `step`: all of a single NAL unit, or the
    /// fragment after an FU's two header bytes, when the unit is the frame's (not a remembered
    /// parameter set); nil for a STAP-A.
    private static func frameSlice(of step: Step, units: [Unit], fragmentOffset: Int) -> Range<Int>? {
        switch step {
        case .single(let index):
            return units[index].source == .frame ? units[index].range : nil
        case .fragment(let index, let count):
            guard units[index].source == .frame else { return nil }
            let start = units[index].range.lowerBound + 1 + fragmentOffset
            return start..<(start + count)
        case .aggregate:
            return nil
        }
    }

    /// The bytes `Unit.Source` points into, for one call.
    private struct Sources {
        var frame: UnsafeRawBufferPointer
        var sps: UnsafeRawBufferPointer
        var pps: UnsafeRawBufferPointer

        func bytes(_ unit: Unit) -> UnsafeRawBufferPointer {
            switch unit.source {
            case .frame: return frame.slice(unit.range)
            case .sequenceParameterSet: return sps.slice(unit.range)
            case .pictureParameterSet: return pps.slice(unit.range)
            }
        }
    }

    /// Writes the payload of `step`; with `leavingFrameSlice`, only what comes before its frame slice.
    private static func write(_ step: Step, units: [Unit], fragmentOffset: Int, from source: Sources,
                              into buffer: UnsafeMutableRawBufferPointer, leavingFrameSlice: Bool) {
        switch step {
        case .single(let index):
            if !leavingFrameSlice { FrameAssembly.copy(source.bytes(units[index]), to: buffer, at: 0) }
        case .aggregate(let range, _):
            // STAP-A header: F is the OR, NRI the maximum of the aggregated units' (§5.7).
            var forbidden: UInt8 = 0, nri: UInt8 = 0
            var offset = 1
            for unit in units[range] {
                let nal = source.bytes(unit)
                forbidden |= nal[0] & 0x80
                nri = max(nri, nal[0] & 0x60)
                buffer[offset] = UInt8(nal.count >> 8)
                buffer[offset + 1] = UInt8(nal.count & 0xFF)
                offset = FrameAssembly.copy(nal, to: buffer, at: offset + 2)
            }
            buffer[0] = forbidden | nri | UInt8(H264Payload.stapA)
        case .fragment(let index, let count):
            // FU indicator: F and NRI of the NAL unit, type 28; FU header: S, E, R=0, the unit's type (§5.8).
            let nal = source.bytes(units[index])
            let start = fragmentOffset == 0
            let end = fragmentOffset + count == nal.count - 1
            buffer[0] = nal[0] & 0xE0 | UInt8(H264Payload.fuA)
            buffer[1] = (start ? 0x80 : 0) | (end ? 0x40 : 0) | nal[0] & 0x1F
            let body = 1 + fragmentOffset
            if !leavingFrameSlice { FrameAssembly.copy(nal.slice(body..<(body + count)), to: buffer, at: 2) }
        }
    }

    // MARK: Parameter sets

    /// Keeps copies of the last SPS and PPS of the access unit.
    private mutating func remember(parameterSetsIn bytes: UnsafeRawBufferPointer) {
        for unit in units {
            switch H264Payload.type(bytes[unit.range.lowerBound]) {
            case H264Payload.sps: Self.replace(&sequenceParameterSet, with: bytes.slice(unit.range))
            case H264Payload.pps: Self.replace(&pictureParameterSet, with: bytes.slice(unit.range))
            default: break
            }
        }
    }

    /// Puts the remembered SPS and/or PPS that an IDR access unit lacks in front of it: after its
    /// access unit delimiter if it starts with one, and a PPS alone after the unit's own SPS.
    private mutating func insertParameterSets(hasSPS: Bool, hasPPS: Bool, in bytes: UnsafeRawBufferPointer) throws(RTPPayloadError) {
        func type(_ unit: Unit) -> Int { H264Payload.type(bytes[unit.range.lowerBound]) }
        var position = type(units[0]) == H264Payload.accessUnitDelimiter ? 1 : 0
        if hasSPS, let last = units.lastIndex(where: { type($0) == H264Payload.sps }) { position = last + 1 }
        if !hasSPS && !sequenceParameterSet.isEmpty {
            try insert(.sequenceParameterSet, count: sequenceParameterSet.count, at: position)
            position += 1
        }
        if !hasPPS && !pictureParameterSet.isEmpty {
            try insert(.pictureParameterSet, count: pictureParameterSet.count, at: position)
        }
    }

    private mutating func insert(_ source: Unit.Source, count: Int, at position: Int) throws(RTPPayloadError) {
        if mode == .singleNALUnit && count > maxPayloadSize {
            throw .payloadTooLarge(size: count, maxPayloadSize: maxPayloadSize)
        }
        units.insert(Unit(source: source, range: 0..<count), at: position)
    }

    private static func replace(_ storage: inout [UInt8], with bytes: some Collection<UInt8>) {
        storage.removeAll(keepingCapacity: true)
        storage.append(contentsOf: bytes)
    }
}
