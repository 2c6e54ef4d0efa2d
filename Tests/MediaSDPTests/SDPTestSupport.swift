/// Shared helpers: the fixture files and checks of typed attribute values.
import Foundation
import MediaSDP
import TestSupport
import Testing

enum Fixtures {
    /// Every file in Fixtures/ (origins in its README.md).
    static let names = [
        "ffmpeg-h264.sdp", "ffmpeg-vp8.sdp", "ffmpeg-opus.sdp", "ffmpeg-h264-opus.sdp", "ffmpeg-srtp.sdp",
        "gstreamer-rtsp.sdp", "gstreamer-webrtcbin.sdp", "chrome-offer.sdp", "firefox-offer.sdp", "safari-offer.sdp", "sdes-crypto.sdp",
        "rfc8866-example.sdp", "aiortc-offer.sdp", "aiortc-answer.sdp", "sluice-offer.sdp", "sluice-answer.sdp",
    ]

    /// The text of `Fixtures/<name>`, byte for byte.
    static func text(_ name: String) throws -> String {
        let url = TestSupport.repositoryRoot.appendingPathComponent("Tests/MediaSDPTests/Fixtures/\(name)")
        return String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }

    static func parsed(_ name: String) throws -> SessionDescription { try SessionDescription(parsing: text(name)) }
}

/// A minimal session whose single media section ends with `a=<attribute>` on line 6.
func sessionWithMediaAttribute(_ attribute: String) -> String {
    "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 5004 RTP/AVP 96\r\n\(attribute)\r\n"
}

/// `value` parses to `expected` and `expected` writes `value` back.
func expectParses<T: SDPAttributeValue>(_ value: String, to expected: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(try T(attributeValue: value) == expected, sourceLocation: sourceLocation)
    #expect(expected.attributeValue == value, sourceLocation: sourceLocation)
    #expect(expected.attribute.description == "a=\(T.attributeName):\(value)", sourceLocation: sourceLocation)
}

/// `value` does not parse as `T`, with `reason`: directly (no line), and from line 6 of a description.
func expectMalformed<T: SDPAttributeValue>(_ type: T.Type, _ value: String, _ reason: String,
                                           sourceLocation: SourceLocation = #_sourceLocation)
{
    let text = "a=\(T.attributeName):\(value)"
    #expect(throws: SDPError.malformedAttribute(line: nil, text: text, reason: reason), sourceLocation: sourceLocation) {
        try T(attributeValue: value)
    }
    do {
        let session = try SessionDescription(parsing: sessionWithMediaAttribute(text))
        #expect(throws: SDPError.malformedAttribute(line: 6, text: text, reason: reason), sourceLocation: sourceLocation) {
            try session.media[0].values(T.self)
        }
    } catch {
        Issue.record("the description did not parse: \(error)", sourceLocation: sourceLocation)
    }
}
