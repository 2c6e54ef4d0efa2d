/// `a=imageattr:<payload type or *> send <sets> recv <sets>` (RFC 6236 §3.1): the picture sizes a side
/// can send and receive. Each direction is `*` or sets like `[x=[480:16:800],y=[320:16:640],par=[1.2-1.3],q=0.6]`.
public struct SDPImageAttribute: SDPAttributeValue {
    public static let attributeName = "imageattr"
    /// nil for `*`.
    public var payloadType: UInt8?
    /// What the writer can send, nil when the direction is absent.
    public var send: Sets?
    /// What the writer can receive, nil when the direction is absent.
    public var receive: Sets?

    /// One direction's attribute list (RFC 6236 §3.1.1 `attr-list`).
    public enum Sets: Sendable, Hashable {
        /// `*`: any size.
        case any
        /// The sets, in order of preference.
        case sets([ImageSet])
    }

    /// `[x=<xyrange>,y=<xyrange>[,sar=<srange>][,par=<prange>][,q=<qvalue>]]`.
    public struct ImageSet: Sendable, Hashable {
        public var x: Range
        public var y: Range
        /// Sample aspect ratio.
        public var sar: DecimalRange?
        /// Picture aspect ratio range, `[min-max]`.
        public var par: ClosedRange<Double>?
        /// Preference, 0.0 to 1.0 (default 0.5).
        public var q: Double?

        public init(x: Range, y: Range, sar: DecimalRange? = nil, par: ClosedRange<Double>? = nil, q: Double? = nil) {
            self.x = x
            self.y = y
            self.sar = sar
            self.par = par
            self.q = q
        }
    }

    /// Pixel counts: `640`, `[480:800]`, `[480:16:800]` (step 16) or `[320,640,1280]`.
    public enum Range: Sendable, Hashable {
        case value(Int)
        case range(min: Int, step: Int?, max: Int)
        case list([Int])

        /// Whether `pixels` is one of the values this range allows.
        public func contains(_ pixels: Int) -> Bool {
            switch self {
            case .value(let value): pixels == value
            case .list(let values): values.contains(pixels)
            case .range(let min, let step, let max):
                (min...max).contains(pixels) && (pixels - min) % Swift.max(step ?? 1, 1) == 0
            }
        }
    }

    /// Aspect ratios: `1.1`, `[0.9-1.1]` or `[1.0,1.1,1.3]`.
    public enum DecimalRange: Sendable, Hashable {
        case value(Double)
        case range(ClosedRange<Double>)
        case list([Double])
    }

    public init(payloadType: UInt8?, send: Sets? = nil, receive: Sets? = nil) {
        self.payloadType = payloadType
        self.send = send
        self.receive = receive
    }

    public init(attributeValue: String) throws(SDPError) {
        var scanner = SDPScanner(attributeValue)
        let payloadType = try SDPPayloadTypeSelector.read(&scanner, attributeValue, as: Self.self)
        var reader = ImageAttributeReader(scanner: scanner)
        var send: Sets?, receive: Sets?
        while reader.scanner.skipSpaces() > 0, !reader.scanner.atEnd {
            if reader.scanner.take(word: "send"), send == nil {
                send = reader.sets()
            } else if reader.scanner.take(word: "recv"), receive == nil {
                receive = reader.sets()
            } else {
                throw Self.malformed(attributeValue, "expected send or recv once each")
            }
            guard let reason = reader.failure else { continue }
            throw Self.malformed(attributeValue, reason)
        }
        guard reader.scanner.atEnd, send != nil || receive != nil else {
            throw Self.malformed(attributeValue, "expected send or recv after the payload type")
        }
        self.init(payloadType: payloadType, send: send, receive: receive)
    }

    public var attributeValue: String {
        var text = payloadType.map(String.init) ?? "*"
        if let send { text += " send " + send.text }
        if let receive { text += " recv " + receive.text }
        return text
    }
}

/// The RFC 6236 §3.1.1 grammar, read from a scanner; the first failure is kept in `failure`.
private struct ImageAttributeReader {
    var scanner: SDPScanner
    var failure: String?

    mutating func fail<T>(_ reason: String) -> T? {
        if failure == nil { failure = reason }
        return nil
    }

    /// `1*WSP attr-list`, stopping before the next direction keyword.
    mutating func sets() -> SDPImageAttribute.Sets? {
        guard scanner.skipSpaces() > 0 else { return fail("expected a space before the sets") }
        if scanner.take("*") { return .any }
        var sets: [SDPImageAttribute.ImageSet] = []
        repeat {
            let start = scanner.position
            scanner.skipSpaces()
            guard scanner.peek == UInt8(ascii: "[") else {
                scanner.position = start
                break
            }
            guard let set = imageSet() else { return nil }
            sets.append(set)
        } while true
        return sets.isEmpty ? fail("expected * or [x=...,y=...]") : .sets(sets)
    }

    mutating func imageSet() -> SDPImageAttribute.ImageSet? {
        guard scanner.take("["), scanner.take(word: "x=") else { return fail("a set must start with [x=") }
        guard let x = pixelRange(), scanner.take(","), scanner.take(word: "y="), let y = pixelRange() else {
            return fail("expected x=<range>,y=<range>")
        }
        var set = SDPImageAttribute.ImageSet(x: x, y: y)
        while scanner.take(",") {
            if scanner.take(word: "sar="), set.sar == nil, let sar = decimalRange() {
                set.sar = sar
            } else if scanner.take(word: "par="), set.par == nil, let par = aspectRange() {
                set.par = par
            } else if scanner.take(word: "q="), set.q == nil, let q = scanner.decimal(), q <= 1 {
                set.q = q
            } else {
                return fail("expected sar=, par= or q= once each")
            }
        }
        return scanner.take("]") ? set : fail("a set must end with ]")
    }

    /// `xyvalue`, `[min:max]`, `[min:step:max]` or `[v,v,...]`; values 1 to 5 digits.
    mutating func pixelRange() -> SDPImageAttribute.Range? {
        guard scanner.take("[") else { return pixels().map(SDPImageAttribute.Range.value) }
        guard let first = pixels() else { return nil }
        if scanner.take(":") {
            guard let second = pixels() else { return nil }
            var range = SDPImageAttribute.Range.range(min: first, step: nil, max: second)
            if scanner.take(":") {
                guard let third = pixels() else { return nil }
                range = .range(min: first, step: second, max: third)
            }
            guard case .range(let min, _, let max) = range, min <= max else { return fail("range minimum exceeds maximum") }
            return scanner.take("]") ? range : fail("expected ] after a range")
        }
        var values = [first]
        while scanner.take(",") {
            guard let next = pixels() else { return nil }
            values.append(next)
        }
        guard values.count > 1 else { return fail("a bracketed pixel list needs two values or a range") }
        return scanner.take("]") ? .list(values) : fail("expected ] after a list")
    }

    mutating func pixels() -> Int? {
        guard let value = scanner.integer(maxDigits: 5), value > 0 else { return fail("expected a pixel count from 1 to 99999") }
        return value
    }

    mutating func decimal() -> Double? {
        guard let value = scanner.decimal(), value > 0 else { return fail("expected a positive decimal") }
        return value
    }

    /// `sarvalue`, `[a-b]` or `[a,b,...]`.
    mutating func decimalRange() -> SDPImageAttribute.DecimalRange? {
        guard scanner.take("[") else { return decimal().map(SDPImageAttribute.DecimalRange.value) }
        guard let first = decimal() else { return nil }
        var range: SDPImageAttribute.DecimalRange
        if scanner.take("-") {
            guard let second = decimal() else { return nil }
            guard first <= second else { return fail("range minimum exceeds maximum") }
            range = .range(first...second)
        } else {
            var values = [first]
            while scanner.take(",") {
                guard let next = decimal() else { return nil }
                values.append(next)
            }
            range = .list(values)
        }
        return scanner.take("]") ? range : fail("expected ] after a range")
    }

    /// `[a-b]`, the only form `par` takes.
    mutating func aspectRange() -> ClosedRange<Double>? {
        guard scanner.take("["), let low = decimal(), scanner.take("-"), let high = decimal(), scanner.take("]"), low <= high else {
            return fail("par must be [min-max]")
        }
        return low...high
    }
}

extension SDPImageAttribute.Sets {
    var text: String {
        switch self {
        case .any: "*"
        case .sets(let sets): sets.map(\.text).joined(separator: " ")
        }
    }
}

extension SDPImageAttribute.ImageSet {
    var text: String {
        var parts = ["x=\(x.text)", "y=\(y.text)"]
        if let sar { parts.append("sar=\(sar.text)") }
        if let par { parts.append("par=[\(decimalText(par.lowerBound))-\(decimalText(par.upperBound))]") }
        if let q { parts.append("q=\(decimalText(q))") }
        return "[" + parts.joined(separator: ",") + "]"
    }
}

extension SDPImageAttribute.Range {
    var text: String {
        switch self {
        case .value(let value): "\(value)"
        case .range(let min, let step, let max): "[\(min):" + (step.map { "\($0):" } ?? "") + "\(max)]"
        case .list(let values): "[" + values.map(String.init).joined(separator: ",") + "]"
        }
    }
}

extension SDPImageAttribute.DecimalRange {
    var text: String {
        switch self {
        case .value(let value): decimalText(value)
        case .range(let range): "[\(decimalText(range.lowerBound))-\(decimalText(range.upperBound))]"
        case .list(let values): "[" + values.map(decimalText).joined(separator: ",") + "]"
        }
    }
}
