// Little-endian field access for the binary headers of IVF and WAV, and quoting of unexpected bytes in errors.

extension Array where Element == UInt8 {
    /// The little-endian integer of type `T` stored at `offset`.
    func littleEndian<T: FixedWidthInteger & UnsignedInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        for i in (0..<MemoryLayout<T>.size).reversed() { value = value << 8 | T(self[offset + i]) }
        return value
    }

    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

/// `bytes` for an error message: printable ASCII as is, anything else as `\xNN`, in quotes.
func quoted(_ bytes: some Collection<UInt8>) -> String {
    let hexDigits = Array("0123456789ABCDEF")
    var text = "\""
    for byte in bytes {
        if (0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
            text.append(Character(Unicode.Scalar(byte)))
        } else {
            text += "\\x" + String(hexDigits[Int(byte >> 4)]) + String(hexDigits[Int(byte & 15)])
        }
    }
    return text + "\""
}
