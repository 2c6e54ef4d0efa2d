/// RFC 6184 §8.1 profile-level-id reading and §8.2.2 level answers.
import MediaNegotiation
import Testing

struct H264ProfileLevelIDTests {
    typealias ID = H264ProfileLevelID

    @Test("profile-level-id: profile by profile_idc and constraint flags, level by level_idc", arguments: [
        ("42e01f", ID.Profile.constrainedBaseline, ID.Level.level3_1),  // 42: Baseline idc, e0: set0+set1+set2
        ("42c01f", .constrainedBaseline, .level3_1),                     // set1 alone makes it constrained
        ("42001f", .baseline, .level3_1),                                // no constraint flags
        ("4d001f", .main, .level3_1),
        ("4de01f", .constrainedBaseline, .level3_1),                     // Main with set0: decodable as Baseline
        ("58c01f", .constrainedBaseline, .level3_1),                     // Extended with set0+set1
        ("58801f", .baseline, .level3_1),
        ("58001f", .extended, .level3_1),
        ("640c1f", .constrainedHigh, .level3_1),                         // 0c: set4+set5
        ("64001f", .high, .level3_1),
        ("6e0028", .high10, .level4),
        ("7a0032", .high422, .level5),
        ("f4001f", .high444, .level3_1),
        ("42f00b", .constrainedBaseline, .level1b),                      // level_idc 11 + set3 = 1b
        ("4d100b", .main, .level1b),
        ("42000b", .baseline, .level1_1),                                // no set3: plain 1.1
        ("640009", .high, .level1b),                                     // High writes 1b as level_idc 9
        ("64100b", .high, .level1_1),                                    // set3 means nothing in High
        ("42e00a", .constrainedBaseline, .level1),
        ("640c34", .constrainedHigh, .level5_2),
    ])
    func parses(text: String, profile: ID.Profile, level: ID.Level) throws {
        let parsed = try ID(parsing: text)
        #expect(parsed.profile == profile)
        #expect(parsed.level == level)
    }

    @Test("malformed profile-level-ids name what is wrong", arguments: [
        ("", H264ProfileLevelIDError.malformed("")),
        ("42e01", .malformed("42e01")),                 // five digits
        ("42e01f0", .malformed("42e01f0")),             // seven
        ("zz001f", .malformed("zz001f")),
        ("+2e01f", .malformed("+2e01f")),
        ("00001f", .unknownProfile("00001f")),
        ("53001f", .unknownProfile("53001f")),
        ("6e101f", .unknownProfile("6e101f")),          // High 10 Intra: not offered for real time
        ("42e0ff", .unknownLevel("42e0ff")),
        ("420009", .unknownLevel("420009")),            // Baseline writes 1b as 11 + set3, never 9
    ])
    func malformed(text: String, error: H264ProfileLevelIDError) {
        #expect(throws: error) { try ID(parsing: text) }
    }

    @Test("each profile and level writes back in its canonical form", arguments: [
        (ID(profile: .constrainedBaseline, level: .level3_1), "42e01f"),
        (ID(profile: .baseline, level: .level3_1), "42001f"),
        (ID(profile: .main, level: .level4), "4d0028"),
        (ID(profile: .high, level: .level5_1), "640033"),
        (ID(profile: .constrainedHigh, level: .level3_2), "640c20"),
        (ID(profile: .constrainedBaseline, level: .level1b), "42f00b"),
        (ID(profile: .baseline, level: .level1b), "42100b"),
        (ID(profile: .high, level: .level1b), "640009"),
        (ID(profile: .high444, level: .level3_1), "f4001f"),
    ])
    func writes(id: ID, text: String) throws {
        #expect(id.description == text)
        #expect(try ID(parsing: text) == id)
    }

    @Test func levelsAreOrderedWith1bBetween1And11() {
        #expect(ID.Level.level1 < .level1b && ID.Level.level1b < .level1_1)
        #expect(ID.Level.level3 < .level3_1 && ID.Level.level5_1 < .level5_2)
    }

    @Test("H.264 Table A-1 limits", arguments: [
        (ID.Level.level1, 99, 1_485), (.level1b, 99, 1_485), (.level2_1, 792, 19_800), (.level3, 1_620, 40_500),
        (.level3_1, 3_600, 108_000), (.level4, 8_192, 245_760), (.level5_2, 36_864, 2_073_600),
    ])
    func tableA1(level: ID.Level, maxFrameSize: Int, maxMacroblocksPerSecond: Int) {
        #expect(level.maxFrameSize == maxFrameSize)
        #expect(level.maxMacroblocksPerSecond == maxMacroblocksPerSecond)
    }

    @Test("RFC 6184 §8.2.2: with asymmetry each side's level stands, else the lower one", arguments: [
        (ID.Level.level5_1, ID.Level.level3_1, true, ID.Level.level3_1),  // offerer receives more; we state ours
        (.level3, .level3_1, true, .level3_1),                             // we may state more than offered
        (.level5_1, .level3_1, false, .level3_1),
        (.level3, .level3_1, false, .level3),                              // symmetric: the lower
        (.level1b, .level3_1, false, .level1b),
    ])
    func answerLevel(offered: ID.Level, local: ID.Level, asymmetry: Bool, answer: ID.Level) {
        #expect(ID.answerLevel(offered: offered, local: local, levelAsymmetryAllowed: asymmetry) == answer)
    }
}
