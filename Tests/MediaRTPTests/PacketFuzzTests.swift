/// Fuzz-style tests for the parsers: seeded random mutations and truncations of valid packets (and
/// random extension data), thousands of each. Parsing must never crash (these run in debug builds,
/// where every out-of-bounds access traps), must fail only with the named errors, and what it accepts
/// must be consistent: ranges inside the input, and writing it again gives a packet that parses the same.
import MediaRTP
import TestSupport
import Testing

/// `bytes` with 1 to 4 random changes: bit flips, bytes set to values parsers care about, truncation,
/// extension, deletion and duplication.
private func mutated(_ bytes: [UInt8], using random: inout SplitMix64) -> [UInt8] {
    var out = bytes
    let interesting: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x0F, 0x10, 0x1F, 0x20, 0x7F, 0x80, 0x81, 0x90,
                                0xA0, 0xBE, 0xC8, 0xC9, 0xCA, 0xCD, 0xCE, 0xDE, 0xF0, 0xFF]
    for _ in 0..<Int.random(in: 1...4, using: &random) {
        let position = out.isEmpty ? 0 : Int.random(in: 0..<out.count, using: &random)
        switch Int.random(in: 0..<7, using: &random) {
        case 0 where !out.isEmpty: out[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
        case 1 where !out.isEmpty: out[position] = interesting.randomElement(using: &random)!
        case 2 where !out.isEmpty: out[position] = UInt8.random(in: 0...255, using: &random)
        case 3: out = Array(out.prefix(Int.random(in: 0...out.count, using: &random)))
        case 4: out += (0..<Int.random(in: 1...12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        case 5 where !out.isEmpty: out.remove(at: position)
        default:
            let length = Int.random(in: 0...min(16, out.count - position), using: &random)
            out.insert(contentsOf: out[position..<position + length], at: position)
        }
    }
    return out
}

/// The elements of `extensions` in `bytes` up to the end or the first error, checking each range.
private func checkedElements(_ extensions: RTPHeaderExtensions, in bytes: [UInt8]) -> Int {
    bytes.withUnsafeBytes { raw in
        var iterator = extensions.elements(in: raw)
        var count = 0
        var previousEnd = extensions.dataRange.lowerBound
        do throws(RTPHeaderExtensionError) {
            while let element = try iterator.next() {
                #expect(element.id != 0)
                #expect(element.valueRange.lowerBound > previousEnd)  // after at least its header byte
                #expect(element.valueRange.upperBound <= extensions.dataRange.upperBound)
                previousEnd = element.valueRange.upperBound
                count += 1
            }
        } catch {
            switch error {
            case .reservedID15(let offset), .elementTruncated(_, let offset):
                #expect(extensions.dataRange.contains(offset))
            default: Issue.record("unexpected \(error)")
            }
        }
        return count
    }
}

@Suite struct PacketFuzzTests {
    static let rtpSeeds = [
        "aiortc/rtp.bin", "aiortc/rtp_dtmf.bin", "aiortc/rtp_with_csrc.bin", "aiortc/rtp_with_sdes_mid.bin",
        "aiortc/rtp_only_padding.bin", "aiortc/rtp_only_padding_with_header_extensions.bin",
        "aiortc/rtp_header_extensions_webrtc.bin", "pion/rtp_basic.bin", "pion/rtp_padding4.bin",
        "pion/rtp_only_padding5.bin", "pion/rtp_ext_onebyte_id5.bin", "pion/rtp_ext_onebyte_two.bin",
        "pion/rtp_ext_onebyte_three_padded.bin", "pion/rtp_ext_twobyte_id5.bin",
    ]

    static let rtcpSeeds = [
        "aiortc/rtcp_sr.bin", "aiortc/rtcp_rr.bin", "aiortc/rtcp_sdes.bin", "aiortc/rtcp_bye.bin",
        "aiortc/rtcp_bye_padding.bin", "aiortc/rtcp_psfb_pli.bin", "aiortc/rtcp_rtpfb.bin",
        "pion/rtcp_compound_rr_sdes_bye_pli_rrr_app.bin", "pion/rtcp_rr_profile_ext.bin", "pion/rtcp_nack.bin",
        "pion/rtcp_fir_2entries.bin", "pion/rtcp_remb_chrome.bin", "pion/rtcp_twcc_example1.bin",
    ]

    @Test func rtpParser() throws {
        let seeds = try Self.rtpSeeds.map { try TestSupport.vector($0) }
        var random = SplitMix64(seed: 3550)
        var accepted = 0
        var errors: Set<RTPPacketError> = []
        for _ in 0..<20_000 {
            let bytes = mutated(seeds.randomElement(using: &random)!, using: &random)
            let packet: RTPPacket
            do throws(RTPPacketError) {
                packet = try RTPPacket(parsing: bytes)
            } catch {
                errors.insert(error)
                continue
            }
            accepted += 1
            #expect(packet.header.length <= packet.headerLength)
            #expect(packet.payloadRange.upperBound + packet.paddingLength == bytes.count)
            #expect(packet.header.csrcs.count <= 15 && packet.header.payloadType < 128)
            if let extensions = packet.headerExtensions {
                #expect(extensions.blockRange.lowerBound == packet.header.length)
                #expect(extensions.dataRange.upperBound == packet.headerLength)
                _ = checkedElements(extensions, in: bytes)
            }
            // Written again, it parses to the same packet (padding bytes become zeros).
            let again = try bytes.withUnsafeBytes { raw in
                try PacketBytes.written(capacity: packet.marshalSize) { out throws(RTPPacketError) in
                    try packet.write(from: raw, into: out)
                }
            }
            let reparsed = try RTPPacket(parsing: again)
            #expect(reparsed == packet)
            #expect(again[..<packet.payloadRange.upperBound] == bytes[..<packet.payloadRange.upperBound])
        }
        #expect(accepted > 1000)  // the mutations leave enough valid packets to check
        // ...and reach every parse error.
        let parseErrors: Set<RTPPacketError> = [.headerTruncated, .csrcListTruncated, .extensionHeaderTruncated,
                                                .extensionTruncated, .paddingCountZero, .paddingExceedsPacket]
        #expect(errors.subtracting(parseErrors).allSatisfy { if case .unsupportedVersion = $0 { true } else { false } })
        #expect(parseErrors.isSubset(of: errors))
    }

    @Test func extensionIterator() {
        var random = SplitMix64(seed: 8285)
        var elements = 0
        for _ in 0..<20_000 {
            let profile: UInt16 = switch Int.random(in: 0..<3, using: &random) {
            case 0: 0xBEDE
            case 1: 0x1000 | UInt16.random(in: 0...15, using: &random)
            default: UInt16.random(in: 0...UInt16.max, using: &random)
            }
            // Mostly small bytes, so that lengths often fit and elements chain.
            let data = (0..<Int.random(in: 0...40, using: &random)).map { _ in
                Bool.random(using: &random) ? UInt8.random(in: 0...0x3F, using: &random)
                                            : UInt8.random(in: 0...255, using: &random)
            }
            // Put the data behind some leading bytes so that ranges are not zero-based.
            let bytes = [UInt8](repeating: 0x55, count: 5) + data
            elements += checkedElements(RTPHeaderExtensions(profile: profile, dataRange: 5..<bytes.count), in: bytes)
        }
        #expect(elements > 10_000)
    }

    @Test func rtcpCompoundParser() throws {
        var seeds = try Self.rtcpSeeds.map { try TestSupport.vector($0) }
        seeds.append(try TestSupport.vector("aiortc/rtcp_sr.bin") + TestSupport.vector("aiortc/rtcp_sdes.bin"))
        var random = SplitMix64(seed: 4585)
        var accepted = 0
        var errors: Set<String> = []
        for _ in 0..<20_000 {
            let bytes = mutated(seeds.randomElement(using: &random)!, using: &random)
            let reducedSize = Bool.random(using: &random)
            let validated = bytes.withUnsafeBytes { raw in try? RTCPCompoundPacket.validate(raw, reducedSize: reducedSize) }
            let compound: RTCPCompoundPacket
            do throws(RTCPError) {
                compound = try RTCPCompoundPacket(parsing: bytes, reducedSize: reducedSize)
            } catch {
                errors.insert(String(describing: error).prefix { $0 != "(" }.description)
                continue
            }
            accepted += 1
            #expect(validated == compound.packets.count)
            // Written again (padding dropped), it decodes to the same packets; only data that the
            // dropped padding left at an odd length cannot be written.
            do throws(RTCPError) {
                let again = try PacketBytes.serialized(compound)
                #expect(try RTCPCompoundPacket(parsing: again, reducedSize: true) == compound)
            } catch {
                guard case .notWordAligned = error else {
                    Issue.record("writing \(compound) failed: \(error)")
                    continue
                }
            }
        }
        #expect(accepted > 1500)
        // The mutations reach the framing and compound errors and many body errors.
        #expect(Set(["headerTruncated", "unsupportedVersion", "packetTruncated", "paddingCountZero",
                     "paddingExceedsPacket", "paddingNotInLastPacket", "firstPacketNotReport"]).isSubset(of: errors))
        #expect(errors.count >= 14)
    }
}
