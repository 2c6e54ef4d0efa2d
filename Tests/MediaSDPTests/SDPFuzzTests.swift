/// Seeded mutations of the fixtures (truncation, flipped and inserted bytes, dropped, duplicated and
/// swapped lines), thousands of each. The parser must never crash (debug builds trap on overflow and
/// out-of-bounds access), must fail only with SDPError naming a line that exists, and what it accepts
/// must write back to text that parses the same; typed attributes likewise.
import MediaSDP
import TestSupport
import Testing

/// `text` with 1 to 3 random changes.
private func mutated(_ text: String, using random: inout SplitMix64) -> String {
    var bytes = Array(text.utf8)
    let interesting = Array("=:/ []*;,-|^.0123456789\r\n\tvomcabta".utf8)
    for _ in 0..<Int.random(in: 1...3, using: &random) {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
        let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
        let line = Int.random(in: 0..<lines.count, using: &random)
        switch Int.random(in: 0..<8, using: &random) {
        case 0: bytes = Array(bytes.prefix(position))
        case 1 where !bytes.isEmpty: bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
        case 2 where !bytes.isEmpty: bytes[position] = interesting.randomElement(using: &random)!
        case 3: bytes.insert(interesting.randomElement(using: &random)!, at: position)
        case 4:
            lines.remove(at: line)
            bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
        case 5:
            lines.insert(lines[line], at: Int.random(in: 0...lines.count, using: &random))
            bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
        case 6:
            lines.swapAt(line, Int.random(in: 0..<lines.count, using: &random))
            bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
        default:
            let cut = Int.random(in: 0...lines[line].count, using: &random)
            lines[line].removeSubrange(cut...)
            bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

@Suite struct SDPFuzzTests {
    @Test func mutatedFixtures() throws {
        let seeds = try Fixtures.names.map(Fixtures.text)
        var random = SplitMix64(seed: 8866)
        var parsed = 0, rejected = 0, attributesChecked = 0
        for _ in 0..<4000 {
            let text = mutated(seeds.randomElement(using: &random)!, using: &random)
            let lineCount = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
            do {
                let session = try SessionDescription(parsing: text)
                parsed += 1
                #expect(try SessionDescription(parsing: session.serialized()) == session)
                for attribute in session.attributes + session.media.flatMap(\.attributes) {
                    guard let type = typedAttributes[attribute.name] else { continue }
                    attributesChecked += checkTyped(type, attribute, lineCount: lineCount) ? 1 : 0
                }
                for media in session.media {
                    for payloadType in media.payloadTypes {
                        _ = try? media.rtpMap(for: payloadType)
                        _ = try? media.formatParameters(for: payloadType)
                        _ = try? media.feedback(for: payloadType)
                    }
                    _ = try? media.rtcpPort()
                    _ = media.direction(in: session)
                }
            } catch {
                rejected += 1
                switch error {
                case .malformedLine(let line, _, _): #expect((1...lineCount).contains(line), "\(error)")
                case .missingLine: break
                case .malformedAttribute: Issue.record("parsing gave an attribute error: \(error)")
                }
            }
        }
        #expect(parsed > 500 && rejected > 500 && attributesChecked > 10_000)
    }

    /// A typed attribute either parses and writes a value that parses the same, or names its line.
    private func checkTyped(_ type: any SDPAttributeValue.Type, _ attribute: SDPAttribute, lineCount: Int) -> Bool {
        do {
            let value = try type.init(attributeValue: attribute.value ?? "")
            let again = try type.init(attributeValue: value.attributeValue)
            #expect(again.attribute == value.attribute, "\(attribute)")
            return true
        } catch {
            let text = "a=\(attribute.name):\(attribute.value ?? "")"
            #expect(error == .malformedAttribute(line: nil, text: text, reason: error.reason), "\(attribute)")
            return false
        }
    }

    @Test func randomAttributeValues() {
        var random = SplitMix64(seed: 4585)
        let alphabet = Array("0123456789 */:;=[],.-|^xyqsarpend".utf8) + Array("AES_CM inline:AAAA recv send".utf8)
        var accepted = 0
        for _ in 0..<20_000 {
            let value = String(decoding: (0..<Int.random(in: 0...30, using: &random)).map { _ in
                alphabet.randomElement(using: &random)!
            }, as: UTF8.self)
            for type in typedAttributes.values {
                accepted += checkTyped(type, SDPAttribute(name: type.attributeName, value: value), lineCount: 0) ? 1 : 0
            }
        }
        #expect(accepted > 1000)
    }
}

extension SDPError {
    var reason: String {
        switch self {
        case .malformedLine(_, _, let reason), .malformedAttribute(_, _, let reason): reason
        case .missingLine: ""
        }
    }
}
