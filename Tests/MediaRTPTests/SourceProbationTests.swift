import Testing

@testable import MediaRTP

/// RFC 3550 §A.1 probation: the first source to send two packets in sequence is chosen, for good.
@Suite struct SourceProbationTests {
    @Test func theFirstSourceWithTwoPacketsInSequenceIsChosenAndHeldPacketsAreAccountedFor() {
        var probation = SourceProbation(capacity: 4)
        #expect(probation.admit(ssrc: 1, sequenceNumber: 100) == .probation(slot: 0, dropping: false))
        #expect(probation.admit(ssrc: 2, sequenceNumber: 7) == .probation(slot: 1, dropping: false))
        // Out of sequence: probation starts again, and the packet held for source 1 is given up.
        #expect(probation.admit(ssrc: 1, sequenceNumber: 105) == .probation(slot: 0, dropping: true))
        #expect(probation.admit(ssrc: 1, sequenceNumber: 106) == .chosen(releasing: 0))
        #expect(probation.chosen == 1 && probation.candidatesOnProbation == 0)
        // Chosen for good: the other source, even in sequence, is foreign.
        #expect(probation.admit(ssrc: 2, sequenceNumber: 8) == .foreign)
        #expect(probation.admit(ssrc: 1, sequenceNumber: 300) == .chosen(releasing: nil))
    }

    @Test func aSequenceNumberWrapStillFollows() {
        var probation = SourceProbation()
        _ = probation.admit(ssrc: 9, sequenceNumber: 65_535)
        #expect(probation.admit(ssrc: 9, sequenceNumber: 0) == .chosen(releasing: 0))
    }

    @Test func aSourceNamedInAdvanceSkipsProbation() {
        var probation = SourceProbation(chosen: 42)
        #expect(probation.admit(ssrc: 42, sequenceNumber: 1) == .chosen(releasing: nil))
        #expect(probation.admit(ssrc: 43, sequenceNumber: 1) == .foreign)
    }

    /// A flood of ever new SSRCs takes the slot heard least recently and grows nothing: a real
    /// source with fewer than `capacity` strangers between its packets keeps its slot; with more,
    /// it is evicted (its held packet given up) and proves itself one packet later.
    @Test(arguments: [3, 4])
    func aFloodOfNewSourcesEvictsTheLeastRecent(strangersBetween: Int) {
        var probation = SourceProbation(capacity: 4)
        var stranger: UInt32 = 1000
        func flood() -> [SourceProbation.Outcome] {
            (0..<strangersBetween).map { _ in
                stranger += 1
                return probation.admit(ssrc: stranger, sequenceNumber: 1)
            }
        }
        #expect(probation.admit(ssrc: 7, sequenceNumber: 10) == .probation(slot: 0, dropping: false))
        let first = flood()
        #expect(probation.candidatesOnProbation == 4)
        if strangersBetween < 4 {
            #expect(!first.contains(.probation(slot: 0, dropping: true)))
            #expect(probation.admit(ssrc: 7, sequenceNumber: 11) == .chosen(releasing: 0))
        } else {
            #expect(first.last == .probation(slot: 0, dropping: true), "the real source, heard least recently, evicted")
            #expect(probation.admit(ssrc: 7, sequenceNumber: 11) == .probation(slot: 1, dropping: true))
            #expect(probation.admit(ssrc: 7, sequenceNumber: 12) == .chosen(releasing: 1))
        }
        #expect(probation.chosen == 7)
    }
}
