/// A textual pipeline in the manner of `gst-launch-1.0`, parsed into chains of elements; a pure value.
///
/// ```
/// file:clip.mp4 name=in ! decode ! scale size=640x360 ! vp8enc bitrate=1M ! file:out.webm name=out
/// in.audio ! out.
/// ```
/// - Elements are joined by `!` into a chain; an element not followed by `!` ends its chain and the
///   next word starts another.
/// - An element is a kind (`vp8enc`), or `file:PATH`, followed by `key=value` properties; `name=N`
///   names it. Values may be quoted with `"` or `'`.
/// - `N.` refers to the element named N: at the start of a chain it reads N's output again (fan-out,
///   e.g. after a `tee`), with `N.video` or `N.audio` picking a container file's stream; at the end
///   of a chain it feeds N (a second track of a container file).
public struct PipelineDescription: Equatable, Sendable {
    /// One `key=value` of an element.
    public struct Property: Equatable, Sendable {
        public var key: String
        public var value: String
        public init(_ key: String, _ value: String) { (self.key, self.value) = (key, value) }
    }

    /// A node as written: its kind, its properties, and its place in the text.
    public struct Element: Equatable, Sendable {
        /// The kind, e.g. "vp8enc"; "file" for `file:PATH`.
        public var kind: String
        /// The path of a `file:PATH` element.
        public var path: String?
        /// Properties other than `name`, in the order written.
        public var properties: [Property]
        public var name: String?
        /// The element's number in the text, from 1, for messages.
        public var position: Int

        public init(kind: String, path: String? = nil, properties: [Property] = [], name: String? = nil, position: Int) {
            (self.kind, self.path, self.properties, self.name, self.position) = (kind, path, properties, name, position)
        }

        /// How the text names it: `file:PATH` or the kind, with its name if it has one.
        public var label: String {
            (path.map { "file:\($0)" } ?? kind) + (name.map { " (\($0))" } ?? "")
        }

        public func value(_ key: String) -> String? { properties.last { $0.key == key }?.value }
    }

    /// One link of a chain: an element, or a reference `name.` / `name.pad` to a named element.
    public enum Link: Equatable, Sendable {
        case element(Element)
        case reference(name: String, pad: String?)
    }

    public var chains: [[Link]]

    public init(chains: [[Link]]) { self.chains = chains }

    /// Parses `text`; an error names what is wrong and where.
    public init(parsing text: String) throws(PipelineError) {
        let tokens = try Self.tokens(text)
        guard !tokens.isEmpty else { throw .syntax("empty pipeline: give e.g. \"file:in.y4m ! vp8enc ! file:out.ivf\"") }
        var chains: [[Link]] = []
        var chain: [Link] = []
        var position = 0
        var index = 0
        var expectingLink = true
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if token == .bang {
                guard !expectingLink, !chain.isEmpty else {
                    throw .syntax(chain.isEmpty ? "'!' with nothing before it" : "two '!' in a row after \(Self.describe(chain.last!))")
                }
                expectingLink = true
                continue
            }
            guard case .word(let word) = token else { continue }
            if !expectingLink {
                // A word after an element that is not a property starts a new chain.
                if word.contains("="), !word.hasPrefix("file:"), case .element(var element) = chain.last {
                    try Self.addProperty(word, to: &element)
                    chain[chain.count - 1] = .element(element)
                    continue
                }
                chains.append(chain)
                chain = []
            }
            position += 1
            if word.contains("="), !word.hasPrefix("file:") {
                throw .syntax("element \(position): '\(word)' is a property with no element before it")
            }
            if let reference = Self.reference(word) {
                chain.append(reference)
            } else if word.hasPrefix("file:") {
                let path = String(word.dropFirst(5))
                guard !path.isEmpty else { throw .syntax("element \(position): file: needs a path, e.g. file:clip.y4m") }
                chain.append(.element(Element(kind: "file", path: path, position: position)))
            } else {
                guard word.first!.isLetter, word.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw .syntax("element \(position): '\(word)' is not an element name")
                }
                chain.append(.element(Element(kind: word.lowercased(), position: position)))
            }
            expectingLink = false
        }
        if expectingLink {
            throw .syntax("the pipeline ends with '!': name the element it leads to")
        }
        chains.append(chain)
        self.chains = chains
    }

    /// Every element, in the order written.
    public var elements: [Element] {
        chains.flatMap { $0 }.compactMap { if case .element(let element) = $0 { element } else { nil } }
    }

    private static func describe(_ link: Link) -> String {
        switch link {
        case .element(let element): element.label
        case .reference(let name, let pad): "\(name).\(pad ?? "")"
        }
    }

    /// `name.` or `name.pad`: letters, digits, `-` and `_` before one dot; not a file name like `a.ivf`
    /// (references have no path and stand where elements do, so `file:` is required for files).
    private static func reference(_ word: String) -> Link? {
        let parts = word.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !word.contains(":"), !word.contains("/"),
              parts[0].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }),
              parts[1].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return nil }
        return .reference(name: String(parts[0]), pad: parts[1].isEmpty ? nil : String(parts[1]))
    }

    private static func addProperty(_ word: String, to element: inout Element) throws(PipelineError) {
        let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let key = parts[0].lowercased()
        guard !key.isEmpty else { throw .syntax("\(element.label): '\(word)' has no property name before '='") }
        if key == "name" {
            guard !parts[1].isEmpty, reference(String(parts[1]) + ".") != nil else {
                throw .syntax("\(element.label): bad name '\(parts[1])': use letters, digits, '-' and '_'")
            }
            element.name = String(parts[1])
        } else {
            element.properties.append(Property(key, String(parts[1])))
        }
    }

    enum Token: Equatable { case word(String), bang }

    /// Words split at white space and at `!` outside quotes; quotes are removed.
    static func tokens(_ text: String) throws(PipelineError) -> [Token] {
        var tokens: [Token] = []
        var word = ""
        var inWord = false
        var quote: Character?
        func flush() {
            if inWord { tokens.append(.word(word)) }
            (word, inWord) = ("", false)
        }
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character.isWhitespace {
                flush()
            } else if character == "!" {
                flush()
                tokens.append(.bang)
            } else {
                word.append(character)
                inWord = true
            }
        }
        if quote != nil { throw .syntax("a quote (\(quote!)) is not closed") }
        flush()
        return tokens
    }
}

/// Why a pipeline was refused; `description` names the element, property or pair of caps concerned.
public enum PipelineError: Error, Equatable, CustomStringConvertible {
    case syntax(String)
    case unknownElement(String, suggestion: String?)
    case unsupportedElement(String, reason: String)
    case unknownProperty(element: String, property: String, suggestion: String?, known: [String])
    case badValue(element: String, property: String, value: String, expected: String)
    case missingProperty(element: String, property: String, example: String)
    case badLink(String)
    case incompatible(upstream: String, offered: String, downstream: String, accepted: String, suggestion: String?)
    case unknownReference(String)
    /// A device (camera, sound card) that cannot be opened or set up: `reason` is the device layer's.
    case device(element: String, device: String, reason: String)

    public var description: String {
        switch self {
        case .syntax(let text): return "syntax: \(text)"
        case .unknownElement(let kind, let suggestion):
            return "no element kind '\(kind)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? "") + " (see 'sluice run --list')"
        case .unsupportedElement(let kind, let reason): return "'\(kind)' is not supported by 'sluice run': \(reason)"
        case .unknownProperty(let element, let property, let suggestion, let known):
            return "\(element): no property '\(property)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
                + (known.isEmpty ? " (it takes none)" : " (it takes: \(known.joined(separator: ", ")))")
        case .badValue(let element, let property, let value, let expected):
            return "\(element): bad \(property)='\(value)': expected \(expected)"
        case .missingProperty(let element, let property, let example):
            return "\(element): needs \(property)=..., e.g. \(example)"
        case .badLink(let text): return text
        case .incompatible(let upstream, let offered, let downstream, let accepted, let suggestion):
            return "cannot link \(upstream) to \(downstream): \(upstream) gives \(offered), \(downstream) takes \(accepted)"
                + (suggestion.map { "; \($0)" } ?? "")
        case .unknownReference(let name):
            return "'\(name).' refers to no element named \(name) before it (name one with name=\(name))"
        case .device(let element, let device, let reason):
            return "\(element): cannot use device '\(device)': \(reason)"
        }
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo.
func nearest(_ word: String, in candidates: [String]) -> String? {
    func distance(_ a: [Character], _ b: [Character]) -> Int {
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
    let letters = Array(word.lowercased())
    let scored = candidates.map { ($0, distance(letters, Array($0.lowercased()))) }
    guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
    let contains = candidates.first { word.count >= 3 && ($0.contains(word.lowercased()) || word.lowercased().contains($0)) }
    return best.1 <= max(2, letters.count / 3) ? best.0 : contains
}
