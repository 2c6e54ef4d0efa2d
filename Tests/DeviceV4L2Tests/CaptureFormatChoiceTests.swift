import DeviceV4L2
import MediaCore
import MediaNegotiation
import Testing

/// Sizes all offered at the same rates.
private func sizes(_ list: [(Int, Int)], rates: [Int] = [30, 15]) -> [V4L2FrameSize] {
    list.map { V4L2FrameSize(width: $0.0, height: $0.1, frameRates: rates.map { Rational($0, 1) }) }
}

/// Capability tables as cameras report them (VIDIOC_ENUM_FMT, _FRAMESIZES, _FRAMEINTERVALS).
private enum Cameras {
    /// A typical UVC webcam: YUYV up to 640x480 at 30 fps, MJPEG up to 1920x1080 at 30 fps.
    static let uvcWebcam = [
        V4L2FormatDescription(fourcc: "YUYV", description: "YUYV 4:2:2",
                              sizes: sizes([(640, 480), (320, 240), (160, 120)])),
        V4L2FormatDescription(fourcc: "MJPG", description: "Motion-JPEG",
                              sizes: sizes([(1920, 1080), (1280, 720), (640, 480), (320, 240)])),
    ]
    /// A camera with MJPEG only (and H.264, which Sluice does not convert).
    static let mjpegOnly = [
        V4L2FormatDescription(fourcc: "H264", sizes: sizes([(3840, 2160)], rates: [60])),
        V4L2FormatDescription(fourcc: "MJPG", sizes: sizes([(1280, 720), (640, 360)], rates: [60, 30])),
    ]
    /// A platform camera (ISP) giving NV12 only.
    static let nv12 = [V4L2FormatDescription(fourcc: "NV12", sizes: sizes([(1280, 720), (640, 480)], rates: [30, 25, 24]))]
    /// A continuous range from 64x64 to 2048x1536 in steps of 16x8, at 30 and 10 fps.
    static let stepwise = [
        V4L2FormatDescription(
            fourcc: "YUYV",
            range: V4L2SizeRange(minWidth: 64, maxWidth: 2048, stepWidth: 16, minHeight: 64, maxHeight: 1536, stepHeight: 8,
                                 frameRates: [Rational(30, 1), Rational(10, 1)])),
    ]
}

private func constraints(width: ConstraintRange<Int> = .init(), height: ConstraintRange<Int> = .init(),
                         rate: ConstraintRange<Double> = .init()) -> VideoConstraints {
    VideoConstraints(width: width, height: height, frameRate: rate)
}

private func format(_ fourcc: String, _ width: Int, _ height: Int, _ fps: Int) -> V4L2CaptureFormat {
    V4L2CaptureFormat(fourcc: fourcc, width: width, height: height, frameRate: Rational(fps, 1))
}

@Suite struct CaptureFormatChoiceTests {
    @Test func withoutIdealsTheLargestPictureAtTheHighestRate() throws {
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: constraints()) == format("MJPG", 1920, 1080, 30))
        #expect(try chooseCaptureFormat(from: Cameras.mjpegOnly, constraints: constraints()) == format("MJPG", 1280, 720, 60))
        #expect(try chooseCaptureFormat(from: Cameras.nv12, constraints: constraints()) == format("NV12", 1280, 720, 30))
    }

    /// Both formats offer 640x480 at 30 fps: YUYV wins, cheaper to convert than decoding MJPEG.
    @Test func aTieGoesToTheCheaperPixelFormat() throws {
        let vga = constraints(width: .init(ideal: 640), height: .init(ideal: 480), rate: .init(ideal: 30))
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: vga) == format("YUYV", 640, 480, 30))
        let table = [V4L2FormatDescription(fourcc: "MJPG", sizes: sizes([(640, 480)])),
                     V4L2FormatDescription(fourcc: "UYVY", sizes: sizes([(640, 480)])),
                     V4L2FormatDescription(fourcc: "NV12", sizes: sizes([(640, 480)])),
                     V4L2FormatDescription(fourcc: "YU12", sizes: sizes([(640, 480)]))]
        #expect(try chooseCaptureFormat(from: table, constraints: vga).fourcc == "YU12")
        #expect(try chooseCaptureFormat(from: Array(table.prefix(3)), constraints: vga).fourcc == "NV12")
        #expect(try chooseCaptureFormat(from: Array(table.prefix(2)), constraints: vga).fourcc == "UYVY")
    }

    @Test func theIdealNearestWins() throws {
        // 1280x720 is offered by MJPEG only; 1200x700 is nearest to it.
        let hd = constraints(width: .init(ideal: 1200), height: .init(ideal: 700), rate: .init(ideal: 30))
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: hd) == format("MJPG", 1280, 720, 30))
        // A 16:9 ideal of 640x360 is nearer 640x480 than 320x240 (area and aspect together).
        let wide = constraints(width: .init(ideal: 640), height: .init(ideal: 360), rate: .init(ideal: 30))
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: wide) == format("YUYV", 640, 480, 30))
        // Only a height: the nearest height.
        let tall = constraints(height: .init(ideal: 250))
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: tall) == format("YUYV", 320, 240, 30))
        // The ideal rate picks among a size's rates.
        let slow = constraints(width: .init(ideal: 640), height: .init(ideal: 480), rate: .init(ideal: 14))
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: slow) == format("YUYV", 640, 480, 15))
        let film = constraints(width: .init(ideal: 1280), height: .init(ideal: 720), rate: .init(ideal: 24))
        #expect(try chooseCaptureFormat(from: Cameras.nv12, constraints: film) == format("NV12", 1280, 720, 24))
    }

    /// The size matters before the rate: a size the camera gives at 30 fps in MJPEG only is still
    /// taken at that rate rather than a YUYV size further from the ideal.
    @Test func sizeBeforeRateBeforeFormat() throws {
        let table = [V4L2FormatDescription(fourcc: "YUYV", sizes: sizes([(1280, 720)], rates: [10])),
                     V4L2FormatDescription(fourcc: "MJPG", sizes: sizes([(1280, 720)], rates: [30]))]
        let hd = constraints(width: .init(ideal: 1280), height: .init(ideal: 720), rate: .init(ideal: 30))
        #expect(try chooseCaptureFormat(from: table, constraints: hd) == format("MJPG", 1280, 720, 30))
    }

    @Test func boundsExcludeSizesAndRates() throws {
        let small = constraints(width: .init(max: 800), height: .init(max: 600))
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: small) == format("YUYV", 640, 480, 30))
        let atLeast720 = constraints(width: .init(min: 1280, ideal: 640), height: .init(min: 720, ideal: 480))
        #expect(try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: atLeast720) == format("MJPG", 1280, 720, 30))
        let capped = constraints(rate: .init(ideal: 60, max: 30))
        #expect(try chooseCaptureFormat(from: Cameras.mjpegOnly, constraints: capped) == format("MJPG", 1280, 720, 30))
    }

    @Test func aStepwiseRangeOffersTheIdealOnItsGrid() throws {
        let odd = constraints(width: .init(ideal: 1000), height: .init(ideal: 563), rate: .init(ideal: 30))
        #expect(try chooseCaptureFormat(from: Cameras.stepwise, constraints: odd) == format("YUYV", 1008, 560, 30))
        #expect(try chooseCaptureFormat(from: Cameras.stepwise, constraints: constraints()) == format("YUYV", 2048, 1536, 30))
        let huge = constraints(width: .init(ideal: 4000), height: .init(ideal: 3000))
        #expect(try chooseCaptureFormat(from: Cameras.stepwise, constraints: huge) == format("YUYV", 2048, 1536, 30))
        // The common sizes inside the range, for callers that only read `sizes`.
        let listed = Cameras.stepwise[0].sizes.map { "\($0.width)x\($0.height)" }
        #expect(listed.contains("640x480") && listed.contains("1280x720") && listed.last == "2048x1536")
        #expect(!listed.contains("2560x1440") && !listed.contains("3840x2160"))  // larger than the range
    }

    @Test func nothingFitsNamesTheOffers() throws {
        let fourK = constraints(width: .init(min: 3840), height: .init(min: 2160))
        #expect {
            try chooseCaptureFormat(from: Cameras.mjpegOnly, constraints: fourK)
        } throws: { error in
            guard case V4L2Error.noFormatFits(nil, let offers) = error else { return false }
            let text = "\(error)"
            print(text)
            return offers == ["H264 (not convertible to I420)", "MJPG 1280x720@60/30, 640x360@60/30"]
                && text.contains("no capture format meets the constraints") && text.contains("MJPG 1280x720@60/30")
        }
        let fast = constraints(rate: .init(min: 60))
        #expect(throws: V4L2Error.self) { try chooseCaptureFormat(from: Cameras.uvcWebcam, constraints: fast) }
        #expect(throws: V4L2Error.noFormatFits(path: nil, offers: [])) {
            try chooseCaptureFormat(from: [], constraints: constraints())
        }
    }
}
