import CV4L2
import Glibc

/// The memory-mapped buffer ring of a streaming capture (V4L2 API §3.2 "Streaming I/O (Memory
/// Mapping)"): VIDIOC_REQBUFS, VIDIOC_QUERYBUF and mmap for each buffer, all queued with
/// VIDIOC_QBUF, then VIDIOC_STREAMON. `next(timeout:)` polls and dequeues one filled buffer
/// (VIDIOC_DQBUF); the caller reads it and gives it back with `requeue(_:)`. `stop()` (or `deinit`)
/// turns the stream off, unmaps and frees the buffers.
final class V4L2Stream {
    private let device: V4L2Device
    private var mappings: [UnsafeMutableRawBufferPointer] = []
    private var streaming = false
    /// Whether the driver holds buffers for this stream (VIDIOC_REQBUFS succeeded) still to be freed.
    private var holdsBuffers = false

    /// Requests `count` buffers (the driver may grant more or fewer, at least 2), maps and queues
    /// them, and starts streaming.
    init(device: V4L2Device, count: Int = 4) throws {
        self.device = device
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try device.check("VIDIOC_REQBUFS", sluice_VIDIOC_REQBUFS(), &request)
        holdsBuffers = true
        do {
            guard request.count >= 2 else {
                throw V4L2Error.system(path: device.path, operation: "VIDIOC_REQBUFS (\(request.count) buffers granted)",
                                       errno: ENOMEM)
            }
            for index in 0..<Int(request.count) {
                var buffer = describe(index)
                try device.check("VIDIOC_QUERYBUF", sluice_VIDIOC_QUERYBUF(), &buffer)
                guard let base = v4l2_mmap(nil, Int(buffer.length), PROT_READ | PROT_WRITE, MAP_SHARED,
                                           device.descriptor, Int64(buffer.m.offset)),
                      base != MAP_FAILED
                else { throw device.error("mmap", errno) }
                mappings.append(UnsafeMutableRawBufferPointer(start: base, count: Int(buffer.length)))
            }
            for index in mappings.indices { try requeue(index) }
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            try device.check("VIDIOC_STREAMON", sluice_VIDIOC_STREAMON(), &type)
            streaming = true
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// The driver's buffers, as granted.
    var bufferCount: Int { mappings.count }

    /// Waits up to `timeout` milliseconds for a filled buffer; nil when none came. ENODEV (or an
    /// error poll reports with no buffer to dequeue) is `V4L2Error.deviceLost`.
    func next(timeout milliseconds: Int32) throws -> V4L2CapturedBuffer? {
        var descriptor = pollfd(fd: device.descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready == -1 {
            if errno == EINTR || errno == EAGAIN { return nil }
            throw device.error("poll", errno)
        }
        guard ready > 0 else { return nil }
        var buffer = describe(0)
        let code = device.control(sluice_VIDIOC_DQBUF(), &buffer)
        if code == EAGAIN {
            // Readable or failed, yet nothing to dequeue: an error state of a queue that holds buffers.
            if descriptor.revents & Int16(POLLERR | POLLHUP) != 0 { throw V4L2Error.deviceLost(path: device.path) }
            return nil
        }
        guard code == 0 else { throw device.error("VIDIOC_DQBUF", code) }
        let index = Int(buffer.index)
        let used = buffer.bytesused > 0 ? Int(buffer.bytesused) : mappings[index].count
        let monotonic = buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        return V4L2CapturedBuffer(index: index, bytes: UnsafeRawBufferPointer(rebasing: mappings[index][0..<min(used, mappings[index].count)]),
                      monotonicTime: monotonic ? Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000 : nil,
                      damaged: buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0)
    }

    /// Gives buffer `index` back to the driver to fill again (VIDIOC_QBUF).
    func requeue(_ index: Int) throws {
        var buffer = describe(index)
        try device.check("VIDIOC_QBUF", sluice_VIDIOC_QBUF(), &buffer)
    }

    /// VIDIOC_STREAMOFF (which also dequeues every buffer), munmap, and VIDIOC_REQBUFS with a count
    /// of 0 to free the buffers, so that the format can change. Errors are ignored: the device may be gone.
    func stop() {
        if streaming {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            _ = device.control(sluice_VIDIOC_STREAMOFF(), &type)
            streaming = false
        }
        for mapping in mappings { _ = v4l2_munmap(mapping.baseAddress, mapping.count) }
        mappings.removeAll()
        guard holdsBuffers else { return }
        holdsBuffers = false
        var release = v4l2_requestbuffers()
        release.count = 0
        release.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        release.memory = V4L2_MEMORY_MMAP.rawValue
        _ = device.control(sluice_VIDIOC_REQBUFS(), &release)
    }

    /// A `v4l2_buffer` naming buffer `index` of the capture queue's mapped buffers.
    private func describe(_ index: Int) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        return buffer
    }
}
