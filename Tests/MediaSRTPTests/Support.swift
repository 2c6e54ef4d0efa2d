import Foundation
import MediaSRTP
import TestSupport

/// Bytes from hex text ("800f1234…").
func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// One entry of Tests/Vectors/srtp/srtp_vectors.json (origins in Tests/Vectors/README.md).
struct SRTPVector {
    let fields: [String: Any]

    init(_ name: String) throws {
        let all = try JSONSerialization.jsonObject(with: Data(try TestSupport.vector("srtp/srtp_vectors.json")))
        fields = (all as! [String: Any])[name] as! [String: Any]
    }

    subscript(_ key: String) -> [UInt8] { hex(fields[key] as! String) }
}

extension SRTPSession {
    /// `packet` put through `operation` of this session in a buffer with `room` bytes to spare.
    func run(_ operation: (SRTPSession) -> (UnsafeMutableRawBufferPointer, Int) throws(SRTPError) -> Int,
             _ packet: [UInt8], room: Int = 0) throws -> [UInt8] {
        var buffer = packet + [UInt8](repeating: 0, count: room)
        let length = try buffer.withUnsafeMutableBytes { bytes in
            try operation(self)(bytes, packet.count)
        }
        return Array(buffer[..<length])
    }

    func protect(_ packet: [UInt8]) throws -> [UInt8] { try run(SRTPSession.protect, packet, room: rtpOverhead) }
    func unprotect(_ packet: [UInt8]) throws -> [UInt8] { try run(SRTPSession.unprotect, packet) }
    func protectRTCP(_ packet: [UInt8]) throws -> [UInt8] { try run(SRTPSession.protectRTCP, packet, room: rtcpOverhead) }
    func unprotectRTCP(_ packet: [UInt8]) throws -> [UInt8] { try run(SRTPSession.unprotectRTCP, packet) }

    /// `packet` unprotected with `unprotect(_:into:)` into another buffer (0xEE bytes before), which
    /// must leave `packet` as it was.
    func unprotectOutOfPlace(_ packet: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0xEE, count: packet.count)
        let source = packet
        let length = try source.withUnsafeBytes { source in try output.withUnsafeMutableBytes { try unprotect(source, into: $0) } }
        precondition(source == packet, "unprotect(_:into:) wrote to the packet")
        return Array(output[..<length])
    }
}

/// A sender and a receiver sharing `key`.
func sessionPair(_ profile: SRTPProfile, key: SRTPKeyMaterial? = nil, replayWindow: Int = SRTPSession.defaultReplayWindow,
                 implementation: SRTPImplementation = .openSSL) throws -> (sender: SRTPSession, receiver: SRTPSession) {
    let key = key ?? SRTPKeyMaterial.random(for: profile)
    return (try SRTPSession(profile: profile, key: key, direction: .sender, implementation: implementation),
            try SRTPSession(profile: profile, key: key, direction: .receiver, replayWindow: replayWindow,
                            implementation: implementation))
}

/// An RTP packet (RFC 3550 §5.1): V=2, PT 96, `sequenceNumber`, timestamp 3000 per packet, `ssrc`, and a
/// payload of `payloadLength` bytes counting up from the sequence number.
func rtpPacket(sequenceNumber: UInt16, ssrc: UInt32 = 0x1234_5678, payloadLength: Int = 160) -> [UInt8] {
    let timestamp = UInt32(sequenceNumber) &* 3000
    var packet: [UInt8] = [
        0x80, 96,                                                      // V=2 P=0 X=0 CC=0, M=0 PT=96
        UInt8(sequenceNumber >> 8), UInt8(truncatingIfNeeded: sequenceNumber),
        UInt8(timestamp >> 24), UInt8(truncatingIfNeeded: timestamp >> 16),
        UInt8(truncatingIfNeeded: timestamp >> 8), UInt8(truncatingIfNeeded: timestamp),
        UInt8(ssrc >> 24), UInt8(truncatingIfNeeded: ssrc >> 16), UInt8(truncatingIfNeeded: ssrc >> 8), UInt8(truncatingIfNeeded: ssrc),
    ]
    packet += (0..<payloadLength).map { UInt8(truncatingIfNeeded: Int(sequenceNumber) + $0) }
    return packet
}

/// An RTCP receiver report with no report blocks (RFC 3550 §6.4.2) from `ssrc`.
func rtcpReceiverReport(ssrc: UInt32 = 0x1234_5678) -> [UInt8] {
    [0x80, 201, 0x00, 0x01,                                            // V=2 RC=0, PT=201 RR, length 1 word
     UInt8(ssrc >> 24), UInt8(truncatingIfNeeded: ssrc >> 16), UInt8(truncatingIfNeeded: ssrc >> 8), UInt8(truncatingIfNeeded: ssrc)]
}
