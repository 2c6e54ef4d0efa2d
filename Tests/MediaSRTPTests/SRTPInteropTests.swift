import Foundation
import MediaCore
import MediaRTP
import MediaTransport
import TestSupport
import Testing

@testable import MediaSRTP

/// ffmpeg's own SRTP (libavformat/srtp.c, not libsrtp) as the peer, on 127.0.0.1, bounded by timeouts.
@Suite(.serialized) struct SRTPInteropTests {
    /// An RTP socket on 127.0.0.1 whose port + 1 (RTCP, RFC 3550 §11) is free too; the RTCP socket with it.
    static func socketPair() throws -> (rtp: UDPSocket, rtcp: UDPSocket) {
        for _ in 0..<50 {
            let rtp = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
            let port = rtp.localAddress.port
            if port % 2 == 0, port < .max, let rtcp = try? UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: port + 1)) {
                return (rtp, rtcp)
            }
            rtp.close()
        }
        throw NoFreePortPair()
    }

    struct NoFreePortPair: Error {}

    /// Every datagram on `socket` until `quiet` seconds pass without one (the first may take `first`).
    static func receiveAll(on socket: UDPSocket, first: Double = 10, quiet: Double = 1.5) throws -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let timeout = ClockTime.seconds(datagrams.isEmpty ? first : quiet)
            guard let (count, _, _) = try buffer.withUnsafeMutableBytes({ try socket.receive(into: $0, timeout: timeout) }) else {
                return datagrams
            }
            datagrams.append(Array(buffer[..<count]))
        }
    }

    /// ffmpeg protects a VP8 stream (30 frames of the sample) with AES_CM_128_HMAC_SHA1_80; every packet
    /// unprotects and parses as RTP with PT 96, and so does its SRTCP sender report. Then the other way:
    /// Sluice protects those packets again under a new key, ffmpeg reads them from an SDP with `a=crypto`
    /// (RFC 4568) and gets the 30 frames; an SRTCP RR + BYE ends its stream (ffmpeg ignores a BYE that does not follow a report).
    @Test func ffmpegSRTPBothWays() throws {
        let (rtp, rtcp) = try Self.socketPair()
        defer { rtp.close(); rtcp.close() }
        let key = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)
        let receiver = try SRTPSession(profile: .aes128CmHmacSha1_80, key: key, direction: .receiver)
        let ffmpeg = TestSupport.start("ffmpeg", [
            "-nostdin", "-hide_banner", "-loglevel", "error", "-re", "-i", TestSupport.sampleIVF, "-frames:v", "30",
            "-c", "copy", "-f", "rtp", "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key.sdesKey.keySalt,
            "srtp://127.0.0.1:\(rtp.localAddress.port)",
        ], timeout: 30)
        let datagrams = try Self.receiveAll(on: rtp)
        let sent = try ffmpeg.wait()
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(datagrams.count >= 30)
        var packets: [[UInt8]] = []
        for datagram in datagrams {
            let packet = try receiver.unprotect(datagram)
            #expect(try RTPPacket(parsing: packet).header.payloadType == 96)
            packets.append(packet)
        }
        #expect(receiver.statistics == SRTPStatistics(unprotected: datagrams.count))
        let reports = try Self.receiveAll(on: rtcp, first: 0.5, quiet: 0.5)
        #expect(!reports.isEmpty)
        for report in reports { #expect(try receiver.unprotectRTCP(report)[1] == 200) }  // PT 200: sender report

        try Self.ffmpegReceives(packets)
    }

    static func ffmpegReceives(_ packets: [[UInt8]]) throws {
        let port: UInt16
        do {
            let (rtp, rtcp) = try socketPair()
            port = rtp.localAddress.port
            rtp.close()
            rtcp.close()
        }
        let key = SRTPKeyMaterial.random(for: .aes128CmHmacSha1_80)
        let sender = try SRTPSession(profile: .aes128CmHmacSha1_80, key: key, direction: .sender)
        try TestSupport.withTemporaryDirectory { dir in
            let sdp = dir.appendingPathComponent("srtp.sdp").path, output = dir.appendingPathComponent("received.ivf").path
            try """
                v=0\r
                o=- 0 0 IN IP4 127.0.0.1\r
                s=Sluice SRTP\r
                c=IN IP4 127.0.0.1\r
                t=0 0\r
                m=video \(port) RTP/SAVP 96\r
                a=rtpmap:96 VP8/90000\r
                a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key.sdesKey.keySalt)\r

                """.write(toFile: sdp, atomically: true, encoding: .utf8)
            let ffmpeg = TestSupport.start("ffmpeg", [
                "-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file,udp,rtp,srtp",
                "-i", sdp, "-c", "copy", "-y", output,
            ], timeout: 30)
            Thread.sleep(forTimeInterval: 1.5)  // ffmpeg opens its ports
            let socket = try UDPSocket(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { socket.close() }
            let destination = try SocketAddress(host: "127.0.0.1", port: port)
            for packet in packets {
                let srtp = try sender.protect(packet)
                try srtp.withUnsafeBytes { try socket.send($0, to: destination) }
                Thread.sleep(forTimeInterval: 0.002)
            }
            // A compound RR + BYE (RFC 3550 §6.1, §6.6) from the stream's SSRC ends ffmpeg's input.
            let ssrc = Array(packets[0][8..<12])
            let byeReport = [0x80, 201, 0x00, 0x01] + ssrc + [0x81, 203, 0x00, 0x01] + ssrc
            let srtcp = try sender.protectRTCP(byeReport)
            try srtcp.withUnsafeBytes { try socket.send($0, to: destination.withPort(port + 1)) }
            let result = try ffmpeg.wait()
            #expect(result.status == 0, "\(result.stderr)")
            let probe = try TestSupport.ffprobe(output, entries: "stream=nb_read_packets,codec_name", extra: ["-count_packets"])
            #expect(probe["codec_name"] == "vp8")
            #expect(probe["nb_read_packets"] == "30")
        }
    }
}
