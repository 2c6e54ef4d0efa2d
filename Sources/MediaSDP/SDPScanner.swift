/// Reads the tokens of an attribute value byte by byte (ASCII grammar of RFC 8866 §9 and the attribute
/// RFCs). Failures return nil; the caller turns them into an error naming the attribute.
struct SDPScanner {
    let bytes: [UInt8]
    var position = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    var atEnd: Bool { position == bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[position] }
    var rest: String { String(decoding: bytes[position...], as: UTF8.self) }

    /// Consumes `character` if it is next.
    mutating func take(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue, peek == ascii else { return false }
        position += 1
        return true
    }

    /// Consumes `word` if it is next.
    mutating func take(word: String) -> Bool {
        let utf8 = Array(word.utf8)
        guard bytes.count - position >= utf8.count, Array(bytes[position..<position + utf8.count]) == utf8 else { return false }
        position += utf8.count
        return true
    }

    /// Consumes spaces and tabs (WSP); returns how many.
    @discardableResult
    mutating func skipSpaces() -> Int {
        let start = position
        while let byte = peek, byte == 0x20 || byte == 0x09 { position += 1 }
        return position - start
    }

    /// Consumes bytes while `accept` holds; returns them as text (possibly empty).
    mutating func take(while accept: (UInt8) -> Bool) -> String {
        let start = position
        while let byte = peek, accept(byte) { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// Consumes a non-empty token up to the next space or tab.
    mutating func token() -> String? {
        let text = take { $0 != 0x20 && $0 != 0x09 }
        return text.isEmpty ? nil : text
    }

    /// Consumes 1 to `maxDigits` decimal digits as an integer no larger than `max`.
    mutating func integer(maxDigits: Int = 18, max: Int = Int.max) -> Int? {
        let digits = take { $0 >= 0x30 && $0 <= 0x39 }
        guard !digits.isEmpty, digits.count <= maxDigits, let value = Int(digits), value <= max else { return nil }
        return value
    }

    /// Consumes a decimal number such as `30`, `29.97` or `.5`: at most 9 digits before the point and 4
    /// after it, so that `decimalText` writes it back without an exponent.
    mutating func decimal() -> Double? {
        let text = take { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard text.contains(where: \.isNumber), parts.count <= 2, parts[0].count <= 9, parts.count == 1 || parts[1].count <= 4
        else { return nil }
        return Double(text)
    }
}

/// Writes a decimal as the shortest text that reads back the same: `30`, `29.97`, `0.5`.
func decimalText(_ value: Double) -> String {
    if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
    return String(value)
}

/// Splits on runs of spaces (RFC 8866 separates fields with one SP; some peers write more).
func fields(_ text: Substring) -> [Substring] { text.split(separator: " ", omittingEmptySubsequences: true) }
