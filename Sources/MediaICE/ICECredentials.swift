// ICE credentials (RFC 8445 §5.3) and the `ice-char` alphabet (RFC 8839 §5.4).

/// The username fragment and password of one side of an ICE session (RFC 8445 §5.3). Checks carry
/// `USERNAME = remote-ufrag:local-ufrag` and MESSAGE-INTEGRITY keyed with the receiver's password.
public struct ICECredentials: Hashable, Sendable {
    public var ufrag: String
    public var pwd: String

    public init(ufrag: String, pwd: String) {
        self.ufrag = ufrag
        self.pwd = pwd
    }

    /// Fresh random credentials: an 8-character ufrag (≥ 24 bits of randomness) and a 24-character password
    /// (≥ 128 bits), both of `ice-char` (RFC 8445 §5.3, RFC 8839 §5.4).
    public static func random() -> ICECredentials {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    public static func random(using generator: inout some RandomNumberGenerator) -> ICECredentials {
        ICECredentials(ufrag: randomICEString(length: 8, using: &generator),
                       pwd: randomICEString(length: 24, using: &generator))
    }

    /// True when the ufrag has 4 to 256 and the password 22 to 256 `ice-char` characters (RFC 8839 §5.4).
    public var isValid: Bool {
        (4...256).contains(ufrag.utf8.count) && (22...256).contains(pwd.utf8.count)
            && ufrag.utf8.allSatisfy(Self.isICEChar) && pwd.utf8.allSatisfy(Self.isICEChar)
    }

    /// `ice-char = ALPHA / DIGIT / "+" / "/"` (RFC 8839 §5.1).
    static func isICEChar(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x2B || byte == 0x2F
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    private static func randomICEString(length: Int, using generator: inout some RandomNumberGenerator) -> String {
        String((0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }
}
