// The SDP fragments of Trickle ICE over HTTP PATCH (RFC 8840 §9, RFC 9725 §4.3), read and written.

/// An `application/trickle-ice-sdpfrag` body: ICE credentials (present when the client restarts ICE),
/// candidates and end-of-candidates, under optional `m=` lines with their `a=mid`.
public struct TrickleFragment: Sendable, Equatable {
    public var ufrag: String?
    public var pwd: String?
    /// `a=candidate:` values without the `a=`.
    public var candidates: [String] = []
    public var endOfCandidates = false

    public init(ufrag: String? = nil, pwd: String? = nil, candidates: [String] = [], endOfCandidates: Bool = false) {
        self.ufrag = ufrag
        self.pwd = pwd
        self.candidates = candidates
        self.endOfCandidates = endOfCandidates
    }

    /// Reads a fragment: `a=` and `m=` lines (RFC 8840 §9); anything else, or credentials given
    /// only in half, is refused by name. Attributes the fragment may carry but ICE does not need
    /// (`a=mid`, `a=ice-options`, `a=group`) are read past.
    public init(parsing text: String) throws(WebRTCSessionError) {
        for line in Self.lines(of: text) {
            if line.hasPrefix("m=") { continue }
            guard line.hasPrefix("a=") else { throw .malformedFragment("\"\(line.prefix(40))\" is neither an a= nor an m= line") }
            let attribute = line.dropFirst(2)
            if attribute.hasPrefix("candidate:") {
                candidates.append(String(attribute))
            } else if attribute == "end-of-candidates" {
                endOfCandidates = true
            } else if attribute.hasPrefix("ice-ufrag:") {
                ufrag = String(attribute.dropFirst("ice-ufrag:".count))
            } else if attribute.hasPrefix("ice-pwd:") {
                pwd = String(attribute.dropFirst("ice-pwd:".count))
            }
        }
        if (ufrag == nil) != (pwd == nil) { throw .malformedFragment("a=ice-ufrag and a=ice-pwd come together") }
    }

    /// The answer to an ICE restart (RFC 9725 §4.3.2) from the new answer `sdp`: its credentials, then
    /// its first section's `m=` and `a=mid` lines with that section's candidates.
    public static func restartAnswer(from sdp: String) -> String {
        let lines = Self.lines(of: sdp)
        var out = lines.filter { $0.hasPrefix("a=ice-ufrag:") || $0.hasPrefix("a=ice-pwd:") }.prefix(2).map { $0 }
        if let start = lines.firstIndex(where: { $0.hasPrefix("m=") }) {
            let section = lines[(start + 1)...].prefix { !$0.hasPrefix("m=") }
            out.append(lines[start])
            out += section.filter { $0.hasPrefix("a=mid:") || $0.hasPrefix("a=candidate:") || $0 == "a=end-of-candidates" }
        }
        return out.map { $0 + "\r\n" }.joined()
    }

    /// The `a=ice-ufrag` values of a description, in order.
    public static func iceUfrags(in sdp: String) -> [String] {
        lines(of: sdp).filter { $0.hasPrefix("a=ice-ufrag:") }
            .map { String($0.dropFirst("a=ice-ufrag:".count)) }
    }

    /// `description` with these credentials in place of its own and without its candidates: the offer an
    /// ICE restart by PATCH stands for on the server, or the answer it gets on the client (the
    /// candidates come in fragments).
    public func replacingCredentials(_ description: String) -> String {
        guard let ufrag, let pwd else { return description }
        let lines = Self.lines(of: description).compactMap { line -> String? in
            if line.hasPrefix("a=ice-ufrag:") { return "a=ice-ufrag:" + ufrag }
            if line.hasPrefix("a=ice-pwd:") { return "a=ice-pwd:" + pwd }
            if line.hasPrefix("a=candidate:") || line == "a=end-of-candidates" { return nil }
            return line
        }
        return lines.map { $0 + "\r\n" }.joined()
    }

    /// The non-empty lines of SDP text, whatever their ends ("\r\n" is one Character, `isNewline`).
    private static func lines(of text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map(String.init)
    }
}
