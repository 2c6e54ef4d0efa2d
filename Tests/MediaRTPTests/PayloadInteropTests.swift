import Foundation
import MediaCore
import MediaFiles
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import MediaRTP

struct InteropFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What other implementations send, received by our depacketizers: GStreamer's rtph264pay (through
/// rtpstreampay, RFC 4571 framing, to a file) and ffmpeg's RTP muxer (over UDP on the loopback).
@Suite(.serialized) struct PayloadInteropTests {
    /// The few RTP header fields the payload tests need (RFC 3550 §5.1), read by this test only.
    struct ReceivedPacket {
        var marker: Bool
        var sequenceNumber: UInt16
        var timestamp: UInt32
        var payload: [UInt8]

        init?(_ bytes: [UInt8]) {
            guard bytes.count >= 12, bytes[0] >> 6 == 2 else { return nil }
            var start = 12 + 4 * Int(bytes[0] & 0x0F)
            if bytes[0] & 0x10 != 0 {
                guard bytes.count >= start + 4 else { return nil }
                start += 4 + 4 * (Int(bytes[start + 2]) << 8 | Int(bytes[start + 3]))
            }
            var end = bytes.count
            if bytes[0] & 0x20 != 0, let padding = bytes.last { end -= Int(padding) }
            guard start <= end else { return nil }
            marker = bytes[1] & 0x80 != 0
            sequenceNumber = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
            timestamp = bytes[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
            payload = Array(bytes[start..<end])
        }
    }

    /// Packets split into frames, in order: at each change of timestamp, or (for a stream without
    /// timestamps, as GStreamer makes of a raw `.h264` file) after each marker bit.
    static func frames(_ packets: [ReceivedPacket], byMarker: Bool = false) -> [[TestPacket]] {
        var frames: [[TestPacket]] = []
        var timestamp: UInt32?
        var ended = true
        for packet in packets {
            if byMarker ? ended : packet.timestamp != timestamp { frames.append([]) }
            timestamp = packet.timestamp
            ended = packet.marker
            frames[frames.count - 1].append(
                TestPacket(payload: packet.payload, marker: packet.marker, sequenceNumber: packet.sequenceNumber))
        }
        return frames
    }

    /// The NAL units of each access unit the x264 stream at `path` holds, as AnnexBReader splits it.
    static func accessUnits(_ path: String) throws -> [[[UInt8]]] {
        let reader = try AnnexBReader(path: path)
        var units: [[[UInt8]]] = []
        while let frame = try reader.next(pool: nil) {
            units.append(PayloadRoundTripTests.nalUnits(Array(frame.bytes)))
        }
        return units
    }

    static func encodeX264(_ path: String, frames: Int) throws {
        try TestSupport.ffmpeg(["-i", TestSupport.sampleIVF, "-frames:v", "\(frames)", "-c:v", "libx264",
                                "-preset", "ultrafast", "-g", "10", "-f", "h264", path])
    }

    /// Checks that the depacketized frames are the access units of the file, in order, with the
    /// marker on each one's last packet and the keyframes where the IDRs are. With `ignoringInserted`,
    /// access unit delimiters and parameter sets may have been added by the sender (GStreamer's
    /// h264parse and config-interval do): the other NAL units must be the same, and every IDR access
    /// unit must carry the file's SPS and PPS.
    func expectSameAccessUnits(_ received: [[TestPacket]], _ expected: [[[UInt8]]], _ sender: String,
                               ignoringInserted: Bool = false) throws {
        #expect(received.count == expected.count, "\(sender): frames")
        var depacketizer = H264Depacketizer()
        var kinds = Set<UInt8>()
        let parameterSets = Set(expected.joined().filter { [7, 8].contains($0[0] & 0x1F) })
        for (index, (packets, nalUnits)) in zip(received, expected).enumerated() {
            kinds.formUnion(packets.map { $0.payload[0] & 0x1F })
            #expect(packets.last?.marker == true, "\(sender): access unit \(index) marker")
            #expect(try packets[0].payload.withUnsafeBytes { try depacketizer.inspect($0) }.startsFrame)
            let (bytes, info) = try depacketize(packets, with: &depacketizer)
            let isIDR = nalUnits.contains { $0[0] & 0x1F == 5 }
            #expect(info.isKeyframe == isIDR, "\(sender): access unit \(index)")
            if ignoringInserted {
                let units = PayloadRoundTripTests.nalUnits(bytes)
                let inserted: Set<UInt8> = [7, 8, 9]
                #expect(units.filter { !inserted.contains($0[0] & 0x1F) } == nalUnits.filter { !inserted.contains($0[0] & 0x1F) },
                        "\(sender): access unit \(index)")
                if isIDR { #expect(parameterSets.isSubset(of: units), "\(sender): access unit \(index) SPS and PPS") }
            } else {
                #expect(bytes == annexB(nalUnits), "\(sender): access unit \(index)")
            }
        }
        print("\(sender): \(received.count) access units, payload types \(kinds.sorted())")
    }

    // MARK: GStreamer

    /// RTP packets rtph264pay makes of the `.h264` file, read back from rtpstreampay's 2-byte length framing.
    static func gstreamerPackets(_ input: String, _ payloaderOptions: [String], folder: URL) throws -> [ReceivedPacket] {
        try gstreamerPackets(["filesrc", "location=\(input)", "!", "h264parse", "!",
                              "video/x-h264,stream-format=byte-stream,alignment=au", "!", "rtph264pay"] + payloaderOptions,
                             folder: folder)
    }

    /// The RTP packets `pipeline` ends with, written by rtpstreampay (RFC 4571 framing) to a file and read back.
    static func gstreamerPackets(_ pipeline: [String], folder: URL) throws -> [ReceivedPacket] {
        let output = folder.file("out.rtp")
        try TestSupport.runChecked("gst-launch-1.0", ["-q"] + pipeline + ["!", "rtpstreampay", "!", "filesink", "location=\(output)"])
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        var packets: [ReceivedPacket] = []
        var offset = 0
        while offset + 2 <= stream.count {
            let length = Int(stream[offset]) << 8 | Int(stream[offset + 1])
            guard offset + 2 + length <= stream.count, let packet = ReceivedPacket(Array(stream[(offset + 2)..<(offset + 2 + length)]))
            else { throw InteropFailure("bad RFC 4571 frame at \(offset)") }
            packets.append(packet)
            offset += 2 + length
        }
        return packets
    }

    // GStreamer 1.22 (rtph264pay ! rtpstreampay here) loses one packet in 257 when a NAL unit takes more
    // than 256 FU-As (the sequence numbers skip one and the fragment's bytes are missing), so these MTUs keep the
    // clip's IDR slices (about 65 kB) under that; `gstreamerLossIsDetected` covers the smaller ones.
    @Test(arguments: [
        ["aggregate-mode=none", "config-interval=-1"],
        ["aggregate-mode=zero-latency", "config-interval=-1"],
        ["aggregate-mode=zero-latency", "config-interval=-1", "mtu=400"],
        ["aggregate-mode=none", "mtu=400"],
    ])
    func gstreamerRTPH264Pay(options: [String]) throws {
        try TestSupport.withTemporaryDirectory { folder in
            let input = folder.file("clip.h264")
            try Self.encodeX264(input, frames: 20)
            let packets = try Self.gstreamerPackets(input, options, folder: folder)
            // The file has no timestamps, so rtph264pay gives every packet the same one: the marker bit
            // tells where access units end.
            try expectSameAccessUnits(Self.frames(packets, byMarker: true), try Self.accessUnits(input),
                                      "rtph264pay \(options)", ignoringInserted: true)
        }
    }

    /// With a small MTU GStreamer drops fragments of large NAL units: every access unit is then either
    /// put together whole or refused with the gap named, never glued together with a piece missing.
    @Test func gstreamerLossIsDetected() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let input = folder.file("clip.h264")
            try Self.encodeX264(input, frames: 20)
            let frames = Self.frames(try Self.gstreamerPackets(input, ["aggregate-mode=none", "mtu=60"], folder: folder),
                                     byMarker: true)
            let expected = try Self.accessUnits(input)
            #expect(frames.count == expected.count)
            var depacketizer = H264Depacketizer()
            var refused = 0
            for (packets, nalUnits) in zip(frames, expected) {
                let inOrder = zip(packets, packets.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 }
                do {
                    let (bytes, _) = try depacketize(packets, with: &depacketizer)
                    #expect(inOrder)
                    let kept: (([UInt8]) -> Bool) = { ![7, 8, 9].contains($0[0] & 0x1F) }
                    #expect(PayloadRoundTripTests.nalUnits(bytes).filter(kept) == nalUnits.filter(kept))
                } catch let error as RTPPayloadError {
                    guard case .sequenceGap = error else { throw error }
                    #expect(!inOrder)
                    refused += 1
                }
            }
            print("rtph264pay mtu=60: \(refused) of \(frames.count) access units arrived with a gap and were refused")
        }
    }

    // MARK: ffmpeg

    /// What ffmpeg's RTP muxer sends for the `.h264` file, received on a loopback UDP socket.
    static func ffmpegPackets(_ input: [String], packetSize: Int) throws -> [ReceivedPacket] {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard socket >= 0 else { throw InteropFailure("socket: errno \(errno)") }
        defer { close(socket) }
        var receiveBuffer: Int32 = 4 << 20
        setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw InteropFailure("bind: errno \(errno)") }
        let port = UInt16(bigEndian: address.sin_port)

        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        // -re paces the packets at the frame rate, so that none overflow the socket's buffer.
        ffmpeg.arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-re"] + input
            + ["-c", "copy", "-f", "rtp", "rtp://127.0.0.1:\(port)?pkt_size=\(packetSize)"]
        ffmpeg.standardOutput = FileHandle.nullDevice
        try ffmpeg.run()
        var packets: [ReceivedPacket] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 300) > 0 {
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                if count > 0, let packet = ReceivedPacket(Array(buffer.prefix(count))) { packets.append(packet) }
            } else if !ffmpeg.isRunning {
                break
            }
        }
        if ffmpeg.isRunning { ffmpeg.terminate() }
        ffmpeg.waitUntilExit()
        guard ffmpeg.terminationStatus == 0 else {
            throw InteropFailure("ffmpeg exited \(ffmpeg.terminationStatus)")
        }
        return packets
    }

    @Test(arguments: [1400, 300])
    func ffmpegRTPMuxer(packetSize: Int) throws {
        try TestSupport.withTemporaryDirectory { folder in
            let input = folder.file("clip.h264")
            try Self.encodeX264(input, frames: 20)
            let packets = try Self.ffmpegPackets(["-framerate", "25", "-i", input], packetSize: packetSize)
            // Consecutive sequence numbers: nothing was lost on the loopback.
            #expect(zip(packets, packets.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 })
            try expectSameAccessUnits(Self.frames(packets), try Self.accessUnits(input), "ffmpeg rtp pkt_size=\(packetSize)")
        }
    }

    // MARK: VP8

    /// Checks that the frames received are the IVF's, with PictureIDs running on when there are any.
    func expectSameVP8Frames(_ received: [[TestPacket]], _ expected: [EncodedFrame], _ sender: String) throws {
        #expect(received.count == expected.count, "\(sender): frames")
        var depacketizer = VP8Depacketizer()
        var pictureIDs: [Int?] = []
        for (index, (packets, frame)) in zip(received, expected).enumerated() {
            #expect(packets.last?.marker == true, "\(sender): frame \(index) marker")
            let (bytes, info) = try depacketize(packets, with: &depacketizer)
            #expect(bytes == Array(frame.bytes), "\(sender): frame \(index)")
            #expect(info.isKeyframe == frame.isKeyframe, "\(sender): frame \(index)")
            pictureIDs.append(info.pictureID)
        }
        let ids = pictureIDs.compactMap { $0 }
        if !ids.isEmpty {
            #expect(ids.count == pictureIDs.count)
            #expect(zip(ids, ids.dropFirst()).allSatisfy { $1 == ($0 + 1) % 0x8000 || $1 == ($0 + 1) % 0x80 }, "\(sender): PictureIDs")
        }
        print("\(sender): \(received.count) frames, \(received.joined().count) packets, PictureIDs \(ids.isEmpty ? "none" : "\(ids.first!)...")")
    }

    @Test(arguments: [["picture-id-mode=15-bit", "mtu=1200"], ["picture-id-mode=7-bit", "mtu=300"], ["mtu=100"]])
    func gstreamerRTPVP8Pay(options: [String]) throws {
        try TestSupport.withTemporaryDirectory { folder in
            let packets = try Self.gstreamerPackets(
                ["filesrc", "location=\(TestSupport.sampleIVF)", "!", "ivfparse", "!", "rtpvp8pay"] + options, folder: folder)
            #expect(zip(packets, packets.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 })
            try expectSameVP8Frames(Self.frames(packets), try PayloadRoundTripTests.vp8Frames(), "rtpvp8pay \(options)")
        }
    }

    @Test func ffmpegVP8() throws {
        let packets = try Self.ffmpegPackets(["-i", TestSupport.sampleIVF, "-frames:v", "25"], packetSize: 500)
        #expect(zip(packets, packets.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 })
        try expectSameVP8Frames(Self.frames(packets), Array(try PayloadRoundTripTests.vp8Frames().prefix(25)), "ffmpeg rtp VP8")
    }
}

/// The other way: what our packetizers send, received by GStreamer's depayloaders.
@Suite struct PayloadInteropSendTests {
    /// `packets` as RTP packets (RFC 3550 §5.1 header: V=2, PT 96, SSRC 0x51C3) in RFC 4571 framing.
    static func rtpStream(_ frames: [(packets: [TestPacket], timestamp: UInt32)]) -> Data {
        var stream = Data()
        for (packets, timestamp) in frames {
            for packet in packets {
                let length = 12 + packet.payload.count
                stream.append(contentsOf: [UInt8(length >> 8), UInt8(length & 0xFF)])
                stream.append(contentsOf: [0x80, (packet.marker ? 0x80 : 0) | 96,
                                           UInt8(packet.sequenceNumber >> 8), UInt8(packet.sequenceNumber & 0xFF)])
                stream.append(contentsOf: withUnsafeBytes(of: timestamp.bigEndian) { Array($0) })
                stream.append(contentsOf: [0, 0, 0x51, 0xC3])
                stream.append(contentsOf: packet.payload)
            }
        }
        return stream
    }

    /// Packetizes `frames` and has GStreamer depayload them with `depayloader`; its output file's bytes.
    static func throughGStreamer<P: RTPPacketizer>(_ frames: [EncodedFrame], _ packetizer: inout P, encodingName: String,
                                                   depayloader: [String]) throws -> [UInt8] {
        var sent: [(packets: [TestPacket], timestamp: UInt32)] = []
        var sequence: UInt16 = 65_500
        for frame in frames {
            let packets = try packetize(frame, with: &packetizer, firstSequence: sequence)
            sequence &+= UInt16(packets.count)
            sent.append((packets, P.rtpTimestamp(of: frame.pts, offset: 0x1234_5678)))
        }
        return try TestSupport.withTemporaryDirectory { folder in
            let input = folder.file("in.rtp"), output = folder.file("out.bin")
            try rtpStream(sent).write(to: URL(fileURLWithPath: input))
            try TestSupport.runChecked("gst-launch-1.0", [
                "-q", "filesrc", "location=\(input)", "!",
                "application/x-rtp-stream,media=video,clock-rate=90000,encoding-name=\(encodingName),payload=96", "!",
                "rtpstreamdepay", "!"] + depayloader + ["!", "filesink", "location=\(output)"])
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        }
    }

    @Test(arguments: [
        (H264Packetizer.PacketizationMode.nonInterleaved, 1200, H264Packetizer.Aggregation.all),
        (.nonInterleaved, 100, .nonVCL),
        (.singleNALUnit, 65_000, .none),
    ])
    func rtph264depayReadsOurH264(mode: H264Packetizer.PacketizationMode, maxPayloadSize: Int,
                                  aggregation: H264Packetizer.Aggregation) throws {
        let accessUnits = try PayloadRoundTripTests.x264AccessUnits()
        var packetizer = try H264Packetizer(mode: mode, maxPayloadSize: maxPayloadSize, aggregation: aggregation)
        let received = try Self.throughGStreamer(
            accessUnits, &packetizer, encodingName: "H264",
            depayloader: ["rtph264depay", "!", "video/x-h264,stream-format=byte-stream,alignment=au"])
        // The same NAL units in the same order (rtph264depay may add access unit delimiters).
        let notDelimiter: ([UInt8]) -> Bool = { $0[0] & 0x1F != 9 }
        let expected = accessUnits.flatMap { PayloadRoundTripTests.nalUnits(Array($0.bytes)) }
        let got = PayloadRoundTripTests.nalUnits(received).filter(notDelimiter)
        #expect(got.count == expected.count)
        #expect(got == expected)
    }

    @Test(arguments: [(1200, VP8Packetizer.PictureIDMode.fifteenBit), (200, .sevenBit), (50, .none)])
    func rtpvp8depayReadsOurVP8(maxPayloadSize: Int, pictureIDMode: VP8Packetizer.PictureIDMode) throws {
        let frames = try PayloadRoundTripTests.vp8Frames()
        var packetizer = try VP8Packetizer(maxPayloadSize: maxPayloadSize, pictureIDMode: pictureIDMode, firstPictureID: 32_700)
        let received = try Self.throughGStreamer(frames, &packetizer, encodingName: "VP8", depayloader: ["rtpvp8depay"])
        // rtpvp8depay hands out whole frames; written one after the other they are the IVF's frames.
        #expect(received == frames.flatMap { Array($0.bytes) })
    }
}
