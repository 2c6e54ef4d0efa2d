import DeviceV4L2
import Foundation
import MediaCore
import MediaNegotiation
import Testing
import TestSupport

private let vga = VideoConstraints(width: .init(ideal: 640), height: .init(ideal: 480), frameRate: .init(ideal: 30))

/// Whether this machine has a camera to stream from (CI machines and servers usually have none).
private let hasCamera = !V4L2Devices.cameras().isEmpty

@Suite struct V4L2DeviceTests {
    @Test func noCamerasInAnEmptyDirectory() throws {
        try TestSupport.withTemporaryDirectory { directory in
            #expect(V4L2Devices.cameras(in: directory.path).isEmpty)
            // A regular file named like a device node is no camera either.
            try Data([1, 2, 3]).write(to: directory.appendingPathComponent("video0"))
            #expect(V4L2Devices.cameras(in: directory.path).isEmpty)
        }
        #expect(V4L2Devices.cameras(in: "/nonexistent-\(UUID().uuidString)").isEmpty)
    }

    /// Whatever this machine has, listing never fails; every camera listed can capture something.
    @Test func listingThisMachineDoesNotFail() {
        for camera in V4L2Devices.cameras() {
            print("\(camera.path): \(camera.card) (\(camera.driver), \(camera.busInfo)): \(camera.formats.map(\.fourcc))")
            #expect(camera.path.hasPrefix("/dev/video"))
        }
    }

    @Test func aMissingDeviceIsNamed() throws {
        let path = "/dev/video-missing-\(UUID().uuidString)"
        #expect(throws: V4L2Error.noSuchDevice(path: path)) { try V4L2Devices.camera(at: path) }
        #expect(throws: V4L2Error.noSuchDevice(path: path)) { try V4L2CaptureNode(device: path, constraints: vga) }
        #expect("\(V4L2Error.noSuchDevice(path: path))" == "\(path): no such video device")
    }

    @Test func aRegularFileIsNoCamera() throws {
        try TestSupport.withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("not-a-camera").path
            try Data([0, 0, 0, 0]).write(to: URL(fileURLWithPath: path))
            #expect {
                try V4L2CaptureNode(device: path, constraints: vga)
            } throws: { error in
                guard case V4L2Error.notACaptureDevice(path, _) = error else { return false }
                print(error)
                return "\(error)".contains("not a character device")
            }
            #expect { try V4L2Devices.camera(at: directory.path) } throws: { error in
                if case V4L2Error.notACaptureDevice(directory.path, _) = error { true } else { false }
            }
        }
    }

    /// `/dev/null` is a character device, but it does not answer VIDIOC_QUERYCAP.
    @Test func devNullIsNoCamera() throws {
        #expect {
            try V4L2CaptureNode(device: "/dev/null", constraints: vga)
        } throws: { error in
            guard case V4L2Error.notACaptureDevice("/dev/null", _) = error else { return false }
            print(error)
            return "\(error)".contains("VIDIOC_QUERYCAP")
        }
    }

    @Test func errorsReadWell() {
        let offers = ["YUYV 640x480@30"]
        #expect("\(V4L2Error.noFormatFits(path: "/dev/video0", offers: offers))"
            == "/dev/video0: no capture format meets the constraints; it offers YUYV 640x480@30")
        #expect("\(V4L2Error.deviceLost(path: "/dev/video0"))".contains("lost"))
        #expect("\(V4L2Error.notACaptureDevice(path: "/dev/video1"))" == "/dev/video1: it is not a V4L2 video capture device")
        #expect("\(V4L2Error.system(path: "/dev/video0", operation: "VIDIOC_DQBUF", errno: EIO))"
            == "/dev/video0: VIDIOC_DQBUF failed: Input/output error (errno 5)")
    }

    // Needs a real camera: this runs only where a /dev/video* node can capture, and is skipped (with
    // this reason in the test report) on machines without one, such as CI runners and servers.
    @Test(.enabled(if: hasCamera, "no V4L2 capture device (/dev/video*) on this machine"))
    func streamsTenPictures() throws {
        let camera = try #require(V4L2Devices.cameras().first)
        let node = try V4L2CaptureNode(device: camera.path, constraints: vga, maxFrames: 10)
        let graph = Graph()
        let sink = CollectingSink<VideoFrame>(accepting: [.video(.exactly(.pixels(.i420)))])
        graph.add(sink, input: graph.add(node))
        try graph.run()
        let format = node.outputFormat
        print("\(camera.path): captured \(node.captureFormat), \(node.droppedFrames) dropped")
        #expect(sink.items.count == 10)
        #expect(sink.items.allSatisfy { $0.pixelFormat == .i420 && $0.width == format.width && $0.height == format.height })
        #expect(zip(sink.items, sink.items.dropFirst()).allSatisfy { $0.pts < $1.pts })
    }
}
