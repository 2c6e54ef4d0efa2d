import Foundation
import MediaCore
import TestSupport
import Testing

@testable import MediaRTP

/// One RTP packet as the payload tests see it: the payload and the header fields a payload format uses.
struct TestPacket: Equatable, CustomStringConvertible {
    var payload: [UInt8]
    var marker: Bool
    var sequenceNumber: UInt16

    var description: String { "#\(sequenceNumber)\(marker ? " M" : "") \(hex(payload))" }
}

/// `"00 01 ff"` or `"0001ff"` as bytes.
func bytes(_ hex: String) -> [UInt8] {
    let digits = hex.filter { !$0.isWhitespace }.utf8.map { UInt8(ascii: Unicode.Scalar($0)) }
    precondition(digits.count % 2 == 0, "odd hex string \(hex)")
    func value(_ digit: UInt8) -> UInt8 {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: preconditionFailure("not a hex digit in \(hex)")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// An `EncodedFrame` holding `bytes`.
func frame(_ codec: CodecName, _ bytes: [UInt8], pts: MediaTime = MediaTime(0, timebase: Rational(1, 90_000)),
           duration: MediaTime? = nil) -> EncodedFrame {
    bytes.withUnsafeBytes {
        EncodedFrame(codec: codec, isKeyframe: false, pts: pts, duration: duration, copying: $0, pool: nil)
    }
}

/// An H.264 access unit: each NAL unit (without start code) after `00 00 00 01`.
func annexB(_ nalUnits: [[UInt8]]) -> [UInt8] { nalUnits.flatMap { [0, 0, 0, 1] + $0 } }

/// Every payload of `frame`, each written into a buffer of `bufferSize` bytes (the packetizer's
/// maximum by default), numbered from `firstSequence`.
func packetize<P: RTPPacketizer>(_ frame: EncodedFrame, with packetizer: inout P, firstSequence: UInt16 = 0,
                                 bufferSize: Int? = nil) throws -> [TestPacket] {
    try packetizer.startFrame(frame)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize ?? packetizer.maxPayloadSize, alignment: 8)
    defer { buffer.deallocate() }
    var packets: [TestPacket] = []
    var sequence = firstSequence
    while let payload = try packetizer.nextPayload(into: buffer) {
        #expect(payload.byteCount <= packetizer.maxPayloadSize)
        #expect(payload.byteCount > 0)
        packets.append(TestPacket(payload: Array(buffer.prefix(payload.byteCount)), marker: payload.marker,
                                  sequenceNumber: sequence))
        sequence &+= 1
        if payload.isLast { break }
    }
    return packets
}

/// The frame `packets` make, assembled as a jitter buffer would: inspect each payload for the size
/// first, then append them to a buffer of exactly that size.
func depacketize<D: RTPDepacketizer>(_ packets: [TestPacket], with depacketizer: inout D) throws -> (bytes: [UInt8], info: RTPFrameInfo) {
    var capacity = 0
    for packet in packets { capacity += try packet.payload.withUnsafeBytes { try depacketizer.inspect($0) }.mediaByteCount }
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
    defer { output.deallocate() }
    depacketizer.startFrame()
    for packet in packets {
        try packet.payload.withUnsafeBytes {
            try depacketizer.append($0, sequenceNumber: packet.sequenceNumber, marker: packet.marker, into: output)
        }
    }
    let info = try depacketizer.finishFrame()
    #expect(info.byteCount == capacity, "inspect's sizes add up to the frame")
    return (Array(output.prefix(info.byteCount)), info)
}

/// Payloads without header fields: consecutive sequence numbers, the marker on the last.
func packets(_ payloads: [[UInt8]], firstSequence: UInt16 = 100) -> [TestPacket] {
    payloads.enumerated().map { index, payload in
        TestPacket(payload: payload, marker: index == payloads.count - 1, sequenceNumber: firstSequence &+ UInt16(index))
    }
}

/// The error `body` throws, as an `RTPPayloadError` (nil when it throws none).
func payloadError(_ body: () throws -> Void) -> RTPPayloadError? {
    do {
        try body()
        return nil
    } catch let error as RTPPayloadError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

/// `Tests/Vectors/payload_vectors.json`, parsed.
enum PayloadVectors {
    static func section(_ name: String) throws -> [[String: Any]] {
        let data = Data(try TestSupport.vector("payload_vectors.json"))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(root[name] as? [[String: Any]], "no section \(name)")
    }
}
