import MediaCore
import TestSupport
import Testing

@testable import MediaRTP

/// RFC 7587: one Opus packet per payload, a 48 kHz clock.
@Suite struct OpusPayloadTests {
    static let twentyMilliseconds: [UInt8] = [
        0x78,              // TOC: config 15 (hybrid FB 20 ms), s=0, c=0: one frame
        0x0B, 0x41, 0x95,  // frame data
    ]

    @Test func packetGoesWholeAndComesBackUnchanged() throws {
        var packetizer = try OpusPacketizer(maxPayloadSize: 4)
        let sent = try packetize(frame(.opus, Self.twentyMilliseconds), with: &packetizer)
        #expect(sent.map(\.payload) == [Self.twentyMilliseconds])
        var depacketizer = OpusDepacketizer()
        let (bytes, info) = try depacketize(sent, with: &depacketizer)
        #expect(bytes == Self.twentyMilliseconds)
        #expect(info == RTPFrameInfo(byteCount: 4, isKeyframe: true, packetCount: 1))
    }

    @Test func packetLargerThanThePayloadOrEmptyIsRefused() throws {
        var packetizer = try OpusPacketizer(maxPayloadSize: 3)
        #expect(throws: RTPPayloadError.payloadTooLarge(size: 4, maxPayloadSize: 3)) {
            try packetizer.startFrame(frame(.opus, Self.twentyMilliseconds))
        }
        #expect(throws: RTPPayloadError.emptyFrame) { try packetizer.startFrame(frame(.opus, [])) }
        #expect(throws: RTPPayloadError.wrongCodec(.vp8)) { try packetizer.startFrame(frame(.vp8, [0x78])) }
        #expect(throws: RTPPayloadError.maxPayloadSizeTooSmall(0, minimum: 1)) { try OpusPacketizer(maxPayloadSize: 0) }
    }

    @Test func emptyPayloadIsAnError() {
        var depacketizer = OpusDepacketizer()
        #expect(payloadError { _ = try [UInt8]().withUnsafeBytes { try depacketizer.inspect($0) } } == .emptyPayload)
        #expect(payloadError { _ = try depacketize(packets([[]]), with: &depacketizer) } == .emptyPayload)
    }

    @Test func everyPacketIsAFrameOfItsOwn() throws {
        var depacketizer = OpusDepacketizer()
        #expect(try [UInt8](Self.twentyMilliseconds).withUnsafeBytes { try depacketizer.inspect($0) }
                == RTPPayloadInfo(startsFrame: true, isKeyframe: true, mediaByteCount: 4))
        let two = packets([Self.twentyMilliseconds, Self.twentyMilliseconds]).map { TestPacket(payload: $0.payload, marker: false, sequenceNumber: $0.sequenceNumber) }
        #expect(payloadError { _ = try depacketize(two, with: &depacketizer) } == .packetAfterFrameEnd(sequenceNumber: 101))
    }

    @Test func timestampIsInFortyEightKilohertzWhateverTheEncoderRate() {
        // The 50th 20 ms packet of a 16 kHz encoder: pts 49 * 320 at 1/16000.
        #expect(OpusPacketizer.rtpTimestamp(of: MediaTime(49 * 320, timebase: Rational(1, 16_000))) == 49 * 960)
        #expect(OpusPacketizer.rtpTimestamp(of: MediaTime(49 * 160, timebase: Rational(1, 8_000))) == 49 * 960)
        #expect(OpusPacketizer.rtpTimestamp(of: MediaTime(980, timebase: Rational(1, 1000)), offset: 7) == 49 * 960 + 7)
        #expect(OpusPacketizer.clockRate == 48_000)
    }

    @Test func markerOnTheFirstPacketAfterSilence() throws {
        var packetizer = try OpusPacketizer()
        let timebase = Rational(1, 48_000)
        func send(_ start: Int64) throws -> Bool {
            let packet = frame(.opus, Self.twentyMilliseconds, pts: MediaTime(start, timebase: timebase),
                               duration: MediaTime(960, timebase: timebase))
            return try #require(try packetize(packet, with: &packetizer).first).marker
        }
        // Continuous 20 ms packets: no marker. A gap (DTX sent nothing for 60 ms): marker, then none again.
        #expect(try [0, 960, 1920, 4800, 5760].map(send) == [false, false, false, true, false])
    }
}
