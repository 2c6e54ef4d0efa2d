import Foundation
import MediaCore
import MediaPeer

/// Watches a WHEP endpoint (draft-ietf-wish-whep, §4: `sluice serve` or any other) for a `sluice run`
/// pipeline: a receive-only peer connection whose offer is POSTed as `application/sdp`; the 201's
/// answer applied; the remote video track's encoded frames handed to the pipeline's `HandOverSource`.
/// It connects while the pipeline is built, since the pipeline's formats come from the stream (its
/// first keyframe); at the end, or when dropped, the connection is closed and the session DELETEd at
/// its Location.
final class WHEPViewer: @unchecked Sendable {
    let url: String
    let handOver = FrameHandOver<EncodedFrame>()
    /// The codec the endpoint answered.
    let codec: CodecName
    private var connection: PeerConnection?
    private var session: String?

    init(url: String, registry: CodecRegistry) throws {
        self.url = url
        var configuration = HTTPExchange.configuration(for: url)
        configuration.receive = [.video]
        let connection = try PeerConnectionFactory(registry: registry, capabilities: registry.capabilities).makePeerConnection(configuration)
        self.connection = connection
        var negotiated: CodecName?
        do {
            session = try HTTPExchange.offer(connection, to: url)
            guard let track = connection.remoteTracks.first(where: { $0.kind == .video }) else {
                throw WHIPError.negotiation(url: url, reason: "the answer sends no video")
            }
            let codec = track.codec.capability.codec
            let handOver = self.handOver
            try track.start(.encoded { graph, port in
                graph.add(HandOverSink(handOver: handOver, caps: [.video(.exactly(.compressed(codec)))], url: url, name: "whep-output"),
                          input: port)
            })
            negotiated = codec
        } catch {
            self.codec = .vp8
            stop()
            throw error
        }
        codec = negotiated!
    }

    deinit { stop() }

    /// Closes the connection and ends the session; the pipeline's source ends with what it has.
    func stop() {
        handOver.abandon()
        connection?.close()
        connection = nil
        if let session {
            _ = try? HTTPExchange.send("DELETE", to: session)
            self.session = nil
        }
    }
}
