/// H.264's `profile-level-id` (RFC 6184 §8.1): three hex bytes, `profile_idc`, `profile-iop` (the
/// constraint_set0..5 flags) and `level_idc`, read as a profile (by `profile_idc` and the constraint
/// flags, H.264 §A.2) and a level (H.264 Table A-1, with level 1b written as level 1.1 plus
/// constraint_set3 in the Baseline, Main and Extended profiles).
public struct H264ProfileLevelID: Sendable, Hashable, CustomStringConvertible {
    public var profile: Profile
    public var level: Level

    public init(profile: Profile, level: Level) {
        self.profile = profile
        self.level = level
    }

    /// H.264 profiles as offer/answer tells them apart (H.264 §A.2).
    public enum Profile: String, Sendable, Hashable, CaseIterable {
        case constrainedBaseline = "Constrained Baseline"
        case baseline = "Baseline"
        case main = "Main"
        case extended = "Extended"
        case high = "High"
        case constrainedHigh = "Constrained High"
        case high10 = "High 10"
        case high422 = "High 4:2:2"
        case high444 = "High 4:4:4 Predictive"

        /// `profile_idc` and `profile-iop` as written for this profile (constraint flags as H.264 §A.2
        /// defines the profile; constraint_set3 off).
        var bytes: (idc: UInt8, iop: UInt8) {
            switch self {
            case .constrainedBaseline: (0x42, 0xE0)
            case .baseline: (0x42, 0x00)
            case .main: (0x4D, 0x00)
            case .extended: (0x58, 0x00)
            case .high: (0x64, 0x00)
            case .constrainedHigh: (0x64, 0x0C)
            case .high10: (0x6E, 0x00)
            case .high422: (0x7A, 0x00)
            case .high444: (0xF4, 0x00)
            }
        }

        /// Whether level 1b is level_idc 11 with constraint_set3 (H.264 §A.3.1, §A.3.2); else 9.
        var writesLevel1bAsConstraint: Bool { [.constrainedBaseline, .baseline, .main, .extended].contains(self) }
    }

    /// H.264 levels 1 to 5.2 in order, with their Table A-1 limits.
    public enum Level: Int, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
        case level1, level1b, level1_1, level1_2, level1_3, level2, level2_1, level2_2, level3, level3_1, level3_2
        case level4, level4_1, level4_2, level5, level5_1, level5_2

        private static let table: [(idc: UInt8, name: String, maxMacroblocksPerSecond: Int, maxFrameSize: Int)] = [
            (10, "1", 1_485, 99), (9, "1b", 1_485, 99), (11, "1.1", 3_000, 396), (12, "1.2", 6_000, 396),
            (13, "1.3", 11_880, 396), (20, "2", 11_880, 396), (21, "2.1", 19_800, 792), (22, "2.2", 20_250, 1_620),
            (30, "3", 40_500, 1_620), (31, "3.1", 108_000, 3_600), (32, "3.2", 216_000, 5_120),
            (40, "4", 245_760, 8_192), (41, "4.1", 245_760, 8_192), (42, "4.2", 522_240, 8_704),
            (50, "5", 589_824, 22_080), (51, "5.1", 983_040, 36_864), (52, "5.2", 2_073_600, 36_864),
        ]

        /// `level_idc`; 9 for level 1b (its form outside the Baseline, Main and Extended profiles).
        public var levelIDC: UInt8 { Self.table[rawValue].idc }
        /// MaxFS: the largest picture, in 16x16 macroblocks (H.264 Table A-1).
        public var maxFrameSize: Int { Self.table[rawValue].maxFrameSize }
        /// MaxMBPS: macroblocks per second (H.264 Table A-1).
        public var maxMacroblocksPerSecond: Int { Self.table[rawValue].maxMacroblocksPerSecond }
        public var description: String { Self.table[rawValue].name }

        /// The level of `level_idc`; nil when H.264 defines none.
        public init?(levelIDC: UInt8) {
            guard let index = Self.table.firstIndex(where: { $0.idc == levelIDC }) else { return nil }
            self.init(rawValue: index)
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    /// Parses six hex digits (RFC 6184 §8.1).
    public init(parsing text: String) throws(H264ProfileLevelIDError) {
        guard text.utf8.count == 6, text.allSatisfy(\.isHexDigit), let value = UInt32(text, radix: 16) else {
            throw .malformed(text)
        }
        let idc = UInt8(value >> 16), iop = UInt8((value >> 8) & 0xFF), levelIDC = UInt8(value & 0xFF)
        guard let profile = Self.profile(idc: idc, iop: iop) else { throw .unknownProfile(text) }
        let constraintSet3 = iop & 0x10 != 0
        if levelIDC == 11 && constraintSet3 && profile.writesLevel1bAsConstraint {
            self.init(profile: profile, level: .level1b)
        } else if let level = Level(levelIDC: levelIDC), level != .level1b || !profile.writesLevel1bAsConstraint {
            self.init(profile: profile, level: level)
        } else {
            throw .unknownLevel(text)
        }
    }

    /// The profile of `profile_idc` and the constraint flags (bits 7..2 of `profile-iop`: set0..set5).
    static func profile(idc: UInt8, iop: UInt8) -> Profile? {
        let set0 = iop & 0x80 != 0, set1 = iop & 0x40 != 0, set3 = iop & 0x10 != 0
        let set4 = iop & 0x08 != 0, set5 = iop & 0x04 != 0
        switch idc {
        case 0x42: return set1 ? .constrainedBaseline : .baseline
        case 0x4D: return set0 ? .constrainedBaseline : .main
        case 0x58: return set0 && set1 ? .constrainedBaseline : set0 ? .baseline : .extended
        case 0x64: return set4 && set5 ? .constrainedHigh : .high
        case 0x6E: return set3 ? nil : .high10  // High 10 Intra is not a real-time profile
        case 0x7A: return set3 ? nil : .high422
        case 0xF4: return set3 ? nil : .high444
        default: return nil
        }
    }

    /// Six lowercase hex digits in the canonical form of the profile (RFC 6184 §8.1).
    public var description: String {
        var (idc, iop) = profile.bytes
        var levelIDC = level.levelIDC
        if level == .level1b && profile.writesLevel1bAsConstraint {
            iop |= 0x10
            levelIDC = 11
        }
        return [idc, iop, levelIDC].map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// The level an answer states (RFC 6184 §8.2.2): with `level-asymmetry-allowed=1` on both sides
    /// each side receives at its own level, so the answerer's `local` level stands; otherwise both
    /// use the lower of the two.
    public static func answerLevel(offered: Level, local: Level, levelAsymmetryAllowed: Bool) -> Level {
        levelAsymmetryAllowed ? local : min(offered, local)
    }
}

/// Why a `profile-level-id` does not read.
public enum H264ProfileLevelIDError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not six hex digits.
    case malformed(String)
    /// A `profile_idc` and constraint flags no profile has.
    case unknownProfile(String)
    /// A `level_idc` H.264 Table A-1 does not list.
    case unknownLevel(String)

    public var description: String {
        switch self {
        case .malformed(let text): "profile-level-id \(text) is not six hex digits"
        case .unknownProfile(let text): "profile-level-id \(text) names no known H.264 profile"
        case .unknownLevel(let text): "profile-level-id \(text) names no H.264 level"
        }
    }
}
