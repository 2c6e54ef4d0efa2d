/// A session description (RFC 8866 §5): the session-level lines, then one `MediaDescription` per `m=`
/// section. Parse with `init(parsing:)`, write with `serialized()`: CRLF lines in RFC 8866 §5 order.
///
/// ```
/// v=0                                   version
/// o=- 0 0 IN IP4 127.0.0.1              origin
/// s=No Name                             session name
/// [i= u= e=* p=* c= b=*]                information, URI, emails, phones, connection, bandwidths
/// t=0 0 [r=*]                           timing(s), each with its repeats
/// [z= k= a=*]                           time zones, key (obsolete), session attributes
/// m=video 5004 RTP/AVP 96 [i= c=* b=* k= a=*] ...   media sections
/// ```
public struct SessionDescription: SDPAttributeContainer, Sendable, Hashable, CustomStringConvertible {
    /// `v=`, always 0 (RFC 8866 §5.1).
    public var version: Int
    public var origin: SDPOrigin
    /// `s=`, "-" or a single space when there is no name (RFC 8866 §5.3).
    public var sessionName: String
    /// `i=` (RFC 8866 §5.4).
    public var information: String?
    /// `u=` (RFC 8866 §5.5).
    public var uri: String?
    /// `e=` lines (RFC 8866 §5.6).
    public var emails: [String]
    /// `p=` lines (RFC 8866 §5.6).
    public var phones: [String]
    /// `c=` at session level: the default for media sections without their own (RFC 8866 §5.7).
    public var connection: SDPConnection?
    public var bandwidths: [SDPBandwidth]
    /// `t=` lines with their `r=` lines; at least one (RFC 8866 §5.9).
    public var timings: [SDPTiming]
    /// `z=` as text (RFC 8866 §5.11).
    public var timeZones: String?
    /// `k=` as text (obsolete, RFC 8866 §5.12).
    public var encryptionKey: String?
    public var attributes: [SDPAttribute]
    public var media: [MediaDescription]

    public init(origin: SDPOrigin, sessionName: String = "-", information: String? = nil, uri: String? = nil,
                emails: [String] = [], phones: [String] = [], connection: SDPConnection? = nil,
                bandwidths: [SDPBandwidth] = [], timings: [SDPTiming] = [SDPTiming()], timeZones: String? = nil,
                encryptionKey: String? = nil, attributes: [SDPAttribute] = [], media: [MediaDescription] = [])
    {
        version = 0
        self.origin = origin
        self.sessionName = sessionName
        self.information = information
        self.uri = uri
        self.emails = emails
        self.phones = phones
        self.connection = connection
        self.bandwidths = bandwidths
        self.timings = timings
        self.timeZones = timeZones
        self.encryptionKey = encryptionKey
        self.attributes = attributes
        self.media = media
    }

    /// The session-level direction (RFC 8866 §6.7): the last direction flag, else sendrecv.
    public var direction: SDPDirection { explicitDirection ?? .sendrecv }

    /// The `a=group` lines (RFC 5888 §5), e.g. BUNDLE.
    public func groups() throws(SDPError) -> [SDPGroup] { try values(SDPGroup.self) }

    /// The media section whose `a=mid` is `mid` (RFC 5888 §4).
    public func media(mid: String) -> MediaDescription? { media.first { $0.mid == mid } }

    /// The description as CRLF-terminated lines in RFC 8866 §5 order. A description without timings
    /// gets `t=0 0`, which RFC 8866 §5.9 requires.
    public func serialized() -> String {
        var lines = ["v=\(version)", "o=\(origin)", "s=\(sessionName)"]
        if let information { lines.append("i=\(information)") }
        if let uri { lines.append("u=\(uri)") }
        lines += emails.map { "e=\($0)" } + phones.map { "p=\($0)" }
        if let connection { lines.append("c=\(connection)") }
        lines += bandwidths.map { "b=\($0)" }
        for timing in timings.isEmpty ? [SDPTiming()] : timings {
            lines.append("t=\(timing)")
            lines += timing.repeats.map { "r=\($0)" }
        }
        if let timeZones { lines.append("z=\(timeZones)") }
        if let encryptionKey { lines.append("k=\(encryptionKey)") }
        lines += attributes.map(\.description)
        for section in media { section.appendLines(to: &lines) }
        return lines.map { $0 + "\r\n" }.joined()
    }

    public var description: String { serialized() }
}
