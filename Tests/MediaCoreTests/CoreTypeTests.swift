import Glibc
import MediaCore
import Testing

@Suite struct MediaTimeTests {
    @Test func rationalsReduceAndCompare() {
        #expect(Rational(2, 60) == Rational(1, 30))
        #expect(Rational(1, -2) == Rational(-1, 2))
        #expect(Rational(30000, 1001) < Rational(30, 1))
        #expect(Rational(parsing: "30000/1001") == Rational(30000, 1001))
        #expect(Rational(parsing: "25") == Rational(25, 1))
        #expect(Rational(parsing: "29.97") == Rational(2997, 100))
        #expect(Rational(parsing: "x/2") == nil)
    }

    @Test func mediaTimesCompareAcrossTimebasesAndRescaleToNearest() {
        let frame = MediaTime(1, timebase: Rational(1, 30))
        #expect(frame == MediaTime(3000, timebase: Rational(1, 90000)))
        #expect(frame < MediaTime(3001, timebase: Rational(1, 90000)))
        #expect(MediaTime(1, timebase: Rational(1001, 30000)).rescaled(to: Rational(1, 90000)).value == 3003)
        #expect(MediaTime(1, timebase: Rational(1, 3)).rescaled(to: Rational(1, 1000)).value == 333)
        #expect(MediaTime(2, timebase: Rational(1, 3)).rescaled(to: Rational(1, 1000)).value == 667)
        #expect(MediaTime(-2, timebase: Rational(1, 3)).rescaled(to: Rational(1, 1000)).value == -667)
        // Sums are exact: 1/30 s + 1/60 s = 3/60 s.
        #expect(frame + MediaTime(1, timebase: Rational(1, 60)) == MediaTime(3, timebase: Rational(1, 60)))
        #expect((frame + MediaTime(1, timebase: Rational(1, 60))).timebase == Rational(1, 60))
        #expect(MediaTime(1, timebase: Rational(1001, 30000)) - MediaTime(1, timebase: Rational(1, 25))
                == MediaTime(1001 * 5 - 6000, timebase: Rational(1, 150000)))
        #expect(ClockTime(MediaTime(1, timebase: Rational(1, 30))).nanoseconds == 33_333_333)
    }

    /// Times in one timebase compare by value alone; the same instants written in two timebases
    /// compare the same way.
    @Test func timesCompareAlikeInOneTimebaseAndAcrossTwo() {
        let values: [Int64] = [Int64.min / 4, -90_001, -3, -1, 0, 1, 2, 3_000, Int64.max / 4]
        for a in values {
            for b in values {
                let (x, y) = (MediaTime(a, timebase: Rational(1, 30)), MediaTime(b, timebase: Rational(1, 30)))
                let (x2, y2) = (MediaTime(a * 2, timebase: Rational(1, 60)), MediaTime(b * 2, timebase: Rational(1, 60)))
                #expect((x < y) == (a < b) && (x == y) == (a == b))
                #expect((x2 < y) == (a < b) && (x < y2) == (a < b) && (x2 == y) == (a == b))
            }
        }
    }

    /// Rescaling takes 64-bit arithmetic when the products fit and 128-bit otherwise; both round to
    /// the nearest tick, halves away from zero, as the exact quotient says.
    @Test func rescalingRoundsAsTheExactQuotientOnEitherSideOfSixtyFourBits() {
        func nearest(_ time: MediaTime, _ target: Rational) -> Int128 {
            let num = Int128(time.value) * Int128(time.timebase.numerator) * Int128(target.denominator)
            let den = Int128(time.timebase.denominator) * Int128(target.numerator)
            let (quotient, remainder) = num.quotientAndRemainder(dividingBy: den)
            return 2 * remainder.magnitude >= den.magnitude ? quotient + (num < 0 ? -1 : 1) : quotient
        }
        let timebases = [Rational(1, 30), Rational(1001, 30000), Rational(1, 90000), Rational(1, 48000),
                         Rational(1, 1_000_000_000), Rational(1, 3), Rational(7, 11)]
        let values: [Int64] = [0, 1, -1, 2, -2, 1_500, -1_500, 3_000_000_007, -3_000_000_007,
                               Int64.max / 100_000, Int64.min / 100_000, Int64.max / 4_000_000_000]
        var fallbacks = 0
        for from in timebases {
            for to in timebases {
                for value in values {
                    let time = MediaTime(value, timebase: from)
                    guard let expected = Int64(exactly: nearest(time, to)) else { continue }  // no such time there
                    #expect(time.rescaled(to: to).value == expected, "\(value) at \(from) to \(to)")
                    if value.multipliedReportingOverflow(by: Int64(from.numerator * to.denominator)).overflow { fallbacks += 1 }
                }
            }
        }
        #expect(fallbacks > 0, "some products must need 128 bits")
        #expect(MediaTime(1, timebase: Rational(1, 6)).rescaled(to: Rational(1, 4)).value == 1)  // 0.667 ticks
        #expect(MediaTime(-1, timebase: Rational(1, 8)).rescaled(to: Rational(1, 4)).value == -1)  // -0.5: away from zero
    }
}

@Suite struct CapsTests {
    let i420: Encoding = .pixels(.i420)

    @Test func intersectionKeepsTheLeftSidesPreferenceOrder() {
        let offered: Caps = [.video(.oneOf([.compressed(.vp8), .compressed(.h264)]), width: .exactly(640),
                                    height: .exactly(360), frameRate: .exactly(Rational(25, 1)))]
        let accepted: Caps = [.video(.oneOf([.compressed(.h264), .compressed(.vp8)]), width: .range(16...1920))]
        let agreed = offered.intersection(accepted)
        #expect(agreed.fixated == .video(VideoFormat(encoding: .compressed(.vp8), width: 640, height: 360,
                                                     frameRate: Rational(25, 1))))
    }

    @Test func disjointFieldsGiveNothing() {
        let a: Caps = [.video(.exactly(i420), width: .range(16...320))]
        #expect(a.intersection([.video(.exactly(i420), width: .range(321...640))]).isEmpty)
        #expect(a.intersection([.audio(.any)]).isEmpty)
        #expect(a.intersection([.video(.exactly(.compressed(.vp8)))]).isEmpty)
    }

    @Test func rangesIntersectAndOpenFieldsDoNotFixate() {
        let agreed = Choice<Int>.range(16...640).intersection(.range(320...1920))
        #expect(agreed == .range(320...640))
        #expect(Choice<Int>.range(16...640).intersection(.oneOf([8, 480, 720])) == .oneOf([480]))
        #expect(Caps([.video(.exactly(i420), width: .exactly(2), height: .exactly(2))]).fixated == nil)
    }

    @Test func describesReadably() {
        let caps = Caps(.video(VideoFormat(encoding: i420, width: 640, height: 360, frameRate: Rational(30000, 1001))))
        #expect(caps.description == "video/I420 640x360@30000/1001")
    }
}

@Suite struct FrameAndPoolTests {
    @Test func i420LayoutAlignsRowsAndHalvesChroma() {
        let layout = PlaneLayout(.i420, width: 33, height: 17)
        #expect(layout[0] == Plane(offset: 0, stride: 64, width: 33, rows: 17))
        #expect(layout[1] == Plane(offset: 64 * 17, stride: 32, width: 17, rows: 9))
        #expect(layout[2].offset == 64 * 17 + 32 * 9)
        #expect(layout.byteCount == 64 * 17 + 2 * 32 * 9)
    }

    @Test func nv12LayoutInterleavesChromaInOnePlane() {
        let layout = PlaneLayout(.nv12, width: 33, height: 17)
        #expect(layout.planeCount == 2)
        #expect(layout[0] == Plane(offset: 0, stride: 64, width: 33, rows: 17))
        // 17 U and 17 V samples a row, interleaved: 34 bytes, for 9 rows.
        #expect(layout[1] == Plane(offset: 64 * 17, stride: 64, width: 34, rows: 9))
        #expect(layout.byteCount == 64 * 17 + 64 * 9)
        let tight = PlaneLayout(.nv12, width: 6, height: 4, rowAlignment: 1)
        #expect(tight.byteCount == 6 * 4 + 6 * 2)
    }

    @Test(arguments: [PixelFormat.yuy2, .uyvy])
    func packed422LayoutIsOnePlaneOfTwoBytesAPixelRoundedToEvenWidth(format: PixelFormat) {
        let odd = PlaneLayout(format, width: 33, height: 17)
        #expect(odd.planeCount == 1)
        #expect(odd[0] == Plane(offset: 0, stride: 96, width: 68, rows: 17))  // 34 pixels x 2 bytes
        #expect(odd.byteCount == 96 * 17)
        let tight = PlaneLayout(format, width: 4, height: 3, rowAlignment: 1)
        #expect(tight[0] == Plane(offset: 0, stride: 8, width: 8, rows: 3))
        #expect(tight.byteCount == 24)
    }

    @Test func captureBufferLayoutsFollowBytesPerLine() throws {
        // I420 (V4L2's YU12): chroma rows half as far apart as luma rows.
        let i420 = try #require(PlaneLayout(.i420, width: 33, height: 17, bytesPerLine: 40))
        #expect(i420[0] == Plane(offset: 0, stride: 40, width: 33, rows: 17))
        #expect(i420[1] == Plane(offset: 40 * 17, stride: 20, width: 17, rows: 9))
        #expect(i420[2] == Plane(offset: 40 * 17 + 20 * 9, stride: 20, width: 17, rows: 9))
        #expect(i420.byteCount == 40 * 17 + 2 * 20 * 9)
        // NV12: interleaved chroma rows as far apart as luma rows.
        let nv12 = try #require(PlaneLayout(.nv12, width: 33, height: 17, bytesPerLine: 48))
        #expect(nv12[1] == Plane(offset: 48 * 17, stride: 48, width: 34, rows: 9))
        #expect(nv12.byteCount == 48 * 26)
        let yuy2 = try #require(PlaneLayout(.yuy2, width: 33, height: 17, bytesPerLine: 68))
        #expect(yuy2.planeCount == 1 && yuy2.byteCount == 68 * 17)
        // Rows longer than their stride.
        #expect(PlaneLayout(.yuy2, width: 33, height: 17, bytesPerLine: 66) == nil)
        #expect(PlaneLayout(.i420, width: 33, height: 17, bytesPerLine: 33) == nil)  // chroma needs 17 of 16
        #expect(PlaneLayout(.nv12, width: 33, height: 17, bytesPerLine: 33) == nil)  // UV needs 34
    }

    @Test func aCroppedPictureSharesItsStorageAndShowsItsTopLeft() {
        let pool = BufferPool(name: "crop")
        let coded = VideoFrame(width: 640, height: 368, rowAlignment: 64, padding: 1000, pts: .zero(Rational(1, 30)), pool: pool)
        #expect(coded.buffer.count == coded.layout.byteCount + 1000)
        for plane in 0..<3 {
            for row in 0..<coded.layout[plane].rows {
                coded.row(row, ofPlane: plane).initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: row + 50 * plane))
            }
        }
        let shown = coded.cropped(width: 637, height: 359)
        #expect(shown.width == 637 && shown.height == 359 && shown.buffer === coded.buffer)
        // Offsets and strides of the coded picture; widths and rows of the shown one (chroma rounds up).
        #expect(shown.layout[0] == Plane(offset: 0, stride: 640, width: 637, rows: 359))
        #expect(shown.layout[1] == Plane(offset: 640 * 368, stride: 320, width: 319, rows: 180))
        #expect(shown.layout[2] == Plane(offset: 640 * 368 + 320 * 184, stride: 320, width: 319, rows: 180))
        #expect(shown.row(179, ofPlane: 2).allSatisfy { $0 == UInt8(truncatingIfNeeded: 179 + 100) })
        #expect(shown.row(358, ofPlane: 0).count == 637)
    }

    /// A plane copied from a library's picture takes each row's visible bytes, whatever the
    /// library's stride, and leaves the frame's row padding alone; with the strides alike it is
    /// one copy, which must still stop at the last row's visible end.
    @Test func aPlaneIsCopiedRowByRowFromAnotherStride() {
        let pool = BufferPool(name: "copy")
        let picture = VideoFrame(width: 33, height: 17, pts: .zero(Rational(1, 30)), pool: pool)
        picture.buffer.storage.initializeMemory(as: UInt8.self, repeating: 0xEE)
        // The library's luma rows are 96 bytes apart (32 of border), its chroma 32 apart like the frame's.
        let luma = (0..<(96 * 17)).map { UInt8(truncatingIfNeeded: $0 % 96 < 33 ? $0 / 96 + $0 % 96 : 0xAA) }
        let chroma = (0..<(32 * 9)).map { UInt8(truncatingIfNeeded: 200 + $0 / 32 + $0 % 32) }
        luma.withUnsafeBytes { picture.copyPlane(0, from: $0.baseAddress!, stride: 96) }
        chroma.withUnsafeBytes { picture.copyPlane(1, from: $0.baseAddress!, stride: 32) }
        for row in 0..<17 {
            #expect(Array(picture.row(row, ofPlane: 0)) == (0..<33).map { UInt8(row + $0) }, "luma row \(row)")
        }
        for row in 0..<9 {
            #expect(Array(picture.row(row, ofPlane: 1)) == (0..<17).map { UInt8(200 + row + $0) }, "chroma row \(row)")
        }
        // Past each luma row's 33 bytes, up to the frame's 64-byte stride: untouched.
        let lumaPlane = picture.plane(0)
        #expect((0..<17).allSatisfy { row in lumaPlane[(row * 64 + 33)..<(row * 64 + 64)].allSatisfy { $0 == 0xEE } })
        // After the last chroma row's 17 bytes (the one copy stops there), the V plane is untouched.
        let u = picture.layout[1]
        #expect(picture.buffer.storage[(u.offset + 8 * 32 + 17)..<picture.layout[2].offset].allSatisfy { $0 == 0xEE })
    }

    @Test func everyPixelFormatHasAsManyPlanesAsItsLayout() {
        for format in PixelFormat.allCases {
            let layout = PlaneLayout(format, width: 8, height: 8, rowAlignment: 1)
            #expect(layout.planeCount == format.planeCount)
            let samples = (0..<layout.planeCount).map { layout[$0].width * layout[$0].rows }.reduce(0, +)
            #expect(samples == (format == .i420 || format == .nv12 ? 96 : 128), "\(format)")
        }
    }

    @Test func poolRecyclesStorageOnceFramesAreDropped() {
        let pool = BufferPool(name: "test")
        for i in 0..<100 {
            let frame = VideoFrame(width: 640, height: 360, pts: MediaTime(Int64(i), timebase: Rational(1, 30)), pool: pool)
            frame.plane(0)[0] = 1
        }
        #expect(pool.allocations == 1)
        #expect(pool.outstanding == 0)
        var held: [VideoFrame] = []
        for i in 0..<3 { held.append(VideoFrame(width: 64, height: 64, pts: .zero(Rational(1, 30 + i)), pool: pool)) }
        // The first reuses the big idle block; the other two need storage of their own.
        #expect(pool.allocations == 3)
        #expect(pool.outstanding == 3)
        held.removeAll()
        #expect(pool.outstanding == 0)
    }

    /// Of the free buffers large enough, the smallest goes out: small frames leave the large buffers
    /// to the large ones, and an encoder's pool does not grow every buffer to keyframe size.
    @Test func poolHandsOutTheSmallestFreeBufferThatFits() {
        let pool = BufferPool(name: "encoder")
        var held = [pool.acquire(capacity: 30_000), pool.acquire(capacity: 3_000), pool.acquire(capacity: 30_000)]
        held.removeAll()
        #expect(pool.allocations == 3)
        // A delta frame takes the 4 KB buffer though a 32 KB one comes first; a keyframe then finds
        // a 32 KB one free, and nothing is allocated.
        let delta = pool.acquire(capacity: 3_500)
        let keyframe = pool.acquire(capacity: 20_000)
        #expect(delta.capacity == 4096 && keyframe.capacity == 32_768)
        #expect(pool.allocations == 3)
        _ = (delta, keyframe)
    }

    /// The search for a free buffer starts after the one handed out last: frames mostly come back in
    /// the order they went out, so the buffer there is usually free, and a pool whose user holds
    /// many frames (a sender's retransmission history) is not searched from its start each time.
    @Test func poolSearchStartsAfterTheBufferHandedOutLast() {
        let pool = BufferPool(name: "fifo")
        var held = (0..<3).map { _ in pool.acquire(capacity: 100) }
        let made = held.map(ObjectIdentifier.init)
        held.removeAll()
        // All three are free at each call, and each goes out in turn.
        let handed = (0..<4).map { _ in ObjectIdentifier(pool.acquire(capacity: 100)) }
        #expect(handed == [made[0], made[1], made[2], made[0]])
        // A buffer still held is stepped over; the next free one after it goes out.
        let first = pool.acquire(capacity: 100), second = pool.acquire(capacity: 100)
        #expect([first, second].map(ObjectIdentifier.init) == [made[1], made[2]])
        #expect(ObjectIdentifier(pool.acquire(capacity: 100)) == made[0])
        #expect(pool.allocations == 3)
    }

    @Test func psnrOfIdenticalAndShiftedPictures() {
        let pool = BufferPool(name: "psnr")
        let a = VideoFrame(width: 16, height: 16, pts: .zero(Rational(1, 1)), pool: pool)
        let b = VideoFrame(width: 16, height: 16, pts: .zero(Rational(1, 1)), pool: pool)
        for p in 0..<3 {
            a.plane(p).initializeMemory(as: UInt8.self, repeating: 100)
            b.plane(p).initializeMemory(as: UInt8.self, repeating: 100)
        }
        #expect(PictureQuality.psnr(a, b) == .infinity)
        b.plane(0).initializeMemory(as: UInt8.self, repeating: 110)
        // Luma is 256 of 384 samples, each off by 10: MSE = 100 * 2/3.
        let expected = 10 * log10(255.0 * 255.0 / (100.0 * 2 / 3))
        #expect(abs(PictureQuality.psnr(a, b) - expected) < 1e-9)
    }
}

