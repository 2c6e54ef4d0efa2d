import MediaCore

/// NAL unit types of H.264 (ITU-T H.264 Table 7-1) that Sluice looks at.
public enum H264NALType {
    /// Coded slice of a non-IDR picture.
    public static let slice = 1
    /// Coded slice data partition A.
    public static let partitionA = 2
    /// Coded slice of an IDR picture: a keyframe.
    public static let idrSlice = 5
    /// Supplemental enhancement information.
    public static let sei = 6
    /// Sequence parameter set.
    public static let sps = 7
    /// Picture parameter set.
    public static let pps = 8
    public static let accessUnitDelimiter = 9

    /// The type in a NAL unit header byte (§7.3.1: forbidden_zero_bit, nal_ref_idc, nal_unit_type).
    public static func type(ofHeader header: UInt8) -> Int { Int(header & 0x1F) }
    /// Whether NAL units of `type` carry slice data (VCL NAL units, types 1 to 5).
    public static func isVCL(_ type: Int) -> Bool { (1...5).contains(type) }
}

/// The fields of an H.264 sequence parameter set (ITU-T H.264 §7.3.2.1.1) up to the frame cropping,
/// the picture size they give, and the frame rate of the VUI timing information (Annex E) when present.
///
/// Parsing never traps: bad input throws `MediaFileError.corrupt` naming `path` and the `offset`
/// of the NAL unit, and the field that could not be read.
public struct H264SequenceParameterSet: Sendable, Hashable {
    public let profileIDC: Int
    /// constraint_set0_flag to constraint_set5_flag in bits 7 to 2, as in the bitstream.
    public let constraintFlags: UInt8
    public let levelIDC: Int
    public let id: Int
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4 (§6.2).
    public let chromaFormatIDC: Int
    public let separateColourPlane: Bool
    public let bitDepthLuma: Int
    public let bitDepthChroma: Int
    public let log2MaxFrameNum: Int
    public let picOrderCountType: Int
    public let maxReferenceFrames: Int
    public let widthInMacroblocks: Int
    /// Height in map units: macroblock rows for frames, macroblock pairs when fields may occur.
    public let heightInMapUnits: Int
    public let frameMacroblocksOnly: Bool
    /// Samples cropped off each edge of the decoded frame (§7.4.2.1.1, CropUnitX and CropUnitY applied).
    public let cropLeft: Int, cropRight: Int, cropTop: Int, cropBottom: Int
    /// The size of the output pictures: the coded size less the cropping.
    public let width: Int
    public let height: Int
    /// Frames per second from the VUI timing information, `time_scale / (2 * num_units_in_tick)`
    /// (§E.2.1, one frame is two field ticks); nil when the SPS has none, or its VUI cannot be read.
    public let frameRate: Rational?

    /// Profiles whose SPS carries chroma format, bit depths and scaling matrices (§7.3.2.1.1).
    static let highProfiles: Set<Int> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]
    /// Coded sizes beyond this many macroblocks a side are taken as corruption (32768 samples).
    static let maxMacroblocksPerSide = 2048

    /// Parses `nalUnit`: one NAL unit from its header byte on (type 7), without start code, with its
    /// emulation prevention bytes. `path` and `offset` say where it came from, for errors.
    public init(parsing nalUnit: UnsafeRawBufferPointer, path: String = "SPS", offset: Int = 0) throws {
        func corrupt(_ detail: String) -> MediaFileError { .corrupt(path: path, offset: offset, detail: detail) }
        guard let header = nalUnit.first else { throw corrupt("empty NAL unit where a sequence parameter set should be") }
        guard header & 0x80 == 0 else { throw corrupt("sequence parameter set has forbidden_zero_bit set") }
        guard H264NALType.type(ofHeader: header) == H264NALType.sps else {
            throw corrupt("NAL unit of type \(H264NALType.type(ofHeader: header)) is not a sequence parameter set")
        }
        var bits = H264BitReader(rbsp: AnnexB.rbsp(UnsafeRawBufferPointer(rebasing: nalUnit.dropFirst())), path: path,
                                 offset: offset, unit: "sequence parameter set")

        profileIDC = try bits.bits(8, "profile_idc")
        constraintFlags = UInt8(try bits.bits(8, "constraint_set flags"))
        levelIDC = try bits.bits(8, "level_idc")
        id = try bits.ue("seq_parameter_set_id", max: 31)
        if Self.highProfiles.contains(profileIDC) {
            chromaFormatIDC = try bits.ue("chroma_format_idc", max: 3)
            separateColourPlane = chromaFormatIDC == 3 ? try bits.flag("separate_colour_plane_flag") : false
            bitDepthLuma = 8 + (try bits.ue("bit_depth_luma_minus8", max: 6))
            bitDepthChroma = 8 + (try bits.ue("bit_depth_chroma_minus8", max: 6))
            _ = try bits.flag("qpprime_y_zero_transform_bypass_flag")
            if try bits.flag("seq_scaling_matrix_present_flag") {
                for list in 0..<(chromaFormatIDC != 3 ? 8 : 12) {
                    if try bits.flag("seq_scaling_list_present_flag") { try bits.skipScalingList(size: list < 6 ? 16 : 64) }
                }
            }
        } else {
            chromaFormatIDC = 1
            separateColourPlane = false
            bitDepthLuma = 8
            bitDepthChroma = 8
        }
        log2MaxFrameNum = 4 + (try bits.ue("log2_max_frame_num_minus4", max: 12))
        picOrderCountType = try bits.ue("pic_order_cnt_type", max: 2)
        if picOrderCountType == 0 {
            _ = try bits.ue("log2_max_pic_order_cnt_lsb_minus4", max: 12)
        } else if picOrderCountType == 1 {
            _ = try bits.flag("delta_pic_order_always_zero_flag")
            _ = try bits.se("offset_for_non_ref_pic")
            _ = try bits.se("offset_for_top_to_bottom_field")
            let cycle = try bits.ue("num_ref_frames_in_pic_order_cnt_cycle", max: 255)
            for _ in 0..<cycle { _ = try bits.se("offset_for_ref_frame") }
        }
        maxReferenceFrames = try bits.ue("max_num_ref_frames", max: 16)
        _ = try bits.flag("gaps_in_frame_num_value_allowed_flag")
        widthInMacroblocks = 1 + (try bits.ue("pic_width_in_mbs_minus1", max: Self.maxMacroblocksPerSide - 1))
        heightInMapUnits = 1 + (try bits.ue("pic_height_in_map_units_minus1", max: Self.maxMacroblocksPerSide - 1))
        frameMacroblocksOnly = try bits.flag("frame_mbs_only_flag")
        if !frameMacroblocksOnly { _ = try bits.flag("mb_adaptive_frame_field_flag") }
        _ = try bits.flag("direct_8x8_inference_flag")

        let codedWidth = widthInMacroblocks * 16
        let codedHeight = (frameMacroblocksOnly ? 1 : 2) * heightInMapUnits * 16
        if try bits.flag("frame_cropping_flag") {
            // §7.4.2.1.1: offsets count chroma samples (or luma for monochrome / separate planes),
            // and field pairs for interlaced coding.
            let chromaArrayType = separateColourPlane ? 0 : chromaFormatIDC
            let cropUnitX = chromaArrayType == 0 || chromaArrayType == 3 ? 1 : 2
            let cropUnitY = (chromaArrayType == 1 ? 2 : 1) * (frameMacroblocksOnly ? 1 : 2)
            let limit = Self.maxMacroblocksPerSide * 32
            cropLeft = cropUnitX * (try bits.ue("frame_crop_left_offset", max: limit))
            cropRight = cropUnitX * (try bits.ue("frame_crop_right_offset", max: limit))
            cropTop = cropUnitY * (try bits.ue("frame_crop_top_offset", max: limit))
            cropBottom = cropUnitY * (try bits.ue("frame_crop_bottom_offset", max: limit))
        } else {
            cropLeft = 0
            cropRight = 0
            cropTop = 0
            cropBottom = 0
        }
        width = codedWidth - cropLeft - cropRight
        height = codedHeight - cropTop - cropBottom
        guard width > 0, height > 0 else {
            throw corrupt("cropping \(cropLeft)+\(cropRight) x \(cropTop)+\(cropBottom) leaves nothing of the coded "
                          + "\(codedWidth)x\(codedHeight) picture")
        }
        // The VUI only adds information: a damaged one costs the frame rate, not the SPS.
        frameRate = (try? bits.flag("vui_parameters_present_flag")) == true ? try? Self.vuiFrameRate(&bits) : nil
    }

    /// Reads vui_parameters() (§E.1.1) up to the timing information.
    private static func vuiFrameRate(_ bits: inout H264BitReader) throws -> Rational? {
        if try bits.flag("aspect_ratio_info_present_flag"), try bits.bits(8, "aspect_ratio_idc") == 255 {
            _ = try bits.bits(32, "sar_width and sar_height")
        }
        if try bits.flag("overscan_info_present_flag") { _ = try bits.flag("overscan_appropriate_flag") }
        if try bits.flag("video_signal_type_present_flag") {
            _ = try bits.bits(4, "video_format and video_full_range_flag")
            if try bits.flag("colour_description_present_flag") { _ = try bits.bits(24, "colour description") }
        }
        if try bits.flag("chroma_loc_info_present_flag") {
            _ = try bits.ue("chroma_sample_loc_type_top_field")
            _ = try bits.ue("chroma_sample_loc_type_bottom_field")
        }
        guard try bits.flag("timing_info_present_flag") else { return nil }
        let ticks = try bits.bits(32, "num_units_in_tick"), timeScale = try bits.bits(32, "time_scale")
        guard ticks > 0, timeScale > 0 else { return nil }
        return Rational(timeScale, 2 * ticks)
    }

    public init(parsing nalUnit: [UInt8], path: String = "SPS", offset: Int = 0) throws {
        try self = nalUnit.withUnsafeBytes { try H264SequenceParameterSet(parsing: $0, path: path, offset: offset) }
    }

    /// The profile as ffmpeg and the standard's Annex A name it, e.g. "Constrained Baseline", "High".
    public var profileName: String {
        let set1 = constraintFlags & 0x40 != 0, set3 = constraintFlags & 0x10 != 0
        switch profileIDC {
        case 66: return set1 ? "Constrained Baseline" : "Baseline"
        case 77: return "Main"
        case 88: return "Extended"
        case 100: return "High"
        case 110: return set3 ? "High 10 Intra" : "High 10"
        case 122: return set3 ? "High 4:2:2 Intra" : "High 4:2:2"
        case 244: return set3 ? "High 4:4:4 Intra" : "High 4:4:4 Predictive"
        case 44: return "CAVLC 4:4:4"
        default: return "profile_idc \(profileIDC)"
        }
    }
}

/// Reads an RBSP (§7.2) bit by bit, most significant bit first, with the Exp-Golomb codes of §9.1.
/// Every read checks the end of the data and throws `MediaFileError.corrupt` naming the field.
struct H264BitReader {
    private let bytes: [UInt8]
    /// Bits read so far.
    private(set) var position = 0
    let path: String
    let offset: Int
    let unit: String

    init(rbsp: [UInt8], path: String, offset: Int, unit: String) {
        self.bytes = rbsp
        self.path = path
        self.offset = offset
        self.unit = unit
    }

    var bitsLeft: Int { bytes.count * 8 - position }

    func corrupt(_ detail: String) -> MediaFileError {
        .corrupt(path: path, offset: offset, detail: "\(unit): \(detail)")
    }

    mutating func bit(_ field: String) throws -> Int {
        guard position < bytes.count * 8 else { throw corrupt("ends before \(field) (bit \(position))") }
        let value = Int(bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1)
        position += 1
        return value
    }

    mutating func flag(_ field: String) throws -> Bool { try bit(field) == 1 }

    /// `count` bits (at most 32) as an unsigned number.
    mutating func bits(_ count: Int, _ field: String) throws -> Int {
        precondition((0...32).contains(count))
        guard count <= bitsLeft else { throw corrupt("ends inside \(field) (bit \(position))") }
        var value = 0
        for _ in 0..<count { value = value << 1 | (try bit(field)) }
        return value
    }

    /// ue(v) (§9.1): leading zero bits, a one, then as many bits again; at most 32 bits of value.
    mutating func ue(_ field: String, max: Int = Int(UInt32.max) - 1) throws -> Int {
        var leadingZeros = 0
        while try bit(field) == 0 {
            leadingZeros += 1
            guard leadingZeros <= 31 else { throw corrupt("\(field) has an Exp-Golomb code over 32 bits (bit \(position))") }
        }
        let value = (1 << leadingZeros) - 1 + (try bits(leadingZeros, field))
        guard value <= max else { throw corrupt("\(field) is \(value), more than \(max)") }
        return value
    }

    /// se(v) (§9.1.1): ue(v) mapped to 0, 1, -1, 2, -2, ...
    mutating func se(_ field: String) throws -> Int {
        let code = try ue(field)
        return code & 1 == 1 ? (code + 1) / 2 : -(code / 2)
    }

    /// Reads past a scaling_list() of `size` entries (§7.3.2.1.1.1).
    mutating func skipScalingList(size: Int) throws {
        var last = 8, next = 8
        for _ in 0..<size {
            if next != 0 {
                let delta = try se("delta_scale")
                guard (-128...127).contains(delta) else { throw corrupt("delta_scale \(delta) is outside -128...127") }
                next = (last + delta + 256) % 256
            }
            last = next == 0 ? last : next
        }
    }
}
