@testable import DeviceV4L2
import Glibc
import MediaCore
import MediaNegotiation
import Testing
import TestSupport

/// A camera offering `fourcc` at 640x480 and 320x240, at 30 and 15 fps.
private func camera(_ fourcc: String, sizes: [(Int, Int)] = [(640, 480), (320, 240)]) -> FakeCaptureDriver {
    FakeCaptureDriver(formats: [V4L2FormatDescription(
        fourcc: fourcc, sizes: sizes.map { V4L2FrameSize(width: $0.0, height: $0.1, frameRates: [Rational(30, 1), Rational(15, 1)]) })])
}

private func ideal(_ width: Int, _ height: Int, _ fps: Double = 30) -> VideoConstraints {
    VideoConstraints(width: .init(ideal: width), height: .init(ideal: height), frameRate: .init(ideal: fps))
}

/// One capture through a real graph: the node, a collecting sink, a `ManualClock` that never moves
/// (so pts are exactly the driver's deltas from the first picture), and the run's error, if any.
private struct Capture {
    let node: V4L2CaptureNode
    let sink = CollectingSink<VideoFrame>(accepting: [.video(.exactly(.pixels(.i420)))])
    let graph = Graph(clock: ManualClock())
    var error: (any Error)?

    init(_ driver: FakeCaptureDriver, _ constraints: VideoConstraints, maxFrames: Int? = nil) throws {
        node = try V4L2CaptureNode(driver: driver, constraints: constraints, maxFrames: maxFrames, name: "camera")
        graph.add(sink, input: graph.add(node))
    }

    mutating func run() {
        do { try graph.runDeterministic() } catch { self.error = error }
    }

    var sizes: [String] { sink.items.map { "\($0.width)x\($0.height)" } }
    var pts: [Int64] { sink.items.map { $0.pts.rescaled(to: CaptureTimeline.timebase).value } }
}

/// The pts (µs) of pictures whose buffers the driver stamped `times`: the driver's deltas from the first.
private func expectedPTS(_ times: [Int64]) -> [Int64] { times.map { ($0 - times[0]) / 1000 } }

/// Whether every pixel of `plane` of `picture` is within `tolerance` of `value`.
private func isFlat(_ picture: VideoFrame, plane: Int, _ value: UInt8, tolerance: Int = 0) -> Bool {
    (0..<picture.layout[plane].rows).allSatisfy { row in
        picture.row(row, ofPlane: plane).allSatisfy { abs(Int($0) - Int(value)) <= tolerance }
    }
}

/// The luma of the picture from dequeue `sequence`: the fake's exactly, or through a JPEG (full range,
/// decoded to video range: 16 + y * 219 / 255).
private func luma(_ sequence: Int, jpeg: Bool) -> UInt8 {
    let y = Int(FakeCaptureDriver.luma(sequence: sequence))
    return UInt8(jpeg ? 16 + (y * 219 + 127) / 255 : y)
}

private func isGraphFailure(_ error: (any Error)?, _ expected: (V4L2Error) -> Bool) -> Bool {
    guard case GraphError.nodeFailed("camera", let inner as V4L2Error)? = error as? GraphError else { return false }
    return expected(inner)
}

@Suite struct V4L2CaptureNodeTests {
    /// 10 pictures, I420 at the chosen 320x240, luma from the right buffers, pts on the driver's
    /// timestamps; `maxFrames` ends the stream; every buffer dequeued was requeued, then STREAMOFF.
    @Test(arguments: ["YUYV", "MJPG", "NV12"])
    func tenPicturesAtTheChosenSize(fourcc: String) throws {
        let driver = camera(fourcc)
        var capture = try Capture(driver, ideal(320, 240), maxFrames: 10)
        #expect(capture.node.outputFormat == VideoFormat(encoding: .pixels(.i420), width: 320, height: 240,
                                                         frameRate: Rational(30, 1)))
        capture.run()
        #expect(capture.error == nil)
        #expect(capture.sink.finished && capture.sink.items.count == 10 && capture.node.framesDelivered == 10)
        #expect(capture.sink.items.allSatisfy { $0.pixelFormat == .i420 && $0.width == 320 && $0.height == 240 })
        for (sequence, picture) in capture.sink.items.enumerated() {
            let tolerance = fourcc == "MJPG" ? 2 : 0
            #expect(isFlat(picture, plane: 0, luma(sequence, jpeg: fourcc == "MJPG"), tolerance: tolerance))
            #expect(isFlat(picture, plane: 1, 128, tolerance: tolerance) && isFlat(picture, plane: 2, 128, tolerance: tolerance))
        }
        #expect(driver.timestamps.count == 10)
        #expect(capture.pts == expectedPTS(driver.timestamps))
        #expect(Set(driver.dequeued) == [0, 1, 2, 3])
        #expect(driver.requeued == driver.dequeued)
        #expect(driver.calls == [.setFormat(fourcc, 320, 240), .setFrameRate(Rational(30, 1)), .streamOn, .streamOff, .close])
    }

    /// Damaged buffers (V4L2_BUF_FLAG_ERROR) are dropped, counted and requeued; the pictures between
    /// them keep their buffers' timestamps.
    @Test func damagedBuffersAreDroppedAndCounted() throws {
        let driver = camera("YUYV")
        driver.damaged = { [2, 5, 6].contains($0) }
        var capture = try Capture(driver, ideal(320, 240), maxFrames: 7)
        capture.run()
        #expect(capture.error == nil && capture.sink.items.count == 7)
        #expect(capture.node.droppedFrames == 3 && capture.node.framesDelivered == 7)
        let kept = [0, 1, 3, 4, 7, 8, 9]
        #expect(zip(kept, capture.sink.items).allSatisfy { isFlat($1, plane: 0, luma($0, jpeg: false)) })
        #expect(capture.pts == expectedPTS(kept.map { driver.timestamps[$0] }))
        #expect(driver.dequeued.count == 10 && driver.requeued == driver.dequeued)
    }

    /// 30 damaged buffers in a row end the stream with an error naming the device; what came before is delivered.
    @Test func thirtyDamagedBuffersInARowEndTheRun() throws {
        let driver = camera("YUYV")
        driver.damaged = { $0 == 1 || $0 >= 4 }
        var capture = try Capture(driver, ideal(320, 240))
        capture.run()
        #expect(isGraphFailure(capture.error) {
            if case .system(driver.path, _, EIO) = $0 { true } else { false }
        })
        #expect(capture.sink.finished && capture.sink.items.count == 3)
        #expect(capture.node.droppedFrames == 31)
        #expect(driver.dequeued.count == 34 && driver.requeued == driver.dequeued)
        #expect(driver.calls.suffix(2) == [.streamOff, .close])
    }

    /// ENODEV on VIDIOC_DQBUF (the camera unplugged) ends the run with `V4L2Error.deviceLost` naming
    /// the path; the pictures captured before it reach the sink.
    @Test func aLostDeviceEndsTheRun() throws {
        let driver = camera("MJPG")
        driver.lostAt = 6
        var capture = try Capture(driver, ideal(640, 480))
        capture.run()
        #expect(isGraphFailure(capture.error) { $0 == .deviceLost(path: "/dev/video-fake") })
        #expect("\(capture.error!)".contains("/dev/video-fake: the device was lost"))
        #expect(capture.sink.finished && capture.sizes == Array(repeating: "640x480", count: 6))
        #expect(driver.requeued == driver.dequeued && driver.calls.last == .close)
    }

    /// `.outputFormatChange` posted to the graph while capturing: STREAMOFF, the new format and rate
    /// set, STREAMON; the pictures after it have the new size, their pts the driver's times at the new rate.
    @Test func aFormatChangeRestartsTheCapture() throws {
        let driver = camera("YUYV")
        var capture = try Capture(driver, ideal(640, 480), maxFrames: 10)
        let (graph, node) = (capture.graph, capture.node)
        driver.onDequeue = { if $0 == 3 { graph.post(.outputFormatChange(width: 320, height: 240, frameRate: Rational(15, 1)), to: node) } }
        capture.run()
        #expect(capture.error == nil)
        #expect(capture.sizes == Array(repeating: "640x480", count: 4) + Array(repeating: "320x240", count: 6))
        #expect(zip(0..., capture.sink.items).allSatisfy { isFlat($1, plane: 0, luma($0, jpeg: false)) })
        #expect(driver.calls == [.setFormat("YUYV", 640, 480), .setFrameRate(Rational(30, 1)), .streamOn, .streamOff,
                                 .setFormat("YUYV", 320, 240), .setFrameRate(Rational(15, 1)), .streamOn, .streamOff, .close])
        #expect(node.restarts == 1 && node.captureFormat == V4L2CaptureFormat(fourcc: "YUYV", width: 320, height: 240,
                                                                              frameRate: Rational(15, 1)))
        #expect(capture.pts == expectedPTS(driver.timestamps))
        #expect(capture.pts[5] - capture.pts[4] > 66_000)  // 15 fps after the change
        #expect(driver.requeued.count == 10 && driver.outstanding == 0)
    }

    /// A size the camera lacks (not offered; or offered, yet S_FMT sets another): the nearest one is
    /// captured and scaled to the size asked.
    @Test(arguments: [false, true])
    func aSizeTheCameraLacksIsScaled(offeredButRefused: Bool) throws {
        let driver = camera("NV12", sizes: [(640, 480), (320, 240)] + (offeredButRefused ? [(320, 180)] : []))
        if offeredButRefused { driver.refusedSizes = [(320, 180)] }
        var capture = try Capture(driver, ideal(640, 480), maxFrames: 8)
        let (graph, node) = (capture.graph, capture.node)
        driver.onDequeue = { if $0 == 1 { graph.post(.outputFormatChange(width: 320, height: 180, frameRate: nil), to: node) } }
        capture.run()
        #expect(capture.error == nil)
        #expect(capture.sizes == Array(repeating: "640x480", count: 2) + Array(repeating: "320x180", count: 6))
        #expect(zip(0..., capture.sink.items).allSatisfy { isFlat($1, plane: 0, luma($0, jpeg: false)) })
        #expect(driver.calls[4] == .setFormat("NV12", 320, offeredButRefused ? 180 : 240))
        #expect(node.captureFormat.height == 240 && node.outputFormat.height == 180)
        #expect(driver.calls[5] == .setFrameRate(Rational(30, 1)))
    }
}
