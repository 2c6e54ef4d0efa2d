import Foundation
@testable import Sluice
import Testing
import TestSupport

/// The WHIP client's HTTP: URLs it takes, responses it reads (RFC 9112 framing: Content-Length or
/// chunked), and the named errors for what it cannot use.
@Suite struct WHIPClientTests {
    @Test func onlyPlainHTTPURLsAreTaken() {
        #expect(HTTPExchange.split("http://example.com:8080/whip/cam?token=1").map { "\($0.host) \($0.port) \($0.target)" }
                == "example.com 8080 /whip/cam?token=1")
        #expect(HTTPExchange.split("http://127.0.0.1").map { "\($0.host) \($0.port) \($0.target)" } == "127.0.0.1 80 /")
        #expect(HTTPExchange.split("https://example.com/whip") == nil)
        #expect(HTTPExchange.split("cam") == nil)
        #expect(HTTPExchange.split("http://example.com:70000/whip") == nil)
    }

    @Test func aChunkedAnswerIsPutBackTogether() throws {
        let text = "HTTP/1.1 201 Created\r\nLocation: /whip/cam/42\r\nTransfer-Encoding: chunked\r\n"
            + "Content-Type: application/sdp\r\n\r\n5\r\nv=0\r\n\r\n3;ext=1\r\nabc\r\n0\r\n\r\n"
        let response = try HTTPExchange.parse(Array(text.utf8), url: "http://h/whip/cam")
        #expect(response.status == 201)
        #expect(response.headers["location"] == "/whip/cam/42" && response.headers["content-type"] == "application/sdp")
        #expect(response.body == "v=0\r\nabc")
    }

    @Test func aBodyIsCutAtItsContentLength() throws {
        let text = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nno stream and more"
        let response = try HTTPExchange.parse(Array(text.utf8), url: "http://h/whip/x")
        #expect(response.status == 404 && response.body == "no stream")
    }

    @Test func whatIsNotHTTPIsNamed() {
        #expect(throws: WHIPError.malformedResponse(url: "http://h/w", reason: "the connection closed in the status line")) {
            try HTTPExchange.parse(Array("garbage".utf8), url: "http://h/w")
        }
        #expect(throws: WHIPError.malformedResponse(url: "http://h/w", reason: "bad status line 'SSH-2.0-OpenSSH'")) {
            try HTTPExchange.parse(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8), url: "http://h/w")
        }
    }

    /// Nothing listens on the port: the pipeline's run fails naming the URL, before any frame is read.
    @Test func anEndpointThatIsNotThereIsNamed() throws {
        try TestSupport.withTemporaryDirectory { folder in
            let media = try InteropTests.peerMedia(in: folder)
            let url = "http://127.0.0.1:9/whip/cam"
            let pipeline = try TextPipeline("file:\(media.video) frames=5 ! whip url=\(url)")
            #expect { try pipeline.run() } throws: { error in
                guard case WHIPError.cannotConnect(let named, let reason) = error else { return false }
                return named == url && reason.contains("refused")
            }
        }
    }
}
