import MediaFiles

/// An H.264 decoder configuration record (`avcC`, ISO/IEC 14496-15 §5.3.3.1): the parameter sets and
/// the size of the NAL unit length fields of a stream stored in MP4 or Matroska, where each NAL unit of
/// a sample is preceded by its length instead of a start code.
public struct AVCConfiguration: Sendable, Equatable {
    /// Bytes in each NAL unit length field: 1, 2 or 4.
    public var lengthSize: Int
    /// Sequence and picture parameter sets, each one NAL unit without start code or length.
    public var sequenceParameterSets: [[UInt8]]
    public var pictureParameterSets: [[UInt8]]

    /// Parses a configuration record; `nil` when `bytes` is not one (e.g. Annex-B extradata).
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 7, bytes[0] == 1 else { return nil }
        lengthSize = Int(bytes[4] & 3) + 1
        guard lengthSize != 3 else { return nil }
        var at = 6
        func sets(count: Int) -> [[UInt8]]? {
            var result: [[UInt8]] = []
            for _ in 0..<count {
                guard at + 2 <= bytes.count else { return nil }
                let size = Int(bytes[at]) << 8 | Int(bytes[at + 1])
                at += 2
                guard size > 0, at + size <= bytes.count else { return nil }
                result.append(Array(bytes[at..<at + size]))
                at += size
            }
            return result
        }
        guard let sps = sets(count: Int(bytes[5] & 0x1f)), at < bytes.count else { return nil }
        let ppsCount = Int(bytes[at])
        at += 1
        guard let pps = sets(count: ppsCount) else { return nil }
        sequenceParameterSets = sps
        pictureParameterSets = pps
    }

    /// Why a sample could not be converted; `offset` is within the sample.
    public struct SampleError: Error, Equatable {
        public var offset: Int
        public var detail: String
    }

    /// `sample` (length-prefixed NAL units) as one Annex-B access unit, with 4-byte start codes. An IDR
    /// access unit without its own SPS and PPS gets this configuration's in front, as Sluice's H.264
    /// frames carry them (`CodecName.h264`).
    public func annexB(_ sample: UnsafeRawBufferPointer) throws(SampleError) -> (bytes: [UInt8], isIDR: Bool) {
        var units: [Range<Int>] = []
        var at = 0
        var hasSPS = false, hasPPS = false, isIDR = false
        while at < sample.count {
            guard at + lengthSize <= sample.count else {
                throw SampleError(offset: at, detail: "NAL unit length field cut short (\(sample.count - at) of \(lengthSize) bytes)")
            }
            var size = 0
            for byte in sample[at..<at + lengthSize] { size = size << 8 | Int(byte) }
            at += lengthSize
            guard size > 0, at + size <= sample.count else {
                throw SampleError(offset: at - lengthSize,
                                  detail: "NAL unit of \(size) bytes, \(sample.count - at) left in the sample")
            }
            switch Int(sample[at] & 0x1f) {
            case 5: isIDR = true
            case 7: hasSPS = true
            case 8: hasPPS = true
            default: break
            }
            units.append(at..<at + size)
            at += size
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(sample.count + 4 * units.count + 64)
        let startCode: [UInt8] = [0, 0, 0, 1]
        if isIDR && !(hasSPS && hasPPS) {
            for set in sequenceParameterSets + pictureParameterSets { bytes += startCode + set }
        }
        for unit in units {
            bytes += startCode
            bytes += sample[unit]
        }
        return (bytes, isIDR)
    }

    /// The parameter sets of an Annex-B access unit as Annex-B bytes (start code before each), for a
    /// muxer's extradata; nil when the access unit has no SPS or no PPS.
    public static func parameterSets(inAnnexB accessUnit: UnsafeRawBufferPointer) -> [UInt8]? {
        var bytes: [UInt8] = [], types: Set<Int> = []
        for unit in AnnexB.nalUnits(in: accessUnit) where !unit.isEmpty {
            let type = Int(accessUnit[unit.lowerBound] & 0x1f)
            guard type == 7 || type == 8 else { continue }
            types.insert(type)
            bytes += [0, 0, 0, 1]
            bytes += accessUnit[unit]
        }
        return types.count == 2 ? bytes : nil
    }
}
