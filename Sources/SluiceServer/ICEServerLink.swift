/// A STUN or TURN server offered to WHIP and WHEP clients in `Link` header fields (RFC 9725 §4.6, RFC 8288).
public struct ICEServerLink: Sendable, Equatable {
    /// The server's URI (RFC 7064 `stun:`/`stuns:`, RFC 7065 `turn:`/`turns:`), e.g. `turn:relay.example:3478?transport=udp`.
    public var url: String
    /// The long-term credential's user name, for TURN.
    public var username: String?
    /// The long-term credential's password, for TURN (sent with `credential-type="password"`).
    public var credential: String?

    public init(url: String, username: String? = nil, credential: String? = nil) {
        self.url = url
        self.username = username
        self.credential = credential
    }

    /// The `Link` field value: `<URL>; rel="ice-server"` with `username`, `credential` and `credential-type`
    /// parameters when a credential is set (RFC 9725 §4.6).
    public var linkFieldValue: String {
        var value = "<\(url)>; rel=\"ice-server\""
        if let username {
            value += "; username=\(Self.quoted(username))"
        }
        if let credential {
            value += "; credential=\(Self.quoted(credential)); credential-type=\"password\""
        }
        return value
    }

    /// An HTTP quoted-string (RFC 9110 §5.6.4): quotes and backslashes escaped, control characters dropped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"", "\\":
                out += "\\"
                out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                continue
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
